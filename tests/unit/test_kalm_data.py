"""KALM trajectory sets: the reader of KALM's own .npy files, clear errors on malformed input, the .npz cache."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm.errors import KalmDataError, MissingFileError

KALM_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "kalm"
KALM_TRAJECTORIES = KALM_DATA / "clevr_robot.npy"
KALM_PROMPTS = KALM_DATA / "clevr_rephrase_prompt.npy"
needs_kalm_files = pytest.mark.skipif(not KALM_TRAJECTORIES.is_file(), reason="KALM's toy files are not here")


@needs_kalm_files
def test_reads_kalm_trajectory_file():
    trajectories = kalm_data.read_kalm_trajectories(KALM_TRAJECTORIES)
    assert len(trajectories) == 80 and trajectories.horizon == 50
    assert trajectories.observations.shape == (80, 51, 10)
    assert trajectories.instructions[0] == "Push the purple ball behind the cyan ball"
    assert ball_env.relations_of(trajectories.goals[0]) == ((3, 4, 0),)
    first = np.load(KALM_TRAJECTORIES, allow_pickle=True).item()
    length = int(first["masks"][0].sum())
    assert trajectories.lengths[0] == length == 4
    np.testing.assert_array_equal(trajectories.observations[0, 1 : length + 1], first["next_observations"][0, :length])
    # Our success rule agrees with KALM's terminals: every episode's last valid state satisfies its goal.
    finals = trajectories.observations[np.arange(80), trajectories.lengths]
    assert ball_env.success(finals, trajectories.goals).all() and trajectories.successes.all()


@needs_kalm_files
def test_reads_kalm_prompt_file():
    prompts = kalm_data.read_kalm_prompts(KALM_PROMPTS)
    assert len(prompts.instructions) == 80 and prompts.initial_states.shape == (80, 10)
    assert prompts.instructions[0].startswith("I can't stand the red ball ahead of the blue one")
    assert ball_env.relations_of(prompts.goals[0]) == ((0, 1, 0),)


def write_pickled(path: Path, payload) -> Path:
    np.save(path, np.array(payload, dtype=object), allow_pickle=True)
    return path


def small_kalm_dict(n: int = 3, horizon: int = 4) -> dict:
    return {
        "observations": np.zeros((n, horizon, 10), np.float32),
        "next_observations": np.zeros((n, horizon, 10), np.float32),
        "actions": np.zeros((n, horizon), np.int32),
        "masks": np.ones((n, horizon), np.int32),
        "terminals": np.zeros((n, horizon, 1), bool),
        "goals": np.tile(np.array([1, 2, 0, 0, 0, 0], np.float32), (n, horizon, 1)),
        "instructions": np.array([["x"]] * n),
    }


def test_malformed_kalm_files_name_the_cause(tmp_path):
    with pytest.raises(MissingFileError, match="does not exist"):
        kalm_data.read_kalm_trajectories(tmp_path / "absent.npy")
    (tmp_path / "text.npy").write_text("not numpy")
    with pytest.raises(KalmDataError, match="not a readable .npy"):
        kalm_data.read_kalm_trajectories(tmp_path / "text.npy")
    np.save(tmp_path / "array.npy", np.zeros(3))
    with pytest.raises(KalmDataError, match="expected a pickled dict"):
        kalm_data.read_kalm_trajectories(tmp_path / "array.npy")
    broken = small_kalm_dict()
    del broken["actions"]
    with pytest.raises(KalmDataError, match="missing keys actions"):
        kalm_data.read_kalm_trajectories(write_pickled(tmp_path / "no_actions.npy", broken))
    wrong_state = small_kalm_dict()
    wrong_state["observations"] = np.zeros((3, 4, 12), np.float32)
    with pytest.raises(KalmDataError, match="expected \\[N, T, 10\\]"):
        kalm_data.read_kalm_trajectories(write_pickled(tmp_path / "state12.npy", wrong_state))
    wrong_actions = small_kalm_dict()
    wrong_actions["actions"] = np.zeros((3, 5), np.int32)
    with pytest.raises(KalmDataError, match="actions have shape"):
        kalm_data.read_kalm_trajectories(write_pickled(tmp_path / "actions5.npy", wrong_actions))
    assert len(kalm_data.read_kalm_trajectories(write_pickled(tmp_path / "ok.npy", small_kalm_dict()))) == 3


def test_malformed_prompt_file(tmp_path):
    prompts = {"instructions": ["a", "b"], "observations": [np.zeros((3, 10))], "goals": [np.zeros(6)] * 2}
    with pytest.raises(KalmDataError, match="entries per key differ"):
        kalm_data.read_kalm_prompts(write_pickled(tmp_path / "p.npy", prompts))


def test_mismatched_sizes_are_refused():
    trajectories = kalm_data.collect(ball_env.BallPushEnv(horizon=5), "train", 4, 0.0, np.random.default_rng(0))
    with pytest.raises(KalmDataError, match="actions has shape"):
        kalm_data.TrajectorySet(**{**vars(trajectories), "actions": trajectories.actions[:, :3]})


def test_npz_cache_round_trips_without_pickles(tmp_path):
    trajectories = kalm_data.collect(ball_env.BallPushEnv(horizon=6), "hard", 5, 0.2, np.random.default_rng(0))
    trajectories.save(tmp_path / "set.npz")
    loaded = kalm_data.load_trajectories(tmp_path / "set.npz")
    for key, value in vars(trajectories).items():
        np.testing.assert_array_equal(getattr(loaded, key), value)
    with open(tmp_path / "pickle.npz", "wb") as handle:
        pickle.dump({"a": 1}, handle)
    with pytest.raises(KalmDataError, match="not a trajectory .npz"):
        kalm_data.load_trajectories(tmp_path / "pickle.npz")
