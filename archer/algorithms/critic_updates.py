"""Training the twin-Q / twin-V utterance critic, shared by every algorithm that has one.

Online ArCHer, offline ArCHer and IQL + REINFORCE train the same critic (ARCHER_SPEC.md 1.0) with the same Q
regression, ``Q_i(s, a) <- r + gamma * (1 - done) * Vbar_i(s')`` at the stored action a. They differ only in the V
target and its loss, which the caller chooses:

- online ArCHer (1.1): ``V_i(s) <- Qbar_i(s, a~)`` at a fresh policy sample a~, squared error
  (``losses.archer_critic_loss``);
- offline ArCHer and IQL + REINFORCE (1.5, 1.7): ``V_i(s) <- Qbar_i(s, a)`` at the dataset action, upper-expectile
  loss (``losses.iql_critic_loss``).

``CriticLearner`` owns the online critic, its target copy and the critic's optimiser. One ``step`` is one full
gradient step: micro-batch gradients averaged, the critic's own gradient clipped and cleared after the Adam step,
then one Polyak update of the target. ``advantages`` gives the actor its ``min(Q1, Q2) - min(V1, V2)`` weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from archer.algorithms.accumulation import Backend, accumulate, clip_and_step
from archer.algorithms.base import CRITIC_ENCODER_EXPORT, check_finite
from archer.algorithms.losses import mixed_monte_carlo_targets, td_q_targets, utterance_advantage
from archer.data.trajectory import TransitionBatch
from archer.models.critic import DoubleCritic, make_target_critic, soft_update

#: ``(q1, q2, v1, v2, q1_target, q2_target, v1_target, v2_target) -> (loss, parts)``, as ``archer_critic_loss``.
CriticLoss = Callable[..., tuple[torch.Tensor, dict[str, torch.Tensor]]]


def summary_stats(prefix: str, values: torch.Tensor) -> dict[str, float]:
    """Mean, min, max and (population) std of ``values`` as ``{prefix}_mean`` etc."""
    values = values.detach().float()
    return {
        f"{prefix}_mean": values.mean().item(),
        f"{prefix}_min": values.min().item(),
        f"{prefix}_max": values.max().item(),
        f"{prefix}_std": values.std(unbiased=False).item(),
    }


def length_grouped_micro_batches(texts: list[str], micro_batch_size: int) -> list[list[int]]:
    """Rows of a batch split into micro-batches of rows of similar lengths: ``texts`` longest first, cut into runs of
    ``micro_batch_size``, each run in batch order.

    A micro-batch is padded to its longest text, so grouping rows of similar lengths cuts the padding the encoder
    runs (issue 18: random replay rows range from a game's first turn to its twentieth). The gradient is the batch
    mean whatever the grouping (``accumulate`` weights each micro-batch by its share), so only floating-point
    summation order changes. A batch that fits in one micro-batch keeps its order.

    Returns:
        The micro-batches, as lists of row indices into ``texts``.
    """
    size = len(texts)
    if size <= micro_batch_size:
        return [list(range(size))]
    order = sorted(range(size), key=lambda i: -len(texts[i]))
    return [sorted(order[start : start + micro_batch_size]) for start in range(0, size, micro_batch_size)]


def geometric_schedule(start: float, final: float | None, iteration: int, num_iterations: int) -> float:
    """A rate at ``iteration`` (1-based) of ``num_iterations``: ``start`` at the first, ``final`` at the last,
    geometric in between (``start * (final / start) ** ((iteration - 1) / (num_iterations - 1))``, the shape of
    torch's ``ExponentialLR``); ``start`` throughout when ``final`` is None or there is one iteration.

    The critic's learning rate (``lr_final``) and Polyak rate (``tau_final``) follow it. A function of the iteration
    rather than an optimiser-side scheduler, so a resumed run continues the schedule without a scheduler state in
    its checkpoint.
    """
    if final is None or num_iterations <= 1:
        return start
    progress = min(max(iteration - 1, 0), num_iterations - 1) / (num_iterations - 1)
    return start * (final / start) ** progress


def done_flags(batch: TransitionBatch, bootstrap_on_truncation: bool) -> torch.Tensor:
    """(B,) 1.0 where the Q target must not bootstrap from s'.

    Episodes cut by the turn limit count as terminal, as in the paper and both references, unless
    ``bootstrap_on_truncation`` is set.
    """
    if bootstrap_on_truncation:
        return batch.terminated
    return torch.clamp(batch.terminated + batch.truncated, max=1.0)


class CriticLearner:
    """The online critic, its target copy and its optimiser, with the gradient step they share.

    Args:
        critic: the online critic (trained in place).
        accelerator: device placement, backward and clipping.
        loss: the critic loss (see ``CriticLoss``); ``functools.partial`` fixes extra arguments such as the
            expectile.
        lr: Adam learning rate of the critic.
        gamma: discount of the Q target.
        tau: Polyak rate of the target critic at each of its updates.
        target_update_period: the target critic is updated after every this many steps of this learner (the count
            is part of ``state_dict``, so a resumed run keeps the schedule); 1 updates it after every step.
        micro_batch_size: rows per critic forward/backward (and per ``advantages`` forward).
        max_grad_norm: the critic's gradient is clipped to this norm before its own optimiser steps.
        bootstrap_on_truncation: bootstrap the Q target through turn-limit truncations.
        dropout: run the online critic in train mode (dropout on) inside its own loss, as OfflineArcher's Lightning
            training did; the online reference never enabled it. The target critic and ``advantages`` always run
            without dropout, so the regression targets and the actor's weights are not noisy.
        mc_weight: w of the mixed Monte-Carlo Q target ``(1 - w) * y_TD + w * G`` (``mixed_monte_carlo_targets``);
            0 is the one-step target.
        lr_final: with ``num_iterations``, the learning rate falls from ``lr`` at the first iteration to this at the
            last (``geometric_schedule``; each ``step`` sets it from its ``iteration``); None keeps ``lr``.
        tau_final: the same for the Polyak rate, from ``tau`` to this; None keeps ``tau``.
        num_iterations: the run's iterations, for ``lr_final`` and ``tau_final``.
    """

    def __init__(
        self,
        critic: DoubleCritic,
        accelerator: Backend,
        loss: CriticLoss,
        *,
        lr: float,
        gamma: float,
        tau: float,
        target_update_period: int = 1,
        micro_batch_size: int,
        max_grad_norm: float,
        bootstrap_on_truncation: bool = False,
        dropout: bool = False,
        mc_weight: float = 0.0,
        lr_final: float | None = None,
        tau_final: float | None = None,
        num_iterations: int = 1,
    ) -> None:
        self.critic = critic
        self.target_critic = make_target_critic(critic)
        self.accelerator = accelerator
        self.loss = loss
        self.gamma = gamma
        self.tau = tau
        self.target_update_period = target_update_period
        self.steps_taken = 0
        self.micro_batch_size = micro_batch_size
        self.max_grad_norm = max_grad_norm
        self.bootstrap_on_truncation = bootstrap_on_truncation
        self.dropout = dropout
        self.mc_weight = mc_weight
        self.lr, self.lr_final, self.tau_final, self.num_iterations = lr, lr_final, tau_final, num_iterations
        self.optimizer = torch.optim.Adam([p for p in critic.parameters() if p.requires_grad], lr=lr)
        self.critic.eval()

    def step(self, batch: TransitionBatch, v_target_actions: list[str], iteration: int, step: int) -> dict[str, float]:
        """One critic gradient step on ``batch``, then a Polyak update of the target critic if this step ends a
        ``target_update_period``.

        Args:
            batch: B transitions (s, a, r, s', done).
            v_target_actions: B actions at which the target critic's Q gives the V targets: fresh policy samples
                (online ArCHer) or ``batch.actions`` (IQL).
            iteration, step: where training is, for the learning and Polyak rates (``lr_final``, ``tau_final``) and
                the error message of a non-finite loss.

        Returns:
            The step's metrics: the loss and its parts, Q / V / Q-target statistics, the pre-clip gradient norm and
            the learning and Polyak rates.
        """
        if len(v_target_actions) != len(batch):
            raise ValueError(f"need one V-target action per transition: {len(v_target_actions)} for {len(batch)}")
        lr = geometric_schedule(self.lr, self.lr_final, iteration, self.num_iterations)
        tau = geometric_schedule(self.tau, self.tau_final, iteration, self.num_iterations)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        batch = batch.to(self.accelerator.device)
        done = done_flags(batch, self.bootstrap_on_truncation)
        size = len(batch)
        records, values = [], {"q1": [], "v1": [], "target_q1": []}
        self.critic.train(self.dropout)
        try:
            for rows in length_grouped_micro_batches(batch.observations, self.micro_batch_size):
                index = torch.tensor(rows, device=batch.rewards.device)
                observations = [batch.observations[i] for i in rows]
                with torch.no_grad():
                    target = self.target_critic
                    target_q1, target_q2 = target.q_values(observations, [v_target_actions[i] for i in rows])
                    next_v1, next_v2 = target.v_from_embeddings(
                        target.embed([batch.next_observations[i] for i in rows])
                    )
                    rewards, returns, row_done = batch.rewards[index], batch.mc_returns[index], done[index]
                    q1_target = mixed_monte_carlo_targets(
                        td_q_targets(rewards, row_done, next_v1, self.gamma), returns, self.mc_weight
                    )
                    q2_target = mixed_monte_carlo_targets(
                        td_q_targets(rewards, row_done, next_v2, self.gamma), returns, self.mc_weight
                    )
                obs_emb = self.critic.embed(observations)
                q1, q2 = self.critic.q_values(observations, [batch.actions[i] for i in rows], obs_emb)
                v1, v2 = self.critic.v_from_embeddings(obs_emb)
                loss, parts = self.loss(q1, q2, v1, v2, q1_target, q2_target, target_q1, target_q2)
                check_finite(loss, "critic loss", iteration, step)
                accumulate(self.accelerator, loss, len(rows), size)
                # Losses weighted by their micro-batch's share: their sum is the batch's loss whatever the grouping.
                share = len(rows) / size
                records.append(
                    {"critic/loss": loss.item() * share, **{f"critic/{k}": float(v) * share for k, v in parts.items()}}
                )
                for name, tensor in (("q1", q1), ("v1", v1), ("target_q1", q1_target)):
                    values[name].append(tensor.detach())
        finally:
            self.critic.eval()
        grad_norm = clip_and_step(self.accelerator, self.optimizer, self.critic.parameters(), self.max_grad_norm)
        self.steps_taken += 1
        if self.steps_taken % self.target_update_period == 0:
            soft_update(self.target_critic, self.critic, tau)
        metrics = {key: sum(record[key] for record in records) for key in records[0]}
        for name, parts in values.items():
            metrics.update(summary_stats(f"critic/{name}", torch.cat(parts)))
        metrics["critic/grad_norm"] = grad_norm
        metrics["critic/lr"] = lr
        metrics["critic/tau"] = tau
        return metrics

    @torch.no_grad()
    def advantages(self, observations: list[str], actions: list[str]) -> torch.Tensor:
        """``A(s, a) = min(Q1, Q2)(s, a) - min(V1, V2)(s)`` from the online critic, without dropout or gradient.

        Args:
            observations: B states.
            actions: B actions (text, as the critic saw them in its Q loss).

        Returns:
            (B,) advantages on the accelerator's device.
        """
        was_training = self.critic.training
        self.critic.eval()
        try:
            parts = []
            for start in range(0, len(observations), self.micro_batch_size):
                end = start + self.micro_batch_size
                out = self.critic(observations[start:end], actions[start:end])
                parts.append(utterance_advantage(out.q1, out.q2, out.v1, out.v2))
        finally:
            self.critic.train(was_training)
        return torch.cat(parts) if parts else torch.zeros(0, device=self.accelerator.device)

    def networks(self) -> dict[str, nn.Module]:
        """The online and target critic, by their ``state_dict`` keys."""
        return {"critic": self.critic, "target_critic": self.target_critic}

    def exports(self) -> dict[str, tuple[nn.Module, PreTrainedTokenizerBase]]:
        """The critic's Hugging Face text encoder and its tokenizer, as a run exports them."""
        return {CRITIC_ENCODER_EXPORT: self.critic.hf_encoder()}

    def state_dict(self) -> dict[str, Any]:
        """Online and target critic weights, the critic optimiser (keys as in online ArCHer's checkpoint) and the
        count of critic steps that schedules the target's updates."""
        return {
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "critic_optimizer": self.optimizer.state_dict(),
            "critic_steps": self.steps_taken,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (extra keys are ignored, so a whole algorithm state can be passed)."""
        self.critic.load_state_dict(state["critic"])
        self.target_critic.load_state_dict(state["target_critic"])
        self.optimizer.load_state_dict(state["critic_optimizer"])
        # Checkpoints from before the count existed updated the target after every step: any count fits them.
        self.steps_taken = state.get("critic_steps", 0)
