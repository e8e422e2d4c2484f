"""KALM grounding under two-process launches on one CPU (gloo): with DDP each process draws its own batches and the
gradients are averaged, so both end with the same weights; under DeepSpeed ZeRO-3 (``scripts/accelerate/
kalm_zero3.yaml``, skipped without the ``deepspeed`` extra) the sharded training gives the weights DDP gives; the
pipeline's main process alone writes the stage outputs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from tests.conftest import TINY_KALM_MODELS, save_tiny_kalm_lm
from tests.integration.test_distributed import ROOT, launch
from tests.integration.test_sharding import launch_accelerate

pytestmark = pytest.mark.integration

WORKER = Path(__file__).with_name("kalm_grounding_worker.py")
needs_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None, reason="the deepspeed extra is not installed"
)


def load_ranks(folder: Path) -> list[dict]:
    return [torch.load(folder / f"rank{rank}.pt", weights_only=True) for rank in (0, 1)]


@pytest.fixture(scope="module")
def ddp(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    folder = tmp_path_factory.mktemp("ddp")
    result = launch(2, str(WORKER), str(folder))
    assert result.returncode == 0, result.stderr[-3000:]
    return load_ranks(folder)


def test_two_processes_draw_different_batches_and_end_with_the_same_weights(ddp: list[dict]) -> None:
    first, second = ddp
    assert first["num_processes"] == second["num_processes"] == 2
    assert first["distributed_type"] == "DistributedType.MULTI_CPU"
    assert len(first["batches"]) == len(second["batches"]) == 3
    assert any(
        a.shape != b.shape or not torch.equal(a, b) for a, b in zip(first["batches"], second["batches"], strict=True)
    )
    for name, start in first["initial"].items():
        torch.testing.assert_close(second["initial"][name], start)
    moved = [name for name, value in first["trained"].items() if not torch.equal(value, first["initial"][name])]
    assert len(moved) > 0.9 * len(first["trained"])
    # Different batches and no averaging would leave the two processes with different weights.
    for name, value in first["trained"].items():
        torch.testing.assert_close(second["trained"][name], value, rtol=1e-5, atol=1e-6, msg=name)


@needs_deepspeed
def test_zero3_grounding_gathers_the_weights_ddp_trains(ddp: list[dict], tmp_path: Path) -> None:
    result = launch_accelerate("kalm_zero3.yaml", 2, str(WORKER), str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    zero3, _ = load_ranks(tmp_path)
    assert zero3["distributed_type"] == "DistributedType.DEEPSPEED" and zero3["num_processes"] == 2
    for ours, theirs in zip(zero3["batches"], ddp[0]["batches"], strict=True):
        assert torch.equal(ours, theirs)  # the same batches on the main process as under DDP
    assert zero3["trained"].keys() == ddp[0]["trained"].keys()
    for name, value in ddp[0]["trained"].items():
        torch.testing.assert_close(zero3["trained"][name], value, rtol=1e-5, atol=1e-6, msg=name)


def test_a_two_process_grounding_stage_is_written_once_by_the_main_process(tmp_path: Path) -> None:
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    args = [
        str(ROOT / "scripts" / "run.py"), "--config-name", "kalm_clevr", *TINY_KALM_MODELS, "mode=ground",
        "env.horizon=6", "collect.num_episodes=40", f"cache_dir={cache}", f"run_dir={run_dir}",
    ]  # fmt: skip
    result = launch(2, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    (collect,) = (cache / "kalm").glob("collect-*")
    (ground,) = (cache / "kalm").glob("ground-*")
    assert (collect / "DONE").is_file() and (ground / "DONE").is_file()
    metrics = json.loads((ground / "metrics.json").read_text())
    assert metrics["grounding/processes"] == 2
    payload = json.loads((run_dir / "kalm_metrics.json").read_text())
    assert payload["metrics"]["grounding/processes"] == 2 and payload["mode"] == "ground"


@needs_deepspeed
def test_the_pipeline_grounds_a_folder_model_with_lora_under_zero3_and_imagines(tmp_path: Path) -> None:
    folder = save_tiny_kalm_lm(tmp_path / "tiny_gpt2")
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    result = launch_accelerate(
        "kalm_zero3.yaml",
        2,
        str(ROOT / "scripts" / "run.py"), "--config-name", "kalm_clevr", "torch_threads=1", "mode=imagine",
        f"grounding.model={folder}", "grounding.lora_rank=4", "grounding.steps=3", "grounding.batch_size=4",
        "env.horizon=4", "collect.num_episodes=20", "imagine.episodes_per_level=4", "imagine.batch_size=4",
        f"cache_dir={cache}", f"run_dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "kalm_metrics.json").read_text())["metrics"]
    assert metrics["grounding/processes"] == 2 and metrics["imagine/hard_episodes"] == 4
    # The saved model is whole (LoRA merged), so it loads in one process without DeepSpeed.
    from archer.kalm.grounding import GroundedLM

    (ground,) = (cache / "kalm").glob("ground-*")
    loaded = GroundedLM.from_pretrained(ground / "model")
    assert all(value.numel() > 0 for value in loaded.parameters())
