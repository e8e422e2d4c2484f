"""Grounding on a Hugging Face model from a local folder (``grounding.model=<folder>``; tiny GPT-2 and Llama
architectures, Llama being the paper's family): LoRA adapters
(``grounding.lora_rank > 0``) train with the vector layers while the base weights stay as loaded, the grounding
stage runs on the folder, ``save_pretrained`` / ``from_pretrained`` round-trip; full fine-tuning
(``lora_rank=0``) moves the base weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm import grounding
from archer.kalm.config import KalmGroundingConfig
from tests.conftest import save_tiny_kalm_lm

pytest.importorskip("peft")

VECTOR_LAYERS = ("state_in.", "action_in.", "state_head.", "action_head.")


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_kalm_lm(tmp_path_factory.mktemp("tiny_gpt2"), "gpt2")


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def lm_folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each architecture's tiny folder: GPT-2 (the embedded default's family) and Llama (the paper's)."""
    return save_tiny_kalm_lm(tmp_path_factory.mktemp(f"tiny_{request.param}"), request.param)


@pytest.fixture(scope="module")
def real() -> kalm_data.TrajectorySet:
    return kalm_data.collect(ball_env.BallPushEnv(horizon=4), "train", 16, 0.2, np.random.default_rng(0))


def config(folder: Path, lora_rank: int) -> KalmGroundingConfig:
    return KalmGroundingConfig(model=str(folder), lora_rank=lora_rank, steps=4, batch_size=4, learning_rate=1e-2)


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.named_parameters()}


def outputs(model: grounding.GroundedLM, batch: dict) -> list[torch.Tensor]:
    with torch.no_grad():
        hidden, logits = model.hidden_states(batch)
        return [model.predict_states(hidden, batch), model.action_head(hidden), logits]


def test_lora_trains_adapters_and_vector_layers_only_and_round_trips(lm_folder, real, tmp_path):
    torch.manual_seed(0)
    model = grounding.build_grounded_model(config(lm_folder, 4), ball_env.STATE_DIM, ball_env.NUM_ACTIONS)
    before = snapshot(model)
    trainable = {name for name, value in model.named_parameters() if value.requires_grad}
    assert trainable and all("lora_" in name or name.startswith(VECTOR_LAYERS) for name in trainable)
    assert any("lora_" in name for name in trainable)

    history, _ = grounding.train_grounding(model, real, config(lm_folder, 4), np.random.default_rng(0))
    assert all(math.isfinite(record["loss"]) for record in history)
    after = snapshot(model)
    assert after.keys() == before.keys()
    changed = {name for name in after if not torch.equal(after[name], before[name])}
    assert changed <= trainable
    assert any("lora_B" in name for name in changed)  # B starts at zero: a change means the adapters learned
    assert {name.split(".")[0] + "." for name in changed} >= set(VECTOR_LAYERS)
    base = [name for name in after if name.startswith("lm.") and "lora_" not in name]
    assert base and all(torch.equal(after[name], before[name]) for name in base)

    batch = grounding.sample_batch(model, real, [0, 1, 2, 3], 3, np.random.default_rng(1))
    expected = outputs(model, batch)
    model.save_pretrained(tmp_path / "grounded")
    assert snapshot(model).keys() == after.keys()  # saving merges into a copy: this model keeps its adapters
    loaded = grounding.GroundedLM.from_pretrained(tmp_path / "grounded")
    assert not any("lora_" in name for name, _ in loaded.named_parameters())  # the folder is a plain causal LM
    for want, got in zip(expected, outputs(loaded, batch), strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_grounding_stage_on_a_local_folder_with_lora(lm_folder, tmp_path):
    from archer.kalm.config import KalmCollectConfig, KalmEnvConfig, KalmRunConfig
    from archer.kalm.pipeline import run_kalm

    cfg = KalmRunConfig(
        mode="ground",
        env=KalmEnvConfig(horizon=4),
        collect=KalmCollectConfig(num_episodes=20),
        grounding=config(lm_folder, 4),
        cache_dir=str(tmp_path / "cache"),
        torch_threads=1,
    )
    metrics = run_kalm(cfg, tmp_path / "run")
    assert math.isfinite(metrics["grounding/one_step_state_mse"])
    assert 0.0 <= metrics["grounding/action_accuracy"] <= 1.0
    (ground,) = (tmp_path / "cache" / "kalm").glob("ground-*")
    history = json.loads((ground / "history.json").read_text())
    assert history and all(math.isfinite(record["loss"]) for record in history)
    loaded = grounding.GroundedLM.from_pretrained(ground / "model")
    assert loaded.state_dim == ball_env.STATE_DIM and loaded.num_actions == ball_env.NUM_ACTIONS


def test_full_fine_tuning_from_a_folder_moves_the_base_weights(gpt2_folder, real):
    torch.manual_seed(0)
    model = grounding.build_grounded_model(config(gpt2_folder, 0), ball_env.STATE_DIM, ball_env.NUM_ACTIONS)
    assert all(value.requires_grad for value in model.parameters())
    assert not any("lora_" in name for name, _ in model.named_parameters())
    before = snapshot(model)
    history, _ = grounding.train_grounding(model, real, config(gpt2_folder, 0), np.random.default_rng(0))
    assert all(math.isfinite(record["loss"]) for record in history)
    after = snapshot(model)
    moved = [name for name in after if name.startswith("lm.") and not torch.equal(after[name], before[name])]
    assert "lm.transformer.h.0.attn.c_attn.weight" in moved and "lm.transformer.h.0.mlp.c_fc.weight" in moved
