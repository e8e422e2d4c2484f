"""Prefix-sharing generation: the shared cache changes no action and no log-probability, and only chain heads are
prefilled."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from archer.config import ConfigError, EmbeddedModelConfig, PolicyConfig
from archer.models import prefix_generation
from archer.models.loading import load_policy_model
from archer.models.policy import Generation, LanguagePolicy
from archer.models.prefix_generation import (
    PrefixStats,
    continuation_inputs,
    generate_at_states,
    generate_sharing_prefixes,
    group_into_chains,
    prefill,
)

START = "Questions:\n"
TURNS = ["Is it alive? Yes.\n", "Is it an animal? No.\n", "Is it a vehicle? Yes.\n"]
GAME = [START + "".join(TURNS[:n]) for n in range(4)]  # the states of one game
OTHER = [START + "Is it made of metal? Yes.\n", START + "Is it made of metal? Yes.\nIs it used in the kitchen? No.\n"]
LONELY = "Does it have wheels? No.\n"  # a prefix of no other observation
# Replay states of two games, out of order, with duplicates, a lonely state and an empty one (a 1-token prompt).
OBSERVATIONS = [GAME[2], OTHER[0], GAME[0], LONELY, GAME[3], GAME[1], OTHER[1], GAME[2], "", GAME[1], GAME[2]]


@pytest.fixture
def make_policy(
    tiny_policy_config: PolicyConfig,
    tiny_corpus: list[str],
    model_cache_dir: str,
    tiny_policy_weights: dict[str, dict[str, torch.Tensor]],
) -> Callable[..., LanguagePolicy]:
    def make(kind: str = "trained", **changes: Any) -> LanguagePolicy:
        cfg = dataclasses.replace(tiny_policy_config, **changes)
        model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
        model.load_state_dict(tiny_policy_weights[kind])
        return LanguagePolicy(model, tokenizer, cfg)

    return make


def maximal_prompts(prompts: list[list[int]]) -> list[list[int]]:
    """The distinct prompts that are a prefix of no other prompt (the chain heads, found by brute force)."""
    distinct = [list(p) for p in dict.fromkeys(tuple(p) for p in prompts)]
    return [p for p in distinct if not any(len(q) > len(p) and q[: len(p)] == p for q in distinct)]


def test_prompts_join_the_first_longer_head_they_are_a_prefix_of() -> None:
    prompts = [[1, 2], [1, 2, 3, 4], [5], [1, 2, 3], [1, 2, 3, 9], [1, 2], [5], [2, 3]]
    heads, chain = group_into_chains(prompts)
    # Longest first: [1, 2, 3, 4] and [1, 2, 3, 9] head chains; [1, 2, 3] and both [1, 2] join the first of them;
    # [2, 3] and the first [5] head their own chains, the second [5] joins its twin.
    assert heads == [1, 4, 7, 2]
    assert chain == [0, 0, 3, 0, 1, 0, 3, 2]
    assert group_into_chains([]) == ([], [])


@pytest.mark.parametrize("kind", ["trained", "noisy"])
@pytest.mark.parametrize("batch_size", [None, 1, 3])
def test_greedy_decodes_equal_generate_and_only_heads_are_prefilled(
    make_policy: Callable[..., LanguagePolicy], kind: str, batch_size: int | None
) -> None:
    policy = make_policy(kind)
    expected = policy.generate(OBSERVATIONS, greedy=True)
    stats = PrefixStats()
    shared = generate_sharing_prefixes(policy, OBSERVATIONS, greedy=True, batch_size=batch_size, stats=stats)
    assert shared == expected
    assert len({tuple(ids) for ids in expected.token_ids}) > 3  # the states' actions do differ
    prompts = policy.encode_prompts(OBSERVATIONS)
    heads = maximal_prompts(prompts)
    assert len(heads) == 4  # the two games' last states, the lonely state and the empty one
    assert stats == PrefixStats(
        rows=len(OBSERVATIONS),
        heads=4,
        prompt_tokens=sum(len(p) for p in prompts),
        prefilled_tokens=sum(len(p) for p in heads),
    )
    assert stats.prefilled_tokens < stats.prompt_tokens / 2


def test_left_truncated_prompts_decode_as_generate_decodes_them(make_policy: Callable[..., LanguagePolicy]) -> None:
    # 12 tokens: the longer states lose their oldest turns, so past the title their ids differ from the others' and
    # they head chains of their own.
    policy = make_policy(max_prompt_tokens=12)
    prompts = policy.encode_prompts(OBSERVATIONS)
    assert max(len(p) for p in prompts) == 12 and len(policy.encode_prompts([GAME[3]])[0]) == 12
    stats = PrefixStats()
    assert generate_sharing_prefixes(policy, OBSERVATIONS, greedy=True, batch_size=4, stats=stats) == policy.generate(
        OBSERVATIONS, greedy=True
    )
    heads = maximal_prompts(prompts)
    assert stats.heads == len(heads) and stats.prefilled_tokens == sum(len(p) for p in heads)


def test_a_chat_template_decodes_as_generate_decodes_it(tiny_corpus: list[str], model_cache_dir: str) -> None:
    # The history sits inside the instruction, so no prompt is a prefix of another: only duplicates share a head.
    embedded = EmbeddedModelConfig(n_layer=2, n_embd=32, n_head=2, vocab_size=320, max_positions=640)
    cfg = PolicyConfig(embedded=embedded, template="twenty_questions_chat", max_prompt_tokens=620, max_new_tokens=8)
    model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for param in model.parameters():
            param.data.add_(0.5 * torch.randn_like(param))
    policy = LanguagePolicy(model, tokenizer, cfg)
    observations = [GAME[1], GAME[2], GAME[1], OTHER[0]]
    stats = PrefixStats()
    shared = generate_sharing_prefixes(policy, observations, greedy=True, batch_size=2, stats=stats)
    assert shared == policy.generate(observations, greedy=True)
    assert stats.heads == 3


def test_first_token_logprobs_from_the_shared_cache_equal_a_fresh_prefill(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_policy()
    policy.model.eval()
    prompts = policy.encode_prompts(OBSERVATIONS)
    heads, chain = group_into_chains(prompts)
    cache = prefill(policy, [prompts[h] for h in heads])
    rows = [(position, prompt) for position, prompt in zip(chain, prompts, strict=True)]
    input_ids, attention_mask, row_cache = continuation_inputs(policy, cache, [len(prompts[h]) for h in heads], rows)
    assert attention_mask.sum(dim=1).tolist() == [len(p) for p in prompts]
    with torch.no_grad():
        # Positions from the mask, as generate counts them: the last prompt token sits at len(prompt) - 1.
        logits = policy.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=attention_mask.cumsum(-1)[:, -1:] - 1,
            past_key_values=row_cache,
        ).logits[:, -1]
        shared = F.log_softmax(logits, dim=-1)
        for row, prompt in enumerate(prompts):
            fresh = F.log_softmax(policy.model(input_ids=torch.tensor([prompt])).logits[0, -1], dim=-1)
            torch.testing.assert_close(shared[row], fresh, atol=1e-5, rtol=0)


def test_sampling_gives_every_duplicate_its_own_sample_and_restores_the_mode(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_policy("noisy")
    policy.model.train()
    observations = [GAME[2]] * 8 + [GAME[1]] * 4
    torch.manual_seed(0)
    generation = generate_sharing_prefixes(policy, observations, greedy=False, batch_size=5)
    assert policy.model.training
    assert len({tuple(ids) for ids in generation.token_ids[:8]}) > 1
    assert generation.texts == [policy.action_text(ids) for ids in generation.token_ids]
    assert all(0 < len(ids) <= policy.cfg.max_new_tokens for ids in generation.token_ids)
    assert generate_sharing_prefixes(policy, [], greedy=False) == Generation(texts=[], token_ids=[])


def test_prefills_and_decodes_never_exceed_the_batch_size(
    make_policy: Callable[..., LanguagePolicy], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = make_policy()
    prefilled: list[int] = []
    decoded: list[int] = []
    original_prefill, original_decode = prefix_generation.prefill, policy.decode_batch

    def recording_prefill(policy: LanguagePolicy, prompts: list[list[int]]) -> Any:
        prefilled.append(len(prompts))
        return original_prefill(policy, prompts)

    def recording_decode(input_ids: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        decoded.append(input_ids.shape[0])
        return original_decode(input_ids, *args, **kwargs)

    monkeypatch.setattr(prefix_generation, "prefill", recording_prefill)
    monkeypatch.setattr(policy, "decode_batch", recording_decode)
    generate_sharing_prefixes(policy, OBSERVATIONS, greedy=True, batch_size=3)
    assert prefilled == [3, 1]  # four heads
    assert max(decoded) <= 3 and sum(decoded) == len(OBSERVATIONS)


def test_models_that_cannot_continue_a_cache_fall_back_to_generate(
    make_policy: Callable[..., LanguagePolicy], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = make_policy()
    expected = policy.generate(OBSERVATIONS, greedy=True, batch_size=4)
    calls: list[int | None] = []
    generate = policy.generate

    def recording_generate(observations: list[str], greedy: bool, batch_size: int | None = None) -> Generation:
        calls.append(batch_size)
        return generate(observations, greedy=greedy, batch_size=batch_size)

    monkeypatch.setattr(policy, "generate", recording_generate)
    monkeypatch.setattr(prefix_generation, "supports_kv_reuse", lambda policy: False)
    stats = PrefixStats()
    assert generate_sharing_prefixes(policy, OBSERVATIONS, greedy=True, batch_size=4, stats=stats) == expected
    assert calls == [4] and stats == PrefixStats()


@pytest.mark.parametrize("share", [False, True])
def test_generate_at_states_shares_prefixes_only_when_configured(
    make_policy: Callable[..., LanguagePolicy], monkeypatch: pytest.MonkeyPatch, share: bool
) -> None:
    policy = make_policy(share_prefixes=share)
    shared: list[int | None] = []
    original = prefix_generation.generate_sharing_prefixes

    def recording(policy: LanguagePolicy, observations: list[str], greedy: bool, batch_size: int | None) -> Generation:
        shared.append(batch_size)
        return original(policy, observations, greedy, batch_size)

    monkeypatch.setattr(prefix_generation, "generate_sharing_prefixes", recording)
    generation = generate_at_states(policy, OBSERVATIONS, greedy=True, batch_size=4)
    assert generation == policy.generate(OBSERVATIONS, greedy=True)
    assert shared == ([4] if share else [])


def test_generate_at_states_batches_similar_lengths_and_returns_the_actions_in_order(
    make_policy: Callable[..., LanguagePolicy], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = make_policy(share_prefixes=False)
    expected = policy.generate(OBSERVATIONS, greedy=True)
    calls: list[list[str]] = []
    generate = policy.generate

    def recording_generate(observations: list[str], greedy: bool, batch_size: int | None = None) -> Generation:
        calls.append(list(observations))
        return generate(observations, greedy=greedy, batch_size=batch_size)

    monkeypatch.setattr(policy, "generate", recording_generate)
    assert generate_at_states(policy, OBSERVATIONS, greedy=True, batch_size=4) == expected
    # One call, longest state first, so each batch of 4 holds similar lengths.
    (seen,) = calls
    assert sorted(seen) == sorted(OBSERVATIONS) and [len(o) for o in seen] == sorted(map(len, OBSERVATIONS))[::-1]
    # Sampled with a seed: each state's action is one of the distribution's, the same multiset of draws.
    torch.manual_seed(0)
    sampled = generate_at_states(policy, OBSERVATIONS, greedy=False, batch_size=4)
    assert len(sampled.texts) == len(OBSERVATIONS)
    assert [policy.action_text(ids) for ids in sampled.token_ids] == sampled.texts


def test_share_prefixes_must_be_a_bool() -> None:
    PolicyConfig(share_prefixes=True).validate()
    with pytest.raises(ConfigError, match="model.policy.share_prefixes"):
        PolicyConfig(share_prefixes="yes").validate()  # type: ignore[arg-type]
