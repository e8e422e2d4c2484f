"""Online ArCHer (Zhou et al., ICML 2024; the reference is github.com/YifeiZhou02/ArCHer, ``agent_type: archer``).

High level, every iteration: the twin-Q/twin-V utterance critic does ``critic_steps_per_iter`` steps of
expected-SARSA policy evaluation on replay data,

    Q_i(s, a) <- r + gamma * (1 - done) * Vbar_i(s'),        V_i(s) <- Qbar_i(s, a~),  a~ ~ pi(. | s),

each followed by a Polyak update of the target critic. Low level, after ``warmup_iters``: REINFORCE over the
tokens of fresh policy samples at replay states, with the utterance advantage
``A = min(Q1, Q2)(s, a~) - min(V1, V2)(s)`` from the online critic as the episode's terminal reward.

Deliberate deviations from the reference, none of which changes the mathematics:
- the V-target actions of a whole critic phase are sampled up front in large batches (the policy does not change
  during the critic phase, so this is the same estimator at a fraction of the cost);
- micro-batch gradients are averaged, each network clips only its own gradient, and gradients are cleared after
  every step, so nothing leaks between the critic and actor phases;
- log-probabilities score exactly the sampled token ids, terminator included, with left padding, under the
  distribution that sampled them (temperature, top-k, top-p; ``model.policy.score_as_sampled``); the KL penalty's
  starting policy is scored under its own sampling distribution, so the penalty is zero until the policy moves;
- episodes cut by the turn limit are terminal unless ``critic.bootstrap_on_truncation`` is set (the reference always
  treated them as terminal).

Switches that do change it, all off by default: ``advantage_norm`` (the actor batch's advantages divided by their
spread, so the two anchors below weigh alike on every reward scale), ``actor_states="policy"`` (the actor samples
only states the policy reached without an exploring rollout's replaced move), ``kl_coeff`` (a KL penalty to a frozen
copy of the starting policy) and ``bc_coeff`` (a behaviour-cloning term on the run's offline dataset, which the
algorithm asks the trainer for as ``demonstrations``). With ``log_advantage_check`` (off by default: it costs a
critic pass per new move) every iteration also logs ``advantage_check`` on the new games: how well the critic's
advantages track the returns that were observed.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from tqdm.auto import tqdm

from archer.algorithms.accumulation import Backend, accumulate, clip_and_step
from archer.algorithms.base import check_finite, frozen_copy, length_grouped_micro_batches, mean_metrics
from archer.algorithms.critic_updates import ActorCriticAlgorithm, summary_stats
from archer.algorithms.losses import (
    archer_critic_loss,
    bc_loss,
    kl_penalised_reinforce_loss,
    normalise_advantages,
    pearson_correlation,
    reinforce_loss,
)
from archer.config import ArcherConfig
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory, TransitionBatch, discounted_returns
from archer.models.critic import DoubleCritic
from archer.models.policy import LanguagePolicy
from archer.models.prefix_generation import generate_at_states


class ArcherAlgorithm(ActorCriticAlgorithm):
    """Online ArCHer.

    Args:
        cfg: schedule and hyperparameters.
        policy: the language policy (trained after warm-up).
        accelerator: device placement and backward.
        critic: the online utterance critic; its target copy is made here.
        progress: show progress bars for the phases.
    """

    def __init__(
        self,
        cfg: ArcherConfig,
        policy: LanguagePolicy,
        accelerator: Backend,
        critic: DoubleCritic | None = None,
        progress: bool = True,
    ) -> None:
        super().__init__(cfg, policy, accelerator, critic, archer_critic_loss, progress=progress)
        self.cfg: ArcherConfig = cfg
        self._fresh_games: list[Trajectory] = []  # the last rollout's games, for advantage_check
        self.reference: LanguagePolicy | None = frozen_copy(policy) if cfg.kl_coeff > 0 else None

    @property
    def uses_demonstrations(self) -> bool:
        """The ``bc_coeff`` term clones the run's offline dataset."""
        return self.cfg.bc_coeff > 0

    # ---- critic ------------------------------------------------------------------------------------------

    def critic_step(self, batch: TransitionBatch, sampled_actions: list[str], iteration: int, step: int) -> dict:
        """One critic gradient step on ``batch``, with ``sampled_actions`` the fresh policy actions a~ at its states
        (``CriticLearner.step`` with ArCHer's squared-error loss).

        Returns:
            The step's metrics.
        """
        return self.learner.step(batch, sampled_actions, iteration, step)

    def critic_phase(self, buffer: ReplayBuffer, iteration: int, rng: np.random.Generator) -> dict[str, float]:
        cfg = self.cfg
        batches, v_target_actions = self._critic_batches(buffer, rng)
        records = []
        steps = tqdm(batches, desc="critic", unit="step", leave=False, disable=not self.progress)
        for step, batch in enumerate(steps):
            offset = step * cfg.critic_batch_size
            records.append(self.critic_step(batch, v_target_actions[offset : offset + len(batch)], iteration, step))
            steps.set_postfix(loss=f"{records[-1]['critic/loss']:.3f}")
        return mean_metrics(records)

    def _critic_batches(
        self, buffer: ReplayBuffer, rng: np.random.Generator
    ) -> tuple[list[TransitionBatch], list[str]]:
        """The critic phase's batches and, row after row, the action each row's V target is taken at.

        All V-target actions of the phase are sampled at once: the policy is fixed during the critic phase. With
        ``v_target_pool`` the batches are drawn from a pool of that many buffer transitions, one sample each.
        """
        cfg = self.cfg
        steps, size = cfg.critic_steps_per_iter, cfg.critic_batch_size
        if cfg.v_target_pool is not None:
            pool = rng.integers(0, len(buffer), size=cfg.v_target_pool)
            states = buffer.get(pool).observations
            pool_actions = self._sample_at(states)
            picks = [rng.integers(0, cfg.v_target_pool, size=size) for _ in range(steps)]
            return [buffer.get(pool[rows]) for rows in picks], [pool_actions[i] for rows in picks for i in rows]
        batches = [buffer.sample(size, rng) for _ in range(steps)]
        return batches, self._sample_at([obs for batch in batches for obs in batch.observations])

    def _sample_at(self, states: list[str]) -> list[str]:
        """One fresh sample of the current policy at each of ``states`` (texts)."""
        return generate_at_states(self.policy, states, greedy=False, batch_size=self.cfg.generation_batch_size).texts

    # ---- actor -------------------------------------------------------------------------------------------

    def actor_advantages(self, observations: list[str], actions: list[str]) -> torch.Tensor:
        """The online critic's utterance advantages ``min(Q1, Q2) - min(V1, V2)`` of ``actions`` at
        ``observations``, the whole actor batch in one critic pass."""
        return self.learner.advantages(observations, actions, rows_per_pass=len(observations))

    def actor_step(
        self, observations: list[str], iteration: int, step: int, cloned: TransitionBatch | None = None
    ) -> dict[str, float]:
        """One REINFORCE step on fresh policy samples at ``observations``; with ``cloned`` (dataset transitions), the
        step's gradient also holds ``bc_coeff`` times their behaviour-cloning loss."""
        cfg = self.cfg
        generation = generate_at_states(self.policy, observations, greedy=False, batch_size=cfg.generation_batch_size)
        advantages = self.actor_advantages(observations, generation.texts)
        # In the batch's own units where asked, before the KL penalty and the cloning term weigh against them.
        weighted, advantage_scale = normalise_advantages(advantages, cfg.advantage_norm)
        size = len(observations)
        losses, log_ratios = [], []
        micro_batches = length_grouped_micro_batches(
            self.policy, observations, generation.token_ids, cfg.actor_micro_batch_size
        )
        for micro in micro_batches:
            states = [observations[i] for i in micro]
            token_ids = [generation.token_ids[i] for i in micro]
            micro_advantages = weighted[micro]
            logprobs = self.policy.sequence_logprobs(states, token_ids, as_sampled=True)
            if self.reference is None:
                loss = reinforce_loss(micro_advantages, logprobs)
            else:
                with torch.no_grad():
                    # The starting policy's own sampling distribution: the penalty vanishes while pi is pi_start.
                    ref_logprobs = self.reference.sequence_logprobs(states, token_ids, as_sampled=True)
                log_ratios.append((logprobs - ref_logprobs).detach())
                loss = kl_penalised_reinforce_loss(micro_advantages, logprobs, ref_logprobs, cfg.kl_coeff)
            check_finite(loss, "actor loss", iteration, step)
            accumulate(self.accelerator, loss, len(micro), size)
            losses.append(loss.item() * len(micro) / size)
        cloning_loss = None if cloned is None else self._accumulate_cloning_loss(cloned, iteration, step)
        grad_norm = clip_and_step(
            self.accelerator, self.actor_optimizer, self.policy.model.parameters(), cfg.max_grad_norm
        )
        lengths = torch.tensor([len(ids) for ids in generation.token_ids], dtype=torch.float32)
        metrics = {
            "actor/pg_loss": sum(losses),
            "actor/grad_norm": grad_norm,
            "actor/action_tokens_mean": lengths.mean().item(),
            **summary_stats("actor/advantage", advantages),
        }
        if cfg.advantage_norm != "none":
            metrics["actor/advantage_scale"] = advantage_scale
        if log_ratios:
            # log pi(a~) - log pi_start(a~) per utterance: its mean estimates KL(pi || pi_start) per utterance.
            metrics["actor/kl_start"] = torch.cat(log_ratios).mean().item()
        if cloning_loss is not None:
            metrics["actor/bc_loss"] = cloning_loss
        return metrics

    def _accumulate_cloning_loss(self, cloned: TransitionBatch, iteration: int, step: int) -> float:
        """Add the gradient of ``bc_coeff`` times the behaviour-cloning loss of the dataset transitions ``cloned``;
        returns that loss (unweighted, averaged over the transitions)."""
        observations = list(cloned.observations)
        action_ids = self.policy.encode_actions(list(cloned.actions))
        size = len(observations)
        total = 0.0
        for micro in length_grouped_micro_batches(
            self.policy, observations, action_ids, self.cfg.actor_micro_batch_size
        ):
            # Scored as cloning scored them (the plain softmax): the term is the loss that built the start.
            token_logprobs, mask = self.policy.token_logprobs(
                [observations[i] for i in micro], [action_ids[i] for i in micro], as_sampled=False
            )
            loss = bc_loss(token_logprobs, mask)
            check_finite(loss, "actor cloning loss", iteration, step)
            accumulate(self.accelerator, self.cfg.bc_coeff * loss, len(micro), size)
            total += loss.item() * len(micro) / size
        return total

    def actor_phase(self, buffer: ReplayBuffer, iteration: int, rng: np.random.Generator) -> dict[str, float]:
        records = []
        steps = tqdm(range(self.cfg.actor_steps_per_iter), desc="actor", leave=False, disable=not self.progress)
        draw = buffer.sample_policy_states if self.cfg.actor_states == "policy" else buffer.sample
        if self.uses_demonstrations and self.demonstrations is None:
            raise RuntimeError("bc_coeff > 0 needs the offline dataset: attach it as `demonstrations` first")
        for step in steps:
            observations = list(draw(self.cfg.actor_batch_size, rng).observations)
            if self.uses_demonstrations:
                cloned = self.demonstrations.sample(self.cfg.actor_batch_size, rng)
                records.append(self.actor_step(observations, iteration, step, cloned))
            else:
                records.append(self.actor_step(observations, iteration, step))
        metrics = mean_metrics(records)
        if self.cfg.actor_states == "policy":
            metrics["actor/policy_state_fraction"] = buffer.policy_state_fraction()
        return metrics

    # ---- the iteration -----------------------------------------------------------------------------------

    def observe(self, trajectories: list[Trajectory], iteration: int) -> None:
        """Keep the iteration's new games for ``advantage_check`` (the critic has not trained on them yet)."""
        if self.cfg.log_advantage_check:
            self._fresh_games = trajectories

    @torch.no_grad()
    def advantage_check(self, trajectories: list[Trajectory]) -> dict[str, float]:
        """Does the critic know what the games it has not seen yet will show? (a diagnostic, logged every iteration)

        For every move (s_t, a_t) of ``trajectories``: the critic's advantage ``min Q(s_t, a_t) - min V(s_t)``
        against the observed one, ``G_t - min V(s_t)`` with G_t the discounted return that followed; and
        ``min V(s_t)`` against ``G_t``. A critic whose advantages do not correlate with the observed ones gives the
        actor noise, whatever its loss says.

        Returns:
            ``critic/advantage_return_corr`` and ``critic/value_return_corr`` (Pearson), each left out when undefined.
        """
        observations = [obs for game in trajectories for obs in game.observations[:-1]]
        actions = [action for game in trajectories for action in game.actions]
        if not observations:
            return {}
        returns = torch.tensor(
            [g for game in trajectories for g in discounted_returns(game.rewards, self.cfg.critic.gamma)],
            dtype=torch.float64,
        )
        q_parts, v_parts = [], []
        for start in range(0, len(observations), self.cfg.critic.micro_batch_size):
            end = start + self.cfg.critic.micro_batch_size
            out = self.critic(observations[start:end], actions[start:end])
            q_parts.append(torch.minimum(out.q1, out.q2))
            v_parts.append(torch.minimum(out.v1, out.v2))
        q, v = torch.cat(q_parts).double().cpu(), torch.cat(v_parts).double().cpu()
        correlations = {
            "critic/advantage_return_corr": pearson_correlation(q - v, returns - v),
            "critic/value_return_corr": pearson_correlation(v, returns),
        }
        # Undefined (constant inputs, a single move) is left out rather than logged as NaN.
        return {key: value for key, value in correlations.items() if math.isfinite(value)}

    def check_new_games(self) -> dict[str, float]:
        """``advantage_check`` of the games ``observe`` kept (once; empty when there are none)."""
        games, self._fresh_games = self._fresh_games, []
        return self.advantage_check(games)

    def update(self, buffer: ReplayBuffer, iteration: int, rng: np.random.Generator) -> dict[str, float]:
        """Critic phase every iteration; actor phase once ``iteration`` is past the warm-up."""
        metrics = self.check_new_games()
        metrics.update(self.critic_phase(buffer, iteration, rng))
        if iteration > self.cfg.warmup_iters and self.cfg.actor_steps_per_iter > 0:
            metrics.update(self.actor_phase(buffer, iteration, rng))
        return metrics
