"""ArCHer with a token-level baseline in its low level (the paper's optional baseline; dormant in the reference).

Everything is online ArCHer (``ArcherAlgorithm``) except the actor step. At replay states, with fresh policy
samples a~ and the utterance advantage ``A = min(Q1, Q2)(s, a~) - min(V1, V2)(s)`` from the online critic, a token
value model predicts A before every token, ``b_t = V(s, a~_<t)``, and

    L_V  = masked_mean_{b,t} (A - b_t)^2,
    L_PG = -mean_b sum_t (A - b_t).detach() * log pi(a~_t | s, a~_<t)          (``token_baseline_losses``).

Because ``b_t`` depends only on the prefix before token t, subtracting it leaves the gradient unbiased and can
only lower its variance; the paper found it helped Guess My City, whose utterances are long and diverse.

The value model is a separate causal LM with a scalar head (``TokenValueModel``; the paper used a separate GPT-2),
loaded with the policy's loader and config and started from the weights the policy was loaded from. It is not a
head on the policy's hidden states: sharing the trunk would let the value regression change the policy. It has its
own Adam optimiser (``value_lr``) and its own gradient clipping (``value_max_grad_norm``), and trains only in the
actor phase (after ``warmup_iters``), on the same samples as the policy. The reference has the loss in dormant code
(its value term averaged over padding too) and no value model.
"""

from __future__ import annotations

import torch

from archer.algorithms.accumulation import Backend, accumulate, clip_and_step
from archer.algorithms.archer import ArcherAlgorithm
from archer.algorithms.base import check_finite
from archer.algorithms.critic_updates import summary_stats
from archer.algorithms.losses import token_baseline_losses
from archer.algorithms.token_value_training import TokenValueMixin
from archer.config import ArcherBaselineConfig
from archer.models.critic import DoubleCritic
from archer.models.policy import LanguagePolicy
from archer.models.token_value import TokenValueModel


class ArcherBaselineAlgorithm(TokenValueMixin, ArcherAlgorithm):
    """Online ArCHer whose policy gradient subtracts a learned per-token baseline.

    Args:
        cfg: ArCHer's schedule plus the value model's ``value_lr`` and ``value_max_grad_norm``.
        policy: the language policy.
        accelerator: device placement and backward.
        critic: the online utterance critic.
        progress: show progress bars.
        value_model: the token value model; ``None`` loads one with ``build_token_value_model(policy)``.
    """

    def __init__(
        self,
        cfg: ArcherBaselineConfig,
        policy: LanguagePolicy,
        accelerator: Backend,
        critic: DoubleCritic | None = None,
        progress: bool = True,
        value_model: TokenValueModel | None = None,
    ) -> None:
        super().__init__(cfg, policy, accelerator, critic=critic, progress=progress)
        self.cfg: ArcherBaselineConfig = cfg
        self.init_value_model(policy, value_model)

    def actor_step(self, observations: list[str], iteration: int, step: int) -> dict[str, float]:
        """One baselined REINFORCE step on fresh samples at ``observations``, and one value-model step."""
        cfg = self.cfg
        generation = self.policy.generate(observations, greedy=False, batch_size=cfg.generation_batch_size)
        advantages = self.actor_advantages(observations, generation.texts)
        size = len(observations)
        pg_total, value_total, residuals, values_seen = 0.0, 0.0, [], []
        for start in range(0, size, cfg.actor_micro_batch_size):
            end = min(start + cfg.actor_micro_batch_size, size)
            ids = generation.token_ids[start:end]
            token_logprobs, mask = self.policy.token_logprobs(observations[start:end], ids, as_sampled=True)
            token_values, _ = self.value_model(observations[start:end], ids)
            pg_loss, value_loss = token_baseline_losses(advantages[start:end], token_values, token_logprobs, mask)
            check_finite(pg_loss, "actor loss", iteration, step)
            check_finite(value_loss, "value loss", iteration, step)
            # The two losses reach disjoint networks (the residual is detached in pg_loss), so one backward works.
            accumulate(self.accelerator, pg_loss + value_loss, end - start, size)
            pg_total += pg_loss.item() * (end - start) / size
            value_total += value_loss.item() * (end - start) / size
            real = mask.bool()
            residuals.append((advantages[start:end].unsqueeze(-1) - token_values.detach())[real])
            values_seen.append(token_values.detach()[real])
        actor_norm = clip_and_step(
            self.accelerator, self.actor_optimizer, self.policy.model.parameters(), cfg.max_grad_norm
        )
        value_norm = self.step_value_model()
        lengths = torch.tensor([len(ids) for ids in generation.token_ids], dtype=torch.float32)
        return {
            "actor/pg_loss": pg_total,
            "actor/grad_norm": actor_norm,
            "actor/action_tokens_mean": lengths.mean().item(),
            **summary_stats("actor/advantage", advantages),
            **summary_stats("actor/residual_advantage", torch.cat(residuals)),
            "value/loss": value_total,
            "value/grad_norm": value_norm,
            **summary_stats("value/baseline", torch.cat(values_seen)),
        }
