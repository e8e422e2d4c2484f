"""Games of a grid game's optimal player, as an offline dataset: what a policy cloned on the best moves reaches.

The benchmark's starts clone the BFS solver with random moves mixed in (``archer/envs/grid_games/players.py``).
This script plays the same number of games with the optimal player instead (on FrozenLake the move of highest
``Q*`` by finite-horizon value iteration over the slips, ``FrozenLakeEnv.move_values`` at gamma 1: the chance of
reaching the goal in the turns left; ties go to the first of ``DIRECTIONS``) and writes them in the trajectory file
format. Cloning them with the start's own schedule (``bc_frozenlake data.path=<file>``) says how far the policy
model gets when told the best move at every state it is shown, a ceiling for what the benchmark's methods can draw
from far noisier signals. Usage (from the repository root):

    python dev/optimal_play_data.py --config-name bc_frozenlake --out optimal_frozenlake.json
    cd scripts && python run.py --config-name bc_frozenlake data.path=../optimal_frozenlake.json eval.num_episodes=256
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from devkit import parse_run, run_parser

from archer.config import RunConfig
from archer.data.scripted_play import observation_settings, play_scripted
from archer.data.trajectory import Trajectory
from archer.data.trajectory_file import save_trajectories
from archer.envs.grid_games.config import FrozenLakeEnvConfig
from archer.envs.grid_games.frozen_lake import FrozenLakeEnv, make_frozen_lake_env
from archer.envs.grid_games.grid import DIRECTIONS


class OptimalPlayer:
    """FrozenLake's optimal player: the move of highest ``Q*`` (gamma 1) where the player stands, first of
    ``DIRECTIONS`` on ties."""

    def __init__(self, env: FrozenLakeEnv) -> None:
        self.env = env

    def __call__(self, slot: int) -> str:
        values = self.env.move_values(slot)
        return max(DIRECTIONS, key=lambda move: values[move])


def optimal_games(cfg: RunConfig, num_episodes: int) -> list[Trajectory]:
    """``num_episodes`` games of the optimal player on the maps ``cfg.env`` draws with ``cfg.data.generate_seed``
    (the maps the noisy solver's dataset is played on)."""
    if not isinstance(cfg.env, FrozenLakeEnvConfig):
        raise SystemExit(f"optimal play is FrozenLake's (value iteration over the slips); got env={cfg.env.name}")
    env = make_frozen_lake_env(cfg.env, seed=cfg.data.generate_seed)
    return play_scripted(env, lambda: (OptimalPlayer(env), 0.0), num_episodes)


def main(argv: Sequence[str] | None = None) -> None:
    parser = run_parser(__doc__.splitlines()[0], default_config="bc_frozenlake")
    parser.add_argument("--out", type=Path, required=True, help="the trajectory file to write")
    parser.add_argument("--episodes", type=int, default=None, help="games to play (default: data.generate_episodes)")
    args, cfg = parse_run(parser, argv)
    episodes = args.episodes or cfg.data.generate_episodes
    trajectories = optimal_games(cfg, episodes)
    save_trajectories(trajectories, args.out, cfg.env.name, observation_settings(cfg))
    solved = sum(t.rewards[-1] > 0 for t in trajectories) / len(trajectories)
    moves = sum(len(t.actions) for t in trajectories)
    print(f"{len(trajectories)} optimal games ({moves} moves, solved {solved:.3f}) written to {args.out}")


if __name__ == "__main__":
    main()
