"""dev/anchored_optimum.py: its tables against the games' own exact values, its optimiser against the KL
objective's closed form, and the advantage scale and the anchors' verdict on one state worked by hand."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np
import pytest
import torch

from archer.envs.grid_games import frozen_lake, sokoban
from archer.envs.grid_games.grid import DIRECTIONS
from archer.envs.grid_games.sokoban_rooms import generate_room
from tests.conftest import load_dev_script

pytest.importorskip("gymnasium")


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load_dev_script("anchored_optimum")


def test_tables_hold_the_games_exact_values(tool: ModuleType) -> None:
    desc = frozen_lake.generate_map(5000, 4, 0.8, 10)
    game = tool.frozen_lake_game(desc, 10, True)
    q = tool.move_values(game, 0.95)
    for cell, turns in list(game.outcomes)[:25]:
        expected = frozen_lake.move_values(desc, divmod(cell, 4), turns, True, 0.95)
        np.testing.assert_allclose(q[(cell, turns)], [expected[m] for m in DIRECTIONS], atol=1e-12)
    # Played greedily by Q* at gamma 1, the table wins exactly the best policy's chance.
    greedy = tool.move_values(game, 1.0)
    _, won = tool.occupancy(game, lambda state: np.eye(4)[greedy[state].argmax()])
    assert won == pytest.approx(frozen_lake.optimal_success(desc, 10, True), abs=1e-12)
    room = generate_room(0, 6, 6, 1, 10)
    table = tool.move_values(tool.sokoban_game(room, 10), 0.95)
    expected = sokoban.move_values(room, 10, 0.95)
    np.testing.assert_allclose(table[(room, 10)], [expected[m] for m in DIRECTIONS], atol=1e-12)


def test_data_distribution_of_one_solver_is_its_own_policy(tool: ModuleType) -> None:
    game = tool.frozen_lake_game(frozen_lake.generate_map(5001, 4, 0.8, 10), 10, True)
    data = tool.data_distribution(game, [0.2])
    move = game.solver[game.start]
    expected = np.full(4, 0.05)
    expected[move] += 0.8
    np.testing.assert_allclose(data[game.start], expected)
    for probs in data.values():
        assert probs.sum() == pytest.approx(1.0)


def test_maximise_finds_the_kl_objectives_closed_form(tool: ModuleType) -> None:
    # Without the cloning term the optimum of E_p[Q] / c - kl KL(p || rho) is p proportional to rho exp(Q / (c kl)).
    gen = torch.Generator().manual_seed(0)
    q = torch.rand(5, 4, generator=gen, dtype=torch.float64) * 0.2
    data = torch.softmax(torch.randn(5, 4, generator=gen, dtype=torch.float64), dim=-1)
    objective = tool.Objective(kl=0.1, bc=0.0, temperature=0.5)
    logits = tool.maximise(q, data, objective, scale=1.0, steps=1000)
    rho = torch.softmax(data.log() / 0.5, dim=-1)
    closed = rho * torch.exp(q / 0.1)
    closed = closed / closed.sum(-1, keepdim=True)
    torch.testing.assert_close(torch.softmax(logits / 0.5, dim=-1), closed, atol=1e-4, rtol=0)


def _one_state(tool: ModuleType, q: list[float], data: list[float]):
    """A single-turn game of one state whose moves win with chance ``q`` (so Q* = q), its data ``data``."""
    moves = [[tool.Outcome(p, None, 1.0, True), tool.Outcome(1 - p, None, 0.0, False)] for p in q]
    game = tool.TabularGame("s", {"s": moves}, {"s": int(np.argmax(data))})
    table = tool.Table(
        [game], [{"s": 0}], torch.tensor([q], dtype=torch.float64), torch.tensor([data], dtype=torch.float64)
    )
    return table


def test_advantage_scale_and_the_anchors_on_one_state_by_hand(tool: ModuleType) -> None:
    # Q = (0.02, 0, 0, 0); the data plays move 1 at 0.7. Sampled at T = 0.5 the clone plays (d^2 / sum d^2):
    # (0.01, 0.49, 0.01, 0.01) / 0.52 = (0.01923, 0.94231, 0.01923, 0.01923); E Q = 0.02 * 0.01923 = 0.000385;
    # c^2 = 0.01923 * (0.02 - 0.000385)^2 + 0.98077 * 0.000385^2 = 7.544e-6, c = 0.002747.
    table = _one_state(tool, [0.02, 0.0, 0.0, 0.0], [0.1, 0.7, 0.1, 0.1])
    start = table.data.log()
    assert table.advantage_scale(start, 0.5) == pytest.approx(math.sqrt(7.544e-6), rel=2e-3)
    # Raw values: the KL optimum is rho_T exp(Q / 0.1): move 0 gets 0.01923 e^0.2 against 0.94231: move 1 stays.
    raw = tool.optimum(table, tool.Objective(kl=0.1, bc=0.3, norm="none"))
    assert raw.success == pytest.approx(0.0) and raw.changed_moves == 0.0
    # In units of c the gap is 7.3 KL-weights' worth: the optimum plays the better move.
    scaled = tool.optimum(table, tool.Objective(kl=0.1, bc=0.3, norm="std_norm"))
    assert scaled.success_at_start_scale == pytest.approx(0.02) and scaled.success == pytest.approx(0.02)
    assert scaled.changed_moves == 1.0


def test_the_games_are_the_benchmarks_evaluation_maps(tool: ModuleType) -> None:
    from archer.config import EvalConfig
    from archer.evaluation import evaluation_game_ids

    games, gamma, epsilons = tool.build_games("frozenlake", 2)
    first = evaluation_game_ids(EvalConfig(num_episodes=256, seed=2024), range(10_000))[0]
    desc = frozen_lake.generate_map(first, 4, 0.8, 10)
    greedy = tool.move_values(games[0], 1.0)
    _, won = tool.occupancy(games[0], lambda state: np.eye(4)[greedy[state].argmax()])
    assert won == pytest.approx(frozen_lake.optimal_success(desc, 10, True), abs=1e-12)
    assert (len(games), gamma, epsilons) == (2, 0.95, [0.0, 0.1, 0.25, 0.5, 1.0])
