"""The KALM pipeline end to end through the command line, on a tiny schedule; stage caching; clear refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("d3rlpy", reason="the kalm extra (d3rlpy) is not installed")

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "seeds=[0,1]",
    "torch_threads=1",
    "env.horizon=6",
    "collect.num_episodes=40",
    "grounding.steps=2",
    "grounding.batch_size=4",
    "grounding.n_layer=1",
    "grounding.n_embd=16",
    "grounding.n_head=2",
    "grounding.max_positions=64",
    "imagine.episodes_per_level=4",
    "imagine.batch_size=4",
    "offline.steps=5",
    "offline.batch_size=16",
    "offline.hidden_units=[16]",
    "eval.episodes_per_level=5",
]


def run_cli(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "run.py", "--config-name", "kalm_clevr", f"cache_dir={tmp_path / 'cache'}", *overrides]
    result = subprocess.run(command, cwd=REPO / "scripts", env=env, capture_output=True, text=True, timeout=600)
    result.output = result.stdout + result.stderr  # Hydra logs to stdout, refusals go to stderr
    return result


@pytest.mark.integration
def test_tiny_kalm_clevr_run_and_cache(tmp_path):
    result = run_cli(tmp_path, f"run_dir={tmp_path / 'run'}", *TINY)
    assert result.returncode == 0, result.output[-3000:]
    payload = json.loads((tmp_path / "run" / "kalm_metrics.json").read_text())
    summary = payload["summary"]
    assert set(summary) == {"real", "real_imagined"}
    for per_level in summary.values():
        assert set(per_level) == {"train", "rephrase", "easy", "hard"}
        assert all(stats["seeds"] == 2 and 0 <= stats["mean"] <= 1 for stats in per_level.values())
    assert "grounding/action_accuracy" in payload["metrics"] and "imagine/hard_rule_success_rate" in payload["metrics"]
    assert (tmp_path / "run" / "kalm_success.png").stat().st_size > 0
    stages = sorted(p.name.split("-")[0] for p in (tmp_path / "cache" / "kalm").iterdir())
    assert stages.count("collect") == 1 and stages.count("ground") == 1 and stages.count("offline") == 4
    # A different grounding model reuses the collected data and the real-only runs; only mode=ground runs here.
    again = run_cli(tmp_path, f"run_dir={tmp_path / 'run2'}", *TINY, "grounding.n_embd=32", "mode=ground")
    assert again.returncode == 0, again.output[-3000:]
    assert "collect: cached" in again.output and "ground: cached" not in again.output
    stages = sorted(p.name.split("-")[0] for p in (tmp_path / "cache" / "kalm").iterdir())
    assert stages.count("collect") == 1 and stages.count("ground") == 2


def test_refusals_name_the_cause(tmp_path):
    bad_goal_level = run_cli(tmp_path, f"run_dir={tmp_path / 'r1'}", "imagine.levels=[medium]")
    assert bad_goal_level.returncode == 1 and "imagine.levels" in bad_goal_level.stderr
    mujoco = run_cli(tmp_path, f"run_dir={tmp_path / 'r2'}", "env.name=clevr_mujoco", *TINY)
    assert mujoco.returncode == 1 and "clevr_mujoco" in mujoco.stderr and "not implemented" in mujoco.stderr
    malformed = tmp_path / "bad.npy"
    malformed.write_text("not a numpy file")
    bad_file = run_cli(tmp_path, f"run_dir={tmp_path / 'r3'}", f"collect.kalm_file={malformed}", *TINY)
    assert bad_file.returncode == 1 and "not a KALM trajectory file" in bad_file.stderr
