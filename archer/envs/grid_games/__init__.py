"""The grid games, FrozenLake and Sokoban, played in text with the moves up, down, left and right.

- ``grid.py``: what both games share (the board as text, the move grammar, the batched environment).
- ``frozen_lake.py``: FrozenLake on gymnasium's dynamics (the ``grid`` extra), with generated maps.
- ``sokoban.py``, ``sokoban_rooms.py``: Sokoban and its generated, solvable rooms.
- ``players.py``: the noisy solver player and the offline dataset it plays.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from archer.config import EnvConfig, RunConfig
from archer.envs.base import BatchedTextEnv
from archer.envs.grid_games.config import FrozenLakeEnvConfig, SokobanEnvConfig
from archer.envs.oracles import Oracle
from archer.envs.spec import GameSpec

if TYPE_CHECKING:
    from archer.data.trajectory import Trajectory


def build_frozen_lake(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.grid_games.frozen_lake import make_frozen_lake_env

    return make_frozen_lake_env(cfg, seed)


def build_sokoban(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.grid_games.sokoban import make_sokoban_env

    return make_sokoban_env(cfg, seed)


def load_offline(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.envs.grid_games.players import offline_trajectories

    return offline_trajectories(cfg, cache_dir, progress)


FROZEN_LAKE = GameSpec(
    name="frozenlake", config=FrozenLakeEnvConfig, build_env=build_frozen_lake, load_offline=load_offline
)
SOKOBAN = GameSpec(name="sokoban", config=SokobanEnvConfig, build_env=build_sokoban, load_offline=load_offline)
