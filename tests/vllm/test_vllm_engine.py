"""The vLLM rollout engine (``model.policy.engine: vllm``) against the trainer's own model, on tiny GPT-2 and Llama.

Run in the environment that has vLLM (docs/speed.md, "Rollouts with vLLM"); skipped where vLLM is not installed:

    ~/venvs/vllm/bin/python -m pytest -q tests/vllm
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

pytest.importorskip("vllm")

from archer.config import PolicyConfig  # noqa: E402
from archer.models.loading import _wrap_lora, load_policy_model  # noqa: E402
from archer.models.policy import LanguagePolicy  # noqa: E402
from archer.models.vllm_engine import EngineMismatchError  # noqa: E402

OBSERVATIONS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? No.\nIs it made of metal? Yes.\n",
    "Questions:\nIs it a fruit? No.\n",
    "",
    "Questions:\nIs it a dog? Yes.\n",
]
# float32 on both sides, summation order aside: the engine's and the trainer's log-probabilities of a sampled token.
LOGPROB_TOLERANCE = 1e-4


def _sharpen(model: torch.nn.Module, seed: int = 0, scale: float = 0.3) -> None:
    """Add noise to every weight so that next-token distributions are peaked: greedy decoding then has no near-ties
    that float summation order could flip (an untrained model's logits are nearly uniform)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)


def _llama(tokenizer_length: int) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=tokenizer_length,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture
def make_policy(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> Iterator[Callable[..., tuple[LanguagePolicy, LanguagePolicy]]]:
    """``make(architecture, **changes)``: a vLLM-engine policy and an HF policy over the very same model object."""

    made: list[LanguagePolicy] = []

    def make(architecture: str = "gpt2", **changes: object) -> tuple[LanguagePolicy, LanguagePolicy]:
        # vLLM's CPU attention takes head sizes of 32 and up: width 64 in 2 heads (the shared tiny config has 16).
        embedded = dataclasses.replace(tiny_policy_config.embedded, n_embd=64, n_head=2)
        cfg = dataclasses.replace(
            tiny_policy_config, embedded=embedded, engine="vllm", engine_kv_cache_gib=0.05, **changes
        )
        model, tokenizer = load_policy_model(
            dataclasses.replace(cfg, use_lora=False), model_cache_dir, lambda: tiny_corpus
        )
        if architecture == "llama":
            model = _llama(len(tokenizer))
        _sharpen(model)
        if cfg.use_lora:
            model = _wrap_lora(model, cfg).eval()
        made.append(LanguagePolicy(model, tokenizer, cfg))
        return made[-1], LanguagePolicy(model, tokenizer, dataclasses.replace(cfg, engine="hf"))

    yield make
    for policy in made:  # one engine per process at a time (VLLMEngine.close)
        policy.engine().close()


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_greedy_tokens_equal_hugging_face(make_policy: Callable, architecture: str) -> None:
    engine_policy, hf_policy = make_policy(architecture)
    hf = hf_policy.generate(OBSERVATIONS, greedy=True)
    engine = engine_policy.generate(OBSERVATIONS, greedy=True)
    assert engine.token_ids == hf.token_ids
    assert engine.texts == hf.texts
    assert all(len(ids) == engine_policy.cfg.max_new_tokens for ids in hf.token_ids)  # none ended early here


def test_greedy_tokens_are_cut_after_the_first_terminator_as_hugging_face_cuts_them(make_policy: Callable) -> None:
    engine_policy, hf_policy = make_policy()
    uncut = hf_policy.generate(OBSERVATIONS, greedy=True).token_ids
    # Make a token every row generates a terminator (both policies share the list; the engine is not built yet).
    stop = uncut[0][3]
    engine_policy.terminator_ids.append(stop)
    hf_policy.terminator_ids.append(stop)
    hf = hf_policy.generate(OBSERVATIONS, greedy=True)
    engine = engine_policy.generate(OBSERVATIONS, greedy=True)
    assert engine.token_ids == hf.token_ids
    assert engine.token_ids[0] == uncut[0][:4]  # kept up to and including the terminator
    assert engine.texts == hf.texts


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_sampled_tokens_rescored_by_the_trainer_agree_with_the_engine(
    make_policy: Callable, architecture: str
) -> None:
    engine_policy, _ = make_policy(
        architecture, temperature=0.7, top_k=20, top_p=0.9, engine_check_rows=len(OBSERVATIONS)
    )
    engine = engine_policy.engine()
    torch.manual_seed(0)
    sampled = engine.sample(engine_policy.encode_prompts(OBSERVATIONS * 4), greedy=False)
    trainer, mask = engine_policy.token_logprobs(OBSERVATIONS * 4, sampled.token_ids, as_sampled=True)
    engine_logprobs = torch.zeros_like(trainer)
    for i, row in enumerate(sampled.logprobs):
        engine_logprobs[i, : len(row)] = torch.tensor(row)
    differences = (trainer - engine_logprobs).abs()[mask.bool()]
    assert differences.numel() > 40
    assert float(differences.max()) < LOGPROB_TOLERANCE
    # Through generate, the check runs and is reported as metrics.
    engine_policy.engine_metrics()
    engine_policy.generate(OBSERVATIONS, greedy=False)
    metrics = engine_policy.engine_metrics()
    assert metrics["rollout/engine_logprob_max_diff"] < LOGPROB_TOLERANCE
    assert metrics["rollout/engine_weight_syncs"] == 0.0  # the weights did not change since the first load


def test_sampling_is_seeded_by_torch_and_differs_across_draws(make_policy: Callable) -> None:
    engine_policy, _ = make_policy()
    torch.manual_seed(1)
    first = engine_policy.generate(OBSERVATIONS, greedy=False).token_ids
    second = engine_policy.generate(OBSERVATIONS, greedy=False).token_ids
    torch.manual_seed(1)
    assert engine_policy.generate(OBSERVATIONS, greedy=False).token_ids == first
    assert first != second


def test_a_mismatch_beyond_the_tolerance_raises(make_policy: Callable) -> None:
    engine_policy, _ = make_policy(temperature=0.7)
    engine_policy.engine().sync()
    # The trainer now scores another distribution than the engine samples (sampling settings changed behind it).
    engine_policy.cfg = dataclasses.replace(engine_policy.cfg, temperature=1.5)
    with pytest.raises(EngineMismatchError, match="engine_logprob_tolerance"):
        engine_policy.generate(OBSERVATIONS, greedy=False)


def _actor_step(policy: LanguagePolicy, lr: float) -> None:
    """One Adam step raising the log-probability of fixed actions, as an actor phase would."""
    optimiser = torch.optim.Adam([p for p in policy.model.parameters() if p.requires_grad], lr=lr)
    targets = policy.encode_actions(["Is it a dog?"] * len(OBSERVATIONS))
    policy.model.train()
    (-policy.sequence_logprobs(OBSERVATIONS, targets, as_sampled=False).mean()).backward()
    optimiser.step()
    optimiser.zero_grad()
    policy.model.eval()


@pytest.mark.parametrize(("architecture", "use_lora"), [("gpt2", False), ("llama", False), ("llama", True)])
def test_after_an_actor_step_the_engine_samples_with_the_new_weights(
    make_policy: Callable, architecture: str, use_lora: bool
) -> None:
    engine_policy, hf_policy = make_policy(architecture, use_lora=use_lora)
    before = engine_policy.generate(OBSERVATIONS, greedy=True).token_ids
    assert before == hf_policy.generate(OBSERVATIONS, greedy=True).token_ids
    engine_policy.engine_metrics()
    _actor_step(engine_policy, lr=0.05)
    after_hf = hf_policy.generate(OBSERVATIONS, greedy=True).token_ids
    assert after_hf != before  # the step changed what the policy says
    assert engine_policy.generate(OBSERVATIONS, greedy=True).token_ids == after_hf
    assert engine_policy.engine_metrics()["rollout/engine_weight_syncs"] == 1.0
