"""Scoring under the distribution that sampled: temperature, top-k and top-p applied to the logits a loss reads."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from archer.algorithms.bc import BCAlgorithm
from archer.config import BCConfig, PolicyConfig
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy, sampling_log_softmax

INF = float("inf")
OBSERVATIONS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? No.\n",
    "Questions:\nIs it red? No.\n",
]


@pytest.fixture
def make_policy(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> Callable[..., LanguagePolicy]:
    def make(**changes: Any) -> LanguagePolicy:
        cfg = dataclasses.replace(tiny_policy_config, **changes)
        model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
        return LanguagePolicy(model, tokenizer, cfg)

    return make


def _per_token_logits(policy: LanguagePolicy, observation: str, action: list[int]) -> torch.Tensor:
    """(n, V) raw next-token logits before each action token, one unpadded forward per token."""
    prompt = policy.tokenizer(observation)["input_ids"]
    rows = [policy.model(input_ids=torch.tensor([prompt + action[:j]])).logits[0, -1] for j in range(len(action))]
    return torch.stack(rows).detach()


def _hf_warpers(temperature: float, top_k: int, top_p: float) -> LogitsProcessorList:
    return LogitsProcessorList(
        [TemperatureLogitsWarper(temperature), TopKLogitsWarper(top_k), TopPLogitsWarper(top_p)]
    )


def test_sampling_log_softmax_hand_computed() -> None:
    logits = torch.tensor(
        [
            [1.0, 0.5, 0.5, -0.5, 0.0],
            [1.5, 0.0, -0.5, 0.25, -2.0],
        ]
    )
    got = sampling_log_softmax(logits, temperature=0.5, top_k=2, top_p=0.9)
    # Row 0. Divided by 0.5: [2, 1, 1, -1, 0]. Top-2: the 2nd largest score is 1, and both tokens scoring 1 tie
    # with it, so three tokens stay: {0: 2, 1: 1, 2: 1}. Their probabilities are e^2 / Z, e^1 / Z, e^1 / Z with
    # Z = e^2 + 2 e^1 = 12.8256, i.e. 0.5761, 0.2119, 0.2119; sorted ascending the cumulative sums are 0.2119,
    # 0.4239, 1, none <= 1 - 0.9 = 0.1, so top-p drops nothing. log p = score - log Z, log Z = 2.5514.
    log_z = math.log(math.exp(2) + 2 * math.exp(1))
    row0 = [2 - log_z, 1 - log_z, 1 - log_z, -INF, -INF]
    assert row0[:3] == pytest.approx([-0.551445, -1.551445, -1.551445], abs=1e-6)
    # Row 1. Divided by 0.5: [3, 0, -1, 0.5, -4]. Top-2 keeps token 0 (3) and token 3 (0.5): probabilities
    # 1 / (1 + e^-2.5) = 0.9241 and 0.0759. Ascending, token 3's cumulative sum is 0.0759 <= 0.1, so top-p drops
    # it; the most likely token always stays, alone, with log p = 0.
    row1 = [0.0, -INF, -INF, -INF, -INF]
    torch.testing.assert_close(got, torch.tensor([row0, row1]), rtol=0, atol=1e-6)
    # Each filter alone, on row 1. Temperature only: log_softmax([3, 0, -1, 0.5, -4]).
    scaled = [3.0, 0.0, -1.0, 0.5, -4.0]
    log_z1 = math.log(sum(math.exp(s) for s in scaled))
    torch.testing.assert_close(
        sampling_log_softmax(logits[1], 0.5, top_k=0, top_p=1.0), torch.tensor([s - log_z1 for s in scaled])
    )
    # Top-2 only: token 0 at log(0.9241) = -0.0789, token 3 at log(0.0759) = -2.5789.
    log_z2 = math.log(math.exp(3) + math.exp(0.5))
    torch.testing.assert_close(
        sampling_log_softmax(logits[1], 0.5, top_k=2, top_p=1.0),
        torch.tensor([3 - log_z2, -INF, -INF, 0.5 - log_z2, -INF]),
    )


def test_sampling_log_softmax_matches_transformers_warpers() -> None:
    torch.manual_seed(0)
    logits = torch.randn(64, 50) * 3
    logits[:, 7] = logits[:, 8]  # ties, at whatever rank they fall
    logits[0] = torch.tensor([1.0] * 50)  # a whole row of ties
    for temperature, top_k, top_p in ((0.5, 2, 0.9), (0.7, 10, 0.8), (1.3, 50, 0.5), (1.0, 3, 1.0), (0.5, 0, 0.9)):
        warpers = LogitsProcessorList([TemperatureLogitsWarper(temperature)])
        if top_k > 0:
            warpers.append(TopKLogitsWarper(top_k))
        if top_p < 1.0:
            warpers.append(TopPLogitsWarper(top_p))
        expected = F.log_softmax(warpers(None, logits.clone()), dim=-1)
        got = sampling_log_softmax(logits, temperature, top_k, top_p)
        assert torch.equal(torch.isinf(got), torch.isinf(expected)), (temperature, top_k, top_p)
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_sampled_tokens_are_scored_under_the_distribution_generate_sampled_from(
    make_policy: Callable[..., LanguagePolicy], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = make_policy(temperature=0.5, top_k=5, top_p=0.9)
    captured = []
    generate = policy.model.generate

    def generate_with_scores(**kwargs: Any) -> Any:
        # output_scores holds the processed scores each token was drawn from (after temperature, top-k, top-p).
        output = generate(**kwargs, output_scores=True, output_logits=True)
        captured.append(output)
        return output

    monkeypatch.setattr(policy.model, "generate", generate_with_scores)
    torch.manual_seed(3)
    generation = policy.generate(OBSERVATIONS, greedy=False)
    drawn_from = F.log_softmax(torch.stack(captured[0].scores, dim=1), dim=-1)  # (B, new tokens, V)
    raw = torch.stack(captured[0].logits, dim=1)
    sampled, sampled_mask = policy.token_logprobs(OBSERVATIONS, generation.token_ids, as_sampled=True)
    plain, _ = policy.token_logprobs(OBSERVATIONS, generation.token_ids, as_sampled=False)
    warpers = _hf_warpers(0.5, 5, 0.9)
    for i, ids in enumerate(generation.token_ids):
        chosen = torch.tensor(ids).unsqueeze(-1)
        expected = drawn_from[i, : len(ids)].gather(-1, chosen).squeeze(-1)
        assert torch.isfinite(expected).all()
        torch.testing.assert_close(sampled[i, : len(ids)], expected, rtol=0, atol=1e-5)
        # The same from transformers' warpers applied to the scoring pass's own logits, token by token.
        logits = _per_token_logits(policy, OBSERVATIONS[i], ids)
        warped = F.log_softmax(warpers(None, logits), dim=-1).gather(-1, chosen).squeeze(-1)
        torch.testing.assert_close(sampled[i, : len(ids)], warped, rtol=0, atol=1e-5)
        # The plain score is the untempered, unfiltered softmax of the raw logits, which differs.
        untempered = F.log_softmax(raw[i, : len(ids)], dim=-1).gather(-1, chosen).squeeze(-1)
        torch.testing.assert_close(plain[i, : len(ids)], untempered, rtol=0, atol=1e-5)
        assert sampled_mask[i].sum() == len(ids)
    assert not torch.allclose(sampled * sampled_mask, plain * sampled_mask, atol=1e-3)
    # The summed version is the masked sum of the per-token one.
    torch.testing.assert_close(
        policy.sequence_logprobs(OBSERVATIONS, generation.token_ids, as_sampled=True), (sampled * sampled_mask).sum(1)
    )


def test_switch_off_scores_samples_as_before(make_policy: Callable[..., LanguagePolicy]) -> None:
    on, off = (
        make_policy(temperature=0.5, top_k=2, top_p=0.9),
        make_policy(temperature=0.5, top_k=2, top_p=0.9, score_as_sampled=False),
    )
    actions = [[40, 41, on.stop_token_id], [7, 9], [100, 101, 102, on.stop_token_id]]
    old, mask = off.token_logprobs(OBSERVATIONS, actions, as_sampled=True)
    for i, action in enumerate(actions):
        # The previous behaviour: log_softmax of the raw logits, whatever the sampling settings.
        expected = F.log_softmax(_per_token_logits(off, OBSERVATIONS[i], action), dim=-1)
        expected = expected.gather(-1, torch.tensor(action).unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(old[i, : len(action)], expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(old, off.token_logprobs(OBSERVATIONS, actions, as_sampled=False)[0])
    new, _ = on.token_logprobs(OBSERVATIONS, actions, as_sampled=True)
    assert not torch.allclose(new * mask, old * mask, atol=1e-3)


def test_a_token_outside_the_kept_set_falls_back_to_the_tempered_softmax(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_policy(temperature=0.5, top_k=2, top_p=1.0)
    logits = _per_token_logits(policy, OBSERVATIONS[0], [0])[0]  # (V,)
    outside = int(logits.argsort()[0])  # the least likely token: never in the top 2
    inside = int(logits.argmax())
    scored, _ = policy.token_logprobs(OBSERVATIONS[:1], [[outside]], as_sampled=True)
    tempered = F.log_softmax(logits / 0.5, dim=-1)
    torch.testing.assert_close(scored[0, 0], tempered[outside], rtol=0, atol=1e-5)
    top2 = logits.topk(2).values / 0.5
    kept, _ = policy.token_logprobs(OBSERVATIONS[:1], [[inside]], as_sampled=True)
    # The most likely of two kept tokens: score minus the log of the two tokens' mass.
    torch.testing.assert_close(kept[0, 0], top2[0] - torch.logsumexp(top2, 0), rtol=0, atol=1e-5)


def _bc_buffer() -> ReplayBuffer:
    buffer = ReplayBuffer(capacity=16, gamma_mc=1.0)
    start = "Questions:\n"
    buffer.add_trajectories(
        [
            Trajectory([start, start + "Is it alive? Yes.\n"], ["Is it alive?"], [-1.0], terminated=True),
            Trajectory([start, start + "Is it a truck? No.\n"], ["Is it a truck?"], [-1.0], terminated=True),
        ]
    )
    return buffer


def test_behaviour_cloning_on_dataset_actions_ignores_the_sampling_settings(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    cfg = BCConfig(num_iterations=1, steps_per_iter=2, batch_size=4, actor_micro_batch_size=2, actor_lr=1e-2)
    metrics = {}
    for name, changes in (("default", {}), ("sharp", {"temperature": 0.5, "top_k": 2, "top_p": 0.9})):
        policy = make_policy(**changes)
        torch.manual_seed(0)
        bc = BCAlgorithm(cfg, policy, Accelerator(cpu=True), progress=False)
        metrics[name] = bc.update(_bc_buffer(), iteration=1, rng=np.random.default_rng(0))
    # A dataset token outside the top-2 would make the sampled score far lower; BC reads the plain softmax.
    assert metrics["sharp"] == pytest.approx(metrics["default"], rel=1e-6)
    policy = make_policy(temperature=0.5, top_k=2, top_p=0.9)
    actions = policy.encode_actions(["Is it alive?", "Is it a truck?"])
    plain, mask = policy.token_logprobs(OBSERVATIONS[:2], actions, as_sampled=False)
    for i, action in enumerate(actions):
        expected = F.log_softmax(_per_token_logits(policy, OBSERVATIONS[i], action), dim=-1)
        expected = expected.gather(-1, torch.tensor(action).unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(plain[i, : len(action)], expected, rtol=0, atol=1e-5)
