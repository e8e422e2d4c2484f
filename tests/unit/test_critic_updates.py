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
from archer.algorithms.base import micro_batches_by_length
from archer.algorithms.critic_updates import CriticLearner, done_flags
from archer.algorithms.losses import archer_critic_loss, iql_critic_loss
from archer.algorithms.offline_filtered_bc import buffer_episodes
from archer.config import ArcherConfig, BCConfig, CriticConfig, CriticTrainingConfig
from archer.config.checks import ConfigError
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory, TransitionBatch
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


def _learner(
    critic: DoubleCritic, loss, dropout: bool = False, max_grad_norm: float = 1.0, **changes
) -> CriticLearner:
    settings = CriticTrainingConfig(**(dict(lr=1e-3, gamma=0.9, tau=0.1, micro_batch_size=3) | changes))
    cfg = ArcherConfig(critic=settings, max_grad_norm=max_grad_norm)
    return CriticLearner(cfg, critic, Accelerator(cpu=True), loss, dropout=dropout)


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
    cfg = ArcherConfig(critic=CriticTrainingConfig(lr=1e-3, gamma=0.9, tau=0.1, micro_batch_size=3), max_grad_norm=1.0)
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


def test_micro_batches_group_rows_of_similar_lengths() -> None:
    lengths = [5, 50, 1, 30, 10, 40]
    # Longest first in runs of two: (50, 40), (30, 10), (5, 1), i.e. rows (1, 5), (3, 4), (0, 2).
    assert micro_batches_by_length(range(6), lengths, 2) == [[1, 5], [3, 4], [0, 2]]
    assert micro_batches_by_length(range(6), lengths, 4) == [[1, 5, 3, 4], [0, 2]]
    assert micro_batches_by_length([2, 0, 4], lengths, 2) == [[4, 0], [2]]  # some rows only: 10, 5, then 1
    # Equal lengths keep their order (the sort is stable).
    assert micro_batches_by_length(range(3), [7, 7, 7], 2) == [[0, 1], [2]]


@pytest.mark.parametrize("loss", [archer_critic_loss, partial(iql_critic_loss, expectile=0.9)])
def test_the_step_does_not_depend_on_how_rows_are_grouped_into_micro_batches(
    critic: DoubleCritic, buffer: ReplayBuffer, loss
) -> None:
    # Rows grouped by length (3 + 1 rows here) give the whole batch's loss, gradient, metrics and updates.
    twin = copy.deepcopy(critic)
    # The grouped side also computes its targets in passes of 2 rows, the whole side in one pass.
    grouped = _learner(critic, loss, micro_batch_size=3, target_micro_batch_size=2)
    whole = _learner(twin, loss, micro_batch_size=4)
    batch = buffer.get(np.arange(4))
    assert len({len(obs) for obs in batch.observations}) > 1
    sampled = ["Is it a cat?", "Is it a pen?", "Is it red?", "Is it small?"]
    for step in range(2):
        assert grouped.step(batch, sampled, 1, step) == pytest.approx(
            whole.step(batch, sampled, 1, step), rel=1e-5, abs=1e-7
        )
    for ours, theirs in ((critic, twin), (grouped.target_critic, whole.target_critic)):
        for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
            torch.testing.assert_close(a, b, msg=name, rtol=1e-5, atol=1e-6)


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
    # Online ArCHer's actor scores its whole batch in one pass: the same advantages.
    torch.testing.assert_close(learner.advantages(batch.observations, batch.actions, rows_per_pass=4), expected)


def test_a_learner_needs_an_algorithm_with_a_critic_group(critic: DoubleCritic) -> None:
    with pytest.raises(ValueError, match="bc has no critic group"):
        CriticLearner(BCConfig(), critic, Accelerator(cpu=True), archer_critic_loss)


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


# ---- one online ArCHer critic step against numbers built by hand ---------------------------------------------------


class _LookupCritic(torch.nn.Module):
    """A critic whose every output is a table entry, each a trainable number: ``Q_i(s, a) = q[(s, a)][i]`` and
    ``V_i(s) = v[s][i]``. It has the methods ``CriticLearner`` calls, so a step's targets, loss, Adam step and Polyak
    update can all be worked out by hand."""

    def __init__(self, q: dict[tuple[str, str], tuple[float, float]], v: dict[str, tuple[float, float]]) -> None:
        super().__init__()
        self.pairs, self.states = list(q), list(v)
        self.q_table = torch.nn.Parameter(torch.tensor([q[pair] for pair in self.pairs]))  # (P, 2)
        self.v_table = torch.nn.Parameter(torch.tensor([v[state] for state in self.states]))  # (S, 2)

    def embed(self, texts: list[str]) -> torch.Tensor:
        """(B, S) one-hot rows over the known states."""
        index = torch.tensor([self.states.index(text) for text in texts])
        return torch.nn.functional.one_hot(index, len(self.states)).float()

    def v_from_embeddings(self, obs_emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values = obs_emb @ self.v_table  # (B, 2)
        return values[:, 0], values[:, 1]

    def q_values(
        self, observations: list[str], actions: list[str], obs_emb: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.q_table[[self.pairs.index(pair) for pair in zip(observations, actions, strict=True)]]
        return rows[:, 0], rows[:, 1]

    def q(self, state: str, action: str) -> list[float]:
        return self.q_table[self.pairs.index((state, action))].tolist()

    def v(self, state: str) -> list[float]:
        return self.v_table[self.states.index(state)].tolist()


# Three transitions: s0 -a0-> s1 (reward -1, the game goes on); s1 -a1-> s2 (reward 0, won: terminated); t0 -a2-> t1
# (reward -1, the turn limit: truncated). b0, b1, b2 are the fresh policy samples a~ at s0, s1, t0.
# Online critic (Q1, Q2) at the replay actions and (V1, V2); (-7, -7) at the samples and (0, 0) at the next states
# are there to be caught if the step read them: a step must never take its targets from the online critic.
ONLINE_Q = {
    ("s0", "a0"): (0.0, 1.0),
    ("s1", "a1"): (1.0, 0.0),
    ("t0", "a2"): (-2.0, -1.0),
    ("s0", "b0"): (-7.0, -7.0),
    ("s1", "b1"): (-7.0, -7.0),
    ("t0", "b2"): (-7.0, -7.0),
}
ONLINE_V = {"s0": (1.0, 0.0), "s1": (1.0, 1.0), "t0": (-1.0, -3.0), "s2": (0.0, 0.0), "t1": (0.0, 0.0)}
# Target critic: Qbar at the samples gives the V targets; Vbar at the next states gives the Q targets. Qbar at the
# replay actions (9, 9) and Vbar(s2) (a terminal state) must not be read.
TARGET_Q = {
    ("s0", "a0"): (9.0, 9.0),
    ("s1", "a1"): (9.0, 9.0),
    ("t0", "a2"): (9.0, 9.0),
    ("s0", "b0"): (0.3, 0.7),
    ("s1", "b1"): (1.5, 1.2),
    ("t0", "b2"): (-2.0, -2.5),
}
TARGET_V = {"s0": (5.0, 5.0), "s1": (2.0, 4.0), "t0": (5.0, 5.0), "s2": (10.0, 20.0), "t1": (-3.0, -5.0)}


def _hand_batch() -> TransitionBatch:
    return TransitionBatch(
        observations=["s0", "s1", "t0"],
        actions=["a0", "a1", "a2"],
        rewards=torch.tensor([-1.0, 0.0, -1.0]),
        next_observations=["s1", "s2", "t1"],
        terminated=torch.tensor([0.0, 1.0, 0.0]),
        truncated=torch.tensor([0.0, 0.0, 1.0]),
        # Far from every target: the Q targets must not read the stored returns.
        mc_returns=torch.tensor([100.0, 100.0, 100.0]),
        episode_returns=torch.tensor([-1.0, -1.0, -1.0]),
    )


def _hand_learner(bootstrap_on_truncation: bool, **changes) -> tuple[CriticLearner, _LookupCritic, list[tuple]]:
    critic = _LookupCritic(ONLINE_Q, ONLINE_V)
    seen: list[tuple] = []

    def recording_loss(*args: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        seen.append(tuple(a.detach().clone() for a in args))
        return archer_critic_loss(*args)

    settings = CriticTrainingConfig(
        **(
            dict(lr=0.1, gamma=0.9, tau=0.5, micro_batch_size=3, bootstrap_on_truncation=bootstrap_on_truncation)
            | changes
        )
    )
    learner = CriticLearner(ArcherConfig(critic=settings), critic, Accelerator(cpu=True), recording_loss)
    with torch.no_grad():
        target = learner.target_critic
        target.q_table.copy_(torch.tensor([TARGET_Q[pair] for pair in target.pairs]))
        target.v_table.copy_(torch.tensor([TARGET_V[state] for state in target.states]))
    return learner, critic, seen


@pytest.mark.parametrize(
    ("bootstrap", "q1_target", "q2_target", "q1_loss", "q2_loss", "loss"),
    [
        # Q targets r + 0.9 * (1 - done) * Vbar_i(s'):
        #   s0: -1 + 0.9 * 2 = 0.8 and -1 + 0.9 * 4 = 2.6 (Vbar(s1) = (2, 4));
        #   s1: terminated, 0 + 0 = 0 for both (Vbar(s2) = (10, 20) unused);
        #   t0: truncated counts as done: -1 for both.
        # Q errors Q - y: q1 (0 - 0.8, 1 - 0, -2 + 1) = (-0.8, 1, -1), squares sum 2.64, mean 0.88;
        #                 q2 (1 - 2.6, 0 - 0, -1 + 1) = (-1.6, 0, 0), squares sum 2.56, mean 0.853333.
        # Loss = (2.64 + 2.56 + 1.74 + 0.78) / 3 = 7.72 / 3 (V parts below).
        (False, [0.8, 0.0, -1.0], [2.6, 0.0, -1.0], 0.88, 2.56 / 3, 7.72 / 3),
        # Bootstrapping through the truncation: t0's targets become -1 + 0.9 * (-3) = -3.7 and -1 + 0.9 * (-5) =
        # -5.5 (Vbar(t1) = (-3, -5)); errors -2 + 3.7 = 1.7 and -1 + 5.5 = 4.5.
        # q1: 0.64 + 1 + 2.89 = 4.53, mean 1.51; q2: 2.56 + 0 + 20.25 = 22.81, mean 7.603333.
        # Loss = (4.53 + 22.81 + 1.74 + 0.78) / 3 = 29.86 / 3.
        (True, [0.8, 0.0, -3.7], [2.6, 0.0, -5.5], 1.51, 22.81 / 3, 29.86 / 3),
    ],
)
def test_one_archer_critic_step_hand_built_targets_and_loss(
    bootstrap: bool, q1_target: list, q2_target: list, q1_loss: float, q2_loss: float, loss: float
) -> None:
    learner, _, seen = _hand_learner(bootstrap)
    metrics = learner.step(_hand_batch(), ["b0", "b1", "b2"], iteration=1, step=0)
    (q1, q2, v1, v2, y_q1, y_q2, y_v1, y_v2) = seen[0]
    # The online critic's own values at (s, a) and s, as tabled.
    assert q1.tolist() == [0.0, 1.0, -2.0] and q2.tolist() == [1.0, 0.0, -1.0]
    assert v1.tolist() == [1.0, 1.0, -1.0] and v2.tolist() == [0.0, 1.0, -3.0]
    assert y_q1.tolist() == pytest.approx(q1_target, abs=1e-6)
    assert y_q2.tolist() == pytest.approx(q2_target, abs=1e-6)
    # V targets Qbar_i(s, a~) at the fresh samples, per head: (0.3, 1.5, -2.0) and (0.7, 1.2, -2.5).
    assert y_v1.tolist() == pytest.approx([0.3, 1.5, -2.0], abs=1e-6)
    assert y_v2.tolist() == pytest.approx([0.7, 1.2, -2.5], abs=1e-6)
    # V errors V - y: v1 (0.7, -0.5, 1), squares sum 1.74, mean 0.58; v2 (-0.7, -0.2, -0.5), 0.78, mean 0.26.
    assert metrics["critic/q1_loss"] == pytest.approx(q1_loss, abs=1e-5)
    assert metrics["critic/q2_loss"] == pytest.approx(q2_loss, abs=1e-5)
    assert metrics["critic/v1_loss"] == pytest.approx(0.58, abs=1e-5)
    assert metrics["critic/v2_loss"] == pytest.approx(0.26, abs=1e-5)
    assert metrics["critic/loss"] == pytest.approx(loss, abs=1e-5)


@pytest.mark.parametrize("target_micro_batch_size", [1, 2, 64])
def test_the_target_critic_passes_give_the_same_targets_in_batch_order(target_micro_batch_size: int) -> None:
    # The hand case's targets (see above, without bootstrapping) whatever the target critic's passes: one row per
    # pass, a pass of 2 and one of 1, one pass of all three.
    learner, _, seen = _hand_learner(False, target_micro_batch_size=target_micro_batch_size)
    learner.step(_hand_batch(), ["b0", "b1", "b2"], iteration=1, step=0)
    (*_, y_q1, y_q2, y_v1, y_v2) = seen[0]
    assert y_q1.tolist() == pytest.approx([0.8, 0.0, -1.0], abs=1e-6)
    assert y_q2.tolist() == pytest.approx([2.6, 0.0, -1.0], abs=1e-6)
    assert y_v1.tolist() == pytest.approx([0.3, 1.5, -2.0], abs=1e-6)
    assert y_v2.tolist() == pytest.approx([0.7, 1.2, -2.5], abs=1e-6)


def test_target_micro_batch_size_must_be_positive_or_unset() -> None:
    CriticTrainingConfig(target_micro_batch_size=None).validate()
    with pytest.raises(ConfigError, match="algorithm.critic.target_micro_batch_size"):
        CriticTrainingConfig(target_micro_batch_size=0).validate()


def test_a_non_finite_critic_loss_stops_the_step_before_any_weight_moves() -> None:
    critic = _LookupCritic(ONLINE_Q, ONLINE_V)
    calls: list[int] = []

    def nan_in_the_second_micro_batch(*args: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        loss, parts = archer_critic_loss(*args)
        calls.append(len(args[0]))
        return (loss * float("nan") if len(calls) == 2 else loss), parts

    settings = CriticTrainingConfig(lr=0.1, gamma=0.9, tau=0.5, micro_batch_size=2)
    learner = CriticLearner(
        ArcherConfig(critic=settings), critic, Accelerator(cpu=True), nan_in_the_second_micro_batch
    )
    online = copy.deepcopy(critic.state_dict())
    target = copy.deepcopy(learner.target_critic.state_dict())
    with pytest.raises(FloatingPointError, match="critic loss is nan at iteration 4, step 7"):
        learner.step(_hand_batch(), ["b0", "b1", "b2"], iteration=4, step=7)
    assert calls == [2, 1]  # both micro-batches ran; the check comes before Adam's step and the Polyak update
    assert all(torch.equal(online[k], v) for k, v in critic.state_dict().items())
    assert all(torch.equal(target[k], v) for k, v in learner.target_critic.state_dict().items())


def test_one_archer_critic_step_adam_and_polyak_by_hand() -> None:
    learner, critic, _ = _hand_learner(bootstrap_on_truncation=False)
    metrics = learner.step(_hand_batch(), ["b0", "b1", "b2"], iteration=1, step=0)
    # Each table entry's gradient is 2 * error / 3 (the MSE over 3 rows); errors as in the test above. Pre-clip norm:
    # (2 / 3) * sqrt(0.64 + 1 + 1 + 2.56 + 0.49 + 0.25 + 1 + 0.49 + 0.04 + 0.25) = (2 / 3) * sqrt(7.72) = 1.852326.
    assert metrics["critic/grad_norm"] == pytest.approx(1.852326, abs=1e-5)
    # Adam's first step moves every entry with a non-zero gradient by lr = 0.1 against the gradient's sign, whatever
    # the clipping's scale (m / sqrt(v) = g / |g|); entries with zero error or unread stay.
    assert critic.q("s0", "a0") == pytest.approx([0.1, 1.1], abs=1e-6)  # errors -0.8, -1.6: both up
    assert critic.q("s1", "a1") == pytest.approx([0.9, 0.0], abs=1e-6)  # errors 1, 0
    assert critic.q("t0", "a2") == pytest.approx([-1.9, -1.0], abs=1e-6)  # errors -1, 0
    assert critic.q("s0", "b0") == pytest.approx([-7.0, -7.0], abs=1e-6)  # never read by the online critic
    assert critic.v("s0") == pytest.approx([0.9, 0.1], abs=1e-6)  # errors 0.7, -0.7
    assert critic.v("s1") == pytest.approx([1.1, 1.1], abs=1e-6)  # errors -0.5, -0.2
    assert critic.v("t0") == pytest.approx([-1.1, -2.9], abs=1e-6)  # errors 1, -0.5
    assert critic.v("t1") == pytest.approx([0.0, 0.0], abs=1e-6)
    # Then one Polyak update with tau = 0.5: target <- 0.5 * target + 0.5 * (updated) online.
    target = learner.target_critic
    assert target.v("s1") == pytest.approx([0.5 * 2 + 0.5 * 1.1, 0.5 * 4 + 0.5 * 1.1], abs=1e-6)  # 1.55, 2.55
    assert target.v("t1") == pytest.approx([-1.5, -2.5], abs=1e-6)
    assert target.v("s2") == pytest.approx([5.0, 10.0], abs=1e-6)
    assert target.q("s0", "a0") == pytest.approx([4.55, 5.05], abs=1e-6)  # 0.5 * 9 + 0.5 * 0.1, 0.5 * 9 + 0.5 * 1.1
    assert target.q("s0", "b0") == pytest.approx([-3.35, -3.15], abs=1e-6)  # 0.5 * 0.3 - 3.5, 0.5 * 0.7 - 3.5
    assert target.q("t0", "b2") == pytest.approx([-4.5, -4.75], abs=1e-6)  # 0.5 * -2 - 3.5, 0.5 * -2.5 - 3.5
    assert not target.q_table.requires_grad and all(p.grad is None for p in critic.parameters())
