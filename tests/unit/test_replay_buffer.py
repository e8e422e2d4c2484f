"""Replay buffer: layout, eviction, text interning, sampling, checkpointing and scale."""

import numpy as np
import pytest
import torch

from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory


def _history_trajectory(name: str, steps: int, reward: float = -1.0, terminated: bool = True) -> Trajectory:
    """A 20Q-like episode whose observation is the growing history of questions and answers."""
    observations = ["Questions:\n"]
    actions = []
    for t in range(steps):
        actions.append(f"{name} question {t}?")
        observations.append(observations[-1] + f"{name} question {t}? No.\n")
    return Trajectory(
        observations=observations,
        actions=actions,
        rewards=[reward] * steps,
        terminated=terminated,
        truncated=not terminated,
    )


def _referenced_texts(buffer: ReplayBuffer) -> set[str]:
    batch = buffer.get(np.arange(len(buffer)))
    return set(batch.observations) | set(batch.next_observations)


def _assert_no_leaks(buffer: ReplayBuffer) -> None:
    """Every stored text is used by a stored transition and vice versa."""
    assert buffer.num_texts == len(_referenced_texts(buffer))
    state = buffer.state_dict()
    assert sum(t is not None for t in state["texts"]) == buffer.num_texts


def test_fields_of_one_trajectory():
    buffer = ReplayBuffer(capacity=10, gamma_mc=0.5)
    buffer.add_trajectory(
        Trajectory(observations=["s0", "s1", "s2"], actions=["a0", "a1"], rewards=[1.0, 2.0], truncated=True)
    )
    assert len(buffer) == 2
    batch = buffer.get([0, 1])
    assert batch.observations == ["s0", "s1"]
    assert batch.next_observations == ["s1", "s2"]
    assert batch.actions == ["a0", "a1"]
    assert batch.rewards.dtype == torch.float32
    assert batch.rewards.tolist() == [1.0, 2.0]
    # Only the last transition carries the episode's end flag.
    assert batch.terminated.tolist() == [0.0, 0.0]
    assert batch.truncated.tolist() == [0.0, 1.0]
    # gamma_mc = 0.5: G_1 = 2, G_0 = 1 + 0.5 * 2 = 2.
    assert batch.mc_returns.tolist() == [2.0, 2.0]
    # 1 + 2 = 3 on every transition of the episode.
    assert batch.episode_returns.tolist() == [3.0, 3.0]
    # s1 is both the next observation of step 0 and the observation of step 1, stored once: s0, s1, s2.
    assert buffer.num_texts == 3


def test_float_rewards_are_kept_after_an_int_reward():
    buffer = ReplayBuffer(capacity=10, gamma_mc=1.0)
    buffer.add_trajectory(Trajectory(observations=["a", "b"], actions=["x"], rewards=[0], terminated=True))
    buffer.add_trajectory(Trajectory(observations=["c", "d"], actions=["y"], rewards=[0.25], terminated=True))
    assert buffer.get([0, 1]).rewards.tolist() == [0.0, 0.25]


def test_shared_first_observation_is_interned():
    buffer = ReplayBuffer(capacity=100, gamma_mc=0.9)
    buffer.add_trajectories([_history_trajectory(name, 3) for name in "abc"])
    # Each episode has 4 observations and they all start from "Questions:\n": 3 * 3 + 1 = 10 distinct texts.
    assert len(buffer) == 9
    assert buffer.num_texts == 10
    _assert_no_leaks(buffer)


def test_wrap_around_evicts_oldest_and_frees_texts():
    buffer = ReplayBuffer(capacity=5, gamma_mc=0.9)
    trajectories = [_history_trajectory(name, 3) for name in "abc"]
    buffer.add_trajectories(trajectories)
    # 9 transitions into 5 slots: a's 3 and b's first 1 are evicted; b's last 2 and c's 3 remain.
    assert len(buffer) == 5
    stored = buffer.get(np.arange(5))
    assert sorted(stored.actions) == sorted(trajectories[1].actions[1:] + trajectories[2].actions)
    # Texts left: b's observations 1..3 and c's observations 0..3 = 3 + 4 = 7. None of episode a's histories.
    assert buffer.num_texts == 7
    assert not any(text.startswith("Questions:\na") for text in _referenced_texts(buffer))
    _assert_no_leaks(buffer)
    # The freed table slots are reused rather than the table growing without bound.
    table_size = len(buffer.state_dict()["texts"])
    for name in "defgh":
        buffer.add_trajectory(_history_trajectory(name, 3))
        _assert_no_leaks(buffer)
    assert len(buffer.state_dict()["texts"]) <= table_size + 1


def test_trajectory_longer_than_capacity_keeps_its_tail():
    buffer = ReplayBuffer(capacity=3, gamma_mc=1.0)
    traj = _history_trajectory("a", 5)
    buffer.add_trajectory(traj)
    batch = buffer.get(np.arange(3))
    assert sorted(batch.actions) == sorted(traj.actions[2:])
    # Reward-to-go still counts the whole episode: from step 2 of 5 with reward -1 each, -3.
    assert batch.mc_returns[batch.actions.index(traj.actions[2])].item() == -3.0
    _assert_no_leaks(buffer)


def test_clear():
    buffer = ReplayBuffer(capacity=5, gamma_mc=0.9)
    buffer.add_trajectory(_history_trajectory("a", 3))
    buffer.clear()
    assert len(buffer) == 0 and buffer.num_texts == 0
    with pytest.raises(ValueError):
        buffer.sample(2, np.random.default_rng(0))


def test_sampling_is_seeded_and_uniform():
    buffer = ReplayBuffer(capacity=7, gamma_mc=0.9)
    # 12 one-step episodes into 7 slots, so the ring has wrapped; each action names its episode.
    for i in range(12):
        buffer.add_trajectory(Trajectory(observations=[f"s{i}", f"t{i}"], actions=[f"a{i}"], rewards=[float(i)]))
    first = buffer.sample(64, np.random.default_rng(123))
    second = buffer.sample(64, np.random.default_rng(123))
    assert first.actions == second.actions
    assert torch.equal(first.rewards, second.rewards)

    batch = buffer.sample(70_000, np.random.default_rng(0))
    counts = np.bincount(batch.rewards.numpy().astype(int), minlength=12)
    # Episodes 0..4 were evicted; 5..11 are each drawn with probability 1/7, i.e. 10,000 expected times. The
    # standard deviation is sqrt(70000 * 1/7 * 6/7) ~ 93, so 10,000 +- 500 is over five sigma.
    assert counts[:5].sum() == 0
    assert np.all(np.abs(counts[5:] - 10_000) < 500)
    # Observation and reward of each draw stay paired.
    assert all(obs == f"s{int(r)}" for obs, r in zip(batch.observations, batch.rewards.tolist(), strict=True))


def test_state_dict_round_trip_through_torch_load(tmp_path):
    buffer = ReplayBuffer(capacity=8, gamma_mc=0.95)
    buffer.add_trajectories([_history_trajectory(name, 3, reward=0.25) for name in "abcd"])
    path = tmp_path / "buffer.pt"
    torch.save(buffer.state_dict(), path)
    restored = ReplayBuffer(capacity=1, gamma_mc=0.0)
    restored.load_state_dict(torch.load(path, weights_only=True))

    assert len(restored) == len(buffer) and restored.capacity == 8 and restored.gamma_mc == 0.95
    assert restored.state_dict() == buffer.state_dict()
    a = buffer.sample(32, np.random.default_rng(5))
    b = restored.sample(32, np.random.default_rng(5))
    assert a.observations == b.observations and a.next_observations == b.next_observations
    assert a.actions == b.actions
    for field in ("rewards", "terminated", "truncated", "mc_returns", "episode_returns"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    # Adding after a restore evolves both identically (same write slot, same free table slots).
    buffer.add_trajectory(_history_trajectory("e", 2))
    restored.add_trajectory(_history_trajectory("e", 2))
    assert restored.state_dict() == buffer.state_dict()


def test_load_state_dict_rejects_inconsistent_state():
    buffer = ReplayBuffer(capacity=4, gamma_mc=0.9)
    buffer.add_trajectory(_history_trajectory("a", 2))
    state = buffer.state_dict()
    state["texts"] = state["texts"] + ["orphan"]
    with pytest.raises(ValueError):
        ReplayBuffer(capacity=4, gamma_mc=0.9).load_state_dict(state)


def test_memory_at_scale():
    # A tenth of the 100k-transition case: 500 episodes of 20 questions, histories up to 20 lines of ~40 chars.
    trajectories = [_history_trajectory(f"episode {i:05d} with a longer name", 20) for i in range(500)]
    buffer = ReplayBuffer(capacity=10_000, gamma_mc=0.95)
    buffer.add_trajectories(trajectories)
    assert len(buffer) == 10_000
    # Raw text of 500 episodes' 21 histories, each stored once (plus per-object overhead): the buffer's estimate
    # must stay within a small factor of it and far below storing two copies per transition.
    text_chars = sum(len(obs) for traj in trajectories for obs in traj.observations[1:]) + len("Questions:\n")
    assert buffer.memory_bytes() < 2 * text_chars + 3_000_000
    batch = buffer.sample(256, np.random.default_rng(0))
    assert len(batch) == 256


def _history_episode(n: int, tag: str) -> Trajectory:
    observations, actions = ["Questions:\n"], []
    for i in range(n):
        actions.append(f"{tag}{i}?")
        observations.append(observations[-1] + f"{tag}{i}? No.\n")
    return Trajectory(observations, actions, [-1.0] * n, terminated=False, truncated=True)


def test_episode_slots_follow_each_episode_across_the_ring() -> None:
    buffer = ReplayBuffer(capacity=10, gamma_mc=1.0)
    buffer.add_trajectories([_history_episode(3, "a"), _history_episode(4, "b")])
    expected = [[0, 1, 2], [0, 1, 2], [3, 4, 5, 6], [3, 4, 5, 6]]
    assert [buffer.episode_slots(i).tolist() for i in (0, 2, 3, 6)] == expected
    buffer.add_trajectory(_history_episode(5, "c"))  # 12 transitions in 10 slots: the two oldest are evicted
    assert buffer.episode_slots(8).tolist() == [7, 8, 9, 0, 1]  # wraps around the ring
    assert buffer.episode_slots(2).tolist() == [2]  # the surviving end of the first episode


def test_sample_episodes_includes_every_transition_equally_often() -> None:
    buffer = ReplayBuffer(capacity=100, gamma_mc=1.0)
    buffer.add_trajectories([_history_episode(1, "a"), _history_episode(9, "b")])
    rng = np.random.default_rng(0)
    counts = np.zeros(10)
    for _ in range(4000):
        for slots in buffer.sample_episodes(1, rng):
            counts[slots] += 1
    # Episodes are drawn uniformly (not in proportion to their length), so the one-turn episode's transition is
    # included as often as each of the nine-turn episode's: 0.5 episodes per draw each, 0.1 of the inclusions.
    np.testing.assert_allclose(counts / counts.sum(), np.full(10, 0.1), atol=0.02)
    assert sum(len(s) for s in buffer.sample_episodes(20, rng)) >= 20


def test_policy_states_exclude_the_states_after_a_replaced_move(tmp_path):
    buffer = ReplayBuffer(capacity=16, gamma_mc=0.95)
    explored = _history_trajectory("a", 4)
    explored.replaced_moves = [False, True, False, False]  # move 1 replaced: states 2 and 3 follow it
    buffer.add_trajectories([explored, _history_trajectory("b", 2)])
    own = {"Questions:\n", "Questions:\na question 0? No.\n", "Questions:\nb question 0? No.\n"}
    batch = buffer.sample_policy_states(64, np.random.default_rng(0))
    assert set(batch.observations) == own  # 4 of the 6 transitions, each drawn
    assert buffer.policy_state_fraction() == pytest.approx(4 / 6)
    # The flags survive a checkpoint; a state saved before they existed counts every transition as the policy's.
    state = buffer.state_dict()
    assert state["after_replaced"] == [False, False, True, True, False, False]
    path = tmp_path / "buffer.pt"
    torch.save(state, path)
    restored = ReplayBuffer(capacity=1, gamma_mc=0.0)
    restored.load_state_dict(torch.load(path, weights_only=True))
    assert set(restored.sample_policy_states(64, np.random.default_rng(1)).observations) == own
    del state["after_replaced"]
    old = ReplayBuffer(capacity=1, gamma_mc=0.0)
    old.load_state_dict(state)
    assert old.policy_state_fraction() == 1.0


def test_policy_states_fall_back_to_every_state_when_none_is_the_policys():
    # Move 0 replaced: state 0 is still the policy's own, state 1 is not; a buffer holding only the transition from
    # state 1 has no policy state, and the draw falls back to it.
    explored = _history_trajectory("a", 2)
    explored.replaced_moves = [True, False]
    buffer = ReplayBuffer(capacity=1, gamma_mc=0.95)  # keeps the last transition only
    buffer.add_trajectory(explored)
    assert buffer.policy_state_fraction() == 0.0
    assert (
        buffer.sample_policy_states(3, np.random.default_rng(0)).observations
        == ["Questions:\na question 0? No.\n"] * 3
    )
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(capacity=8, gamma_mc=0.95).sample_policy_states(3, np.random.default_rng(0))
