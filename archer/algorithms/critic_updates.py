"""Training the twin-Q / twin-V utterance critic, shared by every algorithm that has one.

Online ArCHer, offline ArCHer and IQL + REINFORCE train the same critic (``archer.models.critic``) with the same Q
regression, ``Q_i(s, a) <- r + gamma * (1 - done) * Vbar_i(s')`` at the stored action a. They differ only in the V
target and its loss, which the caller chooses:

- online ArCHer (1.1): ``V_i(s) <- Qbar_i(s, a~)`` at a fresh policy sample a~, squared error
  (``losses.archer_critic_loss``);
- offline ArCHer and IQL + REINFORCE (1.5, 1.7): ``V_i(s) <- Qbar_i(s, a)`` at the dataset action, upper-expectile
  loss (``losses.iql_critic_loss``).

``CriticLearner`` owns the online critic, its target copy and the critic's optimiser, built from the algorithm's
config (its ``critic`` group). One ``step`` is one full gradient step: micro-batch gradients averaged, the critic's
own gradient clipped and cleared after the Adam step, then one Polyak update of the target. ``advantages`` gives the
actor its ``min(Q1, Q2) - min(V1, V2)`` weights. ``ActorCriticAlgorithm`` is an algorithm with a learner and a
policy optimiser, and what its checkpoint holds of both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from archer.algorithms.accumulation import Backend, accumulate, clip_and_step
from archer.algorithms.base import CRITIC_ENCODER_EXPORT, Algorithm, check_finite, micro_batches_by_length
from archer.algorithms.losses import td_q_targets, utterance_advantage
from archer.config import AlgorithmConfig
from archer.data.trajectory import TransitionBatch
from archer.models.critic import DoubleCritic, make_target_critic, soft_update
from archer.models.policy import LanguagePolicy

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
        cfg: the algorithm's config: its ``critic`` group (learning rate, discount, Polyak rate, micro-batch size,
            truncation) and ``max_grad_norm``, the norm the critic's gradient is clipped to before its own step.
        critic: the online critic (trained in place).
        accelerator: device placement, backward and clipping.
        loss: the critic loss (see ``CriticLoss``); ``functools.partial`` fixes extra arguments such as the
            expectile.
        dropout: run the online critic in train mode (dropout on) inside its own loss, as OfflineArcher's Lightning
            training did; the online reference never enabled it. The target critic and ``advantages`` always run
            without dropout, so the regression targets and the actor's weights are not noisy.
    """

    def __init__(
        self,
        cfg: AlgorithmConfig,
        critic: DoubleCritic,
        accelerator: Backend,
        loss: CriticLoss,
        *,
        dropout: bool = False,
    ) -> None:
        if not cfg.uses_critic:
            raise ValueError(f"{cfg.name} has no critic group: it trains no utterance critic")
        self.settings = cfg.critic
        self.critic = critic
        self.target_critic = make_target_critic(critic)
        self.accelerator = accelerator
        self.loss = loss
        self.max_grad_norm = cfg.max_grad_norm
        self.dropout = dropout
        self.optimizer = torch.optim.Adam([p for p in critic.parameters() if p.requires_grad], lr=self.settings.lr)
        self.critic.eval()

    def step(self, batch: TransitionBatch, v_target_actions: list[str], iteration: int, step: int) -> dict[str, float]:
        """One critic gradient step on ``batch``, then a Polyak update of the target critic.

        Args:
            batch: B transitions (s, a, r, s', done).
            v_target_actions: B actions at which the target critic's Q gives the V targets: fresh policy samples
                (online ArCHer) or ``batch.actions`` (IQL).
            iteration, step: where training is, for the error message of a non-finite loss.

        Returns:
            The step's metrics: the loss and its parts, Q / V / Q-target statistics, the pre-clip gradient norm and
            the learning and Polyak rates.
        """
        if len(v_target_actions) != len(batch):
            raise ValueError(f"need one V-target action per transition: {len(v_target_actions)} for {len(batch)}")
        settings = self.settings
        batch = batch.to(self.accelerator.device)
        done = done_flags(batch, settings.bootstrap_on_truncation)
        size = len(batch)
        # Kept on the device until the step's end: reading a loss after each micro-batch would make the host wait for
        # the GPU before it could queue the next micro-batch's work.
        records: dict[str, list[torch.Tensor]] = {}
        values: dict[str, list[torch.Tensor]] = {"q1": [], "v1": [], "target_q1": []}
        lengths = [len(text) for text in batch.observations]
        q1_targets, q2_targets, v1_targets, v2_targets = self.targets(batch, v_target_actions, done)
        self.critic.train(self.dropout)
        try:
            # Rows of similar lengths share a micro-batch (less padding), each micro-batch in batch order.
            for rows in map(sorted, micro_batches_by_length(range(size), lengths, settings.micro_batch_size)):
                observations = [batch.observations[i] for i in rows]
                index = torch.tensor(rows, device=q1_targets.device)
                q1_target, q2_target = q1_targets[index], q2_targets[index]
                target_q1, target_q2 = v1_targets[index], v2_targets[index]
                obs_emb = self.critic.embed(observations)
                q1, q2 = self.critic.q_values(observations, [batch.actions[i] for i in rows], obs_emb)
                v1, v2 = self.critic.v_from_embeddings(obs_emb)
                loss, parts = self.loss(q1, q2, v1, v2, q1_target, q2_target, target_q1, target_q2)
                accumulate(self.accelerator, loss, len(rows), size)
                # Losses weighted by their micro-batch's share: their sum is the batch's loss whatever the grouping.
                share = len(rows) / size
                for key, part in (("loss", loss), *parts.items()):
                    records.setdefault(f"critic/{key}", []).append(part.detach() * share)
                for name, tensor in (("q1", q1), ("v1", v1), ("target_q1", q1_target)):
                    values[name].append(tensor.detach())
        finally:
            self.critic.eval()
        sums = torch.stack([torch.stack(parts).sum() for parts in records.values()])
        # A sum over micro-batches is finite only if each of their losses is; checked before the optimizer step.
        check_finite(sums[0], "critic loss", iteration, step)
        grad_norm = clip_and_step(self.accelerator, self.optimizer, self.critic.parameters(), self.max_grad_norm)
        soft_update(self.target_critic, self.critic, settings.tau)
        metrics = dict(zip(records, sums.tolist(), strict=True))
        for name, parts in values.items():
            metrics.update(summary_stats(f"critic/{name}", torch.cat(parts)))
        metrics["critic/grad_norm"] = grad_norm
        metrics["critic/lr"] = settings.lr
        metrics["critic/tau"] = settings.tau
        return metrics

    @torch.no_grad()
    def targets(
        self, batch: TransitionBatch, v_target_actions: list[str], done: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        """The target critic's regression targets for every row of ``batch``: the twin Q targets
        ``r + gamma * (1 - done) * Vbar_i(s')`` and the twin ``Qbar_i(s, a~)`` at ``v_target_actions``, the V
        targets (``step``'s loss receives both), each (B,) in batch order.

        The target critic runs in passes of ``target_micro_batch_size`` rows of similar lengths: it takes no
        gradient, so its passes need not be as small as the online critic's micro-batches."""
        target = self.target_critic
        rows_per_pass = self.settings.target_micro_batch_size or self.settings.micro_batch_size
        lengths = [len(text) for text in batch.observations]
        passes = micro_batches_by_length(range(len(batch)), lengths, rows_per_pass)
        parts: list[tuple[torch.Tensor, ...]] = []
        for rows in passes:
            index = torch.tensor(rows, device=batch.rewards.device)
            target_q1, target_q2 = target.q_values(
                [batch.observations[i] for i in rows], [v_target_actions[i] for i in rows]
            )
            next_v1, next_v2 = target.v_from_embeddings(target.embed([batch.next_observations[i] for i in rows]))
            rewards, row_done, gamma = batch.rewards[index], done[index], self.settings.gamma
            parts.append(
                (
                    td_q_targets(rewards, row_done, next_v1, gamma),
                    td_q_targets(rewards, row_done, next_v2, gamma),
                    target_q1,
                    target_q2,
                )
            )
        order = torch.tensor([i for rows in passes for i in rows], device=batch.rewards.device)
        in_batch_order = []
        for column in zip(*parts, strict=True):
            values = torch.cat(column)
            placed = torch.empty_like(values)
            placed[order] = values
            in_batch_order.append(placed)
        return tuple(in_batch_order)

    @torch.no_grad()
    def advantages(
        self, observations: list[str], actions: list[str], rows_per_pass: int | None = None
    ) -> torch.Tensor:
        """``A(s, a) = min(Q1, Q2)(s, a) - min(V1, V2)(s)`` from the online critic, without dropout or gradient.

        Args:
            observations: B states.
            actions: B actions (text, as the critic saw them in its Q loss).
            rows_per_pass: rows per critic forward pass; the critic's micro-batch size by default.

        Returns:
            (B,) advantages on the accelerator's device.
        """
        was_training = self.critic.training
        self.critic.eval()
        try:
            parts = []
            rows = rows_per_pass or self.settings.micro_batch_size
            for start in range(0, len(observations), rows):
                end = start + rows
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
        """Online and target critic weights and the critic optimiser (keys as in online ArCHer's checkpoint)."""
        return {
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "critic_optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (extra keys are ignored, so a whole algorithm state can be passed)."""
        self.critic.load_state_dict(state["critic"])
        self.target_critic.load_state_dict(state["target_critic"])
        self.optimizer.load_state_dict(state["critic_optimizer"])


class ActorCriticAlgorithm(Algorithm):
    """An algorithm that trains the utterance critic (a ``CriticLearner``) and the policy (its own Adam optimiser):
    what a checkpoint, ``init_from`` and the exports hold of both. Dropout stays off in the policy outside the losses
    that turn it on, as in the online reference (it never called ``.train()``), so sampling and scoring see the same
    policy.

    Args:
        cfg: the algorithm's config (with a ``critic`` group).
        policy: the language policy.
        accelerator: device placement and backward.
        critic: the online utterance critic; its target copy is made by the learner.
        loss: the critic's loss (``CriticLoss``).
        progress: show progress bars.
        dropout: the learner's ``dropout``.
    """

    def __init__(
        self,
        cfg: AlgorithmConfig,
        policy: LanguagePolicy,
        accelerator: Backend,
        critic: DoubleCritic | None,
        loss: CriticLoss,
        progress: bool = True,
        dropout: bool = False,
    ) -> None:
        if critic is None:
            raise ValueError(f"{cfg.name} needs a critic")
        super().__init__(cfg, policy, accelerator)
        self.progress = progress
        self.learner = CriticLearner(cfg, critic, accelerator, loss, dropout=dropout)
        self.actor_optimizer = torch.optim.Adam(
            [p for p in policy.model.parameters() if p.requires_grad], lr=cfg.actor_lr
        )

    @property
    def critic(self) -> DoubleCritic:
        return self.learner.critic

    @property
    def target_critic(self) -> DoubleCritic:
        return self.learner.target_critic

    @property
    def critic_optimizer(self) -> torch.optim.Optimizer:
        return self.learner.optimizer

    def networks(self) -> dict[str, nn.Module]:
        return {**super().networks(), **self.learner.networks()}

    def exports(self) -> dict[str, tuple[nn.Module, Any]]:
        return {**super().exports(), **self.learner.exports()}

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.model.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            **self.learner.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.model.load_state_dict(state["policy"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.learner.load_state_dict(state)
