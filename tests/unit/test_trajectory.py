"""Trajectory validation, return helpers and the filtered-BC selection."""

import pytest
import torch

from archer.data.trajectory import Trajectory, TransitionBatch, discounted_returns, top_fraction_by_return


def _trajectory(**overrides):
    fields = dict(
        observations=["Q:", "Q: a? no", "Q: a? no b? yes"],
        actions=["a?", "b?"],
        rewards=[-1, 0],
        terminated=True,
        truncated=False,
        info={"success": True},
    )
    fields.update(overrides)
    return Trajectory(**fields)


def test_properties():
    traj = _trajectory()
    assert traj.length == 2
    # -1 + 0 = -1
    assert traj.episode_return == -1.0
    assert traj.success is True
    assert traj.done is True
    assert _trajectory(info={}).success is False


def test_int_rewards_become_floats():
    traj = _trajectory(rewards=[-1, 0])
    assert all(type(r) is float for r in traj.rewards)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(observations=["only one"]),  # 2 actions need 3 observations
        dict(rewards=[-1.0]),  # 2 actions need 2 rewards
        dict(terminated=True, truncated=True),
        dict(observations=["start"], actions=[], rewards=[], terminated=True),
    ],
)
def test_validation(overrides):
    with pytest.raises(ValueError):
        _trajectory(**overrides)


def test_unfinished_and_empty_trajectories_are_allowed():
    assert _trajectory(terminated=False).done is False
    empty = Trajectory(observations=["start"], actions=[], rewards=[])
    assert empty.length == 0 and empty.episode_return == 0.0


def test_discounted_returns_hand_computed():
    # gamma = 0.9, rewards [-1, -1, 0]:
    # G_2 = 0
    # G_1 = -1 + 0.9 * 0 = -1
    # G_0 = -1 + 0.9 * -1 = -1.9
    assert discounted_returns([-1, -1, 0], 0.9) == pytest.approx([-1.9, -1.0, 0.0])
    # gamma = 1: plain reward-to-go, 1+2+3 = 6, 2+3 = 5, 3.
    assert discounted_returns([1.0, 2.0, 3.0], 1.0) == [6.0, 5.0, 3.0]
    assert discounted_returns([], 0.9) == []
    with pytest.raises(ValueError):
        discounted_returns([1.0], 1.5)


def test_top_fraction_count_and_order():
    returns = [-5.0, 3.0, -1.0, 7.0, 0.0, 2.0, -2.0, 1.0, 4.0, -3.0]
    # int(0.3 * 10) = 3: the returns 7 (index 3), 4 (index 8), 3 (index 1).
    assert top_fraction_by_return(returns, 0.3) == [3, 8, 1]
    # int(0.05 * 10) = 0, raised to the minimum of 1.
    assert top_fraction_by_return(returns, 0.05) == [3]
    assert sorted(top_fraction_by_return(returns, 1.0)) == list(range(10))
    assert top_fraction_by_return([], 0.1) == []


def test_top_fraction_ties_do_not_admit_everything():
    # 19 episodes at -20 and one at -5: the reference's ">= 0.9-quantile" rule put the cutoff at -20 and kept all
    # 20. A fixed count keeps int(0.1 * 20) = 2: the -5 episode, then the earliest -20 (index 0).
    returns = [-20.0] * 20
    returns[7] = -5.0
    assert top_fraction_by_return(returns, 0.1) == [7, 0]
    # All tied: still exactly 2, the first two in original order.
    assert top_fraction_by_return([-20.0] * 20, 0.1) == [0, 1]


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5])
def test_top_fraction_rejects_bad_fraction(fraction):
    with pytest.raises(ValueError):
        top_fraction_by_return([1.0, 2.0], fraction)


def test_transition_batch_to_keeps_strings():
    batch = TransitionBatch(
        observations=["s"],
        actions=["a"],
        rewards=torch.tensor([1.0]),
        next_observations=["s2"],
        terminated=torch.tensor([0.0]),
        truncated=torch.tensor([1.0]),
        mc_returns=torch.tensor([1.0]),
        episode_returns=torch.tensor([1.0]),
    )
    moved = batch.to("cpu")
    assert len(moved) == 1
    assert moved.observations is batch.observations
    assert torch.equal(moved.truncated, batch.truncated)
