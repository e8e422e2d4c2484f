"""OpenEnv at both edges (``openenv-core``, the ``openenv`` extra).

- ``env=openenv env.server_url=http://host:port`` trains on an OpenEnv environment server: one WebSocket session per
  game slot, played concurrently (``client.py``; the schema in ``config.py``).
- ``python -m archer.serve_openenv env=<game>`` serves any of the project's games as an OpenEnv server
  (``server.py``), so other trainers play them as this project does.

At start-up (``archer.preflight``) a run opens one session and plays ``env.check_games`` games through the checker,
so a server that is down, slow or speaks another observation is refused before any model is built.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from archer.config import ConfigError, EnvConfig, RunConfig
from archer.data.json_records import DatasetError
from archer.envs.base import BatchedTextEnv
from archer.envs.openenv.config import OpenEnvEnvConfig
from archer.envs.oracles import Oracle
from archer.envs.spec import GameSpec

if TYPE_CHECKING:
    from archer.data.trajectory import Trajectory

log = logging.getLogger(__name__)


def build_env(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.openenv.client import OpenEnvTextEnv, require_openenv

    assert isinstance(cfg, OpenEnvEnvConfig)
    require_openenv()
    return OpenEnvTextEnv(cfg, seed)


def offline_settings(cfg: OpenEnvEnvConfig) -> dict[str, object]:
    """The settings a trajectory file for this environment records (``archer.data.trajectory_file``)."""
    return {"server_url": cfg.server_url, "history": cfg.history}


def load_offline(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    """The trajectory file ``data.path`` (``archer.data.trajectory_file``, env ``openenv``): a server has no
    scripted player to generate offline data."""
    from archer.data.trajectory_file import load_trajectories

    assert isinstance(cfg.env, OpenEnvEnvConfig)
    if cfg.data.path is None:
        raise DatasetError(
            f"data.path: env=openenv (env.server_url={cfg.env.server_url}) has no scripted player to generate offline "
            "data; give data.path=<a trajectory file> or, for an online run, pretrain=null"
        )
    return load_trajectories(cfg.data.path, "openenv", offline_settings(cfg.env))


def preflight(cfg: RunConfig) -> None:
    """The start-up check: offline data where the run needs it, then one session of the server plays
    ``env.check_games`` games through the checker (``archer.envs.checker.check_text_game``).

    Raises:
        DatasetError: the run needs offline data and ``data.path`` is not given.
        MissingExtraError: openenv-core is not installed.
        OpenEnvServerError: the server is down, slow, full or answers with an error (naming ``env.server_url``).
        ConfigError: the server's games break the contract (naming ``env.server_url`` and the first error).
    """
    from archer.envs.checker import check_text_game
    from archer.envs.openenv.client import OpenEnvGame, require_openenv

    env = cfg.env
    assert isinstance(env, OpenEnvEnvConfig)
    clones = getattr(cfg.algorithm, "bc_coeff", 0.0) > 0  # ArCHer's behaviour-cloning term reads the dataset
    if (cfg.pretrain is not None or not cfg.algorithm.online or cfg.prefill_buffer_from_data or clones) and (
        cfg.data.path is None
    ):
        raise DatasetError(
            f"data.path: this run needs offline data, and env=openenv (env.server_url={env.server_url}) has no "
            "scripted player to generate it; give data.path=<a trajectory file>, or pretrain=null (and "
            "algorithm.bc_coeff=0) for an online run from scratch"
        )
    require_openenv()
    label = f"env.server_url={env.server_url}"
    made: list[OpenEnvGame] = []

    def make_game() -> OpenEnvGame:
        made.append(OpenEnvGame(env))
        return made[-1]

    seed = max(cfg.seed, 0)
    try:
        make_game().reset(seed=seed)  # a server that is down, slow or full fails here, by name
        if env.check_games == 0:
            return
        report = check_text_game(
            make_game,
            num_games=env.check_games,
            max_turns=env.max_turns,
            seed=seed,
            slow_step_s=env.slow_step_s,
            label=label,
        )
    finally:
        for game in made:  # each is a session the server would keep for the whole run
            game.close()
    if report.errors:
        error = report.errors[0]
        raise ConfigError(error if error.startswith(label) else f"{label}: {error}")
    for line in report.warnings:
        log.warning("%s: %s", label, line)


OPENENV = GameSpec(
    name="openenv",
    config=OpenEnvEnvConfig,
    build_env=build_env,
    load_offline=load_offline,
    preflight=preflight,
)
