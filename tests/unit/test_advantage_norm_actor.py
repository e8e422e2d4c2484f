"""ArCHer's actor step weighs the KL penalty against the advantages ``algorithm.advantage_norm`` makes: the same
loss as an un-normalised step given the normalised advantages, and a different one from the raw advantages."""

from __future__ import annotations

import pytest
import torch
from accelerate import Accelerator

from archer.algorithms import make_algorithm
from archer.config import ArcherConfig, CriticConfig, PolicyConfig
from archer.models.critic import build_critic
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy

STATES = ["Questions:\n", "Questions:\nIs it alive? Yes.\n", "Questions:\nIs it a fruit? No.\n", "Questions:\n"]
# Spread 0.0187 (population std), mean 0.01: FrozenLake-sized gaps.
RAW = torch.tensor([0.01, 0.03, -0.02, 0.02])


def _actor_loss(norm, advantages, policy_cfg, critic_cfg, cache, corpus, kl_coeff=0.1) -> dict[str, float]:
    torch.manual_seed(0)
    model, tokenizer = load_policy_model(policy_cfg, cache, lambda: corpus)
    policy = LanguagePolicy(model, tokenizer, policy_cfg)
    critic = build_critic(critic_cfg, cache, lambda: corpus)
    cfg = ArcherConfig(advantage_norm=norm, kl_coeff=kl_coeff, actor_micro_batch_size=2, actor_lr=1e-3)
    algorithm = make_algorithm(cfg, policy, Accelerator(cpu=True), critic=critic, progress=False)
    algorithm.actor_advantages = lambda observations, actions: advantages.clone()
    torch.manual_seed(1)  # the same samples in every call
    return algorithm.actor_step(list(STATES), iteration=1, step=0)


@pytest.mark.parametrize("norm", ["std_norm", "mean_std_norm"])
def test_actor_step_uses_the_normalised_advantages(
    norm: str,
    tiny_policy_config: PolicyConfig,
    tiny_critic_config: CriticConfig,
    model_cache_dir: str,
    tiny_corpus: list[str],
) -> None:
    args = (tiny_policy_config, tiny_critic_config, model_cache_dir, tiny_corpus)
    std = RAW.std(unbiased=False)
    by_hand = RAW / std if norm == "std_norm" else (RAW - RAW.mean()) / std
    normalised = _actor_loss(norm, RAW, *args)
    given = _actor_loss("none", by_hand, *args)
    raw = _actor_loss("none", RAW, *args)
    assert normalised["actor/pg_loss"] == pytest.approx(given["actor/pg_loss"], rel=1e-5, abs=1e-6)
    assert normalised["actor/advantage_scale"] == pytest.approx(float(std), rel=1e-6)
    # The logged advantages stay the critic's own, in the reward's units.
    assert normalised["actor/advantage_mean"] == pytest.approx(raw["actor/advantage_mean"], rel=1e-6)
    assert abs(normalised["actor/pg_loss"] - raw["actor/pg_loss"]) > 1e-3
    assert "actor/advantage_scale" not in raw
