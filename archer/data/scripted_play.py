"""Offline datasets played by scripted players: play them in batches, and cache the result per setting.

Each game package supplies its player (``archer.envs.adventure.players``, ``archer.envs.grid_games.players``);
what is common lives here. Every episode records its player's noise level in ``info["noise"]``. Datasets are
generated once per setting and cached as ``archer.data.trajectory_file`` JSON under ``<cache_dir>/datasets``;
``data.path`` loads such a file instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from archer.config import RunConfig
from archer.data.rollout import play_batch
from archer.data.trajectory import Trajectory
from archer.data.trajectory_file import load_trajectories, save_trajectories
from archer.envs.base import BatchedTextEnv

log = logging.getLogger(__name__)

Player = Callable[[int], str]
"""A scripted player of one game: given the game's slot, the next action."""


def play_scripted(
    env: BatchedTextEnv,
    make_player: Callable[[], tuple[Player, float]],
    num_episodes: int,
    progress: bool = False,
) -> list[Trajectory]:
    """Play ``num_episodes`` games in batches, each game with its own player from ``make_player``.

    Args:
        env: the environment (already seeded).
        make_player: returns a new game's player and its noise level (recorded in ``info["noise"]``).
        num_episodes: games to play.
        progress: show a progress bar.

    Returns:
        One trajectory per game.
    """
    trajectories: list[Trajectory] = []
    with tqdm(total=num_episodes, desc="scripted games", unit="game", disable=not progress, leave=False) as bar:
        while len(trajectories) < num_episodes:
            size = min(env.batch_size, num_episodes - len(trajectories))
            observations = env.reset(count=size)
            players, levels = zip(*(make_player() for _ in range(size)), strict=True)

            def act(_: list[str], players: tuple[Player, ...] = players) -> list[str]:
                # ``play_batch`` asks for the games still active, in slot order: the same list as here.
                return [players[slot](slot) for slot, alive in enumerate(env.active) if alive]

            batch = play_batch(env, act, observations)
            for trajectory, level in zip(batch, levels, strict=True):
                trajectory.info["noise"] = level
            trajectories.extend(batch)
            bar.update(size)
    return trajectories


DatasetGenerator = Callable[[Any, int, list[float], int, bool], list[Trajectory]]
"""Plays a dataset: (environment, episodes, noise levels to draw from, seed, show progress) -> trajectories."""


def observation_settings(cfg: RunConfig, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The environment settings a dataset's observations and rewards depend on (checked when a file is loaded):
    ``cfg.env`` without the fields that do not shape observations, plus the game's ``extra`` settings."""
    skip = {"name", "batch_size", "data_noise_levels", "data_epsilons", "game_path"}
    settings = {key: value for key, value in asdict(cfg.env).items() if key not in skip}
    return settings | (extra or {})


def cached_scripted_trajectories(
    cfg: RunConfig,
    cache_dir: Path,
    env: BatchedTextEnv,
    settings: dict[str, Any],
    levels: list[float],
    generate: DatasetGenerator,
    progress: bool = False,
) -> list[Trajectory]:
    """The offline dataset of a scripted-player game: ``data.path``, or generated once with ``generate`` and cached.

    Args:
        cfg: the run config.
        cache_dir: the cache folder; datasets go to its ``datasets`` folder.
        env: the game's environment, seeded with ``cfg.data.generate_seed``.
        settings: ``observation_settings`` of the game.
        levels: the player's noise levels, one drawn per episode.
        generate: plays the dataset.
        progress: show a progress bar.

    Raises:
        TrajectoryFileError: ``data.path`` is missing, malformed or made with other observation settings.
    """
    env_cfg = cfg.env
    if cfg.data.path:
        return load_trajectories(cfg.data.path, env_cfg.name, settings)
    episodes, seed = cfg.data.generate_episodes, cfg.data.generate_seed
    key = json.dumps({"settings": settings, "levels": levels, "episodes": episodes, "seed": seed}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    path = cache_dir / "datasets" / f"{env_cfg.name}-{episodes}-seed{seed}-{digest}.json"
    if not path.exists():
        log.info("generating %d scripted %s games into %s", episodes, env_cfg.name, path)
        trajectories = generate(env, episodes, levels, seed, progress)
        save_trajectories(trajectories, path, env_cfg.name, settings)
    return load_trajectories(path, env_cfg.name, settings)
