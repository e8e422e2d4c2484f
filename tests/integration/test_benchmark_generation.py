"""scripts/benchmark_generation.py: a tiny run samples replay states with both methods and reports both."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from archer.data.trajectory import Trajectory
from tests.conftest import TINY_RUN_OVERRIDES, load_script

pytestmark = pytest.mark.integration


def test_replay_states_are_visited_states_repeated_in_a_row() -> None:
    script = load_script("benchmark_generation.py")
    games = [Trajectory(["a0", "a1", "a2"], ["x", "y"], [-1.0, 0.0], terminated=True)]
    states = script.replay_states(games, 6, 3, np.random.default_rng(0))
    assert len(states) == 6 and set(states) <= {"a0", "a1"}
    assert states[:3] == [states[0]] * 3 and states[3:] == [states[3]] * 3


def test_a_tiny_benchmark_reports_both_methods(tmp_path: Path) -> None:
    script = load_script("benchmark_generation.py")
    out = tmp_path / "figures.json"
    args = ["--games", "4", "--states", "8", "--samples-per-state", "2", "--batch-sizes", "3", "8", "--check", "8"]
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}", "pretrain=null"]
    figures = script.main([*args, "--json", str(out), *overrides])
    assert figures["states"] == 8 and figures["greedy_identical"] == figures["greedy_checked"] == 8
    assert [run["batch_size"] for run in figures["runs"]] == [3, 8]
    for run in figures["runs"]:
        assert run["generate_samples_per_s"] > 0 and run["shared_samples_per_s"] > 0
        assert 0 < run["prefilled_tokens"] <= run["prompt_tokens"]
    assert json.loads(out.read_text()) == figures
