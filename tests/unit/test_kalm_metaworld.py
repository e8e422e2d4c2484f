"""KALM on Meta-World (optional extra ``metaworld``): scripted experts, the success rule on observations, seeded
resets, the d3rlpy dataset of real Meta-World data, and a tiny pipeline run. Without the extra, only the refusal
is tested."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from archer.kalm.config import KalmEnvConfig, KalmRunConfig
from archer.kalm.errors import GoalSplitError, MissingExtraError

HAS_METAWORLD = importlib.util.find_spec("metaworld") is not None


@pytest.mark.skipif(HAS_METAWORLD, reason="metaworld is installed")
def test_missing_extra_names_the_install_command():
    from archer.kalm.pipeline import make_env

    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[metaworld\]'.*mujoco==3\.3\.0"):
        make_env(KalmRunConfig(env=KalmEnvConfig(name="metaworld")))


def test_task_vectors_and_rule_without_the_extra():
    from archer.kalm import metaworld_env as mw

    goals = mw.task_vector(["reach", "push"])
    assert goals.shape == (2, len(mw.TASK_NAMES)) and mw.task_of(goals[1]) == "push"
    states = np.zeros((2, 39), np.float32)
    states[:, 36:39] = (0.0, 0.8, 0.1)  # goal position
    states[0, 0:3] = (0.0, 0.8, 0.14)  # hand 0.04 from the goal: reach succeeds (radius 0.05)
    states[1, 4:7] = (0.0, 0.8, 0.04)  # puck 0.06 from the goal: push fails (radius 0.05)
    assert mw.rule_success(states, goals).tolist() == [True, False]
    states[1, 4:7] = (0.03, 0.8, 0.1)
    assert mw.rule_success(states, goals).tolist() == [True, True]
    with pytest.raises(GoalSplitError, match="unknown Meta-World task"):
        mw.task_vector(["hammer"])
    with pytest.raises(GoalSplitError, match="one-hot"):
        mw.task_of(np.zeros(len(mw.TASK_NAMES)))


metaworld = pytest.mark.skipif(not HAS_METAWORLD, reason="the metaworld extra is not installed")


@pytest.fixture(scope="module")
def env():
    pytest.importorskip("metaworld")
    from archer.kalm.metaworld_env import MetaWorldEnv

    return MetaWorldEnv(horizon=150)


@metaworld
def test_seeded_resets_are_fixed_and_differ_between_seeds(env):
    from archer.kalm.metaworld_env import task_of

    first, second, other = env.reset("push", 3), env.reset("push", 3), env.reset("push", 4)
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(first[36:39], other[36:39]) or not np.allclose(first[4:7], other[4:7])
    rng = np.random.default_rng(0)
    goals, instructions, seeds = env.sample_episodes("easy", 4, rng)
    assert {task_of(goal) for goal in goals} <= {"reach-wall", "push-wall", "pick-place-wall"}
    assert len(instructions) == 4 and seeds.shape == (4,)
    assert env.initial_observations(goals, seeds).shape == (4, 39)


@metaworld
def test_scripted_experts_reach_the_training_tasks_and_the_rule_agrees(env):
    from archer.kalm import data as kalm_data
    from archer.kalm.metaworld_env import task_vector

    goals = task_vector(["reach", "push", "pick-place"])
    data = env.play(env.noisy_expert(0.0, np.random.default_rng(0)), goals, ["x"] * 3, [0, 1, 2], None)
    assert data.continuous and data.actions.shape == (3, 150, 4) and data.observations.shape == (3, 151, 39)
    assert data.successes.all() and (data.lengths < 150).all()
    assert np.abs(data.actions).max() <= 1.0
    last = data.observations[np.arange(3), data.lengths]
    assert env.success(last[1:], goals[1:]).all()  # push and pick-place: the rule is Meta-World's own
    noisy = kalm_data.collect(env, "train", 3, 0.2, np.random.default_rng(1))
    assert noisy.successes.mean() >= 2 / 3


@metaworld
def test_metaworld_data_becomes_a_continuous_d3rlpy_dataset(env):
    d3rlpy = pytest.importorskip("d3rlpy")
    from archer.kalm import offline_rl
    from archer.kalm.metaworld_env import MetaWorldEnv, task_vector

    short = MetaWorldEnv(horizon=20)
    data = short.play(
        short.noisy_expert(0.3, np.random.default_rng(0)), task_vector(["push"] * 2), ["a", "b"], [5, 6], None
    )
    dataset = offline_rl.to_d3rlpy(data, "relations", short)
    assert dataset.dataset_info.action_space == d3rlpy.constants.ActionSpace.CONTINUOUS
    episodes = offline_rl.from_d3rlpy(dataset)
    assert episodes[0]["observations"].shape[-1] == 39 + 8
    np.testing.assert_array_equal(episodes[0]["actions"][: data.lengths[0]], data.actions[0, : data.lengths[0]])


@metaworld
def test_tiny_metaworld_pipeline_run(tmp_path):
    pytest.importorskip("d3rlpy")
    from hydra import compose, initialize_config_dir

    from archer.cli import register_configs
    from archer.kalm.pipeline import main
    from tests.conftest import CONFIG_DIR, TINY_KALM_MODELS

    tiny = [
        *TINY_KALM_MODELS,
        f"cache_dir={tmp_path / 'cache'}",
        f"run_dir={tmp_path / 'run'}",
        "seeds=[0]",
        "env.horizon=8",
        "collect.num_episodes=6",
        "imagine.episodes_per_level=2",
        "imagine.batch_size=2",
        "offline.steps=3",
        "eval.episodes_per_level=2",
    ]
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        metrics = main(compose("kalm_metaworld", overrides=tiny))
    assert "grounding/action_mse" in metrics and "real_imagined/hard_mean" in metrics
    assert (tmp_path / "run" / "kalm_success.png").is_file()


def test_kalm_metaworld_composes_without_the_extra():
    from hydra import compose, initialize_config_dir

    from archer.cli import register_configs
    from archer.kalm.pipeline import to_kalm_config
    from tests.conftest import CONFIG_DIR

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = to_kalm_config(compose("kalm_metaworld", overrides=["run_dir=unused"]))
    assert cfg.env.name == "metaworld" and cfg.env.action_type == "continuous" and cfg.env.horizon == 100
    assert cfg.offline.algorithm == "bc"
