"""The KALM pipeline end to end through the command line, on a tiny schedule; stage caching; clear refusals."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("d3rlpy", reason="the kalm extra (d3rlpy) is not installed")

from tests.conftest import TINY_KALM_MODELS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY = [
    *TINY_KALM_MODELS,
    "seeds=[0,1]",
    "env.horizon=6",
    "collect.num_episodes=40",
    "imagine.episodes_per_level=4",
    "imagine.batch_size=4",
    "offline.steps=5",
    "eval.episodes_per_level=5",
]


def run_cli(tmp_path: Path, *overrides: str, config: str = "kalm_clevr") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "run.py", "--config-name", config, f"cache_dir={tmp_path / 'cache'}", *overrides]
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
    # A different grounding model reuses the collected data; only mode=ground runs here (in process).
    metrics = run_in_process(tmp_path, f"run_dir={tmp_path / 'run2'}", *TINY, "grounding.n_embd=32", "mode=ground")
    assert "grounding/one_step_state_mse" in metrics and not any(key.startswith("real/") for key in metrics)
    stages = sorted(p.name.split("-")[0] for p in (tmp_path / "cache" / "kalm").iterdir())
    assert stages.count("collect") == 1 and stages.count("ground") == 2


@pytest.mark.integration
def test_tiny_continuous_run(tmp_path):
    """The continuous-action env through every stage: MSE action head, imagined action vectors, TD3+BC."""
    overrides = [*TINY, "offline.algorithm=td3_plus_bc"]
    result = run_cli(tmp_path, f"run_dir={tmp_path / 'run'}", *overrides, config="kalm_ball_push_continuous")
    assert result.returncode == 0, result.output[-3000:]
    payload = json.loads((tmp_path / "run" / "kalm_metrics.json").read_text())
    assert payload["config"]["env"]["name"] == "ball_push_continuous"
    assert payload["config"]["offline"]["algorithm"] == "td3_plus_bc"
    assert set(payload["summary"]) == {"real", "real_imagined"}
    for per_level in payload["summary"].values():
        assert all(stats["seeds"] == 2 and 0 <= stats["mean"] <= 1 for stats in per_level.values())
    metrics = payload["metrics"]
    assert "grounding/action_mse" in metrics and "grounding/action_accuracy" not in metrics
    imagined = next((tmp_path / "cache" / "kalm").glob("imagine-*"))
    from archer.kalm.data import load_trajectories

    assert load_trajectories(imagined / "hard.npz").actions.shape[-1] == 7


def run_in_process(tmp_path: Path, *overrides: str) -> dict[str, float]:
    from hydra import compose, initialize_config_dir

    from archer.cli import register_configs
    from archer.kalm.pipeline import main

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "scripts" / "config")):
        cfg = compose("kalm_clevr", overrides=[f"cache_dir={tmp_path / 'cache'}", *overrides])
    return main(cfg)


def test_refusals_name_the_cause(tmp_path):
    from archer.kalm.errors import KalmConfigError, KalmDataError, MissingExtraError

    with pytest.raises(KalmConfigError, match="imagine.levels"):
        run_in_process(tmp_path, f"run_dir={tmp_path / 'r1'}", "imagine.levels=[medium]")
    if importlib.util.find_spec("mujoco") is None:
        with pytest.raises(MissingExtraError, match=r"clevr_mujoco extra: pip install -e '\.\[clevr_mujoco\]'"):
            run_in_process(tmp_path, f"run_dir={tmp_path / 'r2'}", "env.name=clevr_mujoco", *TINY)
    malformed = tmp_path / "bad.npy"
    malformed.write_text("not a numpy file")
    with pytest.raises(KalmDataError, match="not a KALM trajectory file"):
        run_in_process(tmp_path, f"run_dir={tmp_path / 'r3'}", f"collect.kalm_file={malformed}", *TINY)
    # A real KALM file with the default horizon of 20: the error says which horizon to set.
    kalm_file = REPO.parent / "shared" / "data" / "kalm" / "clevr_robot.npy"
    if kalm_file.is_file():
        with pytest.raises(KalmDataError, match="set env.horizon=50"):
            run_in_process(tmp_path, f"run_dir={tmp_path / 'r4'}", f"collect.kalm_file={kalm_file}", *TINY)
