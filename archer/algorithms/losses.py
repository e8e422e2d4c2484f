"""Pure loss and target functions shared by the algorithms.

Every function takes tensors and plain numbers and returns tensors; none sees a model, an optimiser or a config.
Shapes use B (batch of utterances) and T (tokens of an utterance, or steps of an episode for ``gae``). Where a
quantity is a regression target or a policy-gradient weight it is detached inside, so a caller cannot leak
gradients into target networks by forgetting ``no_grad``. Shapes of paired inputs must match exactly: a silent
(B, 1) against (B,) broadcast would turn a mean-squared error into a B x B average.

Sources: the paper and its reference code (github.com/YifeiZhou02/ArCHer: online ArCHer's critic and actor, the
token baseline, filtered BC) and OfflineArcher (github.com/andreazanette/OfflineArcher: offline ArCHer's expectile V
and AWR, BC, IQL + REINFORCE + KL).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from archer.config.algorithm import ARCHER_ADVANTAGE_NORMS


def _check_same_shape(**tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"shapes must match, got {shapes}")


def _masked_zero(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``x`` with masked-out positions set to 0, so padding holding -inf or NaN cannot poison a sum."""
    return torch.where(mask.bool(), x, torch.zeros((), dtype=x.dtype, device=x.device))


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return _masked_zero(x, mask).sum() / mask.bool().sum().clamp(min=1)


def td_q_targets(
    rewards: torch.Tensor, terminated: torch.Tensor, next_v_target: torch.Tensor, gamma: float
) -> torch.Tensor:
    """One-step TD target for the Q heads: ``y = r + gamma * (1 - d) * Vbar(s')``.

    ``d`` is whatever ends bootstrapping. The caller passes ``terminated`` to bootstrap through time-limit
    truncations, or ``terminated | truncated`` to treat them as terminal as the paper and reference do
    (as both references do); that choice is the trainer's bootstrap switch, not this function's.

    Args:
        rewards: (B,) r.
        terminated: (B,) 1 (or True) where no bootstrap is wanted.
        next_v_target: (B,) target critic's V at s', one head (the caller calls this once per head).
        gamma: discount.

    Returns:
        (B,) targets, detached.
    """
    _check_same_shape(rewards=rewards, terminated=terminated, next_v_target=next_v_target)
    not_done = 1.0 - terminated.to(rewards.dtype)
    return (rewards + gamma * not_done * next_v_target).detach()


def archer_critic_loss(
    q1: torch.Tensor,
    q2: torch.Tensor,
    v1: torch.Tensor,
    v2: torch.Tensor,
    q1_target: torch.Tensor,
    q2_target: torch.Tensor,
    v1_target: torch.Tensor,
    v2_target: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """ArCHer's critic loss: ``MSE(Q1, yQ1) + MSE(Q2, yQ2) + MSE(V1, yV1) + MSE(V2, yV2)``.

    Each head regresses on its own target; there is no min across heads (as in the reference). Targets are treated
    as constants.

    Args:
        q1, q2: (B,) online Q heads at (s, a) with the replay action a.
        v1, v2: (B,) online V heads at s.
        q1_target, q2_target: (B,) ``yQ_i = r + gamma (1 - d) Vbar_i(s')`` (see ``td_q_targets``).
        v1_target, v2_target: (B,) ``yV_i = Qbar_i(s, a~)`` with a~ a fresh policy sample.

    Returns:
        The summed loss and its parts ``q1_loss``, ``q2_loss``, ``v1_loss``, ``v2_loss`` (detached).
    """
    _check_same_shape(
        q1=q1, q2=q2, v1=v1, v2=v2, q1_target=q1_target, q2_target=q2_target, v1_target=v1_target, v2_target=v2_target
    )
    parts = {
        "q1_loss": F.mse_loss(q1, q1_target.detach()),
        "q2_loss": F.mse_loss(q2, q2_target.detach()),
        "v1_loss": F.mse_loss(v1, v1_target.detach()),
        "v2_loss": F.mse_loss(v2, v2_target.detach()),
    }
    loss = parts["q1_loss"] + parts["q2_loss"] + parts["v1_loss"] + parts["v2_loss"]
    return loss, {name: part.detach() for name, part in parts.items()}


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """Asymmetric squared loss: ``mean(|tau - 1(diff < 0)| * diff^2)``.

    ``diff = target - prediction``. With ``tau = 0.9`` an under-estimate (diff > 0) weighs 0.9 and an
    over-estimate 0.1, so the prediction moves towards the upper 0.9-expectile of the target. (The reference's
    first online commit used ``diff = prediction - target`` and so fitted the lower expectile.)

    Args:
        diff: any shape, target minus prediction.
        expectile: tau in (0, 1); 0.5 gives half the mean-squared error.

    Returns:
        Scalar loss.
    """
    if not 0.0 < expectile < 1.0:
        raise ValueError(f"expectile must lie in (0, 1), got {expectile}")
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * diff.pow(2)).mean()


def iql_value_loss(
    v1: torch.Tensor, v2: torch.Tensor, q1_target: torch.Tensor, q2_target: torch.Tensor, expectile: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Offline ArCHer's V loss: ``sum_i expectile_loss(Qbar_i(s, a) - V_i(s), tau)`` (OfflineArcher's).

    Args:
        v1, v2: (B,) online V heads at s.
        q1_target, q2_target: (B,) target critic's Q heads at (s, a) with the dataset action a.
        expectile: tau, 0.9 in OfflineArcher.

    Returns:
        The summed loss and its parts ``v1_loss``, ``v2_loss`` (detached).
    """
    _check_same_shape(v1=v1, v2=v2, q1_target=q1_target, q2_target=q2_target)
    parts = {
        "v1_loss": expectile_loss(q1_target.detach() - v1, expectile),
        "v2_loss": expectile_loss(q2_target.detach() - v2, expectile),
    }
    return parts["v1_loss"] + parts["v2_loss"], {name: part.detach() for name, part in parts.items()}


def iql_critic_loss(
    q1: torch.Tensor,
    q2: torch.Tensor,
    v1: torch.Tensor,
    v2: torch.Tensor,
    q1_target: torch.Tensor,
    q2_target: torch.Tensor,
    v1_target: torch.Tensor,
    v2_target: torch.Tensor,
    expectile: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Offline ArCHer's whole critic loss: ArCHer's Q regression plus the expectile V loss.

    Same arguments as ``archer_critic_loss``, except that ``v{1,2}_target`` are the target critic's Q heads at
    the *dataset* action and V is fitted to their ``expectile`` (OfflineArcher's critic).

    Returns:
        The summed loss and its parts ``q1_loss``, ``q2_loss``, ``v1_loss``, ``v2_loss`` (detached).
    """
    _check_same_shape(
        q1=q1, q2=q2, v1=v1, v2=v2, q1_target=q1_target, q2_target=q2_target, v1_target=v1_target, v2_target=v2_target
    )
    q_parts = {"q1_loss": F.mse_loss(q1, q1_target.detach()), "q2_loss": F.mse_loss(q2, q2_target.detach())}
    v_loss, v_parts = iql_value_loss(v1, v2, v1_target, v2_target, expectile)
    loss = q_parts["q1_loss"] + q_parts["q2_loss"] + v_loss
    return loss, {**{name: part.detach() for name, part in q_parts.items()}, **v_parts}


def utterance_advantage(q1: torch.Tensor, q2: torch.Tensor, v1: torch.Tensor, v2: torch.Tensor) -> torch.Tensor:
    """ArCHer's utterance advantage ``A(s, a) = min(Q1, Q2)(s, a) - min(V1, V2)(s)``.

    Args:
        q1, q2: (B,) Q heads at (s, a).
        v1, v2: (B,) V heads at s.

    Returns:
        (B,) advantages (not detached; the losses that use them detach).
    """
    _check_same_shape(q1=q1, q2=q2, v1=v1, v2=v2)
    return torch.minimum(q1, q2) - torch.minimum(v1, v2)


def pearson_correlation(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation of two (N,) tensors; NaN when either is constant or N < 2 (it is undefined then).

    Used as a diagnostic, not a loss: how well the critic's advantages track the returns the games collected.
    """
    _check_same_shape(x=x, y=y)
    if x.numel() < 2:
        return float("nan")
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    denominator = (x.square().sum() * y.square().sum()).sqrt()
    return float((x * y).sum() / denominator) if denominator > 0 else float("nan")


def normalise_advantages(advantages: torch.Tensor, norm: str, min_scale: float = 1e-8) -> tuple[torch.Tensor, float]:
    """An actor batch's advantages in units of their own spread, so that weights added to them (a KL penalty, a
    cloning term) mean the same on a task whose rewards are 0.02 apart as on one whose are 1 apart.

    ``none``: unchanged. ``std_norm``: ``A / std(A)``, the sign of every advantage kept. ``mean_std_norm``:
    ``(A - mean(A)) / std(A)``, as PPO implementations whiten their advantages. ``std`` is the population standard
    deviation over the batch (defined for a batch of one). Where it is below ``min_scale`` the batch carries no
    scale to divide by: ``std_norm`` leaves it unchanged, ``mean_std_norm`` returns zeros (every advantage equals
    the mean).

    Args:
        advantages: (B,) utterance advantages (detached: they are constants of the loss).
        norm: one of ``ARCHER_ADVANTAGE_NORMS``.
        min_scale: the smallest standard deviation divided by.

    Returns:
        ``(normalised, scale)``: the (B,) advantages and the standard deviation they were divided by (1.0 where
        none was).

    Raises:
        ValueError: an unknown ``norm`` or an advantages tensor that is not one-dimensional.
    """
    if norm not in ARCHER_ADVANTAGE_NORMS:
        raise ValueError(f"norm must be one of {ARCHER_ADVANTAGE_NORMS}, got {norm!r}")
    if advantages.dim() != 1:
        raise ValueError(f"advantages must be (B,), got {tuple(advantages.shape)}")
    advantages = advantages.detach()
    if norm == "none":
        return advantages, 1.0
    scale = float(advantages.double().std(unbiased=False)) if advantages.numel() else 0.0
    centred = advantages - advantages.mean() if norm == "mean_std_norm" else advantages
    if scale < min_scale:
        return (torch.zeros_like(advantages) if norm == "mean_std_norm" else advantages), 1.0
    return centred / scale, scale


def reinforce_loss(advantages: torch.Tensor, sequence_logprobs: torch.Tensor) -> torch.Tensor:
    """Utterance-level REINFORCE: ``-mean_B(A.detach() * log pi(a | s))``.

    Args:
        advantages: (B,) A(s, a).
        sequence_logprobs: (B,) summed token log-probabilities of each utterance.

    Returns:
        Scalar loss; its gradient w.r.t. ``sequence_logprobs[b]`` is ``-A[b] / B``.
    """
    _check_same_shape(advantages=advantages, sequence_logprobs=sequence_logprobs)
    return -(advantages.detach() * sequence_logprobs).mean()


def awr_loss(
    advantages: torch.Tensor, sequence_logprobs: torch.Tensor, inv_temp: float, max_weight: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantage-weighted regression: ``-mean_B(min(exp(beta * A), w_max).detach() * log pi(a | s))``.

    OfflineArcher left the weight unclipped; IQL clips at 100. Clipping is done in log space,
    so a large advantage gives ``w_max`` rather than ``inf``.

    Args:
        advantages: (B,) A(s, a) at the dataset actions.
        sequence_logprobs: (B,) summed token log-probabilities of the dataset actions.
        inv_temp: beta.
        max_weight: w_max > 0, or None for no clipping (the reference).

    Returns:
        The scalar loss and the (B,) detached weights.
    """
    _check_same_shape(advantages=advantages, sequence_logprobs=sequence_logprobs)
    exponent = inv_temp * advantages.detach()
    if max_weight is not None:
        if max_weight <= 0:
            raise ValueError(f"max_weight must be positive or None, got {max_weight}")
        exponent = exponent.clamp(max=math.log(max_weight))
    weights = exponent.exp()
    return -(weights * sequence_logprobs).mean(), weights


def bc_loss(token_logprobs: torch.Tensor, token_mask: torch.Tensor, per_token: bool = False) -> torch.Tensor:
    """Behaviour-cloning negative log-likelihood of the action tokens.

    Default (both references' definition): ``-mean_B sum_t log pi_t * m_t``, so longer
    utterances weigh more. ``per_token=True`` gives the token mean ``-sum_{b,t} log pi_t m_t / sum_{b,t} m_t``.

    Args:
        token_logprobs: (B, T) log-probability of each action token.
        token_mask: (B, T) 1 on action tokens, 0 on padding.
        per_token: average over tokens instead of summing per utterance.

    Returns:
        Scalar loss.
    """
    _check_same_shape(token_logprobs=token_logprobs, token_mask=token_mask)
    if per_token:
        return -_masked_mean(token_logprobs, token_mask)
    return -_masked_zero(token_logprobs, token_mask).sum(dim=-1).mean()


def token_baseline_losses(
    advantages: torch.Tensor, token_values: torch.Tensor, token_logprobs: torch.Tensor, token_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE with a token-level baseline inside an utterance (the paper's optional baseline).

    The utterance advantage A is the terminal reward of the token-level episode; a value head predicts it at
    every token, ``b_t``.

    - ``L_V = masked_mean_{b,t}((A - b_t)^2)`` (the reference's dormant code averaged over padding too).
    - ``L_PG = -mean_b sum_t (A - b_t).detach() * log pi_t * m_t``.

    Args:
        advantages: (B,) utterance advantages A (treated as constants).
        token_values: (B, T) baseline b_t.
        token_logprobs: (B, T) log pi_t of the sampled tokens.
        token_mask: (B, T) 1 on action tokens.

    Returns:
        ``(pg_loss, value_loss)``, scalars.
    """
    _check_same_shape(token_values=token_values, token_logprobs=token_logprobs, token_mask=token_mask)
    if advantages.shape != token_values.shape[:1]:
        raise ValueError(f"advantages must be (B,) = {tuple(token_values.shape[:1])}, got {tuple(advantages.shape)}")
    residual = advantages.detach().unsqueeze(-1) - token_values
    value_loss = _masked_mean(residual.pow(2), token_mask)
    pg_loss = -_masked_zero(residual.detach() * token_logprobs, token_mask).sum(dim=-1).mean()
    return pg_loss, value_loss


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_range: float,
    dual_clip: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level PPO clipped surrogate, masked mean over tokens.

    ``rho = exp(logp - logp_old)``; ``l = max(-A rho, -A clip(rho, 1 - eps, 1 + eps))``; ``L = masked_mean(l)``.
    With ``dual_clip = c`` (dual-clip PPO, Ye et al. 2020; verl's ``clip_ratio_c``, 3 by default there), a token
    with ``A < 0`` has ``l = min(l, -A c)``: a ratio far above 1 on a bad token no longer makes an unbounded loss.

    Args:
        logprobs: (B, T) current log-probabilities of the sampled tokens.
        old_logprobs: (B, T) log-probabilities under the sampling policy (constants).
        advantages: (B, T) per-token advantages, or (B,) broadcast over the tokens of each utterance (constants).
        mask: (B, T) 1 on action tokens.
        clip_range: eps > 0.
        dual_clip: c > 1, or None for PPO's plain clip.

    Returns:
        The scalar loss and the clip fraction (detached): the masked share of tokens with ``|rho - 1| > eps``.
    """
    _check_same_shape(logprobs=logprobs, old_logprobs=old_logprobs, mask=mask)
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1).expand_as(logprobs)
    _check_same_shape(advantages=advantages, logprobs=logprobs)
    if clip_range <= 0:
        raise ValueError(f"clip_range must be positive, got {clip_range}")
    if dual_clip is not None and dual_clip <= 1:
        raise ValueError(f"dual_clip must be above 1, or None, got {dual_clip}")
    advantages = advantages.detach()
    # Padding can hold -inf log-probs; zeroing the difference there keeps rho finite before masking.
    ratio = _masked_zero(logprobs - old_logprobs.detach(), mask).exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_range, 1.0 + clip_range)
    token_losses = torch.maximum(unclipped, clipped)
    if dual_clip is not None:
        token_losses = torch.where(advantages < 0, torch.minimum(token_losses, -advantages * dual_clip), token_losses)
    loss = _masked_mean(token_losses, mask)
    clip_fraction = _masked_mean(((ratio - 1.0).abs() > clip_range).to(logprobs.dtype), mask)
    return loss, clip_fraction.detach()


def gae(
    rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over one episode (or a batch of equal-length ones): ``gae_with_discounts``
    with the constant discount ``c_t = gamma (1 - d_t)``.

    ``delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t``; ``A_t = delta_t + gamma lam (1 - d_t) A_{t+1}``;
    returns ``R_t = A_t + V_t``. lam = 1 gives Monte-Carlo returns minus values; lam = 0 gives one-step TD errors.

    Args:
        rewards: (..., T) r_t.
        values: (..., T+1) V_0 .. V_T; V_T is the bootstrap value of the last next-state.
        dones: (..., T) 1 where step t ended the episode (no bootstrap past it).
        gamma: discount.
        lam: GAE lambda in [0, 1].

    Returns:
        ``(advantages, returns)``, both (..., T) and detached.
    """
    _check_same_shape(rewards=rewards, dones=dones)
    return gae_with_discounts(rewards, values, gamma * (1.0 - dones.detach().to(rewards.dtype)), lam)


def kl_penalty(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Sample estimate of KL(pi || pi_ref) per token: ``masked_mean(logp - logp_ref)``.

    Args:
        logprobs: (B, T) log pi of tokens sampled from pi.
        ref_logprobs: (B, T) log pi_ref of the same tokens.
        mask: (B, T) 1 on action tokens.

    Returns:
        Scalar estimate (differentiable through ``logprobs``; its gradient is not the KL's gradient, see
        ``iql_kl_reinforce_loss`` for that).
    """
    _check_same_shape(logprobs=logprobs, ref_logprobs=ref_logprobs, mask=mask)
    return _masked_mean(logprobs - ref_logprobs.detach(), mask)


def low_var_kl_loss(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """KL(pi || pi_ref) per token by the k3 estimator, masked mean over tokens: GRPO's KL loss term.

    ``k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1`` (Schulman, "Approximating KL divergence", 2020), clamped
    to [-10, 10] as verl's ``low_var_kl``; for tokens sampled from pi it is an unbiased, non-negative estimate of
    the KL with less variance than ``logp - logp_ref``. Its gradient flows through ``logprobs`` only.

    Args:
        logprobs: (B, T) log pi of tokens sampled from (a recent copy of) pi.
        ref_logprobs: (B, T) log pi_ref of the same tokens (constants).
        mask: (B, T) 1 on action tokens.

    Returns:
        Scalar loss.
    """
    _check_same_shape(logprobs=logprobs, ref_logprobs=ref_logprobs, mask=mask)
    # Zeroed on padding before the exponential, so a -inf there cannot make inf - inf.
    log_ratio = _masked_zero(ref_logprobs.detach() - logprobs, mask)
    k3 = (log_ratio.exp() - log_ratio - 1.0).clamp(-10.0, 10.0)
    return _masked_mean(k3, mask)


def iql_kl_reinforce_loss(
    advantages: torch.Tensor, logp: torch.Tensor, ref_logp: torch.Tensor, kl_coeff: float
) -> torch.Tensor:
    """REINFORCE on the utterance with a KL-to-reference term (OfflineArcher's ``IQLKL``).

    ``L = mean_B[(1 - c)(-A logp) + c ((logp - logp_ref).detach() + 1) logp]``. The second term's gradient is
    the score-function gradient of ``KL(pi || pi_ref)`` for actions sampled from pi; c = 0 is plain REINFORCE.

    Args:
        advantages: (B,) A(s, a~) of sampled utterances (constants).
        logp: (B,) summed log pi(a~ | s).
        ref_logp: (B,) summed log pi_ref(a~ | s).
        kl_coeff: c in [0, 1].

    Returns:
        Scalar loss.
    """
    _check_same_shape(advantages=advantages, logp=logp, ref_logp=ref_logp)
    if not 0.0 <= kl_coeff <= 1.0:
        raise ValueError(f"kl_coeff must lie in [0, 1], got {kl_coeff}")
    kl_weight = (logp - ref_logp).detach() + 1.0
    return ((1.0 - kl_coeff) * -advantages.detach() * logp + kl_coeff * kl_weight * logp).mean()


def kl_penalised_reinforce_loss(
    advantages: torch.Tensor, logp: torch.Tensor, ref_logp: torch.Tensor, kl_coeff: float
) -> torch.Tensor:
    """REINFORCE on the utterance with the KL to a reference policy as a penalty on the advantage.

    ``L = -mean_B[(A - beta * (logp - logp_ref)) * logp]``, the penalty detached: for actions sampled from pi, the
    penalty's part is the score-function gradient of ``beta * KL(pi || pi_ref)`` (its ``+1`` term, whose expectation
    is zero, left out: it would only add variance, and bias when the samples come from a sharpened distribution).
    beta = 0 is plain REINFORCE.

    Args:
        advantages: (B,) A(s, a~) of sampled utterances (constants).
        logp: (B,) summed log pi(a~ | s).
        ref_logp: (B,) summed log pi_ref(a~ | s).
        kl_coeff: beta >= 0.

    Returns:
        Scalar loss.
    """
    _check_same_shape(advantages=advantages, logp=logp, ref_logp=ref_logp)
    if kl_coeff < 0:
        raise ValueError(f"kl_coeff must be >= 0, got {kl_coeff}")
    penalised = advantages.detach() - kl_coeff * (logp - ref_logp).detach()
    return -(penalised * logp).mean()


def gae_with_discounts(
    rewards: torch.Tensor, values: torch.Tensor, discounts: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation with a discount per step, for token sequences of multi-turn episodes.

    ``delta_t = r_t + c_t V_{t+1} - V_t``; ``A_t = delta_t + lam c_t A_{t+1}``; returns ``R_t = A_t + V_t``.
    ``c_t`` is what multiplies the next step's value: ``gamma_t (1 - d_t)``. Token-level PPO over a dialogue uses
    ``c_t = 1`` between the tokens of one utterance, the utterance discount at an utterance's last token (the next
    step is the next utterance's first token, after the environment's reply) and 0 at the episode's end; padding
    steps with ``r = V = c = 0`` get ``A = 0`` and leak nothing into real steps. ``gae`` is the special case
    ``c_t = gamma (1 - d_t)``. The recursion runs backwards carrying ``A_{t+1}`` in a variable, so no slot is read
    before it is written.

    Args:
        rewards: (..., T) r_t.
        values: (..., T+1) V_0 .. V_T; V_T is the value after the last step.
        discounts: (..., T) c_t in [0, 1].
        lam: GAE lambda in [0, 1].

    Returns:
        ``(advantages, returns)``, both (..., T) and detached.
    """
    if values.shape[:-1] != rewards.shape[:-1] or values.shape[-1] != rewards.shape[-1] + 1:
        raise ValueError(f"values must be (..., T+1) for rewards (..., T), got {tuple(values.shape)}")
    _check_same_shape(rewards=rewards, discounts=discounts)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must lie in [0, 1], got {lam}")
    rewards, values, discounts = rewards.detach(), values.detach(), discounts.detach().to(rewards.dtype)
    advantages = torch.zeros_like(rewards)
    next_advantage = torch.zeros_like(rewards[..., 0])
    for t in range(rewards.shape[-1] - 1, -1, -1):
        delta = rewards[..., t] + discounts[..., t] * values[..., t + 1] - values[..., t]
        next_advantage = delta + lam * discounts[..., t] * next_advantage
        advantages[..., t] = next_advantage
    return advantages, advantages + values[..., :-1]


def kl_shaped_token_rewards(
    utterance_rewards: torch.Tensor,
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    mask: torch.Tensor,
    kl_coeff: float,
) -> torch.Tensor:
    """Per-token rewards of token-level PPO: a KL penalty on every token plus the utterance's reward on its last.

    ``r_t = -c (log pi_t - log pi_ref_t) + 1[t is the utterance's last token] R`` (the InstructGPT / TRL
    KL-in-reward form; its sum over an utterance is ``R`` minus ``c`` times the sampled KL estimate). The last
    token is found from the mask, not from where rewards are non-zero, so a zero-reward turn keeps its boundary.

    Args:
        utterance_rewards: (B,) environment reward R of each utterance.
        logprobs: (B, T) log pi of the sampled tokens under the sampling policy.
        ref_logprobs: (B, T) their log-probabilities under the frozen reference policy.
        mask: (B, T) 1 on action tokens; every row needs at least one.
        kl_coeff: c >= 0.

    Returns:
        (B, T) rewards, 0 on padding, detached.
    """
    _check_same_shape(logprobs=logprobs, ref_logprobs=ref_logprobs, mask=mask)
    if utterance_rewards.shape != logprobs.shape[:1]:
        raise ValueError(
            f"utterance_rewards must be (B,) = {tuple(logprobs.shape[:1])}, got {tuple(utterance_rewards.shape)}"
        )
    if kl_coeff < 0:
        raise ValueError(f"kl_coeff must be >= 0, got {kl_coeff}")
    lengths = mask.bool().sum(dim=-1)
    if (lengths == 0).any():
        raise ValueError("every utterance needs at least one action token")
    rewards = _masked_zero(-kl_coeff * (logprobs.detach() - ref_logprobs.detach()), mask)
    rows = torch.arange(rewards.shape[0], device=rewards.device)
    # Masks are left-aligned (token j of an action at column j), so the last token sits at column length - 1.
    rewards[rows, lengths - 1] += utterance_rewards.detach().to(rewards.dtype)
    return rewards


def ppo_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range: float | None,
) -> torch.Tensor:
    """Token value regression of PPO: ``masked_mean((V - R)^2)``, optionally with PPO's value clipping.

    With ``clip_range = eps`` the loss is ``masked_mean(max((V - R)^2, (V_old + clip(V - V_old, -eps, eps) - R)^2))``
    (the PPO2 / CleanRL form), which keeps a step from moving a value far from the one the advantages used.

    Args:
        values: (B, T) current values.
        old_values: (B, T) values when the rollout was scored (constants).
        returns: (B, T) GAE returns (constants).
        mask: (B, T) 1 on action tokens.
        clip_range: eps > 0, or None for the plain masked mean-squared error.

    Returns:
        Scalar loss.
    """
    _check_same_shape(values=values, old_values=old_values, returns=returns, mask=mask)
    returns, old_values = returns.detach(), old_values.detach()
    squared = (values - returns).pow(2)
    if clip_range is not None:
        if clip_range <= 0:
            raise ValueError(f"clip_range must be positive or None, got {clip_range}")
        clipped = old_values + (values - old_values).clamp(-clip_range, clip_range)
        squared = torch.maximum(squared, (clipped - returns).pow(2))
    return _masked_mean(squared, mask)
