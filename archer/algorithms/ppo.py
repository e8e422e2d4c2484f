"""Token-level PPO over multi-turn episodes: the on-policy baseline of the ArCHer paper's "100x" comparison.

Neither public ArCHer repository (ArCHer, OfflineArcher) has it; the paper reports that it needs at least 1024
on-policy games per gradient step on Twenty Questions. One iteration, on the games the trainer just played
(``observe``):

1. Every game is one token sequence made of its action tokens only, the exact ids the policy sampled
   (``Trajectory.action_token_ids``); the environment's replies are part of the next state, never actions.
2. Each action token is scored once without gradients: ``log pi_old`` (the policy that played), ``log pi_ref``
   (the frozen starting policy) and the value ``V_t`` of the prefix before it (a separate value model).
3. Rewards per token (``kl_shaped_token_rewards``): ``-kl_coeff (log pi_old - log pi_ref)`` on every token, plus
   the utterance's reward on its last token. The turn boundaries come from the token counts of the actions, not
   from where rewards are non-zero (a peer's bug dropped zero-reward turns).
4. GAE over each game's sequence (``gae_with_discounts``): discount 1 between the tokens of one utterance,
   ``gamma`` from an utterance's last token to the next utterance's first, 0 after the game's last token (the
   collected games always end; time-limit ends are terminal, as in ArCHer). Advantages are optionally
   standardised over the iteration's tokens.
5. ``ppo_epochs`` passes; each shuffles the utterances (whole games with ``pack_games``; with the trainer's
   generator) and splits them into ``num_minibatches`` minibatches. Per minibatch: the clipped-ratio loss
   (``ppo_clip_loss``) for the policy and the value regression (``ppo_value_loss``) for the value model, accumulated
   over micro-batches and averaged over tokens, then one clipped step of each network with its own optimiser.

Scoring, packing (``pack_games``: each game's turns, and their values, scored in one pass over its last turn's row),
micro-batching and the passes are shared with the group methods (``archer.algorithms.on_policy``).

The value model is a separate causal LM with a scalar head (``TokenValueModel``), loaded like the policy. The
reference policy is a frozen copy of the policy as the algorithm is built (the starting policy). PPO is on-policy:
the replay buffer the trainer fills is never read, and only the current iteration's games are held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from archer.algorithms.accumulation import Backend
from archer.algorithms.losses import gae_with_discounts, kl_shaped_token_rewards, ppo_value_loss
from archer.algorithms.on_policy import GameTokens, LossTerm, MicroScores, OnPolicyGamesAlgorithm, pad
from archer.algorithms.token_value_training import TokenValueMixin
from archer.config import PPOConfig
from archer.data.replay_buffer import ReplayBuffer
from archer.models.critic import DoubleCritic
from archer.models.policy import LanguagePolicy
from archer.models.token_value import TokenValueModel


@dataclass
class _Rollout(GameTokens):
    """``GameTokens`` with PPO's per-token quantities (each a (n_i,) tensor per utterance).

    Attributes:
        values: the value model's value of the prefix before each token.
        rewards: KL-shaped token rewards (``kl_shaped_token_rewards``).
        advantages, returns: filled by GAE.
    """

    values: list[torch.Tensor]
    rewards: list[torch.Tensor]
    advantages: list[torch.Tensor] | None = None
    returns: list[torch.Tensor] | None = None


def token_gae_over_games(
    rewards: list[torch.Tensor], values: list[torch.Tensor], games: list[range], gamma: float, lam: float
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """GAE over the action tokens of whole games, utterance boundaries taken from the token counts.

    Each game's utterances are concatenated into one token sequence. The discount to the next token is 1 inside an
    utterance, ``gamma`` from an utterance's last token to the next utterance's first (the environment's reply
    happens in between) and 0 after the game's last token (the game has ended). Games are padded into one batch
    for ``gae_with_discounts``; padding has r = V = c = 0, so it changes nothing.

    Args:
        rewards: per utterance, (n_u,) token rewards.
        values: per utterance, (n_u,) values of the prefix before each token.
        games: per game, the indices of its utterances in play order.
        gamma: discount per utterance.
        lam: GAE lambda, per token.

    Returns:
        ``(advantages, returns)``, per utterance, each (n_u,).
    """
    sequences: dict[str, list[torch.Tensor]] = {"rewards": [], "values": [], "discounts": []}
    for span in games:
        discounts = []
        for k, u in enumerate(span):
            step = torch.ones_like(rewards[u])
            step[-1] = gamma if k < len(span) - 1 else 0.0
            discounts.append(step)
        sequences["rewards"].append(torch.cat([rewards[u] for u in span]))
        sequences["values"].append(torch.cat([values[u] for u in span]))
        sequences["discounts"].append(torch.cat(discounts))
    padded_rewards, padded_values, padded_discounts = (
        pad(sequences[key]) for key in ("rewards", "values", "discounts")
    )
    # The value after a game's last token is never used (its discount is 0).
    padded_values = torch.cat([padded_values, torch.zeros_like(padded_values[:, :1])], dim=1)
    advantages, returns = gae_with_discounts(padded_rewards, padded_values, padded_discounts, lam)
    per_utterance_advantages, per_utterance_returns = [], []
    for g, span in enumerate(games):
        offset = 0
        for u in span:
            n = len(rewards[u])
            per_utterance_advantages.append(advantages[g, offset : offset + n])
            per_utterance_returns.append(returns[g, offset : offset + n])
            offset += n
    return per_utterance_advantages, per_utterance_returns


class PPOAlgorithm(TokenValueMixin, OnPolicyGamesAlgorithm):
    """Token-level PPO with a separate token value model and a KL penalty to the starting policy.

    Args:
        cfg: schedule and hyperparameters.
        policy: the language policy.
        accelerator: device placement and backward.
        critic: unused (PPO has no utterance critic).
        progress: show progress bars.
        value_model: the token value model; ``None`` loads one with ``build_token_value_model(policy)``.
    """

    def __init__(
        self,
        cfg: PPOConfig,
        policy: LanguagePolicy,
        accelerator: Backend,
        critic: DoubleCritic | None = None,
        progress: bool = True,
        value_model: TokenValueModel | None = None,
    ) -> None:
        super().__init__(cfg, policy, accelerator, progress)
        self.cfg: PPOConfig = cfg
        self.init_value_model(policy, value_model)

    # ---- 1-4: the iteration's tokens, scored, with their advantages ----------------------------------------------

    def _values(self, rollout: GameTokens, micro: list[int]) -> torch.Tensor:
        obs, ids = [rollout.observations[i] for i in micro], [rollout.token_ids[i] for i in micro]
        if self.cfg.pack_games:
            return self.value_model.packed(obs, [rollout.actions[i] for i in micro], ids)[0]
        return self.value_model(obs, ids)[0]

    def new_tokens(self, **fields: Any) -> _Rollout:
        count = len(fields["observations"])
        return _Rollout(**fields, values=[torch.empty(0)] * count, rewards=[torch.empty(0)] * count)

    def score_more(self, tokens: GameTokens, micro: list[int], scores: MicroScores) -> dict[str, torch.Tensor]:
        """Step 3: the values of the micro-batch's prefixes and its KL-shaped token rewards."""
        values = self._values(tokens, micro)
        utterance_rewards = torch.tensor(
            [tokens.utterance_rewards[i] for i in micro], dtype=torch.float32, device=self.policy.device
        )
        token_rewards = kl_shaped_token_rewards(
            utterance_rewards, scores.logprobs, scores.ref_logprobs, scores.mask, self.cfg.kl_coeff
        )
        return {"values": values.float(), "rewards": token_rewards}

    def estimate_advantages(self, rollout: _Rollout) -> None:
        """Step 4: GAE over each game's action tokens; fills ``rollout.advantages`` and ``rollout.returns``."""
        rollout.advantages, rollout.returns = token_gae_over_games(
            rollout.rewards, rollout.values, rollout.games, self.cfg.gamma, self.cfg.gae_lambda
        )

    # ---- 5: the PPO passes ----------------------------------------------------------------------------------------

    def loss_terms(
        self, tokens: GameTokens, micro: list[int], logprobs: torch.Tensor, mask: torch.Tensor
    ) -> list[LossTerm]:
        """The value regression; it reaches the value model only (the policy's loss and it share no parameters)."""
        assert isinstance(tokens, _Rollout) and tokens.returns is not None
        value_loss = ppo_value_loss(
            self._values(tokens, micro).float(),
            pad([tokens.values[i] for i in micro]),
            pad([tokens.returns[i] for i in micro]),
            mask,
            self.cfg.value_clip_range,
        )
        return [LossTerm("value/loss", "value loss", value_loss)]

    def step_networks(self) -> dict[str, float]:
        norms = super().step_networks()
        norms["value/grad_norm"] = self.step_value_model()
        return norms

    def update(self, buffer: ReplayBuffer, iteration: int, rng: np.random.Generator) -> dict[str, float]:
        """One PPO iteration on the games ``observe`` received; the replay buffer is not read."""
        cfg = self.cfg
        games = self.take_games()
        # 1-4. Score the tokens once and estimate their advantages.
        rollout = self.score(games)
        assert isinstance(rollout, _Rollout)
        self.estimate_advantages(rollout)
        assert rollout.advantages is not None and rollout.returns is not None
        raw = torch.cat(rollout.advantages)
        advantages = rollout.advantages
        if cfg.normalize_advantages and raw.numel() > 1:
            mean, std = raw.mean(), raw.std()
            advantages = [(a - mean) / (std + 1e-8) for a in advantages]
        # 5. ppo_epochs passes over shuffled minibatches of utterances (of whole games with pack_games).
        metrics = self.passes(rollout, advantages, iteration, rng)
        old, ref = torch.cat(rollout.old_logprobs), torch.cat(rollout.ref_logprobs)
        values, returns = torch.cat(rollout.values), torch.cat(rollout.returns)
        metrics.update(
            {
                "actor/kl_ref": (old - ref).mean().item(),
                "actor/advantage_mean": raw.mean().item(),
                "actor/advantage_std": raw.std(unbiased=False).item(),
                "actor/tokens": float(raw.numel()),
                "value/mean": values.mean().item(),
                "value/return_mean": returns.mean().item(),
            }
        )
        if returns.numel() > 1:
            # 1 - Var(R - V) / Var(R): how much of the returns the rollout's values explained.
            explained = 1 - (returns - values).var() / returns.var().clamp(min=1e-8)
            metrics["value/explained_variance"] = explained.item()
        return metrics
