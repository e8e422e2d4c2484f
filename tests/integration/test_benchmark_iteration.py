"""scripts/benchmark_iteration.py on tiny models: every phase is timed, floors are measured, the overrides printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TINY_RUN_OVERRIDES, load_script

pytestmark = pytest.mark.integration


def test_phases_floors_and_overrides_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("benchmark_iteration.py")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        "algorithm.rollout.episodes_per_iter=4",
        "algorithm.critic_steps_per_iter=2",
        "algorithm.critic_batch_size=8",
        "algorithm.critic.micro_batch_size=4",
        "algorithm.actor_batch_size=8",
        "algorithm.actor_micro_batch_size=4",
        "algorithm.log_advantage_check=true",
        "model.critic.embedded.n_layer=1",
        "model.critic.embedded.n_embd=32",
        "model.critic.embedded.n_head=2",
    ]
    out = tmp_path / "figures.json"
    figures = bench.main(["--iterations", "2", "--json", str(out), *overrides])
    assert json.loads(out.read_text()) == figures
    training = figures["training"]
    assert training["oracle"] == "t5"
    # The issue's schedule comes first, the command line's overrides after it (they win).
    assert figures["overrides"][: len(bench.ISSUE_18_SCHEDULE)] == list(bench.ISSUE_18_SCHEDULE)
    assert figures["overrides"][-len(overrides) :] == overrides
    for phase in (*bench.PHASES, "evaluation", "checkpoint", "iteration"):
        values = training["phases_s_per_iteration"][phase]
        assert len(values) == 2 and all(v >= 0 for v in values), phase
    assert training["phases_s"]["iteration"] == pytest.approx(
        sum(training["phases_s"][p] for p in (*bench.PHASES, "evaluation", "checkpoint"))
    )
    floors = training["floors_s"]
    for name in ("rollout_no_cache", "rollout_kept_cache", "critic_generation", "critic_update", "actor_update"):
        assert floors[name] > 0, name
    assert training["transitions_per_iteration"] == 4 * 4  # the untrained policy never wins: 4 games of 4 turns
    table = capsys.readouterr().out
    assert "overrides: " + " ".join(figures["overrides"]) in table
    assert "ratio" in table and "against the reference" in table
