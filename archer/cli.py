"""The command-line entry: turns a composed Hydra config into a typed ``RunConfig`` and trains.

``scripts/run.py`` is a thin ``@hydra.main`` wrapper around ``main``; tests call ``to_run_config`` and
``archer.trainer.train`` directly.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from archer.config import ConfigError, RunConfig, register_configs

log = logging.getLogger(__name__)


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Build and validate the typed config; errors name the offending key and how to fix it."""
    missing = sorted(key for key in OmegaConf.missing_keys(cfg) if not key.startswith("hydra"))
    if missing:
        raise ConfigError(f"{', '.join(missing)}: required, set it on the command line (e.g. {missing[0]}=...)")
    try:
        run_cfg = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as error:
        cause = error.__cause__ if isinstance(error.__cause__, ConfigError) else None
        if cause is not None:
            raise cause from None
        raise ConfigError(str(error)) from error
    if not isinstance(run_cfg, RunConfig):
        raise ConfigError("the composed config is not a RunConfig: its defaults list must start with base_run")
    return run_cfg


def compose_run_config(config_dir: str | Path, config_name: str, overrides: Sequence[str]) -> RunConfig:
    """Compose ``<config_dir>/<config_name>.yaml`` with Hydra's compose API, as ``scripts/run.py`` composes it
    (command-line ``overrides`` included), into a validated ``RunConfig``; for scripts and tests that build a run
    without ``@hydra.main``. Without a ``run_dir`` override the run folder is the one ``run.py`` would use for the
    same overrides (relative to the current directory)."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(Path(config_dir).resolve())):
        cfg = compose(config_name, overrides=list(overrides), return_hydra_config=True)
        # ``${hydra:...}`` in run_dir reads the global HydraConfig, which only @hydra.main sets otherwise.
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
        return to_run_config(cfg)


def main(cfg: DictConfig, run_dir: str | None = None) -> dict[str, float]:
    """Validate ``cfg``, print it, and train in ``run_dir`` (or the config's ``run_dir``)."""
    from archer.trainer import evaluate_saved_policy, train

    run_cfg = to_run_config(cfg)
    folder = Path(run_cfg.run_dir or run_dir or ".")
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    log.info("run folder: %s", folder.resolve())
    if run_cfg.mode == "evaluate":
        return evaluate_saved_policy(run_cfg, folder)
    return train(run_cfg, folder)
