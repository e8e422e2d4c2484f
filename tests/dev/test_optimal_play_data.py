"""dev/optimal_play_data.py: the optimal FrozenLake player solves every map it can, and its games load as a dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from archer.data.scripted_play import observation_settings
from archer.data.trajectory_file import load_trajectories
from tests.conftest import compose_run, load_dev_script


def test_without_slips_the_optimal_player_solves_every_map_by_a_shortest_path(tmp_path: Path) -> None:
    optimal = load_dev_script("optimal_play_data")
    out = tmp_path / "optimal.json"
    optimal.main(["--config-name", "bc_frozenlake", "--out", str(out), "--episodes", "12", "env.is_slippery=false"])
    cfg = compose_run("bc_frozenlake", ["env.is_slippery=false"])
    games = load_trajectories(out, "frozenlake", observation_settings(cfg))
    assert len(games) == 12
    # Every generated map has a path within the turn limit; with no slips the best move keeps it reachable in
    # the turns left, so every game ends on the goal, before the limit.
    assert all(g.rewards[-1] == 1.0 and g.terminated and len(g.actions) <= cfg.env.max_turns for g in games)
    assert {move for g in games for move in g.actions} <= {"left", "right", "up", "down"}


def test_refuses_a_game_without_exact_values() -> None:
    optimal = load_dev_script("optimal_play_data")
    with pytest.raises(SystemExit, match="optimal play is FrozenLake's"):
        optimal.optimal_games(compose_run("bc_sokoban"), 2)
