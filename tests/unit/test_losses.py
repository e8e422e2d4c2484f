"""Pure losses against hand-computed numbers; the arithmetic is written next to each expectation."""

import math

import pytest
import torch

from archer.algorithms import losses

T = torch.tensor


def _leaf(values):
    return torch.tensor(values, dtype=torch.float32, requires_grad=True)


def _close(actual, expected):
    torch.testing.assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), rtol=1e-5, atol=1e-6)


# --- TD targets and the ArCHer critic -------------------------------------------------------------------------


def test_td_q_targets_hand_computed():
    # r = -1, gamma = 0.9, Vbar(s') = 2.
    # not terminated: -1 + 0.9 * 1 * 2 = 0.8;  terminated: -1 + 0.9 * 0 * 2 = -1.
    y = losses.td_q_targets(T([-1.0, -1.0]), T([0.0, 1.0]), T([2.0, 2.0]), gamma=0.9)
    _close(y, [0.8, -1.0])
    # Boolean flags work the same.
    _close(losses.td_q_targets(T([-1.0, -1.0]), T([False, True]), T([2.0, 2.0]), gamma=0.9), [0.8, -1.0])


def test_td_q_targets_follow_the_reward():
    # A critic loss that forgot the reward (a known peer bug) would give the same target for r = -1 and r = 0.
    # r = 0: 0 + 0.9 * 2 = 1.8, one more than the 0.8 of r = -1.
    y_minus = losses.td_q_targets(T([-1.0]), T([0.0]), T([2.0]), gamma=0.9)
    y_zero = losses.td_q_targets(T([0.0]), T([0.0]), T([2.0]), gamma=0.9)
    _close(y_zero - y_minus, [1.0])


def test_td_q_targets_are_detached_and_shape_checked():
    next_v = _leaf([2.0])
    assert not losses.td_q_targets(T([0.0]), T([0.0]), next_v, gamma=0.9).requires_grad
    with pytest.raises(ValueError):
        losses.td_q_targets(T([0.0, 1.0]), T([0.0, 0.0]), T([[2.0], [2.0]]), gamma=0.9)


def test_archer_critic_loss_hand_computed():
    q1, q2, v1, v2 = _leaf([1.0, 2.0]), _leaf([0.0, 0.0]), _leaf([3.0, 1.0]), _leaf([0.5, 0.5])
    yq1, yq2, yv1, yv2 = _leaf([0.0, 0.0]), _leaf([1.0, 1.0]), _leaf([1.0, 1.0]), _leaf([0.5, 1.5])
    loss, parts = losses.archer_critic_loss(q1, q2, v1, v2, yq1, yq2, yv1, yv2)
    # q1: ((1-0)^2 + (2-0)^2) / 2 = 2.5
    # q2: ((0-1)^2 + (0-1)^2) / 2 = 1.0
    # v1: ((3-1)^2 + (1-1)^2) / 2 = 2.0
    # v2: ((0.5-0.5)^2 + (0.5-1.5)^2) / 2 = 0.5
    # total 2.5 + 1 + 2 + 0.5 = 6.0
    _close(parts["q1_loss"], 2.5)
    _close(parts["q2_loss"], 1.0)
    _close(parts["v1_loss"], 2.0)
    _close(parts["v2_loss"], 0.5)
    _close(loss, 6.0)

    loss.backward()
    # d/dq1 of mean((q1 - y)^2) = 2 (q1 - y) / B = [2*1/2, 2*2/2] = [1, 2].
    _close(q1.grad, [1.0, 2.0])
    # No gradient reaches the targets.
    for target in (yq1, yq2, yv1, yv2):
        assert target.grad is None


def test_archer_critic_loss_uses_each_heads_own_target():
    # No min across heads: changing Q2's target must leave Q1's loss alone.
    q, y = T([1.0]), T([0.0])
    _, parts_a = losses.archer_critic_loss(q, q, q, q, y, T([5.0]), y, y)
    _, parts_b = losses.archer_critic_loss(q, q, q, q, y, T([-5.0]), y, y)
    _close(parts_a["q1_loss"], parts_b["q1_loss"])
    # (1 - 5)^2 = 16 against (1 + 5)^2 = 36.
    _close(parts_a["q2_loss"], 16.0)
    _close(parts_b["q2_loss"], 36.0)


def test_archer_critic_loss_rejects_broadcasting_shapes():
    with pytest.raises(ValueError):
        losses.archer_critic_loss(*(T([[1.0], [2.0]]),) + (T([1.0, 2.0]),) * 7)


# --- Expectile / IQL --------------------------------------------------------------------------------------------


def test_expectile_loss_hand_computed():
    # diff = target - prediction. tau = 0.9:
    # diff = 2  -> weight 0.9 -> 0.9 * 4 = 3.6
    # diff = -2 -> weight 0.1 -> 0.1 * 4 = 0.4
    # mean (3.6 + 0.4) / 2 = 2.0
    _close(losses.expectile_loss(T([2.0, -2.0]), 0.9), 2.0)
    _close(losses.expectile_loss(T([2.0]), 0.9), 3.6)
    _close(losses.expectile_loss(T([-2.0]), 0.9), 0.4)
    # tau = 0.5 is half the squared error: 0.5 * (4 + 1) / 2 = 1.25.
    _close(losses.expectile_loss(T([2.0, -1.0]), 0.5), 1.25)


def test_iql_value_loss_fits_the_upper_expectile():
    # Targets {0, 1} with equal weight. The tau-expectile v solves tau (1 - v) = (1 - tau) (v - 0); for tau = 0.9,
    # 0.9 - 0.9 v = 0.1 v, so v = 0.9 (the reference's first commit, with the sign reversed, would give 0.1).
    v = _leaf([0.9, 0.9])
    loss, _ = losses.iql_value_loss(v, v, T([0.0, 1.0]), T([0.0, 1.0]), expectile=0.9)
    loss.backward()
    # Gradient per head: [2 * 0.1 * 0.9 - 2 * 0.9 * 0.1] / 2 = 0, at each of the two elements summed over heads.
    _close(v.grad.sum(), 0.0)


def test_iql_value_loss_hand_computed():
    # V1 = 0 below its target 1: diff = 1  -> 0.9 * 1 = 0.9
    # V2 = 2 above its target 1: diff = -1 -> 0.1 * 1 = 0.1
    # total 1.0
    q1_target = _leaf([1.0])
    loss, parts = losses.iql_value_loss(_leaf([0.0]), _leaf([2.0]), q1_target, T([1.0]), expectile=0.9)
    _close(parts["v1_loss"], 0.9)
    _close(parts["v2_loss"], 0.1)
    _close(loss, 1.0)
    loss.backward()
    assert q1_target.grad is None


def test_iql_critic_loss_with_half_expectile_is_q_mse_plus_half_v_mse():
    q1, q2, v1, v2 = T([1.0, 2.0]), T([0.0, 0.0]), T([3.0, 1.0]), T([0.5, 0.5])
    yq1, yq2, yv1, yv2 = T([0.0, 0.0]), T([1.0, 1.0]), T([1.0, 1.0]), T([0.5, 1.5])
    loss, parts = losses.iql_critic_loss(q1, q2, v1, v2, yq1, yq2, yv1, yv2, expectile=0.5)
    # Same numbers as the ArCHer test: Q parts 2.5 + 1.0, V parts halved: 2.0 / 2 + 0.5 / 2 = 1.25; total 4.75.
    _close(parts["q1_loss"], 2.5)
    _close(parts["v1_loss"], 1.0)
    _close(loss, 4.75)


# --- Advantage and policy losses --------------------------------------------------------------------------------


def test_utterance_advantage_uses_min_of_heads():
    # min(Q1, Q2) = [min(1, 3), min(5, 2)] = [1, 2];  min(V1, V2) = [min(0, 1), min(4, 1)] = [0, 1];  A = [1, 1].
    adv = losses.utterance_advantage(T([1.0, 5.0]), T([3.0, 2.0]), T([0.0, 4.0]), T([1.0, 1.0]))
    _close(adv, [1.0, 1.0])


def test_kl_penalised_reinforce_loss_value_and_gradient():
    adv, logp, ref = _leaf([1.0, -1.0]), _leaf([-2.0, -3.0]), _leaf([-2.5, -2.0])
    loss = losses.kl_penalised_reinforce_loss(adv, logp, ref, kl_coeff=0.2)
    # log ratios (0.5, -1) -> penalised advantages (1 - 0.1, -1 + 0.2) = (0.9, -0.8);
    # loss = -mean(0.9 * -2, -0.8 * -3) = -mean(-1.8, 2.4) = -0.3.
    _close(loss, -0.3)
    loss.backward()
    _close(logp.grad, torch.tensor([-0.45, 0.4]))  # -penalised / B
    assert adv.grad is None and ref.grad is None  # advantages and the penalty are constants
    plain = losses.reinforce_loss(torch.tensor([1.0, -1.0]), torch.tensor([-2.0, -3.0]))
    _close(losses.kl_penalised_reinforce_loss(adv, logp, ref, kl_coeff=0.0), plain.item())
    with pytest.raises(ValueError, match=">= 0"):
        losses.kl_penalised_reinforce_loss(adv, logp, ref, kl_coeff=-0.1)


def test_reinforce_loss_value_and_gradient():
    adv, logp = _leaf([2.0, -1.0]), _leaf([-1.0, -3.0])
    loss = losses.reinforce_loss(adv, logp)
    # -mean(2 * -1, -1 * -3) = -mean(-2, 3) = -0.5
    _close(loss, -0.5)
    loss.backward()
    # d loss / d logp_b = -A_b / B = [-2/2, 1/2] = [-1, 0.5].
    _close(logp.grad, [-1.0, 0.5])
    assert adv.grad is None


def test_awr_weights_clip_at_max_weight():
    adv, logp = T([0.0, math.log(2.0), 10.0]), _leaf([-1.0, -1.0, -2.0])
    loss, weights = losses.awr_loss(adv, logp, inv_temp=1.0, max_weight=5.0)
    # exp(0) = 1, exp(ln 2) = 2, exp(10) ~ 22026 clipped to 5.
    _close(weights, [1.0, 2.0, 5.0])
    # -mean(1 * -1 + 2 * -1 + 5 * -2) = -(-13 / 3) = 13/3
    _close(loss, 13.0 / 3.0)
    loss.backward()
    # d/dlogp = -w / B = [-1/3, -2/3, -5/3].
    _close(logp.grad, [-1.0 / 3.0, -2.0 / 3.0, -5.0 / 3.0])
    # beta = 2 doubles the exponent: exp(2 ln 2) = 4. No clip (the reference) leaves exp(10).
    _, w_beta = losses.awr_loss(T([math.log(2.0)]), T([0.0]), inv_temp=2.0, max_weight=100.0)
    _close(w_beta, [4.0])
    _, w_raw = losses.awr_loss(T([10.0]), T([0.0]), inv_temp=1.0, max_weight=None)
    _close(w_raw, [math.exp(10.0)])


def test_bc_loss_sum_versus_token_mean():
    # Row 0: two tokens -1, -2 (sum -3). Row 1: one token -3 then padding holding -inf.
    logp = _leaf([[-1.0, -2.0], [-3.0, float("-inf")]])
    mask = T([[1, 1], [1, 0]])
    # Sum per utterance, mean over batch: -(-3 + -3) / 2 = 3.
    loss = losses.bc_loss(logp, mask)
    _close(loss, 3.0)
    # Token mean: -(-1 - 2 - 3) / 3 = 2.
    _close(losses.bc_loss(logp, mask, per_token=True), 2.0)
    loss.backward()
    # -m / B per token; the padded -inf gets zero gradient, not NaN.
    _close(logp.grad, [[-0.5, -0.5], [-0.5, 0.0]])


def test_token_baseline_losses_hand_computed():
    adv = _leaf([1.0, 2.0])
    values = _leaf([[0.5, 2.0, 9.0], [1.0, 1.0, 1.0]])
    logp = _leaf([[-1.0, -2.0, -5.0], [-1.0, -4.0, -4.0]])
    mask = T([[1, 1, 0], [1, 0, 0]])
    pg_loss, value_loss = losses.token_baseline_losses(adv, values, logp, mask)
    # Residuals A - b on real tokens: row 0: 1 - 0.5 = 0.5, 1 - 2 = -1; row 1: 2 - 1 = 1.
    # L_V = (0.25 + 1 + 1) / 3 = 0.75
    _close(value_loss, 0.75)
    # L_PG row 0: -(0.5 * -1 + -1 * -2) = -(-0.5 + 2) = -1.5;  row 1: -(1 * -1) = 1;  mean (-1.5 + 1) / 2 = -0.25
    _close(pg_loss, -0.25)

    pg_loss.backward(retain_graph=True)
    # The PG loss trains only the policy: d/dlogp = -(A - b) m / B; the values and A get nothing.
    _close(logp.grad, [[-0.25, 0.5, 0.0], [-0.5, 0.0, 0.0]])
    assert values.grad is None and adv.grad is None
    value_loss.backward()
    # d L_V / d b = -2 (A - b) m / 3: row 0 [-1/3, 2/3, 0], row 1 [-2/3, 0, 0].
    _close(values.grad, [[-1.0 / 3.0, 2.0 / 3.0, 0.0], [-2.0 / 3.0, 0.0, 0.0]])
    assert adv.grad is None


def test_ppo_clip_loss_hand_computed():
    eps = 0.2
    old = T([[0.0, 0.0, 0.0]])
    logp = _leaf([[math.log(1.5), math.log(0.5), math.log(1.1)]])
    adv = T([[1.0, 1.0, -1.0]])
    mask = T([[1, 1, 1]])
    loss, clip_fraction = losses.ppo_clip_loss(logp, old, adv, mask, eps)
    # token 0: rho 1.5, A  1: max(-1.5, -1.2) = -1.2 (clipped)
    # token 1: rho 0.5, A  1: max(-0.5, -0.8) = -0.5 (unclipped; pessimistic side)
    # token 2: rho 1.1, A -1: max(1.1, 1.1)   =  1.1
    # mean (-1.2 - 0.5 + 1.1) / 3 = -0.2;  |rho - 1| > 0.2 for tokens 0 and 1: clip fraction 2/3.
    _close(loss, -0.2)
    _close(clip_fraction, 2.0 / 3.0)
    loss.backward()
    # d/dlogp = d/dlogp(-A rho) / 3 = -A rho / 3 where unclipped, 0 where the clipped branch is active:
    # [0, -0.5/3, 1.1/3].
    _close(logp.grad, [[0.0, -0.5 / 3.0, 1.1 / 3.0]])

    # Masking token 2 out: (-1.2 - 0.5) / 2 = -0.85, both remaining tokens beyond the clip range.
    loss_masked, frac_masked = losses.ppo_clip_loss(logp, old, adv, T([[1, 1, 0]]), eps)
    _close(loss_masked, -0.85)
    _close(frac_masked, 1.0)


def test_ppo_clip_loss_broadcasts_utterance_advantages():
    logp, old, mask = T([[0.1, -0.3]]), T([[0.0, 0.0]]), T([[1, 1]])
    per_token, _ = losses.ppo_clip_loss(logp, old, T([[2.0, 2.0]]), mask, 0.2)
    broadcast, _ = losses.ppo_clip_loss(logp, old, T([2.0]), mask, 0.2)
    _close(broadcast, per_token)


def test_dual_clip_bounds_the_loss_of_bad_tokens_with_a_large_ratio():
    old = T([[0.0, 0.0, 0.0, 0.0]])
    logp = _leaf([[math.log(4.0), math.log(4.0), math.log(2.0), math.log(0.5)]])
    adv = T([[-1.0, 2.0, -1.0, -1.0]])
    mask = T([[1, 1, 1, 1]])
    loss, clip_fraction = losses.ppo_clip_loss(logp, old, adv, mask, 0.2, dual_clip=3.0)
    # token 0: rho 4, A -1: max(4, 1.2) = 4, then min(4, 3 * 1) = 3 (dual clip; no gradient)
    # token 1: rho 4, A  2: max(-8, -2.4) = -2.4 (A > 0: the dual clip does not apply)
    # token 2: rho 2, A -1: max(2, 1.2) = 2 < 3: unchanged, gradient -A rho = 2
    # token 3: rho 0.5, A -1: max(0.5, 0.8) = 0.8 (clipped below)
    # mean (3 - 2.4 + 2 + 0.8) / 4 = 0.85; every ratio is outside [0.8, 1.2]: clip fraction 1.
    _close(loss, 0.85)
    _close(clip_fraction, 1.0)
    loss.backward()
    _close(logp.grad, [[0.0, 0.0, 2.0 / 4.0, 0.0]])
    plain, _ = losses.ppo_clip_loss(logp.detach(), old, adv, mask, 0.2)
    _close(plain, (4.0 - 2.4 + 2.0 + 0.8) / 4.0)
    with pytest.raises(ValueError, match="dual_clip"):
        losses.ppo_clip_loss(logp, old, adv, mask, 0.2, dual_clip=1.0)


def test_low_var_kl_loss_is_k3_clamped_and_masked():
    logp = _leaf([[math.log(0.5), math.log(0.25), -60.0, 0.0]])
    ref = T([[math.log(0.25), math.log(0.5), 0.0, float("-inf")]])
    mask = T([[1, 1, 1, 0]])
    loss = losses.low_var_kl_loss(logp, ref, mask)
    # d = log pi_ref - log pi; k3 = e^d - d - 1:
    # token 0: d = -log 2: 0.5 + log 2 - 1 = 0.193147;  token 1: d = log 2: 2 - log 2 - 1 = 0.306853
    # token 2: d = 60: e^60 is huge, clamped to 10;  token 3: padding (its -inf never reaches the exponential).
    # mean (0.193147 + 0.306853 + 10) / 3 = 3.5
    _close(loss, (0.5 + math.log(2) - 1 + 2 - math.log(2) - 1 + 10.0) / 3.0)
    loss.backward()
    # d k3 / d logp = 1 - e^d (d = ref - logp): token 0: 1 - 0.5 = 0.5; token 1: 1 - 2 = -1; the clamped token 0.
    _close(logp.grad, [[0.5 / 3.0, -1.0 / 3.0, 0.0, 0.0]])


# --- GAE ----------------------------------------------------------------------------------------------------------

REWARDS = T([1.0, 0.0, 2.0])
VALUES = T([0.5, 1.0, 1.5, 3.0])
DONES = T([0.0, 0.0, 1.0])


def test_gae_lambda_zero_is_one_step_td_error():
    adv, returns = losses.gae(REWARDS, VALUES, DONES, gamma=0.9, lam=0.0)
    # delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4
    # delta_1 = 0 + 0.9 * 1.5 - 1.0 = 0.35
    # delta_2 = 2 + 0.9 * 0 * 3.0 - 1.5 = 0.5  (done: V_3 = 3 is not used)
    _close(adv, [1.4, 0.35, 0.5])
    # returns = A + V = [1.9, 1.35, 2.0]
    _close(returns, [1.9, 1.35, 2.0])


def test_gae_lambda_one_is_mc_return_minus_value():
    adv, returns = losses.gae(REWARDS, VALUES, DONES, gamma=0.9, lam=1.0)
    # G_2 = 2;  G_1 = 0 + 0.9 * 2 = 1.8;  G_0 = 1 + 0.9 * 1.8 = 2.62
    # A = G - V = [2.62 - 0.5, 1.8 - 1.0, 2 - 1.5] = [2.12, 0.8, 0.5]
    _close(returns, [2.62, 1.8, 2.0])
    _close(adv, [2.12, 0.8, 0.5])


def test_gae_intermediate_lambda_and_bootstrap():
    adv, _ = losses.gae(REWARDS, VALUES, DONES, gamma=0.9, lam=0.5)
    # gamma * lam = 0.45
    # A_2 = 0.5;  A_1 = 0.35 + 0.45 * 0.5 = 0.575;  A_0 = 1.4 + 0.45 * 0.575 = 1.65875
    _close(adv, [1.65875, 0.575, 0.5])
    # Not done at the end: bootstrap from V_3 = 3. lam = 1:
    # G_2 = 2 + 0.9 * 3 = 4.7;  G_1 = 0.9 * 4.7 = 4.23;  G_0 = 1 + 0.9 * 4.23 = 4.807
    _, returns = losses.gae(REWARDS, VALUES, T([0.0, 0.0, 0.0]), gamma=0.9, lam=1.0)
    _close(returns, [4.807, 4.23, 4.7])


def test_gae_batched_matches_rows():
    rewards = torch.stack([REWARDS, T([0.0, 1.0, 0.0])])
    values = torch.stack([VALUES, T([1.0, 0.0, 2.0, 1.0])])
    dones = torch.stack([DONES, T([1.0, 0.0, 0.0])])
    adv, _ = losses.gae(rewards, values, dones, gamma=0.9, lam=0.7)
    for row in range(2):
        row_adv, _ = losses.gae(rewards[row], values[row], dones[row], gamma=0.9, lam=0.7)
        _close(adv[row], row_adv)


# --- KL terms ---------------------------------------------------------------------------------------------------


def test_kl_penalty_masked_mean():
    # Real tokens: -1 - (-1.5) = 0.5 and -2 - (-1) = -1; mean -0.25. The padded position is ignored.
    kl = losses.kl_penalty(T([[-1.0, -2.0, -9.0]]), T([[-1.5, -1.0, 0.0]]), T([[1, 1, 0]]))
    _close(kl, -0.25)


def test_iql_kl_reinforce_loss_hand_computed():
    adv, logp, ref = T([2.0]), _leaf([-1.0]), T([-3.0])
    loss = losses.iql_kl_reinforce_loss(adv, logp, ref, kl_coeff=0.5)
    # (1 - 0.5) * (-2 * -1) = 1;  0.5 * ((-1 + 3) + 1) * -1 = -1.5;  total -0.5
    _close(loss, -0.5)
    loss.backward()
    # d/dlogp = 0.5 * -2 + 0.5 * 3 = 0.5
    _close(logp.grad, [0.5])
    # c = 0 is plain REINFORCE.
    _close(
        losses.iql_kl_reinforce_loss(T([2.0, -1.0]), T([-1.0, -3.0]), T([0.0, 0.0]), kl_coeff=0.0),
        losses.reinforce_loss(T([2.0, -1.0]), T([-1.0, -3.0])),
    )


def test_iql_kl_term_is_the_score_function_gradient_of_kl():
    # Over a 3-action categorical, weighting each action's loss by pi(a) gives the exact expectation of the
    # sampled gradient; with A = 0 and c = 1 it must equal the analytic gradient of KL(pi || pi_ref).
    logits = _leaf([0.2, -0.5, 1.0])
    ref = torch.log_softmax(T([0.0, 0.3, -0.2]), dim=0)
    logp = torch.log_softmax(logits, dim=0)
    per_action = torch.stack(
        [losses.iql_kl_reinforce_loss(T([0.0]), logp[a : a + 1], ref[a : a + 1], kl_coeff=1.0) for a in range(3)]
    )
    (expected_grad,) = torch.autograd.grad((logp.exp().detach() * per_action).sum(), logits, retain_graph=True)
    (kl_grad,) = torch.autograd.grad((logp.exp() * (logp - ref)).sum(), logits)
    _close(expected_grad, kl_grad)


# --- Token-level PPO over multi-turn episodes ---------------------------------------------------------------------


def test_gae_with_discounts_matches_gae_when_the_discount_is_constant():
    # c_t = gamma (1 - d_t) = [0.9, 0.9, 0]: the same recursion as gae(gamma=0.9) with DONES = [0, 0, 1].
    for lam in (0.0, 0.5, 1.0):
        expected, expected_returns = losses.gae(REWARDS, VALUES, DONES, gamma=0.9, lam=lam)
        adv, returns = losses.gae_with_discounts(REWARDS, VALUES, T([0.9, 0.9, 0.0]), lam=lam)
        _close(adv, expected)
        _close(returns, expected_returns)


def test_gae_with_discounts_hand_computed_two_utterances():
    # Two utterances of two tokens each: tokens 0, 1 | 2, 3. Within an utterance c = 1; at the end of the first
    # utterance c = gamma = 0.5; at the episode's end c = 0. Rewards: -1 at the end of each utterance.
    rewards = T([0.0, -1.0, 0.0, -1.0])
    values = T([1.0, 2.0, 3.0, 4.0, 100.0])  # V_4 = 100 must not be used (c_3 = 0)
    discounts = T([1.0, 0.5, 1.0, 0.0])
    adv, returns = losses.gae_with_discounts(rewards, values, discounts, lam=0.5)
    # delta_3 = -1 + 0 * 100 - 4 = -5
    # delta_2 =  0 + 1 * 4   - 3 =  1
    # delta_1 = -1 + 0.5 * 3 - 2 = -1.5
    # delta_0 =  0 + 1 * 2   - 1 =  1
    # A_3 = -5;  A_2 = 1 + 0.5 * 1 * -5 = -1.5;  A_1 = -1.5 + 0.5 * 0.5 * -1.5 = -1.875;
    # A_0 = 1 + 0.5 * 1 * -1.875 = 0.0625
    _close(adv, [0.0625, -1.875, -1.5, -5.0])
    # R = A + V = [1.0625, 0.125, 1.5, -1.0]
    _close(returns, [1.0625, 0.125, 1.5, -1.0])


def test_gae_with_discounts_padding_leaks_nothing():
    # A 2-step episode padded to 4 steps (r = V = c = 0 on padding) has the advantages of the unpadded episode.
    short, _ = losses.gae_with_discounts(T([1.0, -1.0]), T([0.5, 0.25, 0.0]), T([1.0, 0.0]), lam=0.9)
    padded, _ = losses.gae_with_discounts(
        T([[1.0, -1.0, 0.0, 0.0]]), T([[0.5, 0.25, 0.0, 0.0, 0.0]]), T([[1.0, 0.0, 0.0, 0.0]]), lam=0.9
    )
    # A_1 = -1 - 0.25 = -1.25;  A_0 = 1 + 0.25 - 0.5 + 0.9 * -1.25 = -0.375
    _close(short, [-0.375, -1.25])
    _close(padded[0], [-0.375, -1.25, 0.0, 0.0])
    with pytest.raises(ValueError):
        losses.gae_with_discounts(T([1.0]), T([0.0, 0.0]), T([1.0]), lam=1.5)


def test_kl_shaped_token_rewards_hand_computed():
    logp = T([[-1.0, -2.0, 0.0], [-0.5, 0.0, 0.0]])
    ref = T([[-1.5, -1.0, -9.0], [-0.5, -9.0, -9.0]])
    mask = T([[1, 1, 0], [1, 0, 0]])
    rewards = losses.kl_shaped_token_rewards(T([-1.0, 0.0]), logp, ref, mask, kl_coeff=0.1)
    # Row 0: KL terms -0.1 * (-1 + 1.5) = -0.05 and -0.1 * (-2 + 1) = 0.1; the reward -1 goes on token 1 (the last
    # real token): [-0.05, 0.1 - 1, 0] = [-0.05, -0.9, 0].
    # Row 1: one token, KL term -0.1 * 0 = 0, reward 0: [0, 0, 0] (padding stays 0 despite its -9 reference).
    _close(rewards, [[-0.05, -0.9, 0.0], [0.0, 0.0, 0.0]])
    # Without the KL term the utterance reward sits on the last token only, even when it is 0.
    _close(losses.kl_shaped_token_rewards(T([-1.0, 2.0]), logp, ref, mask, 0.0), [[0.0, -1.0, 0.0], [2.0, 0.0, 0.0]])
    with pytest.raises(ValueError):
        losses.kl_shaped_token_rewards(T([0.0, 0.0]), logp, ref, T([[1, 1, 0], [0, 0, 0]]), 0.1)


def test_ppo_value_loss_plain_and_clipped():
    values = _leaf([[1.0, 3.0, 7.0]])
    old = T([[0.0, 2.5, 0.0]])
    returns = T([[2.0, 0.0, 0.0]])
    mask = T([[1, 1, 0]])
    # Plain: ((1 - 2)^2 + (3 - 0)^2) / 2 = (1 + 9) / 2 = 5 (the padded 7 is ignored).
    _close(losses.ppo_value_loss(values, old, returns, mask, None), 5.0)
    clipped = losses.ppo_value_loss(values, old, returns, mask, clip_range=0.2)
    # Token 0: V moved 1 from V_old = 0, clipped to 0.2: max((1 - 2)^2, (0.2 - 2)^2) = max(1, 3.24) = 3.24.
    # Token 1: V moved 0.5 from 2.5, clipped 2.7: max((3 - 0)^2, (2.7 - 0)^2) = max(9, 7.29) = 9.
    # mean (3.24 + 9) / 2 = 6.12
    _close(clipped, 6.12)
    clipped.backward()
    # Token 0 takes the clipped branch, whose value is constant in V (V - V_old beyond eps): gradient 0.
    # Token 1 takes the unclipped branch: 2 (3 - 0) / 2 = 3.
    _close(values.grad, [[0.0, 3.0, 0.0]])


def test_pearson_correlation_hand_computed():
    # x - mean = [-1, 0, 1]; y - mean = [-7/3, -1/3, 8/3]; sum of products 5; sums of squares 2 and 114/9.
    # 5 / sqrt(2 * 114 / 9) = 0.993399...
    assert losses.pearson_correlation(T([1.0, 2.0, 3.0]), T([2.0, 4.0, 7.0])) == pytest.approx(0.9933993, abs=1e-6)
    assert losses.pearson_correlation(T([1.0, 2.0, 3.0]), T([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    assert math.isnan(losses.pearson_correlation(T([1.0, 1.0]), T([0.0, 5.0])))
    assert math.isnan(losses.pearson_correlation(T([1.0]), T([2.0])))


def test_normalise_advantages_by_hand():
    # A = (0.01, 0.03, -0.02, 0.02): mean 0.01; deviations (0, 0.02, -0.03, 0.01); population variance
    # (0 + 4 + 9 + 1) e-4 / 4 = 3.5e-4, std 0.0187083.
    advantages = torch.tensor([0.01, 0.03, -0.02, 0.02], dtype=torch.float64)
    std = 3.5e-4**0.5
    unchanged, scale = losses.normalise_advantages(advantages, "none")
    _close(unchanged, advantages)
    assert scale == 1.0
    scaled, scale = losses.normalise_advantages(advantages, "std_norm")
    _close(scaled, [0.01 / std, 0.03 / std, -0.02 / std, 0.02 / std])  # (0.5345, 1.6036, -1.0690, 1.0690)
    assert scale == pytest.approx(std)
    assert torch.equal(torch.sign(scaled), torch.sign(advantages))  # std keeps every sign
    whitened, scale = losses.normalise_advantages(advantages, "mean_std_norm")
    _close(whitened, [0.0, 0.02 / std, -0.03 / std, 0.01 / std])
    _close(whitened.mean(), 0.0)
    _close(whitened.pow(2).mean(), 1.0)
    # The same advantages in other units normalise to the same numbers: the anchors' weight is scale-free.
    _close(losses.normalise_advantages(advantages * 50.0, "std_norm")[0], scaled)


def test_normalise_advantages_without_a_scale():
    constant = torch.tensor([0.5, 0.5, 0.5])
    kept, scale = losses.normalise_advantages(constant, "std_norm")
    _close(kept, constant)  # no spread to divide by: unchanged
    assert scale == 1.0
    _close(losses.normalise_advantages(constant, "mean_std_norm")[0], [0.0, 0.0, 0.0])
    single, _ = losses.normalise_advantages(torch.tensor([2.0]), "std_norm")
    _close(single, [2.0])
    leaf = _leaf([1.0, 3.0])
    out, _ = losses.normalise_advantages(leaf, "std_norm")
    assert not out.requires_grad  # constants of the loss
    with pytest.raises(ValueError, match="norm must be one of"):
        losses.normalise_advantages(constant, "mean")
    with pytest.raises(ValueError, match=r"\(B,\)"):
        losses.normalise_advantages(torch.zeros(2, 2), "std_norm")
