"""The token value model: a separate network whose values line up with the policy's token log-probabilities."""

from __future__ import annotations

import torch

from archer.config import PolicyConfig
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy
from archer.models.token_value import TokenValueModel, build_token_value_model


def _policy(cfg: PolicyConfig, cache: str, corpus: list[str]) -> LanguagePolicy:
    model, tokenizer = load_policy_model(cfg, cache, lambda: corpus)
    return LanguagePolicy(model, tokenizer, cfg)


def test_values_match_an_unpadded_forward_per_token(
    tiny_policy_config: PolicyConfig, model_cache_dir: str, tiny_corpus: list[str]
) -> None:
    policy = _policy(tiny_policy_config, model_cache_dir, tiny_corpus)
    value = build_token_value_model(policy)
    torch.manual_seed(0)
    torch.nn.init.normal_(value.head.weight)  # the zero initialisation would make every value 0
    observations = ["Questions:\n", "Questions:\nIs it alive? Yes.\nIs it an animal? Yes.\n"]
    actions = policy.encode_actions(["Is it a dog?", "Is it a truck or a chair?"])
    with torch.no_grad():
        values, mask = value(observations, actions)
        for i, (observation, ids) in enumerate(zip(observations, actions, strict=True)):
            prompt = policy.tokenizer(observation)["input_ids"]
            # Alone, unpadded: the value before action token j is the head on the hidden state of the column that
            # predicts token j, i.e. position len(prompt) - 1 + j.
            hidden = value.lm(torch.tensor([prompt + ids]), output_hidden_states=True).hidden_states[-1][0]
            expected = value.head(hidden[len(prompt) - 1 : len(prompt) - 1 + len(ids)]).squeeze(-1)
            torch.testing.assert_close(values[i, : len(ids)], expected, rtol=1e-4, atol=1e-5)
            assert mask[i, : len(ids)].eq(1).all() and mask[i, len(ids) :].eq(0).all()
            assert values[i, len(ids) :].eq(0).all()


def test_value_model_is_separate_from_the_policy(
    tiny_policy_config: PolicyConfig, model_cache_dir: str, tiny_corpus: list[str]
) -> None:
    policy = _policy(tiny_policy_config, model_cache_dir, tiny_corpus)
    value = build_token_value_model(policy)
    assert isinstance(value, TokenValueModel)
    policy_storage = {p.data_ptr() for p in policy.model.parameters()}
    assert policy_storage.isdisjoint(p.data_ptr() for p in value.parameters())
    # It starts from the policy's weights, and its state holds only its own language model and head.
    for name, param in policy.model.named_parameters():
        torch.testing.assert_close(dict(value.lm.named_parameters())[name], param)
    assert {key.split(".")[0] for key in value.state_dict()} == {"lm", "head"}
    # A value loss moves no policy weight.
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    values, mask = value(["Questions:\n"], policy.encode_actions(["Is it alive?"]))
    ((values - 1.0).pow(2) * mask).sum().backward()
    assert all(p.grad is None for p in policy.model.parameters())
    assert value.head.bias.grad is not None
    for name, param in policy.model.named_parameters():
        assert torch.equal(before[name], param)
