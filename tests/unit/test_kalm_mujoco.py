"""KALM's ball pushing in MuJoCo (optional extra ``clevr_mujoco``: mujoco==3.3.0): the scene, the direction of a
push, walls, the success rule on balls placed in the physics, determinism for a seed, the expert, and a tiny
pipeline run. Without the extra, only the refusal and the config are tested."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm.config import KalmEnvConfig, KalmRunConfig
from archer.kalm.errors import MissingExtraError

HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None
INSTALL = r"pip install -e '\.\[clevr_mujoco\]'.*mujoco==3\.3\.0"


@pytest.mark.skipif(HAS_MUJOCO, reason="mujoco is installed")
def test_missing_extra_names_the_install_command():
    from archer.kalm.pipeline import make_env

    with pytest.raises(MissingExtraError, match=INSTALL):
        make_env(KalmRunConfig(env=KalmEnvConfig(name="clevr_mujoco")))


def test_missing_extra_when_the_import_fails(monkeypatch):
    from archer.kalm.clevr_mujoco_env import ClevrMujocoEnv

    monkeypatch.setitem(sys.modules, "mujoco", None)  # ``import mujoco`` raises ImportError
    with pytest.raises(MissingExtraError, match=INSTALL):
        ClevrMujocoEnv()


def test_kalm_clevr_mujoco_composes_without_the_extra():
    from hydra import compose, initialize_config_dir

    from archer.cli import register_configs
    from archer.kalm.pipeline import to_kalm_config
    from tests.conftest import CONFIG_DIR

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = to_kalm_config(compose("kalm_clevr_mujoco", overrides=["run_dir=unused"]))
    assert cfg.env.name == "clevr_mujoco" and cfg.env.action_type == "discrete" and cfg.env.horizon == 20
    assert cfg.offline.algorithm == "bc" and cfg.collect.num_episodes == 2000


mujoco_only = pytest.mark.skipif(not HAS_MUJOCO, reason="the clevr_mujoco extra (mujoco) is not installed")


@pytest.fixture(scope="module")
def env():
    pytest.importorskip("mujoco")
    from archer.kalm.clevr_mujoco_env import ClevrMujocoEnv

    return ClevrMujocoEnv()


@pytest.fixture(scope="module")
def still_env():
    """Without motion noise: a push is a pure function of the state and action."""
    pytest.importorskip("mujoco")
    from archer.kalm.clevr_mujoco_env import ClevrMujocoEnv

    return ClevrMujocoEnv(motion_noise=0.0)


def place(**balls: tuple[float, float]) -> np.ndarray:
    """A state with ball ``b<i>`` at the given (x, y); unnamed balls spread along the bottom edge, apart."""
    state = np.array([[-0.5 + 0.25 * i, -0.55] for i in range(ball_env.NUM_BALLS)], np.float32).reshape(-1)
    for name, (x, y) in balls.items():
        index = int(name[1:])
        state[2 * index : 2 * index + 2] = (x, y)
    return state


@mujoco_only
def test_scene_loads_with_five_balls_walls_and_a_pusher(env):
    import mujoco

    model = env._model
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(model.nbody)]
    assert names == ["world", "ball0", "ball1", "ball2", "ball3", "ball4", "pusher"]
    assert model.nq == ball_env.STATE_DIM + 2 and model.nu == 2
    assert sum(model.geom(g).name.startswith("wall_") for g in range(model.ngeom)) == 4
    # Calibrated: a lone ball pushed along +x moves step_size; the other directions point the right way.
    np.testing.assert_allclose(env.push_distances[0], [env.step_size, 0.0], atol=1e-3)
    np.testing.assert_array_equal(np.sign(env.push_distances.round(3)), np.sign(ball_env.PUSH_DIRECTIONS))


@mujoco_only
@pytest.mark.parametrize("direction", range(ball_env.NUM_PUSH_DIRECTIONS))
def test_a_push_moves_the_chosen_ball_that_way_and_leaves_far_balls_still(env, direction):
    state = place(b2=(0.0, 0.0))
    action = 2 * ball_env.NUM_PUSH_DIRECTIONS + direction
    moved = env.step(state[None], np.array([action]), np.random.default_rng(0))[0]
    displacement = (moved - state).reshape(ball_env.NUM_BALLS, 2)
    expected = ball_env.PUSH_DIRECTIONS[direction]
    # The pushed ball moves along the direction (sign per axis; noise shifts the pusher by ~0.01).
    along = expected != 0
    assert np.all(displacement[2][along] * np.sign(expected[along]) > 0.05)
    assert np.all(np.abs(displacement[2][~along]) < 0.05)
    assert np.linalg.norm(displacement[2]) > 0.1
    others = np.delete(displacement, 2, axis=0)
    np.testing.assert_allclose(others, 0.0, atol=1e-6)


@mujoco_only
def test_a_pushed_ball_pushes_the_ball_in_its_way(still_env):
    state = place(b0=(0.0, 0.0), b1=(0.11, 0.0))  # ball 1 just right of ball 0, almost touching
    moved = still_env.step(state[None], np.array([0]), None)[0]  # push ball 0 along +x
    assert moved[2] > 0.11 + 0.05  # ball 1 was hit and moved right
    assert moved[0] < moved[2] - 2 * 0.05 + 1e-3  # the balls do not pass through each other


@mujoco_only
def test_balls_stay_on_the_table_after_many_random_pushes(env):
    rng = np.random.default_rng(0)
    goals = ball_env.goal_vector(((0, 1, 0),))[None].repeat(8, axis=0)
    states = env.initial_states(goals, rng)
    for _ in range(60):
        states = env.step(states, env.random_actions(len(states), rng), rng)
        assert np.all(np.abs(states) <= env.bound)
    # Pushing a ball into a wall again and again: it stops at the wall.
    state = place(b0=(0.5, 0.0))[None]
    for _ in range(5):
        state = env.step(state, np.array([0]), rng)
    assert env.bound - 0.01 <= state[0, 0] <= env.bound


@mujoco_only
@pytest.mark.parametrize(
    ("source_xy", "direction", "expected"),
    [
        ((0.0, 0.2), 0, True),  # behind (+y)
        ((-0.2, 0.0), 1, True),  # left (-x)
        ((0.0, -0.2), 2, True),  # front (-y)
        ((0.2, 0.0), 3, True),  # right (+x)
        ((0.0, 0.2), 2, False),  # behind is not front
        ((0.0, 0.40), 0, False),  # too far
        ((0.2, 0.19), 0, False),  # 43.5 degrees: right, not behind
        ((0.2, 0.21), 0, True),  # 46.4 degrees: behind
    ],
)
def test_success_rule_on_balls_placed_in_the_physics_agrees_with_the_numpy_env(env, source_xy, direction, expected):
    import mujoco

    placed = place(b0=source_xy, b1=(0.0, 0.0))
    model, data = env._model, env._data
    mujoco.mj_resetData(model, data)
    data.qpos[: ball_env.STATE_DIM] = placed
    mujoco.mj_forward(model, data)
    read = np.concatenate([data.body(f"ball{i}").xpos[:2] for i in range(ball_env.NUM_BALLS)]).astype(np.float32)
    np.testing.assert_allclose(read, placed, atol=1e-7)
    goal = ball_env.goal_vector(((0, 1, direction),))
    suite = kalm_data.suite(env)
    assert bool(suite.success(read, goal)[0]) is expected
    assert suite.success(read, goal).tolist() == ball_env.success(placed, goal).tolist()


@mujoco_only
def test_pushes_and_episodes_are_deterministic_for_a_seed(env):
    first = kalm_data.collect(env, "train", 6, 0.3, np.random.default_rng(5))
    second = kalm_data.collect(env, "train", 6, 0.3, np.random.default_rng(5))
    other = kalm_data.collect(env, "train", 6, 0.3, np.random.default_rng(6))
    np.testing.assert_array_equal(first.observations, second.observations)
    np.testing.assert_array_equal(first.actions, second.actions)
    assert not np.array_equal(first.observations, other.observations)


@mujoco_only
def test_the_noisy_expert_reaches_training_goals(env):
    data = kalm_data.collect(env, "train", 60, 0.2, np.random.default_rng(0))
    assert data.successes.mean() >= 0.9
    last = data.observations[np.arange(len(data)), data.lengths]
    assert ball_env.success(last[data.successes], data.goals[data.successes]).all()


@mujoco_only
def test_tiny_clevr_mujoco_pipeline_run(tmp_path):
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
        "env.horizon=6",
        "collect.num_episodes=12",
        "imagine.episodes_per_level=2",
        "imagine.batch_size=2",
        "offline.steps=3",
        "eval.episodes_per_level=3",
    ]
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        metrics = main(compose("kalm_clevr_mujoco", overrides=tiny))
    assert metrics["collect/success_rate"] > 0.5
    assert "grounding/action_accuracy" in metrics and "real_imagined/hard_mean" in metrics
    assert (tmp_path / "run" / "kalm_success.png").is_file()
