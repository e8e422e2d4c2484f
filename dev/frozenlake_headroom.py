"""How much room does FrozenLake leave between random play, the cloning data's player and the best? Exact figures.

On each evaluation map of the config (the benchmark's fixed draw, ``eval.num_episodes`` and ``eval.seed``) this
script computes the exact chance of reaching the goal within ``env.max_turns`` moves, by finite-horizon policy
evaluation over gymnasium's own transition table (the slips as the game makes them), for: uniform random moves;
the BFS solver the cloning data follows (``FrozenLakeEnv.solver_move``: a shortest hole-free path with the slips
ignored, a random move where there is none); that solver with random moves mixed in at each ``env.data_epsilons``
(the players of ``archer/envs/grid_games/players.py``) and their mix (one epsilon drawn per game, as the data is
played); and the optimal policy (``optimal_success``, the benchmark's best). A start cloned on the data can be
expected near the solver (its greedy move is the solver's wherever the clone has learnt the data's most frequent
move), so the table says where a task's start and its half gap lie against the players. Usage (from the
repository root):

    python dev/frozenlake_headroom.py --config-name archer_frozenlake eval.num_episodes=256
    python dev/frozenlake_headroom.py --config-name archer_frozenlake eval.num_episodes=256 env.is_slippery=false
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from devkit import parse_run, run_parser
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake

from archer.envs.grid_games.config import FrozenLakeEnvConfig
from archer.envs.grid_games.frozen_lake import generate_map, make_frozen_lake_env, optimal_success, shortest_path
from archer.envs.grid_games.grid import DIRECTIONS
from archer.evaluation import EvalGames

MovePolicy = Callable[[tuple[str, ...], tuple[int, int]], np.ndarray]
"""A stationary player: the map and the player's (row, column) to the probabilities of ``DIRECTIONS``."""

UNIFORM = np.full(len(DIRECTIONS), 1.0 / len(DIRECTIONS))


def random_moves(desc: tuple[str, ...], cell: tuple[int, int]) -> np.ndarray:
    """Each of the four moves with probability 1/4."""
    return UNIFORM


def noisy_solver(epsilon: float) -> MovePolicy:
    """The cloning data's player: the BFS solver's move with probability ``1 - epsilon``, a random move otherwise
    (and always where the solver has no path)."""

    def policy(desc: tuple[str, ...], cell: tuple[int, int]) -> np.ndarray:
        path = shortest_path(desc, cell)
        if not path:
            return UNIFORM
        solver = np.zeros(len(DIRECTIONS))
        solver[DIRECTIONS.index(path[0])] = 1.0
        return (1.0 - epsilon) * solver + epsilon * UNIFORM

    return policy


def policy_success(desc: tuple[str, ...], max_turns: int, is_slippery: bool, policy: MovePolicy) -> float:
    """The exact chance that ``policy`` reaches the goal of map ``desc`` from its start within ``max_turns`` moves:
    ``V_k(s) = sum_a policy(a | s) sum_s' P(s' | s, a) (r + V_{k-1}(s'))`` over gymnasium's transition table, with
    ``V_0 = 0`` and no value after a hole or the goal."""
    game = GymFrozenLake(desc=list(desc), is_slippery=is_slippery)
    cols = len(desc[0])
    num_states = len(desc) * cols
    moves = np.array([policy(desc, divmod(s, cols)) for s in range(num_states)])
    value = np.zeros(num_states)
    for _ in range(max_turns):
        value = np.array(
            [
                sum(
                    moves[s, a] * sum(p * (r + (0.0 if done else value[nxt])) for p, nxt, r, done in game.P[s][a])
                    for a in range(len(DIRECTIONS))
                )
                for s in range(num_states)
            ]
        )
    start = next(r * cols + c for r, row in enumerate(desc) for c, ch in enumerate(row) if ch == "S")
    return float(value[start])


def headroom(env_cfg: FrozenLakeEnvConfig, game_ids: Sequence[int]) -> dict[str, float]:
    """Each player's exact success, averaged over the maps ``game_ids``, by name (in the order printed)."""
    maps = [generate_map(i, env_cfg.size, env_cfg.frozen_prob, env_cfg.max_turns) for i in game_ids]

    def mean_success(policy: MovePolicy) -> float:
        return float(np.mean([policy_success(d, env_cfg.max_turns, env_cfg.is_slippery, policy) for d in maps]))

    figures = {"random moves": mean_success(random_moves)}
    by_epsilon = {eps: mean_success(noisy_solver(eps)) for eps in sorted(set(env_cfg.data_epsilons))}
    for eps, success in by_epsilon.items():
        figures[f"BFS solver, epsilon {eps:g}"] = success
    figures["the data's mix (one epsilon per game)"] = float(np.mean([by_epsilon[e] for e in env_cfg.data_epsilons]))
    figures["optimal (value iteration)"] = float(
        np.mean([optimal_success(d, env_cfg.max_turns, env_cfg.is_slippery) for d in maps])
    )
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = run_parser(__doc__.splitlines()[0], default_config="archer_frozenlake")
    _, cfg = parse_run(parser, argv)
    if not isinstance(cfg.env, FrozenLakeEnvConfig):
        raise SystemExit(f"the headroom table is FrozenLake's (exact policy evaluation); got env={cfg.env.name}")
    env = make_frozen_lake_env(cfg.env, seed=0)
    game_ids = EvalGames.from_config(cfg.eval, env.evaluation_pool()).greedy
    figures = headroom(cfg.env, game_ids)
    best = figures["optimal (value iteration)"]
    slip = "slippery" if cfg.env.is_slippery else "not slippery"
    print(f"FrozenLake {cfg.env.size}x{cfg.env.size}, {slip}, {cfg.env.max_turns} turns, {len(game_ids)} maps")
    print("| player | exact success | half of the gap from it to the best |")
    print("| --- | ---: | ---: |")
    for name, success in figures.items():
        print(f"| {name} | {success:.3f} | {(success + best) / 2:.3f} |")
    print(f"half of the best: {best / 2:.3f}")


if __name__ == "__main__":
    main()
