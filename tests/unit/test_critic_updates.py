"""CriticLearner (the shared critic step), done flags, and reading episodes back from an offline buffer."""

from __future__ import annotations

import copy
import dataclasses
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from accelerate import Accelerator

from archer.algorithms.archer import ArcherAlgorithm
from archer.algorithms.critic_updates import CriticLearner, done_flags
from archer.algorithms.losses import archer_critic_loss, iql_critic_loss
from archer.algorithms.offline_filtered_bc import buffer_episodes
from archer.config import ArcherConfig, CriticConfig
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory
from archer.models.critic import DoubleCritic, build_critic


def _trajectories() -> list[Trajectory]:
    start = "Questions:\n"
    first = start + "Is it alive? No.\n"
    return [
        Trajectory([start, first, first + "Is it a pen? Yes.\n"], ["Is it alive?", "Is it a pen?"], [-1, 0], True),
        # Unfinished (no end flag), then an episode whose first state is not this one's last: a chain break.
        Trajectory([start, start + "Is it red? No.\n"], ["Is it red?"], [-1]),
        Trajectory([start, start + "Is it big? Yes.\n"], ["Is it big?"], [-1], truncated=True),
    ]


@pytest.fixture
def buffer() -> ReplayBuffer:
    buffer = ReplayBuffer(capacity=4, gamma_mc=1.0)
    buffer.add_trajectories(_trajectories())
    return buffer


@pytest.fixture
def critic(tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str) -> DoubleCritic:
    torch.manual_seed(0)
    return build_critic(tiny_critic_config, model_cache_dir, lambda: tiny_corpus)


def _learner(critic: DoubleCritic, loss, **changes) -> CriticLearner:
    settings = dict(lr=1e-3, gamma=0.9, tau=0.1, micro_batch_size=3, max_grad_norm=1.0) | changes
    return CriticLearner(critic, Accelerator(cpu=True), loss, **settings)


def test_buffer_episodes_rebuilds_the_added_episodes(buffer: ReplayBuffer) -> None:
    rebuilt = buffer_episodes(buffer)
    assert len(rebuilt) == 3
    for got, expected in zip(rebuilt, _trajectories(), strict=True):
        assert (got.observations, got.actions, got.rewards, got.terminated) == (
            expected.observations,
            expected.actions,
            expected.rewards,
            expected.terminated,
        )
        assert got.truncated == expected.truncated
    assert buffer_episodes(ReplayBuffer(capacity=2, gamma_mc=1.0)) == []


def test_done_flags_treat_truncation_as_terminal_unless_bootstrapping(buffer: ReplayBuffer) -> None:
    batch = buffer.get(np.arange(4))
    # Transitions: mid-episode, terminated, unfinished end, truncated.
    assert done_flags(batch, bootstrap_on_truncation=False).tolist() == [0.0, 1.0, 0.0, 1.0]
    assert done_flags(batch, bootstrap_on_truncation=True).tolist() == [0.0, 1.0, 0.0, 0.0]


def test_learner_with_archer_loss_is_archers_critic_step(critic: DoubleCritic, buffer: ReplayBuffer) -> None:
    # The shared step must reproduce online ArCHer's critic step exactly, so archer.py can use it unchanged.
    critic.eval()
    twin = copy.deepcopy(critic)
    cfg = ArcherConfig(gamma=0.9, tau=0.1, critic_lr=1e-3, critic_micro_batch_size=3, max_grad_norm=1.0)
    archer = ArcherAlgorithm(cfg, SimpleNamespace(model=torch.nn.Linear(1, 1)), Accelerator(cpu=True), critic=critic)
    learner = _learner(twin, archer_critic_loss)
    batch = buffer.get(np.arange(4))
    sampled = ["Is it a cat?", "Is it a pen?", "Is it red?", "Is it small?"]
    for step in range(2):
        expected = archer.critic_step(batch, sampled, iteration=1, step=step)
        assert learner.step(batch, sampled, iteration=1, step=step) == pytest.approx(expected, rel=1e-6)
    for ours, theirs in ((twin, critic), (learner.target_critic, archer.target_critic)):
        for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
            torch.testing.assert_close(a, b, msg=name)


def test_iql_step_moves_the_target_by_polyak_only_and_clears_gradients(
    critic: DoubleCritic, buffer: ReplayBuffer
) -> None:
    learner = _learner(critic, partial(iql_critic_loss, expectile=0.9), dropout=True, tau=0.25)
    target_before = {n: p.detach().clone() for n, p in learner.target_critic.named_parameters()}
    critic_before = {n: p.detach().clone() for n, p in critic.named_parameters()}
    batch = buffer.get(np.arange(4))
    metrics = learner.step(batch, batch.actions, iteration=1, step=0)
    assert {"critic/q1_loss", "critic/v1_loss", "critic/grad_norm"} <= metrics.keys()
    online = dict(critic.named_parameters())
    assert any(not torch.equal(critic_before[n], online[n]) for n in online)
    for name, param in learner.target_critic.named_parameters():
        # Polyak with tau = 0.25: target <- 0.75 * target + 0.25 * critic (after the critic's Adam step).
        torch.testing.assert_close(param, 0.75 * target_before[name] + 0.25 * online[name].detach())
        assert not param.requires_grad and param.grad is None
    assert all(p.grad is None for p in critic.parameters())
    # Dropout was on only inside the step; the target never leaves eval mode.
    assert not critic.training and not learner.target_critic.training


def test_advantages_are_min_q_minus_min_v_without_dropout(critic: DoubleCritic, buffer: ReplayBuffer) -> None:
    learner = _learner(critic, partial(iql_critic_loss, expectile=0.9), micro_batch_size=2)
    batch = buffer.get(np.arange(4))
    critic.train()  # dropout on: advantages must still be deterministic and leave the mode as it was
    advantages = learner.advantages(batch.observations, batch.actions)
    assert critic.training and not advantages.requires_grad
    critic.eval()
    with torch.no_grad():
        out = critic(batch.observations, batch.actions)
    expected = torch.minimum(out.q1, out.q2) - torch.minimum(out.v1, out.v2)
    torch.testing.assert_close(advantages, expected)


def test_learner_state_round_trips(critic: DoubleCritic, buffer: ReplayBuffer) -> None:
    learner = _learner(critic, partial(iql_critic_loss, expectile=0.9))
    batch = buffer.get(np.arange(4))
    learner.step(batch, batch.actions, iteration=1, step=0)
    fresh = _learner(copy.deepcopy(critic), partial(iql_critic_loss, expectile=0.9))
    # A deep copy, as a checkpoint on disk is: Adam's load_state_dict keeps the given moment tensors, so sharing
    # them would let one learner's step change the other's state.
    fresh.load_state_dict(copy.deepcopy(learner.state_dict()))
    # Same state, same batch: the next step gives the same metrics and weights.
    assert fresh.step(batch, batch.actions, 1, 1) == pytest.approx(learner.step(batch, batch.actions, 1, 1), rel=1e-6)
    for a, b in zip(fresh.target_critic.parameters(), learner.target_critic.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_a_frozen_encoder_critic_trains_its_heads_only(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str, buffer: ReplayBuffer
) -> None:
    torch.manual_seed(0)
    cfg = dataclasses.replace(tiny_critic_config, freeze_encoder=True, q_input="joint")
    critic = build_critic(cfg, model_cache_dir, lambda: tiny_corpus)
    learner = _learner(critic, archer_critic_loss)
    optimised = {id(p) for group in learner.optimizer.param_groups for p in group["params"]}
    assert optimised == {id(p) for name, p in critic.named_parameters() if not name.startswith("encoder.")}
    before = {n: p.detach().clone() for n, p in critic.named_parameters()}
    batch = buffer.get(np.arange(4))
    for step in range(2):
        learner.step(batch, batch.actions, iteration=1, step=step)
    for name, param in critic.named_parameters():
        assert torch.equal(param, before[name]) == name.startswith("encoder."), name
    assert learner.target_critic.encoder is critic.encoder
    # Every text the step read was encoded once and kept: observations, next observations and joint texts.
    texts = set(batch.observations) | set(batch.next_observations)
    texts |= {obs + action for obs, action in zip(batch.observations, batch.actions, strict=True)}
    assert set(critic.encoder._cache) == texts
