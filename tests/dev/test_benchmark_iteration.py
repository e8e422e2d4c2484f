"""dev/benchmark_iteration.py on tiny models: every phase is timed, floors are measured, the overrides printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.conftest import TINY_RUN_OVERRIDES, load_dev_script

pytestmark = pytest.mark.integration


def test_phases_floors_and_overrides_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_dev_script("benchmark_iteration")
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
    # The schedule comes first, the command line's overrides after it (they win).
    assert figures["overrides"][: len(bench.CPU_SCHEDULE)] == list(bench.CPU_SCHEDULE)
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
    bound = training["compute_bound"]
    assert bound["peak_matmul_flops_per_s"] > 0
    for phase in ("critic_update", "actor_update"):
        assert bound[f"{phase}_flops"] > 0, phase
        assert bound[f"{phase}_s_at_peak"] == pytest.approx(bound[f"{phase}_flops"] / bound["peak_matmul_flops_per_s"])
    together = bound["critic_update_s_at_peak"] + bound["actor_update_s_at_peak"]
    assert bound["total_s_at_peak"] == pytest.approx(together)
    assert training["transitions_per_iteration"] == 4 * 4  # the untrained policy never wins: 4 games of 4 turns
    table = capsys.readouterr().out
    assert "overrides: " + " ".join(figures["overrides"]) in table
    assert "ratio" in table and "against the reference" in table and "arithmetic bound" in table


def test_counted_operations_match_a_hand_count() -> None:
    bench = load_dev_script("benchmark_iteration")
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert bench.counted_flops(lambda: torch.mm(a, b)) == 2 * 3 * 4 * 5
    # A product and its backward: dL/da = g b^T and dL/db = a^T g are two more products of the same size.
    a.requires_grad_(True)
    b.requires_grad_(True)
    assert bench.counted_flops(lambda: torch.mm(a, b).sum().backward()) == 3 * 2 * 3 * 4 * 5


def test_policy_rows_are_counted_without_padding() -> None:
    """Two rows counted apart cost what each costs alone: the bound counts no padding."""
    bench = load_dev_script("benchmark_iteration")
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=32))

    class Policy:
        def __init__(self) -> None:
            self.model = model

        def encode_prompts(self, states: list[str]) -> list[list[int]]:
            return [[1] * len(state) for state in states]

    short = bench.policy_update_flops(Policy(), ["ab"], [[2]])
    long = bench.policy_update_flops(Policy(), ["abcdefgh"], [[2, 3]])
    assert 0 < short < long
    assert bench.policy_update_flops(Policy(), ["ab", "abcdefgh"], [[2], [2, 3]]) == short + long


def test_a_grid_game_is_timed_without_an_oracle(tmp_path: Path) -> None:
    bench = load_dev_script("benchmark_iteration")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        "pretrain=null",
        "algorithm.warmup_iters=0",
        "algorithm.rollout.episodes_per_iter=2",
        "algorithm.critic_steps_per_iter=1",
        "algorithm.critic_batch_size=4",
        "algorithm.critic.micro_batch_size=2",
        "algorithm.actor_batch_size=4",
        "algorithm.actor_micro_batch_size=2",
        "model.critic.embedded.n_layer=1",
        "model.critic.embedded.n_embd=32",
        "model.critic.embedded.n_head=2",
    ]
    figures = bench.main(["--config-name", "archer_sokoban", "--no-schedule", "--no-floors", *overrides])
    training = figures["training"]
    assert training["oracle"].startswith("none")
    assert not any(o.startswith("env.oracle") for o in figures["overrides"])
    assert len(training["phases_s_per_iteration"]["iteration"]) == 3
