"""Where does ArCHer's actor objective, anchors included, have its optimum on a grid game? A tabular calculation.

Usage (from the repository root; the grid game's env config as ``archer_frozenlake`` / ``archer_sokoban`` sets it)::

    python dev/anchored_optimum.py frozenlake --kl 0.1 --bc 0.3 --norm none --norm std_norm
    python dev/anchored_optimum.py sokoban --kl 0.1 --bc 0.3 --norm std_norm --maps 64

For every state of the evaluation games (cell or room, and the turns left), the actor's per-state objective is
maximised over the four moves' logits ``z``, tabularly (unlimited steps, no function approximation):

    J(z) = E_{a ~ p_T}[Q*(s, a)] / c  -  kl * KL(p_T || rho_T)  +  bc * sum_a d(a | s) log p_1(a)

``p_T = softmax(z / T)`` is the distribution the actor samples and scores (temperature ``T``, the recipe's 0.5),
``p_1`` the plain softmax the cloning term scores, ``Q*`` the game's exact move values under the critic's discount,
``d`` the offline data's move distribution at ``s`` (the epsilon-noisy solver, each epsilon of ``env.data_epsilons``
weighted by how often its games visit ``s``) and ``rho = d`` a perfect clone of that data, sampled at ``T`` (the KL
penalty's frozen start). This is the objective whose score-function gradient ``kl_penalised_reinforce_loss`` plus
``bc_coeff * bc_loss`` follows, with the actor batch and the cloning batch drawn from the same states.

``c`` is the advantages' scale: 1 with ``--norm none`` (the paper); with ``--norm std_norm``
(``algorithm.advantage_norm`` ``std_norm``, and ``mean_std_norm``, whose centring leaves the expected gradient
unchanged) the standard deviation of ``A = Q*(s, a) - E_{p_T} Q*(s, .)`` over the states the policy visits and the
moves it samples, found as a fixed point: computed at the start, the optimum found, ``c`` recomputed at that
optimum, three times (``optimum``'s ``rounds``).

The optimum's greedy moves (``argmax z``) are then played exactly on the evaluation games (FrozenLake's slips by
their probabilities), giving the success rate the objective's optimum can reach whatever the critic and however
many steps: the ceiling the anchors set. Twenty Questions has no finite move set; its scale is given in
docs/methods.md from the game's values.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from archer.envs.grid_games import frozen_lake, sokoban
from archer.envs.grid_games.grid import DIRECTIONS
from archer.envs.grid_games.sokoban_rooms import SokobanRoom, generate_room, solve

MOVES = len(DIRECTIONS)


@dataclass(frozen=True)
class Outcome:
    """One way a move can turn out: its probability, the next state (None when the game ends), the reward, and
    whether the game ends won."""

    prob: float
    next: Hashable | None
    reward: float
    won: bool


@dataclass
class TabularGame:
    """A finite-horizon game as a table: ``start``, and for every state reachable from it the outcomes of each of
    the four moves (in ``DIRECTIONS`` order) and the solver's move (None where it has none)."""

    start: Hashable
    outcomes: dict[Hashable, list[list[Outcome]]]
    solver: dict[Hashable, int | None]

    def order(self) -> list[Hashable]:
        """The states, each before every state it can lead to (breadth-first from the start; turns left fall)."""
        seen, frontier = [self.start], [self.start]
        index = {self.start}
        while frontier:
            nxt = []
            for state in frontier:
                for move in self.outcomes[state]:
                    for outcome in move:
                        if outcome.next is not None and outcome.next not in index:
                            index.add(outcome.next)
                            nxt.append(outcome.next)
            seen.extend(nxt)
            frontier = nxt
        return seen


def _explore(
    start: Hashable, moves: Callable[[Hashable], list[list[Outcome]]], solver: Callable[[Hashable], int | None]
) -> TabularGame:
    outcomes: dict[Hashable, list[list[Outcome]]] = {}
    stack = [start]
    while stack:
        state = stack.pop()
        if state in outcomes:
            continue
        outcomes[state] = moves(state)
        stack.extend(o.next for move in outcomes[state] for o in move if o.next is not None)
    return TabularGame(start, outcomes, {state: solver(state) for state in outcomes})


def frozen_lake_game(desc: tuple[str, ...], max_turns: int, is_slippery: bool) -> TabularGame:
    """Map ``desc`` as a table over (cell, turns left), with gymnasium's own transitions (its slips exactly)."""
    game = frozen_lake._import_frozen_lake()(desc=list(desc), is_slippery=is_slippery)
    cols = len(desc[0])
    start = next(r * cols + c for r, row in enumerate(desc) for c, ch in enumerate(row) if ch == "S")

    def moves(state: Hashable) -> list[list[Outcome]]:
        cell, turns = state
        return [
            [
                Outcome(p, None if done or turns == 1 else (nxt, turns - 1), float(r), r > 0)
                for p, nxt, r, done in game.P[cell][a]
            ]
            for a in range(MOVES)
        ]

    def solver(state: Hashable) -> int | None:
        path = frozen_lake.shortest_path(desc, divmod(state[0], cols))
        return DIRECTIONS.index(path[0]) if path else None

    return _explore((start, max_turns), moves, solver)


def sokoban_game(room: SokobanRoom, max_turns: int) -> TabularGame:
    """Room ``room`` as a table over (position, turns left), with the game's rewards (``sokoban.move_reward``)."""

    def moves(state: Hashable) -> list[list[Outcome]]:
        position, turns = state
        out = []
        for move in DIRECTIONS:
            after, _ = position.push(move)
            reward = sokoban.STEP_REWARD + sokoban.move_reward(position, after)
            ends = after.solved or turns == 1
            out.append([Outcome(1.0, None if ends else (after, turns - 1), reward, after.solved)])
        return out

    def solver(state: Hashable) -> int | None:
        path = solve(state[0])
        return DIRECTIONS.index(path[0]) if path else None

    return _explore((room, max_turns), moves, solver)


def move_values(game: TabularGame, gamma: float) -> dict[Hashable, np.ndarray]:
    """``Q*`` of the four moves at every state (finite-horizon dynamic programming, discount ``gamma``)."""
    values: dict[Hashable, float] = {}
    q: dict[Hashable, np.ndarray] = {}
    for state in reversed(game.order()):
        q[state] = np.array(
            [
                sum(o.prob * (o.reward + (0.0 if o.next is None else gamma * values[o.next])) for o in move)
                for move in game.outcomes[state]
            ]
        )
        values[state] = float(q[state].max())
    return q


def occupancy(game: TabularGame, policy: Callable[[Hashable], np.ndarray]) -> tuple[dict[Hashable, float], float]:
    """How often each state is visited when ``policy`` (a state's four move probabilities) plays from the start,
    and the chance the game is won."""
    visits = {state: 0.0 for state in game.outcomes}
    visits[game.start] = 1.0
    won = 0.0
    for state in game.order():
        if visits[state] == 0.0:
            continue
        for prob, move in zip(policy(state), game.outcomes[state], strict=True):
            for o in move:
                mass = visits[state] * prob * o.prob
                if o.next is not None:
                    visits[o.next] += mass
                won += mass * o.won
    return visits, won


def noisy_solver(game: TabularGame, epsilon: float) -> Callable[[Hashable], np.ndarray]:
    """The data's player: the solver's move, or a uniformly random one with probability ``epsilon`` (always random
    where the solver has no move), as ``grid_games.players.NoisySolver`` plays."""

    def policy(state: Hashable) -> np.ndarray:
        move = game.solver[state]
        if move is None:
            return np.full(MOVES, 1.0 / MOVES)
        probs = np.full(MOVES, epsilon / MOVES)
        probs[move] += 1.0 - epsilon
        return probs

    return policy


def data_distribution(game: TabularGame, epsilons: Sequence[float]) -> dict[Hashable, np.ndarray]:
    """The offline data's move distribution at every state: the noisy solvers' (one epsilon per game, drawn
    uniformly from ``epsilons``) weighted by how often each visits the state; the epsilons' mean mix where none
    does."""
    players = [noisy_solver(game, eps) for eps in epsilons]
    visits = [occupancy(game, player)[0] for player in players]
    mixed = noisy_solver(game, float(np.mean(epsilons)))
    out = {}
    for state in game.outcomes:
        weights = np.array([v[state] for v in visits])
        if weights.sum() <= 0:
            out[state] = mixed(state)
        else:
            out[state] = sum(w * p(state) for w, p in zip(weights, players, strict=True)) / weights.sum()
    return out


@dataclass(frozen=True)
class Objective:
    """The actor's anchors and sampling: ``kl`` (``kl_coeff``), ``bc`` (``bc_coeff``), the sampling temperature,
    the advantages' normalisation (``none`` or ``std_norm``)."""

    kl: float
    bc: float
    temperature: float = 0.5
    norm: str = "none"


def maximise(
    q: torch.Tensor, data: torch.Tensor, objective: Objective, scale: float, steps: int = 1500
) -> torch.Tensor:
    """The logits (N, 4) maximising the per-state objective (see the module's docstring) at every one of N states,
    from the perfect clone's logits ``log data``; ``q`` (N, 4) the move values, ``scale`` the advantages' ``c``."""
    log_data = data.clamp_min(1e-12).log()
    reference = torch.log_softmax(log_data / objective.temperature, dim=-1)
    logits = log_data.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([logits], lr=0.05)
    for _ in range(steps):
        sampled = torch.log_softmax(logits / objective.temperature, dim=-1)
        probs = sampled.exp()
        value = (probs * q).sum(-1) / scale
        kl = (probs * (sampled - reference)).sum(-1)
        cloning = (data * torch.log_softmax(logits, dim=-1)).sum(-1)
        loss = -(value - objective.kl * kl + objective.bc * cloning).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return logits.detach()


@dataclass
class Table:
    """Every state of several games, stacked: the games, each state's row, and the values, data and logits."""

    games: list[TabularGame]
    rows: list[dict[Hashable, int]]
    q: torch.Tensor
    data: torch.Tensor

    @classmethod
    def build(cls, games: list[TabularGame], gamma: float, epsilons: Sequence[float]) -> Table:
        rows, q_rows, d_rows = [], [], []
        for game in games:
            values, data = move_values(game, gamma), data_distribution(game, epsilons)
            index = {}
            for state in game.outcomes:
                index[state] = len(q_rows)
                q_rows.append(values[state])
                d_rows.append(data[state])
            rows.append(index)
        return cls(games, rows, torch.tensor(np.array(q_rows)), torch.tensor(np.array(d_rows)))

    def play(self, probs: torch.Tensor) -> tuple[list[dict[Hashable, float]], float]:
        """Each game's state visits under the move probabilities ``probs`` (N, 4), and the mean chance of a win."""
        visits, wins = [], []
        for game, index in zip(self.games, self.rows, strict=True):
            v, won = occupancy(game, lambda state, index=index: probs[index[state]].numpy())
            visits.append(v)
            wins.append(won)
        return visits, float(np.mean(wins))

    def greedy_success(self, logits: torch.Tensor) -> float:
        """The mean chance of a win when every game is played by ``argmax logits``."""
        greedy = torch.nn.functional.one_hot(logits.argmax(-1), MOVES).double()
        return self.play(greedy)[1]

    def advantage_scale(self, logits: torch.Tensor, temperature: float) -> float:
        """The standard deviation of ``Q*(s, a) - E_{p_T} Q*(s, .)`` over the states the sampling policy visits
        and the moves it samples (the spread ``advantage_norm=std_norm`` divides by)."""
        probs = torch.softmax(logits / temperature, dim=-1)
        visits, _ = self.play(probs)
        weights = torch.zeros(len(self.q), dtype=torch.float64)
        for v, index in zip(visits, self.rows, strict=True):
            for state, mass in v.items():
                weights[index[state]] = mass
        advantages = self.q - (probs * self.q).sum(-1, keepdim=True)
        second = (weights * (probs * advantages.square()).sum(-1)).sum() / weights.sum()
        return float(second.sqrt())


@dataclass(frozen=True)
class Optimum:
    """The objective's optimum: its greedy success, the scale it was found at, and the share of visited states
    whose greedy move differs from the data's; for ``norm=std_norm`` also the greedy success at the start's scale
    (the optimum if ``c`` stayed what it is at the start; the fixed point's ``c`` shrinks as the policy sharpens)."""

    objective: Objective
    success: float
    scale: float
    changed_moves: float
    success_at_start_scale: float


def optimum(table: Table, objective: Objective, rounds: int = 3) -> Optimum:
    """The optimum of ``objective`` on ``table`` (for ``norm=std_norm`` the scale's fixed point after ``rounds``)."""
    start = table.data.clamp_min(1e-12).log()
    scale = 1.0 if objective.norm == "none" else table.advantage_scale(start, objective.temperature)
    logits = maximise(table.q, table.data, objective, scale)
    at_start_scale = table.greedy_success(logits)
    for _ in range(rounds if objective.norm != "none" else 0):
        scale = table.advantage_scale(logits, objective.temperature)
        logits = maximise(table.q, table.data, objective, scale)
    greedy_visits, _ = table.play(torch.nn.functional.one_hot(logits.argmax(-1), MOVES).double())
    changed = visited = 0.0
    for v, index in zip(greedy_visits, table.rows, strict=True):
        for state, mass in v.items():
            if mass > 0:
                visited += 1
                row = index[state]
                changed += int(logits[row].argmax() != table.data[row].argmax())
    return Optimum(objective, table.greedy_success(logits), scale, changed / max(visited, 1.0), at_start_scale)


def build_games(task: str, maps: int, first_id: int | None = None) -> tuple[list[TabularGame], float, list[float]]:
    """The first ``maps`` of the task's evaluation games (the benchmark's: 256 drawn with ``eval.seed`` 2024 from
    every map or room, ``evaluation_game_ids``), or with ``first_id`` the games ``first_id`` .. ``first_id + maps -
    1``; the critic's discount and the data's epsilons, as ``archer_frozenlake`` / ``archer_sokoban`` set them."""
    from archer.config import EvalConfig
    from archer.envs.grid_games.config import FrozenLakeEnvConfig, SokobanEnvConfig
    from archer.evaluation import evaluation_game_ids

    pool = FrozenLakeEnvConfig().num_maps if task == "frozenlake" else SokobanEnvConfig().num_rooms
    ids = evaluation_game_ids(EvalConfig(num_episodes=256, seed=2024), range(pool))[:maps]
    if first_id is not None:
        ids = list(range(first_id, first_id + maps))
    if task == "frozenlake":
        cfg = FrozenLakeEnvConfig()
        games = [
            frozen_lake_game(
                frozen_lake.generate_map(i, cfg.size, cfg.frozen_prob, cfg.max_turns), cfg.max_turns, cfg.is_slippery
            )
            for i in ids
        ]
        return games, 0.95, list(cfg.data_epsilons)
    cfg = SokobanEnvConfig()
    rooms = [generate_room(i, cfg.height, cfg.width, cfg.num_boxes, cfg.max_turns) for i in ids]
    return [sokoban_game(room, cfg.max_turns) for room in rooms], 0.95, list(cfg.data_epsilons)


def main(argv: Sequence[str] | None = None) -> list[Optimum]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=("frozenlake", "sokoban"))
    parser.add_argument("--kl", type=float, nargs="+", default=[0.1], help="kl_coeff values")
    parser.add_argument("--bc", type=float, nargs="+", default=[0.3], help="bc_coeff values")
    parser.add_argument("--norm", choices=("none", "std_norm"), action="append", help="advantage_norm (repeatable)")
    parser.add_argument("--temperature", type=float, default=0.5)
    parser.add_argument("--maps", type=int, default=256, help="the first N of the benchmark's evaluation games")
    parser.add_argument("--first-id", type=int, help="instead, games FIRST_ID .. FIRST_ID + N - 1")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # small tensors: threads only add overhead (and the neighbours' load)
    if not 1 <= args.maps <= 256:
        parser.error("--maps must be between 1 and 256 (the benchmark's evaluation games)")
    games, gamma, epsilons = build_games(args.task, args.maps, args.first_id)
    table = Table.build(games, gamma, epsilons)
    start = table.data.clamp_min(1e-12).log()
    print(f"{args.task}: {args.maps} games, {len(table.q)} states, gamma {gamma}, data epsilons {epsilons}")
    print(
        f"the perfect clone's greedy success {table.greedy_success(start):.3f}; the exact values' (argmax Q*) "
        f"{table.greedy_success(table.q):.3f}; advantage spread at the clone's samples "
        f"{table.advantage_scale(start, args.temperature):.4f}"
    )
    results = []
    print(
        "| kl | bc | norm | c (fixed point) | greedy success at the optimum | at the start's c "
        "| visited states whose greedy move changes |"
    )
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for norm in args.norm or ["none"]:
        for kl in args.kl:
            for bc in args.bc:
                best = optimum(table, Objective(kl, bc, args.temperature, norm))
                results.append(best)
                print(
                    f"| {kl} | {bc} | {norm} | {best.scale:.4f} | {best.success:.3f} "
                    f"| {best.success_at_start_scale:.3f} | {best.changed_moves:.2f} |"
                )
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
