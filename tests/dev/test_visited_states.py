"""dev/visited_states.py: the exact values at the states a grid game's player moves from, counted by hand on one
room, and the script end to end on a tiny run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from archer.envs.grid_games.sokoban import SokobanEnv
from archer.envs.grid_games.sokoban_rooms import generate_room, solve
from archer.evaluation import play_seeded
from tests.conftest import TINY_RUN_OVERRIDES, load_dev_script


@pytest.fixture(scope="module")
def visited() -> ModuleType:
    return load_dev_script("visited_states")


def _play(visited: ModuleType, make_start, games: int = 2) -> dict[str, float]:
    """Play the one room ``games`` times with the player ``make_start(env)`` starts, tallying its turns."""
    env = SokobanEnv(batch_size=2, num_rooms=1, seed=0)
    valued = visited.ValuedPlay(env, make_start(env), gamma=0.9)
    result = play_seeded(env, valued, [0] * games, seed=0)
    return {"success": result.success_rate, **valued.tally.figures()}


def test_turns_are_counted_by_the_values_of_the_states_they_start_from(visited: ModuleType) -> None:
    # The only room is solved by right, right within its 10 turns.
    assert solve(generate_room(0, 6, 6, 1, 10)) == ["right", "right"]

    # A player that never names a move stays at the first position for all 10 turns: with 10 to 2 turns left the
    # room can still be solved (its moves differ; "jump" is no best move), with 1 left every move is worth -0.1.
    figures = _play(visited, lambda _env: lambda: lambda observations, _slots: ["jump"] * len(observations))
    assert figures["success"] == 0.0
    assert figures["visited/turns"] == 20.0 and figures["visited/turns_mean"] == 10.0
    assert figures["visited/lost_share"] == pytest.approx(0.1)
    assert figures["visited/best_share"] == 0.0
    assert figures["visited/games_lost"] == 1.0 and figures["visited/turn_lost_mean"] == 10.0
    assert figures["visited/dead_share"] == 0.0  # lost to the turn limit: right, right still solves the position

    # Two right moves solve it: two turns per game, both best, never lost.
    figures = _play(visited, lambda _env: lambda: lambda observations, _slots: ["Right."] * len(observations))
    assert figures["success"] == 1.0
    assert figures["visited/turns_mean"] == 2.0
    assert figures["visited/lost_share"] == 0.0 and figures["visited/best_share"] == 1.0
    assert figures["visited/games_lost"] == 0.0 and math.isnan(figures["visited/turn_lost_mean"])

    # The exact solver (no noise) plays the same.
    figures = _play(visited, lambda env: visited.solver_player(env, [0.0], seed=1))
    assert figures["success"] == 1.0 and figures["visited/turns_mean"] == 2.0
    assert figures["visited/best_share"] == 1.0 and figures["visited/lost_share"] == 0.0


def test_the_tally_by_hand(visited: ModuleType) -> None:
    tally = visited.TurnTally(games=1)
    lost = {"left": -0.1, "down": -0.1, "right": -0.1, "up": -0.1}
    assert not tally.add({"left": 0.0, "down": 0.0, "right": 1.0, "up": 0.0}, "Right.", True, 1)
    assert tally.add(lost, "left", True, 2, dead=True)  # the game's first lost turn, at a dead position
    assert tally.add(lost, "up", False, 3)  # lost to the turn limit
    assert not tally.add({"left": 0.5, "down": 0.0, "right": 1.0, "up": 1.0}, "left", False, 4)
    figures = tally.figures()
    assert figures["visited/turns"] == 4.0 and figures["visited/turns_mean"] == 4.0
    assert figures["visited/lost_share"] == 0.5 and figures["visited/dead_share"] == 0.5
    assert figures["visited/best_share"] == 0.5  # right was best at turn 1, left was not at turn 4
    assert figures["visited/games_lost"] == 1.0 and figures["visited/turn_lost_mean"] == 2.0
    assert all(math.isnan(value) for key, value in visited.TurnTally().figures().items() if key != "visited/turns")


def test_the_solver_refuses_noise_outside_zero_to_one(visited: ModuleType) -> None:
    env = SokobanEnv(batch_size=2, num_rooms=1, seed=0)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        visited.solver_player(env, [0.0, 1.5], seed=1)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        visited.solver_player(env, [], seed=1)


def test_the_script_plays_a_runs_games_and_writes_its_figures(
    visited: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}", "pretrain=null"]
    out = tmp_path / "solver.json"
    solver = ["--config-name", "archer_sokoban", "--acting", "solver", "--epsilons", "0.0", "--json", str(out)]
    figures = visited.main([*solver, *common])
    assert json.loads(out.read_text()) == pytest.approx(figures, nan_ok=True)
    # The exact solver plays a best move wherever the room can still be solved in the turns left (4 here).
    assert figures["visited/best_share"] == 1.0
    assert figures["visited/turns"] >= 4 and 0.0 <= figures["visited/lost_share"] < 1.0
    sampled = visited.main(["--config-name", "archer_sokoban", "--untrained", "--repeats", "2", *common])
    assert sampled["visited/turns"] >= 8  # four rooms twice, each at least one turn
    assert sampled["visited/best_share"] < 1.0  # an untrained policy writes few moves, let alone best ones
    with pytest.raises(SystemExit):
        visited.main(["--config-name", "archer_sokoban", *common])
    assert "run the config first" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        visited.main(["--config-name", "archer_20q", "--acting", "solver", *common])
    assert "a grid game's config is needed" in capsys.readouterr().err
