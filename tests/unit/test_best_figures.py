"""The best achievable figures a benchmark measures its tasks against (``GameSpec.best``), checked by hand."""

from __future__ import annotations

import pytest

from archer.envs.grid_games.config import FrozenLakeEnvConfig, SokobanEnvConfig
from archer.envs.grid_games.sokoban_rooms import generate_room, solve
from archer.envs.registry import GAMES
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.envs.twenty_questions.optimal import OptimalValues
from archer.envs.twenty_questions.words import SUBSET_WORDS


def test_optimal_questioner_returns_by_hand() -> None:
    words = [word for word in SUBSET_WORDS if word.name in ("dog", "banana", "truck")]
    assert [word.name for word in words] == ["dog", "banana", "truck"]
    values = OptimalValues(words, gamma=1.0)
    # V*(3 words) with gamma 1: a guess gives (2/3)(-1 + V*(2 words)) = (2/3)(-1 - 0.5) = -1; the best split gives
    # -1 + (1/3) 0 + (2/3)(-0.5) = -1.33. So the optimal player guesses in word order: dog at once (0), banana after
    # one refuted guess (-1), truck after two (-2); the mean is V* = -1.
    assert [values.optimal_return(i) for i in range(3)] == [0.0, -1.0, -2.0]
    assert values.state_value(0b111) == pytest.approx(-1.0)
    # A turn limit the optimal player cannot meet: truck is not won within 2 turns.
    assert values.optimal_return(2, max_turns=2) == -2.0


def test_twenty_questions_subset_best_is_the_optimal_value() -> None:
    cfg = TwentyQuestionsEnvConfig(words="subset10")
    best = GAMES["twenty_questions"].best(cfg, range(10))
    values = OptimalValues(SUBSET_WORDS, gamma=1.0)
    # Every word once: the mean of the optimal player's returns is V* of the full list (the word is uniform).
    assert best.return_mean == pytest.approx(values.state_value((1 << 10) - 1))
    assert best.success_rate == 1.0
    with pytest.raises(ValueError, match="exact values need"):
        GAMES["twenty_questions"].best(TwentyQuestionsEnvConfig(words="full"), range(3))
    t5 = TwentyQuestionsEnvConfig(words="subset10", oracle="t5", oracle_path="oracle.pt")
    with pytest.raises(ValueError, match="exact values need the knowledge-base oracle"):
        GAMES["twenty_questions"].best(t5, range(3))


def test_frozen_lake_optimal_success_by_hand() -> None:
    pytest.importorskip("gymnasium")
    from archer.envs.grid_games.frozen_lake import optimal_success

    # Not slippery: the goal next to the start is reached in one move.
    assert optimal_success(("SG",), 1, is_slippery=False) == 1.0
    # Slippery: a move goes the intended way or to either side, 1/3 each; on a one-row map the sideways moves hit the
    # edge and stay. "SG", one turn: 1/3. "SFG", two turns: the first move must reach F (1/3) and the second G (1/3):
    # 1/9; staying in place after the first turn leaves two cells to go with one turn left.
    assert optimal_success(("SG",), 1, is_slippery=True) == pytest.approx(1 / 3)
    assert optimal_success(("SFG",), 2, is_slippery=True) == pytest.approx(1 / 9)
    # Three turns, by finite-horizon values (Vk: k turns left): V1(F)=1/3, V2(F)=1/3+(2/3)(1/3)=5/9,
    # V2(S)=1/9, V3(S)=(1/3)V2(F)+(2/3)V2(S)=5/27+2/27=7/27.
    assert optimal_success(("SFG",), 3, is_slippery=True) == pytest.approx(7 / 27)
    # A hole between start and goal: unreachable.
    assert optimal_success(("SHG",), 5, is_slippery=True) == 0.0


def test_frozen_lake_best_averages_the_maps() -> None:
    pytest.importorskip("gymnasium")
    from archer.envs.grid_games.frozen_lake import generate_map, optimal_success

    cfg = FrozenLakeEnvConfig(max_turns=10)
    best = GAMES["frozenlake"].best(cfg, [3, 5, 3])
    chances = [optimal_success(generate_map(i, 4, 0.8, 10), 10, True) for i in (3, 5, 3)]
    assert best.success_rate == pytest.approx(sum(chances) / 3)
    assert best.return_mean == best.success_rate
    assert 0 < best.success_rate < 1  # slippery ice: the best policy still falls in or runs out of turns sometimes


def test_sokoban_best_is_the_shortest_solution_played() -> None:
    cfg = SokobanEnvConfig()
    ids = [0, 1, 2, 7]
    best = GAMES["sokoban"].best(cfg, ids)
    # One box: 10 for solving, 1 for the box onto its target, 0.1 per move of the shortest solution.
    lengths = [len(solve(generate_room(i, 6, 6, 1, cfg.max_turns))) for i in ids]
    assert all(0 < n <= cfg.max_turns for n in lengths)
    assert best.success_rate == 1.0
    assert best.return_mean == pytest.approx(sum(11 - 0.1 * n for n in lengths) / len(ids))
