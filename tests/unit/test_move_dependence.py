"""``archer.move_dependence``: the state-dependence figure against hand-computed values, and the distributions a
policy gives a fixed move list."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from archer.config import PolicyConfig
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy
from archer.move_dependence import move_distributions, state_dependence


def test_a_policy_blind_to_the_state_scores_zero() -> None:
    same = torch.tensor([[0.43, 0.24, 0.13, 0.20]] * 5)
    assert state_dependence(same) == pytest.approx(0.0, abs=1e-7)


def test_state_dependence_by_hand() -> None:
    # Two sure, different moves: mean (0.5, 0.5), each row 0.5 away in total variation.
    assert state_dependence(torch.tensor([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.5)
    # Mean (1/3, 1/3, 1/3, 0): rows 1 and 2 are 1/3 away ((1/6 + 1/6 + 1/3) / 2), row 3 is 2/3 away
    # ((1/3 + 1/3 + 2/3) / 2): mean 4/9.
    rows = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    assert state_dependence(rows) == pytest.approx(4 / 9)


def test_state_dependence_refuses_no_states() -> None:
    with pytest.raises(ValueError, match="S > 0"):
        state_dependence(torch.zeros(0, 4))


def test_move_distributions_are_renormalised_over_the_moves_and_keep_the_mode(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    cfg = dataclasses.replace(tiny_policy_config)
    model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    policy = LanguagePolicy(model, tokenizer, cfg)
    model.train()
    moves = ("left", "down", "right", "up")
    rows = move_distributions(policy, ["Questions:\n", "Questions:\nIs it red? No.\n", "Grid:\n_ P\n"], moves)
    assert rows.shape == (3, 4) and rows.dtype == torch.float32
    torch.testing.assert_close(rows.sum(dim=1), torch.ones(3))
    assert model.training  # restored
    # Scored whole: each row is the softmax of the moves' summed token log-probabilities at that observation.
    actions = policy.encode_actions(list(moves))
    model.eval()
    with torch.no_grad():
        logprobs, mask = policy.token_logprobs(["Grid:\n_ P\n"] * 4, actions, as_sampled=False)
    torch.testing.assert_close(rows[2], torch.softmax((logprobs * mask).sum(-1), 0))
