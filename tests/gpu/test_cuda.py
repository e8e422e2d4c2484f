"""What only a GPU shows (``pytest -m gpu tests/gpu``; ``scripts/gpu_check.py`` runs it first). Without a CUDA device
every test skips with its reason.

``ARCHER_TEST_DEVICE=cpu`` runs the same checks on the CPU, to check the checks where there is no GPU (the CPU's
own behaviour is covered by the rest of the suite). The failures a GPU shows that a CPU can also show are guarded
on the CPU in tests/unit/test_device_guards.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from transformers import DynamicCache

from archer import locking
from archer.config import PolicyConfig
from archer.data.rollout import collect_trajectories
from archer.models.incremental import IncrementalActor
from archer.models.kv_cache import cache_argument
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy
from archer.trainer import build_trainer
from tests.conftest import TINY_ARCHER_RUN, compose_run, every_network, tensors_off_device
from tests.unit.test_incremental_generation import ScriptedEnv

DEVICE = torch.device(os.environ.get("ARCHER_TEST_DEVICE", "cuda"))
ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        DEVICE.type == "cuda" and not torch.cuda.is_available(),
        reason="no CUDA device: these checks need a GPU (python scripts/gpu_check.py runs them there)",
    ),
]


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters() if p.requires_grad}


def moved(before: dict[str, torch.Tensor], module: torch.nn.Module) -> float:
    """Fraction of the trainable parameter tensors that changed."""
    after = dict(module.named_parameters())
    return sum(not torch.equal(value, after[name].detach()) for name, value in before.items()) / len(before)


@pytest.fixture(scope="module")
def one_iteration(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A tiny ArCHer run (``TINY_ARCHER_RUN``) trained on the device for one iteration and checkpointed."""
    folder = tmp_path_factory.mktemp("device_run")
    overrides = [*TINY_ARCHER_RUN, f"cache_dir={folder / 'cache'}"]
    trainer = build_trainer(compose_run("archer_20q_paper_cpu", overrides), folder / "run")
    before = {"policy": snapshot(trainer.policy.model), "critic": snapshot(trainer.algorithm.critic)}
    metrics = trainer.fit()
    return {"trainer": trainer, "before": before, "metrics": metrics, "folder": folder, "overrides": overrides}


def test_every_network_and_buffer_is_on_the_device(one_iteration: dict[str, Any]) -> None:
    trainer = one_iteration["trainer"]
    assert trainer.placement.device.type == DEVICE.type
    modules = every_network(trainer.algorithm)
    assert {"policy", "critic", "target_critic", "reference_policy"} <= set(modules)
    assert tensors_off_device(modules, DEVICE) == []


def test_a_critic_step_and_an_actor_step_train_on_the_device(one_iteration: dict[str, Any]) -> None:
    trainer, before, metrics = one_iteration["trainer"], one_iteration["before"], one_iteration["metrics"]
    for key in ("critic/loss", "actor/pg_loss"):
        assert key in metrics and torch.isfinite(torch.tensor(metrics[key])), key
    assert moved(before["critic"], trainer.algorithm.critic) > 0.9
    assert moved(before["policy"], trainer.policy.model) > 0.9


def test_a_checkpoint_written_on_the_device_resumes_on_the_cpu(one_iteration: dict[str, Any]) -> None:
    """The run's checkpoint, resumed by a process that sees no GPU: same iteration, same weights."""
    trainer, folder = one_iteration["trainer"], one_iteration["folder"]
    loaded = folder / "loaded_on_cpu.pt"
    # The run is over: give up its folder, as its process would by exiting, so that the resuming process may claim it.
    locking.release(folder / "run")
    resume = (
        "import json, sys, torch\n"
        "from archer.trainer import build_trainer\n"
        "from tests.conftest import compose_run\n"
        "overrides = json.loads(sys.argv[1])\n"
        "trainer = build_trainer(compose_run('archer_20q_paper_cpu', overrides), sys.argv[2])\n"
        "assert trainer.placement.device.type == 'cpu', trainer.placement.device\n"
        "state = {'iteration': trainer.start_iteration, 'algorithm': trainer.algorithm.state_dict()}\n"
        "torch.save(state, sys.argv[3])\n"
    )
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-c", resume, json.dumps(one_iteration["overrides"]), str(folder / "run"), str(loaded)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    state = torch.load(loaded, weights_only=True)
    assert state["iteration"] == 1
    for network in ("policy", "critic"):
        for name, value in trainer.algorithm.state_dict()[network].items():
            assert state["algorithm"][network][name].device.type == "cpu"
            torch.testing.assert_close(state["algorithm"][network][name], value.cpu(), rtol=0, atol=0)


@pytest.fixture
def policy_on_device(
    tiny_policy_config: PolicyConfig,
    tiny_corpus: list[str],
    model_cache_dir: str,
    tiny_policy_weights: dict[str, dict[str, torch.Tensor]],
) -> Any:
    def make(dtype: str = "float32", **changes: Any) -> LanguagePolicy:
        cfg = dataclasses.replace(tiny_policy_config, dtype=dtype, **changes)
        model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
        model.load_state_dict(tiny_policy_weights["trained"])
        return LanguagePolicy(model.to(DEVICE), tokenizer, cfg)

    return make


OBSERVATIONS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? No.\n",
    "Questions:\nIs it red? No.\n",
]


def test_bf16_weights_and_bf16_autocast_score_in_float32_close_to_float32(policy_on_device: Any) -> None:
    full, half = policy_on_device("float32"), policy_on_device("bfloat16")
    actions = full.generate(OBSERVATIONS, greedy=True).token_ids
    reference, mask = full.token_logprobs(OBSERVATIONS, actions, as_sampled=False)
    in_bf16, _ = half.token_logprobs(OBSERVATIONS, actions, as_sampled=False)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        autocast, _ = full.token_logprobs(OBSERVATIONS, actions, as_sampled=False)
    for scored in (in_bf16, autocast):
        assert scored.dtype == torch.float32 and torch.isfinite(scored).all()
        # bfloat16 keeps 8 bits of mantissa (relative error 2^-8 = 0.004 per rounding): log-probabilities of a few
        # units agree to a few hundredths.
        torch.testing.assert_close(scored * mask, reference * mask, rtol=0, atol=0.08)
    assert half.generate(OBSERVATIONS, greedy=True).token_ids  # bf16 generation runs


def test_the_kept_kv_cache_equals_re_encoding(policy_on_device: Any) -> None:
    # Greedy play in float32 keeping each game's cache: the same actions, token for token, as re-encoding.
    policy = policy_on_device("float32", max_prompt_tokens=116)
    env = ScriptedEnv([3, 1, 4, 2])
    full = collect_trajectories(env, lambda obs: policy.generate(obs, greedy=True), num_episodes=4)
    kept = collect_trajectories(env, IncrementalActor(policy, greedy=True), num_episodes=4)
    assert [t.action_token_ids for t in kept] == [t.action_token_ids for t in full]
    # In bfloat16, the log-probabilities of a continuation read from a cache of its prefix are those of one pass
    # over the whole text, within bfloat16's rounding.
    half = policy_on_device("bfloat16")
    ids = half.encode_prompts([OBSERVATIONS[1]])[0]
    split = len(half.encode_prompts([OBSERVATIONS[0]])[0])
    assert ids[:split] == half.encode_prompts([OBSERVATIONS[0]])[0]  # the first text's ids start the second's
    model = half.model
    with torch.no_grad():
        whole = model(input_ids=torch.tensor([ids], device=DEVICE)).logits[0, split:].float()
        cache = DynamicCache()
        model(input_ids=torch.tensor([ids[:split]], device=DEVICE), use_cache=True, **cache_argument(model, cache))
        positions = torch.arange(split, len(ids), device=DEVICE).unsqueeze(0)
        continued = (
            model(
                input_ids=torch.tensor([ids[split:]], device=DEVICE),
                position_ids=positions,
                use_cache=True,
                **cache_argument(model, cache),
            )
            .logits[0]
            .float()
        )
    torch.testing.assert_close(F.log_softmax(continued, -1), F.log_softmax(whole, -1), rtol=0, atol=0.08)
    assert torch.equal(continued.argmax(-1), whole.argmax(-1))


def test_samples_are_scored_under_the_distribution_that_sampled_them(policy_on_device: Any) -> None:
    policy = policy_on_device("float32", temperature=0.7, top_k=20, top_p=0.9)
    input_ids, attention_mask = policy.left_pad(policy.encode_prompts(OBSERVATIONS))
    config = policy._generation_config(greedy=False)
    config.output_scores = True
    torch.manual_seed(0)
    with torch.no_grad():
        output = policy.model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config)
    terminators = set(policy.terminator_ids)
    actions = []
    for row in output.sequences[:, input_ids.shape[1] :].tolist():
        end = next((i + 1 for i, token in enumerate(row) if token in terminators), len(row))
        actions.append(row[:end])
    # What generate sampled from: the warped scores of each step (temperature, top-k, top-p), normalised.
    sampled_from = torch.stack([F.log_softmax(step.float(), dim=-1) for step in output.scores], dim=1)  # (B, T, V)
    scored, mask = policy.token_logprobs(OBSERVATIONS, actions, as_sampled=True)
    for i, action in enumerate(actions):
        expected = sampled_from[i, torch.arange(len(action)), torch.tensor(action, device=DEVICE)]
        torch.testing.assert_close(scored[i, : len(action)], expected, rtol=0, atol=1e-4)
        assert mask[i].sum() == len(action)
