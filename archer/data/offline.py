"""Offline datasets as trajectories: each game's loader (``GameSpec.load_offline``) loads a configured file or
generates one with the game's scripted players and caches it."""

from __future__ import annotations

from pathlib import Path

from archer.config import RunConfig
from archer.data.trajectory import Trajectory
from archer.envs.registry import GAMES


def load_offline_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of ``cfg.env`` as trajectories.

    With ``cfg.data.path`` set, the file is loaded (and validated); otherwise a dataset is generated with the
    environment's scripted players, cached under ``cache_dir/datasets`` so every run reuses the same file.
    """
    with_data = [name for name, spec in GAMES.items() if spec.load_offline is not None]
    spec = GAMES.get(cfg.env.name)
    if spec is None or spec.load_offline is None:
        raise ValueError(
            f"environment {cfg.env.name!r} has no offline dataset; environments with one: {', '.join(with_data)}"
        )
    return spec.load_offline(cfg, cache_dir, progress)
