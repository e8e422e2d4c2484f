"""``env=external``: a user's environment by import path (``env.target=module:callable``), with no change to the
package.

- ``config.py``: the schema (``ExternalEnvConfig``).
- ``target.py``: finding and calling the target, and playing what it returns (a ``BatchedTextEnv`` as it is, a
  gymnasium-shaped single game through ``archer.envs.gym_adapter.GymTextEnv``).

At start-up (``archer.preflight``) the run plays ``env.check_games`` games with the checker
(``python -m archer.check_env`` makes the same checks) and refuses the environment on an error, before any model is
built. ``docs/add_an_environment.md`` is the guide.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from archer.config import EnvConfig, RunConfig
from archer.data.json_records import DatasetError
from archer.envs.base import BatchedTextEnv
from archer.envs.external.config import ExternalEnvConfig
from archer.envs.oracles import Oracle
from archer.envs.spec import GameSpec

if TYPE_CHECKING:
    from archer.data.trajectory import Trajectory

log = logging.getLogger(__name__)


def build_env(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.external.target import make_external_env

    assert isinstance(cfg, ExternalEnvConfig)
    return make_external_env(cfg, seed)


def offline_settings(cfg: ExternalEnvConfig) -> dict[str, object]:
    """The settings a trajectory file for this environment records (``archer.data.trajectory_file``)."""
    return {"target": cfg.target, "history": cfg.history}


def load_offline(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    """The trajectory file ``data.path`` (written by ``archer.data.trajectory_file.save_trajectories`` with env
    ``external`` and ``offline_settings``); an external environment has no scripted player to generate one."""
    from archer.data.trajectory_file import load_trajectories

    assert isinstance(cfg.env, ExternalEnvConfig)
    if cfg.data.path is None:
        raise DatasetError(
            f"data.path: env=external (env.target={cfg.env.target}) has no scripted player to generate offline data; "
            "give data.path=<a trajectory file> or, for an online run, pretrain=null"
        )
    return load_trajectories(cfg.data.path, "external", offline_settings(cfg.env))


def preflight(cfg: RunConfig) -> None:
    """The start-up check of an external environment: the target resolves, returns an environment of either shape,
    and ``env.check_games`` games of it pass the checker; warnings are logged.

    Raises:
        ConfigError: one line naming ``env.target`` and the first error.
        DatasetError: a run that needs offline data (pretraining, an offline algorithm, a prefilled buffer, ArCHer's
            ``bc_coeff``) has no ``data.path``.
    """
    from archer.envs.external.target import check_target, refusal, resolve

    env = cfg.env
    assert isinstance(env, ExternalEnvConfig)
    clones = getattr(cfg.algorithm, "bc_coeff", 0.0) > 0  # ArCHer's behaviour-cloning term reads the dataset
    needs_data = cfg.pretrain is not None or not cfg.algorithm.online or cfg.prefill_buffer_from_data or clones
    if needs_data and cfg.data.path is None:
        what = {True: "pretraining", False: "algorithm.bc_coeff > 0" if clones else "this algorithm"}[
            cfg.pretrain is not None
        ]
        raise DatasetError(
            f"data.path: {what} needs offline data, and env=external (env.target={env.target}) has no scripted player "
            "to generate it; give data.path=<a trajectory file>, or pretrain=null (and algorithm.bc_coeff=0) for an "
            "online run from scratch"
        )
    if env.check_games == 0:
        resolve(env)
        return
    report = check_target(env, env.check_games, seed=cfg.seed)
    if report.errors:
        raise refusal(env, f"{report.errors[0]} (python -m archer.check_env env.target={env.target} reports all)")
    for line in report.warnings:
        log.warning("env.target=%s: %s", env.target, line)


EXTERNAL = GameSpec(
    name="external",
    config=ExternalEnvConfig,
    build_env=build_env,
    load_offline=load_offline,
    preflight=preflight,
)
