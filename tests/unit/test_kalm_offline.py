"""KALM offline RL: trajectories -> d3rlpy dataset round trip, a short fit, evaluation episodes, config checks."""

from __future__ import annotations

import numpy as np
import pytest

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm import language
from archer.kalm.config import KalmOfflineConfig, KalmRunConfig
from archer.kalm.errors import KalmConfigError

d3rlpy = pytest.importorskip("d3rlpy", reason="the kalm extra (d3rlpy) is not installed")
offline_rl = pytest.importorskip("archer.kalm.offline_rl")


def mixed_set() -> kalm_data.TrajectorySet:
    """Episodes that reach the goal and episodes cut by the horizon (noisy expert, horizon 4)."""
    return kalm_data.collect(ball_env.BallPushEnv(horizon=4), "hard", 12, 0.5, np.random.default_rng(3))


def test_d3rlpy_conversion_round_trips():
    data = mixed_set()
    assert data.successes.any() and not data.successes.all()
    dataset = offline_rl.to_d3rlpy(data, "relations")
    episodes = offline_rl.from_d3rlpy(dataset)
    assert len(episodes) == len(data)
    features = language.encode_goals(data.goals, list(data.instructions), "relations")
    for row, episode in enumerate(episodes):
        length, reached = int(data.lengths[row]), bool(data.successes[row])
        assert episode["terminated"] is reached
        # A reached episode keeps s_0..s_{L-1}; a timed-out one also keeps s_L (its last transition's next state).
        kept = length if reached else length + 1
        np.testing.assert_allclose(episode["observations"][:, :10], data.observations[row, :kept])
        np.testing.assert_allclose(episode["observations"][:, 10:], np.repeat(features[row][None], kept, 0))
        np.testing.assert_array_equal(episode["actions"][:length], data.actions[row, :length])
        np.testing.assert_allclose(episode["rewards"][:length], data.rewards[row, :length])
        assert episode["rewards"].sum() == float(reached)
    assert dataset.transition_count == int(data.lengths.sum())


def test_words_encoding_changes_with_the_wording():
    goals = language.goal_vectors([((0, 1, 0),)] * 2)
    a = offline_rl.policy_observations(np.zeros((2, 10)), goals, ["push the red ball", "get the red sphere"], "words")
    assert a.shape == (2, 10 + len(language.vocabulary())) and not np.array_equal(a[0], a[1])


@pytest.mark.parametrize("algorithm", ["bc", "cql"])
def test_short_fit_and_evaluation(algorithm):
    data = kalm_data.collect(ball_env.BallPushEnv(horizon=6), "train", 30, 0.1, np.random.default_rng(0))
    cfg = KalmOfflineConfig(algorithm=algorithm, steps=5, batch_size=16, hidden_units=[16])
    fitted, metrics = offline_rl.train_offline(cfg, data, seed=0)
    assert "loss" in metrics
    rate = offline_rl.success_rate(fitted, ball_env.BallPushEnv(horizon=6), "easy", 8, 1, "relations")
    assert 0.0 <= rate <= 1.0


def test_evaluation_episodes_are_fixed_by_the_seed():
    env = ball_env.BallPushEnv()
    first = offline_rl.evaluation_episodes("hard", 5, 7, env)
    second = offline_rl.evaluation_episodes("hard", 5, 7, env)
    for a, b in zip(first[::2], second[::2], strict=True):
        np.testing.assert_array_equal(a, b)
    assert first[1] == second[1]
    assert all(len(ball_env.relations_of(g)) == 2 for g in first[0])


def test_config_errors_name_the_key():
    with pytest.raises(KalmConfigError, match="offline.algorithm: got 'sac'"):
        KalmRunConfig(offline=KalmOfflineConfig(algorithm="sac"))
    with pytest.raises(KalmConfigError, match="offline.algorithm: awac needs continuous actions.*env.name=ball_push"):
        KalmRunConfig(offline=KalmOfflineConfig(algorithm="awac"))
    with pytest.raises(KalmConfigError, match="mode: got 'train'"):
        KalmRunConfig(mode="train")
    with pytest.raises(KalmConfigError, match="seeds: repeats"):
        KalmRunConfig(seeds=[1, 1])


def test_kalm_clevr_composes_into_the_typed_config():
    from hydra import compose, initialize_config_dir

    from archer.cli import register_configs
    from archer.kalm.pipeline import to_kalm_config
    from tests.conftest import CONFIG_DIR

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = to_kalm_config(compose("kalm_clevr", overrides=["run_dir=unused", "offline.algorithm=cql"]))
        assert isinstance(cfg, KalmRunConfig) and cfg.offline.algorithm == "cql" and cfg.seeds == [0, 1, 2]
        with pytest.raises(KalmConfigError, match="grounding.patterns"):
            to_kalm_config(compose("kalm_clevr", overrides=["run_dir=unused", "grounding.patterns=[4]"]))
