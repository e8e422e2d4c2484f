"""The grid games' offline dataset: the BFS solver played with random moves.

Each episode follows the environment's BFS solver (first move of a shortest solution from the current position),
but moves at random instead with probability ``epsilon``, drawn per episode from ``env.data_epsilons``; where the
solver has no solution (a hole reached, a box stuck) it moves at random. Caching and the file format:
``archer.data.scripted_play``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from archer.config import RunConfig
from archer.data.scripted_play import Player, cached_scripted_trajectories, observation_settings, play_scripted
from archer.data.trajectory import Trajectory
from archer.envs.grid_games.config import FrozenLakeEnvConfig, GridEnvConfig
from archer.envs.grid_games.frozen_lake import make_frozen_lake_env
from archer.envs.grid_games.grid import DIRECTIONS
from archer.envs.grid_games.sokoban import make_sokoban_env


class NoisySolver:
    """A grid game's scripted player: the BFS solver's move, or a random move with probability ``epsilon``."""

    def __init__(self, env: Any, epsilon: float, rng: random.Random) -> None:
        self.env = env
        self.epsilon = epsilon
        self.rng = rng

    def __call__(self, slot: int) -> str:
        if self.rng.random() >= self.epsilon:
            move = self.env.solver_move(slot)
            if move is not None:
                return move
        return self.rng.choice(DIRECTIONS)


def generate_grid_dataset(
    env: Any, num_episodes: int, epsilons: list[float], seed: int, progress: bool = False
) -> list[Trajectory]:
    """Grid-game episodes of the epsilon-noisy BFS solver, played through ``env`` (a ``GridGameEnv``)."""
    rng = random.Random(seed)

    def make_player() -> tuple[Player, float]:
        epsilon = rng.choice(epsilons)
        return NoisySolver(env, epsilon, random.Random(rng.random())), epsilon

    return play_scripted(env, make_player, num_episodes, progress)


def offline_trajectories(cfg: RunConfig, cache_dir: Path, progress: bool = False) -> list[Trajectory]:
    """The offline dataset of a FrozenLake or Sokoban run: ``data.path``, or generated once and cached."""
    env_cfg = cfg.env
    assert isinstance(env_cfg, GridEnvConfig)
    make_env = make_frozen_lake_env if isinstance(env_cfg, FrozenLakeEnvConfig) else make_sokoban_env
    env = make_env(env_cfg, seed=cfg.data.generate_seed)
    return cached_scripted_trajectories(
        cfg, cache_dir, env, observation_settings(cfg), env_cfg.data_epsilons, generate_grid_dataset, progress
    )
