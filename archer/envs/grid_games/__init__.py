"""The grid games, FrozenLake and Sokoban, played in text with the moves up, down, left and right.

- ``grid.py``: what both games share (the board as text, the move grammar, the batched environment).
- ``frozen_lake.py``: FrozenLake on gymnasium's dynamics (the ``grid`` extra), with generated maps and every move's
  exact value (finite-horizon value iteration).
- ``sokoban.py``, ``sokoban_rooms.py``: Sokoban, its generated, solvable rooms and every move's exact value.
- ``players.py``: the noisy solver player and the offline dataset it plays.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from archer.config import EnvConfig, RunConfig
from archer.envs.base import BatchedTextEnv
from archer.envs.grid_games.config import FrozenLakeEnvConfig, SokobanEnvConfig
from archer.envs.grid_games.grid import DIRECTIONS, grid_state
from archer.envs.oracles import Oracle
from archer.envs.spec import BestFigures, GameSpec

if TYPE_CHECKING:
    from archer.data.trajectory import Trajectory


def build_frozen_lake(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.grid_games.frozen_lake import make_frozen_lake_env

    return make_frozen_lake_env(cfg, seed)


def build_sokoban(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.grid_games.sokoban import make_sokoban_env

    return make_sokoban_env(cfg, seed)


def best_frozen_lake(cfg: EnvConfig, game_ids: Sequence[int]) -> BestFigures:
    """The best policy's chance of reaching the goal within ``max_turns`` on each map of ``game_ids`` (finite-horizon
    value iteration on the game's slips), averaged; the return is the same figure (reward 1 on the goal)."""
    from archer.envs.grid_games.frozen_lake import generate_map, optimal_success

    assert isinstance(cfg, FrozenLakeEnvConfig)
    chances = [
        optimal_success(generate_map(i, cfg.size, cfg.frozen_prob, cfg.max_turns), cfg.max_turns, cfg.is_slippery)
        for i in game_ids
    ]
    return BestFigures.averaged(chances, chances, "the optimal policy of each map (finite-horizon value iteration)")


def best_sokoban(cfg: EnvConfig, game_ids: Sequence[int]) -> BestFigures:
    """The exact (breadth-first) solver played through the game on ``game_ids``: its success within ``max_turns``
    and its return (the shortest solution pays the fewest step costs)."""
    from archer.data.rollout import collect_trajectories
    from archer.envs.grid_games.sokoban import make_sokoban_env

    env = make_sokoban_env(cfg, seed=0)

    def solver(_: list[str]) -> list[str]:
        # The games still being played, in slot order (the list ``play_batch`` asks about).
        return [env.solver_move(slot) or "up" for slot, alive in enumerate(env.active) if alive]

    games = collect_trajectories(env, solver, game_ids=list(game_ids))
    return BestFigures.averaged(
        [g.episode_return for g in games],
        [g.success for g in games],
        "the exact solver (breadth-first search over player and box positions)",
    )


def load_offline(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.envs.grid_games.players import offline_trajectories

    return offline_trajectories(cfg, cache_dir, progress)


FROZEN_LAKE = GameSpec(
    name="frozenlake",
    config=FrozenLakeEnvConfig,
    build_env=build_frozen_lake,
    load_offline=load_offline,
    templates={"grid_state": grid_state},
    best=best_frozen_lake,
    moves=DIRECTIONS,
)
SOKOBAN = GameSpec(
    name="sokoban",
    config=SokobanEnvConfig,
    build_env=build_sokoban,
    load_offline=load_offline,
    templates={"grid_state": grid_state},
    best=best_sokoban,
    moves=DIRECTIONS,
)
