"""An FSDP-sharded policy (``model.policy.shard=fsdp``) on two CPU processes (gloo) against full copies.

The policy steps run under torchrun (``sharded_policy_worker.py``); the whole run is launched with the shipped
``scripts/accelerate/sharded_7b.yaml`` and ``--num_processes 2`` (on a machine without GPUs a MULTI_GPU launch
falls back to CPU processes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.conftest import TINY_RUN_OVERRIDES
from tests.integration.test_distributed import ROOT, free_port, launch
from tests.integration.test_training import ARCHER_TINY

pytestmark = pytest.mark.integration

WORKER = Path(__file__).with_name("sharded_policy_worker.py")
ACCELERATE_CONFIGS = ROOT / "scripts" / "accelerate"


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert list(a) == list(b)
    return max((a[key].float() - b[key].float()).abs().max().item() for key in a)


@pytest.fixture(scope="module")
def worker_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worker's outputs with full copies and with a sharded policy (each runs a full and a LoRA policy)."""
    out = tmp_path_factory.mktemp("sharded_policy")
    result = launch(2, str(WORKER), str(out), str(out / "cache"), "none,fsdp")
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.mark.parametrize("variant", ["full", "lora"])
def test_a_sharded_policy_steps_checkpoints_and_reloads_like_full_copies(worker_results: Path, variant: str) -> None:
    tmp_path = worker_results
    full = torch.load(tmp_path / f"none-{variant}.pt", weights_only=True)
    sharded = torch.load(tmp_path / f"fsdp-{variant}.pt", weights_only=True)
    assert (full["grad_param_types"], sharded["grad_param_types"]) == (["Parameter"], ["DTensor"])

    # Generation: the same greedy actions, with per-process call counts differing inside a gathered phase.
    assert sharded["phase_ids"] == full["phase_ids"] and sharded["per_call_ids"] == full["per_call_ids"]
    assert sharded["phase_ids"][0] == sharded["per_call_ids"] and any(sharded["per_call_ids"])

    # FSDP's reduce-scatter and clipping over shards give the gradient norms of averaged full copies.
    torch.testing.assert_close(
        torch.tensor(sharded["grad_norms"]), torch.tensor(full["grad_norms"]), rtol=1e-5, atol=0
    )
    if variant == "full":
        assert min(full["grad_norms"]) > 0.5  # above the worker's max_grad_norm: the clipped path ran

    # The gathered checkpoint is the one full copies write (same keys, same optimiser layout), to float noise.
    ckpt_full = torch.load(tmp_path / f"none-{variant}.checkpoint.pt", weights_only=True)
    ckpt_sharded = torch.load(tmp_path / f"fsdp-{variant}.checkpoint.pt", weights_only=True)
    assert max_difference(ckpt_sharded["policy"], ckpt_full["policy"]) < 1e-5
    state_full, state_sharded = ckpt_full["optimizer"]["state"], ckpt_sharded["optimizer"]["state"]
    assert ckpt_sharded["optimizer"]["param_groups"] == ckpt_full["optimizer"]["param_groups"]
    assert list(state_sharded) == list(state_full)
    for index, entry in state_full.items():
        assert max_difference(state_sharded[index], entry) < 1e-5

    # A fresh sharded policy loaded from the checkpoint takes exactly the original's next step.
    assert sharded["reloaded_grad_norm"] == sharded["grad_norms"][2]
    assert max_difference(sharded["reloaded_after_three"], sharded["after_three"]) == 0.0
    assert max_difference(sharded["after_three"], full["after_three"]) < 1e-5
    moved = max_difference(sharded["after_three"], ckpt_sharded["policy"])
    assert moved > 1e-3

    # save_policy writes an ordinary HF folder (LoRA merged) with the full copies' weights.
    folders = [
        AutoModelForCausalLM.from_pretrained(tmp_path / f"{mode}-{variant}.policy") for mode in ("none", "fsdp")
    ]
    assert folders[1].config.architectures == ["GPT2LMHeadModel"]
    assert max_difference(folders[1].state_dict(), folders[0].state_dict()) < 1e-5


def launch_accelerate(config: str, num_processes: int, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ACCELERATE_CONFIGS / config),
        "--num_processes", str(num_processes), "--main_process_port", str(free_port()), *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)


def test_a_sharded_run_matches_full_copies_and_resumes(tmp_path: Path) -> None:
    def args(run_dir: Path, *extra: str) -> list[str]:
        return [
            str(ROOT / "scripts" / "run.py"), "--config-name", "archer_20q_paper_cpu", *TINY_RUN_OVERRIDES,
            *ARCHER_TINY,
            f"cache_dir={tmp_path / 'cache'}", f"run_dir={run_dir}", "eval.num_episodes=6",
            "algorithm.num_iterations=2", *extra,
        ]  # fmt: skip

    full_dir, sharded_dir = tmp_path / "full", tmp_path / "sharded"
    result = launch(2, *args(full_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    result = launch_accelerate("sharded_7b.yaml", 2, *args(sharded_dir, "model.policy.shard=fsdp"))
    assert result.returncode == 0, result.stderr[-3000:]

    # Same seeds, same samples: every metric of the two runs agrees (to float noise in the actor's gradient norm).
    records = [
        [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()] for d in (full_dir, sharded_dir)
    ]
    assert [r["iteration"] for r in records[1]] == [0, 1, 2]
    for full, sharded in zip(*records, strict=True):
        assert full.keys() == sharded.keys()
        for key, value in full.items():
            if not key.startswith("time/"):
                assert sharded[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert "actor/grad_norm" in records[1][-1]
    checkpoints = [torch.load(d / "checkpoint.pt", weights_only=True)["algorithm"] for d in (full_dir, sharded_dir)]
    for network in ("policy", "critic", "target_critic"):
        assert max_difference(checkpoints[1][network], checkpoints[0][network]) < 1e-5, network
    optimizer_states = [c["actor_optimizer"]["state"] for c in checkpoints]
    assert list(optimizer_states[1]) == list(optimizer_states[0]) and len(optimizer_states[0]) > 0
    for index, entry in optimizer_states[0].items():
        assert max_difference(optimizer_states[1][index], entry) < 1e-5
    policies = [AutoModelForCausalLM.from_pretrained(d / "policy").state_dict() for d in (full_dir, sharded_dir)]
    assert max_difference(policies[1], policies[0]) < 1e-5

    # Resume sharded; a sharded checkpoint also resumes with full copies (the format is the same).
    result = launch_accelerate(
        "sharded_7b.yaml", 2, *args(sharded_dir, "model.policy.shard=fsdp"), "algorithm.num_iterations=3"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in result.stdout + result.stderr
    result = launch(2, *args(sharded_dir), "algorithm.num_iterations=4")
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (sharded_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2, 3, 4] and records[-1]["env/trajectories"] == 16
