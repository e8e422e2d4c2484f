"""DoubleCritic: shapes, pooling, padding invariance, target copies and Polyak averaging with hand numbers."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn
from transformers import RobertaModel

from archer.config import CriticConfig
from archer.models.critic import DoubleCritic, TextEncoder, build_critic, make_target_critic, soft_update
from archer.models.loading import load_critic_encoder

OBSERVATIONS = ["Questions:\n", "Questions:\nIs it alive? Yes.\nIs it an animal? No.\n", ""]
ACTIONS = ["Is it a dog?", "Is it made of metal?", "No"]


@pytest.fixture
def critic(tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str) -> DoubleCritic:
    torch.manual_seed(0)
    return build_critic(tiny_critic_config, model_cache_dir, lambda: tiny_corpus).eval()


def test_output_shapes_and_head_layout(critic: DoubleCritic) -> None:
    hidden = critic.encoder.hidden_size
    assert hidden == 32
    output = critic(OBSERVATIONS, ACTIONS)
    for value in (output.q1, output.q2, output.v1, output.v2):
        assert value.shape == (3,)
    assert [m.in_features for m in critic.q1 if isinstance(m, nn.Linear)] == [2 * hidden, hidden, hidden]
    assert [m.out_features for m in critic.v2 if isinstance(m, nn.Linear)] == [hidden, hidden, 1]
    assert [type(m) for m in critic.q2] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear]


def test_head_hidden_dim_sets_head_width(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    cfg = dataclasses.replace(tiny_critic_config, head_hidden_dim=16)
    critic = build_critic(cfg, model_cache_dir, lambda: tiny_corpus)
    assert [m.out_features for m in critic.q1 if isinstance(m, nn.Linear)] == [16, 16, 1]


def test_forward_agrees_with_the_embedding_methods_and_encodes_observations_once(
    critic: DoubleCritic, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    encode = critic.encoder.forward
    monkeypatch.setattr(critic.encoder, "forward", lambda texts: calls.append(texts) or encode(texts))
    output = critic(OBSERVATIONS, ACTIONS)
    assert calls == [OBSERVATIONS, ACTIONS]

    obs_emb, act_emb = critic.embed(OBSERVATIONS), critic.embed(ACTIONS)
    assert obs_emb.shape == (3, 32)
    q1, q2 = critic.q_from_embeddings(obs_emb, act_emb)
    v1, v2 = critic.v_from_embeddings(obs_emb)
    for got, expected in zip((output.q1, output.q2, output.v1, output.v2), (q1, q2, v1, v2), strict=True):
        torch.testing.assert_close(got, expected)
    assert not torch.allclose(q1, q2)  # the twin heads are initialised independently


def test_joint_q_input_encodes_each_action_after_its_observation(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    joint_config = dataclasses.replace(tiny_critic_config, q_input="joint")
    critic = build_critic(joint_config, model_cache_dir, lambda: tiny_corpus)
    calls: list[list[str]] = []
    encode = critic.encoder.forward
    monkeypatch.setattr(critic.encoder, "forward", lambda texts: calls.append(texts) or encode(texts))
    output = critic(OBSERVATIONS, ACTIONS)
    joined = [obs + action for obs, action in zip(OBSERVATIONS, ACTIONS, strict=True)]
    assert calls == [OBSERVATIONS, joined]
    # Q heads read [phi(obs + action); phi(obs)], V heads phi(obs): the same head shapes as "separate".
    q1, q2 = critic.q_from_embeddings(critic.embed(joined), critic.embed(OBSERVATIONS))
    torch.testing.assert_close(output.q1, q1)
    torch.testing.assert_close(output.q2, q2)
    torch.testing.assert_close(output.v1, critic.v_from_embeddings(critic.embed(OBSERVATIONS))[0])
    with pytest.raises(ValueError, match="q_input"):
        DoubleCritic(critic.encoder, q_input="concat")


@pytest.mark.parametrize("pooling", ["cls", "mean", "pooler", "last"])
def test_pooling_ignores_padding(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str, pooling: str
) -> None:
    encoder, tokenizer = load_critic_encoder(tiny_critic_config, model_cache_dir, lambda: tiny_corpus)
    text_encoder = TextEncoder(encoder, tokenizer, pooling, max_tokens=64).eval()
    batched = text_encoder(OBSERVATIONS)
    for i, text in enumerate(OBSERVATIONS):
        torch.testing.assert_close(batched[i], text_encoder([text])[0], rtol=0, atol=1e-5)


def test_mean_pooling_is_the_masked_mean(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    encoder, tokenizer = load_critic_encoder(tiny_critic_config, model_cache_dir, lambda: tiny_corpus)
    text_encoder = TextEncoder(encoder, tokenizer, "mean", max_tokens=64).eval()
    ids = tokenizer(["Is it alive?"], return_tensors="pt")
    hidden = encoder(**ids).last_hidden_state[0]
    torch.testing.assert_close(text_encoder(["Is it alive?"])[0], hidden.mean(dim=0))


def test_last_pooling_is_the_last_real_tokens_state(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    encoder, tokenizer = load_critic_encoder(tiny_critic_config, model_cache_dir, lambda: tiny_corpus)
    text_encoder = TextEncoder(encoder, tokenizer, "last", max_tokens=64).eval()
    texts = ["Is it alive?", "Questions:\nIs it a dog? No.\nIs it a cat?"]
    pooled = text_encoder(texts)  # the shorter text is right-padded in this batch
    for row, text in enumerate(texts):
        ids = tokenizer([text], return_tensors="pt")
        torch.testing.assert_close(pooled[row], encoder(**ids).last_hidden_state[0, -1], rtol=0, atol=1e-5)


def test_long_texts_keep_their_end(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    encoder, tokenizer = load_critic_encoder(tiny_critic_config, model_cache_dir, lambda: tiny_corpus)
    text_encoder = TextEncoder(encoder, tokenizer, "cls", max_tokens=16).eval()
    # Only the last 14 tokens (plus <s> and </s>) are kept, so different beginnings give the same vector.
    ending = " Is it a dog? Yes." * 10
    first, second = text_encoder(["Questions:\nIs it alive? Yes." + ending, "Something else entirely." + ending])
    torch.testing.assert_close(first, second)


def test_pooler_needs_a_pooler_and_pooling_must_be_known(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    encoder, tokenizer = load_critic_encoder(tiny_critic_config, model_cache_dir, lambda: tiny_corpus)
    without_pooler = RobertaModel(encoder.config, add_pooling_layer=False)
    with pytest.raises(ValueError, match="pooler"):
        TextEncoder(without_pooler, tokenizer, "pooler", max_tokens=64)(["Is it alive?"])
    with pytest.raises(ValueError, match="model.critic.pooling"):
        TextEncoder(encoder, tokenizer, "max", max_tokens=64)


def test_gradients_reach_encoder_and_heads(critic: DoubleCritic) -> None:
    output = critic(OBSERVATIONS, ACTIONS)
    (output.q1 + output.q2 + output.v1 + output.v2).sum().backward()
    # RoBERTa's pooler is unused with cls pooling, so it gets no gradient.
    missing = [name for name, p in critic.named_parameters() if p.grad is None and ".pooler." not in name]
    assert missing == []


def test_build_critic_applies_dtype(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    cfg = dataclasses.replace(tiny_critic_config, dtype="bfloat16")
    critic = build_critic(cfg, model_cache_dir, lambda: tiny_corpus)
    assert {p.dtype for p in critic.parameters()} == {torch.bfloat16}
    assert critic(OBSERVATIONS, ACTIONS).q1.dtype == torch.bfloat16


def test_target_critic_is_a_frozen_independent_copy(critic: DoubleCritic) -> None:
    critic.train()
    target = make_target_critic(critic)
    assert not target.training and critic.training
    assert not any(p.requires_grad for p in target.parameters())
    assert all(p.requires_grad for p in critic.parameters())
    critic.eval()
    torch.testing.assert_close(target(OBSERVATIONS, ACTIONS).q1, critic(OBSERVATIONS, ACTIONS).q1)
    with torch.no_grad():
        critic.q1[0].weight.add_(1.0)
    assert not torch.equal(target.q1[0].weight, critic.q1[0].weight)


class _Tiny(nn.Module):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.full((2,), value))
        self.register_buffer("running", torch.full((2,), value))
        self.register_buffer("count", torch.full((2,), int(value), dtype=torch.long))


def test_soft_update_by_hand() -> None:
    target, online = _Tiny(0.0), _Tiny(10.0)
    soft_update(target, online, tau=0.1)
    # 0.9 * 0 + 0.1 * 10 = 1
    torch.testing.assert_close(target.weight.data, torch.full((2,), 1.0))
    torch.testing.assert_close(target.running, torch.full((2,), 1.0))
    assert target.count.tolist() == [10, 10]  # integer buffers are copied, not averaged
    soft_update(target, online, tau=0.1)
    # 0.9 * 1 + 0.1 * 10 = 1.9
    torch.testing.assert_close(target.weight.data, torch.full((2,), 1.9))
    soft_update(target, online, tau=1.0)
    assert torch.equal(target.weight, online.weight)
    assert online.weight.tolist() == [10.0, 10.0]


def test_soft_update_on_critics_and_mismatch(critic: DoubleCritic) -> None:
    target = make_target_critic(critic)
    with torch.no_grad():
        for parameter in critic.parameters():
            parameter.add_(1.0)
    before = {name: p.clone() for name, p in target.named_parameters()}
    soft_update(target, critic, tau=0.25)
    for name, parameter in target.named_parameters():
        torch.testing.assert_close(parameter, before[name] + 0.25)
        assert not parameter.requires_grad
    with pytest.raises(ValueError, match="different parameters"):
        soft_update(target, _Tiny(0.0), tau=0.5)


# ---- a frozen encoder (model.critic.freeze_encoder) ------------------------------------------------------------


@pytest.fixture
def frozen_critic(tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str) -> DoubleCritic:
    torch.manual_seed(0)
    cfg = dataclasses.replace(tiny_critic_config, freeze_encoder=True, embedding_cache_size=4)
    return build_critic(cfg, model_cache_dir, lambda: tiny_corpus)


def test_a_frozen_encoder_has_no_gradient_and_stays_in_eval_mode(frozen_critic: DoubleCritic) -> None:
    assert not any(p.requires_grad for p in frozen_critic.encoder.parameters())
    assert all(p.requires_grad for head in (frozen_critic.q1, frozen_critic.v2) for p in head.parameters())
    frozen_critic.train()
    assert frozen_critic.training and frozen_critic.q1.training
    assert not frozen_critic.encoder.encoder.training  # dropout would make kept vectors differ from fresh ones


def test_a_frozen_encoder_keeps_each_texts_vector_and_computes_it_once(
    frozen_critic: DoubleCritic, monkeypatch: pytest.MonkeyPatch
) -> None:
    text_encoder = frozen_critic.encoder
    fresh = TextEncoder(text_encoder.encoder, text_encoder.tokenizer, "cls", max_tokens=64).eval()
    encoded: list[list[str]] = []
    encode = text_encoder._encode
    monkeypatch.setattr(text_encoder, "_encode", lambda texts: encoded.append(list(texts)) or encode(texts))

    first = text_encoder(["a dog", "a cat", "a dog"])
    again = text_encoder(["a cat", "a cow"])
    assert encoded == [["a dog", "a cat"], ["a cow"]]  # duplicates and known texts are not encoded again
    with torch.no_grad():
        torch.testing.assert_close(first, fresh(["a dog", "a cat", "a dog"]))
        torch.testing.assert_close(again, fresh(["a cat", "a cow"]))
    assert not first.requires_grad


def test_the_kept_vectors_are_bounded_least_recently_used_first(frozen_critic: DoubleCritic) -> None:
    text_encoder = frozen_critic.encoder  # keeps 4
    text_encoder(["t1", "t2", "t3", "t4"])
    text_encoder(["t1"])  # now the most recent
    text_encoder(["t5"])
    assert list(text_encoder._cache) == ["t3", "t4", "t1", "t5"]


def test_loading_weights_clears_the_kept_vectors(frozen_critic: DoubleCritic) -> None:
    before = frozen_critic.embed(["Is it a dog?"])
    state = {k: v.clone() for k, v in frozen_critic.state_dict().items()}
    for key in state:
        if key.startswith("encoder.") and state[key].is_floating_point():
            state[key] += 0.5
    frozen_critic.load_state_dict(state)
    assert not frozen_critic.encoder._cache
    assert not torch.allclose(frozen_critic.embed(["Is it a dog?"]), before)


def test_the_target_of_a_frozen_critic_shares_its_encoder(frozen_critic: DoubleCritic) -> None:
    target = make_target_critic(frozen_critic)
    assert target.encoder is frozen_critic.encoder
    assert target.q1 is not frozen_critic.q1
    torch.testing.assert_close(target.q1[0].weight, frozen_critic.q1[0].weight)
    with torch.no_grad():
        frozen_critic.q1[0].weight.add_(1.0)
    soft_update(target, frozen_critic, tau=0.5)
    torch.testing.assert_close(target.q1[0].weight, frozen_critic.q1[0].weight - 0.5)


def test_an_unfrozen_target_copies_its_encoder(critic: DoubleCritic) -> None:
    assert make_target_critic(critic).encoder is not critic.encoder
