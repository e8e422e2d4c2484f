"""KALM with continuous actions: the ball-push variant's action decoding, expert and success rule; the grounded
model's linear action input and MSE action head (losses against hand numbers); imagination with action vectors;
d3rlpy's continuous dataset round trip and BC / CQL / AWAC / TD3+BC; discrete/continuous mismatches refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm import grounding, imagination
from archer.kalm.config import KalmEnvConfig, KalmGroundingConfig, KalmOfflineConfig, KalmRunConfig
from archer.kalm.errors import KalmConfigError, KalmDataError

TINY = KalmGroundingConfig(n_layer=1, n_embd=16, n_head=2, max_positions=96, steps=2, batch_size=4)
DIM = ball_env.CONTINUOUS_ACTION_DIM


def push(ball: int, dx: float, dy: float) -> np.ndarray:
    action = -np.ones(DIM, np.float32)
    action[ball], action[5:] = 1.0, (dx, dy)
    return action


# ---------------------------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------------------------


def test_action_decoding_picks_the_top_ball_and_clips_the_push_to_length_one():
    actions = np.stack([push(2, 0.6, 0.8), push(4, 1.0, 1.0), push(0, 0.3, -0.4)])
    actions[2, 1] = 0.9  # ball 1 scores below ball 0's 1.0: ball 0 is still pushed
    balls, pushes = ball_env.continuous_moves(actions)
    assert balls.tolist() == [2, 4, 0]
    np.testing.assert_allclose(pushes, [[0.6, 0.8], [0.5**0.5, 0.5**0.5], [0.3, -0.4]], atol=1e-7)
    with pytest.raises(ValueError, match=r"\[B, 7\]"):
        ball_env.continuous_moves(np.zeros((1, 40)))


def test_step_moves_one_ball_by_step_size_times_the_push():
    env = ball_env.BallPushContinuousEnv(step_size=0.15, motion_noise=0.0)
    start = np.arange(10, dtype=np.float32)[None] / 20  # balls at (0, .05), (.1, .15), ...
    moved = env.step(start, push(2, 0.6, 0.8)[None], np.random.default_rng(0))
    expected = start.copy()
    expected[0, 4:6] += (0.09, 0.12)
    np.testing.assert_allclose(moved, expected, atol=1e-6)
    # The arena bound still applies: ball 4 at (0.4, 0.45) pushed (+1, 0) twice with step 0.15 stops at 0.6.
    far = env.step(env.step(start, push(4, 1, 0)[None], None), push(4, 1, 0)[None], None)
    assert far[0, 8] == pytest.approx(0.6)


def test_success_rule_is_the_discrete_envs():
    state = np.zeros(10, np.float32)
    state[0:2], state[2:4] = (0.0, 0.3), (0.0, 0.0)  # red 0.3 behind (+y) blue
    assert ball_env.success(state, ball_env.goal_vector(((0, 1, 0),)))[0]
    assert not ball_env.success(state, ball_env.goal_vector(((0, 1, 3),)))[0]


def test_expert_pushes_straight_at_the_target_point():
    state = np.zeros(10, np.float32)
    state[0:2], state[2:4] = (0.0, -0.5), (0.0, 0.0)
    state[4:] = [0.5, 0.5, -0.5, 0.5, 0.5, -0.5]
    goal = ball_env.goal_vector(((0, 1, 0),))
    # Target: 0.22 behind (+y) ball 1 = (0, 0.22); the push (0, 0.72) / 0.15 is clipped to length 1.
    np.testing.assert_allclose(ball_env.expert_continuous_actions(state, goal, 0.15)[0], push(0, 0.0, 1.0), atol=1e-6)
    # Near the target the push is shorter than one step: from (0, 0.16), (0, 0.06) / 0.15 = (0, 0.4).
    state[1] = 0.16
    np.testing.assert_allclose(ball_env.expert_continuous_actions(state, goal, 0.15)[0], push(0, 0.0, 0.4), atol=1e-5)


@pytest.mark.parametrize("split", ["train", "easy", "hard"])
def test_noisy_expert_reaches_the_goals(split):
    env = ball_env.BallPushContinuousEnv()
    data = kalm_data.collect(env, split, 60, 0.2, np.random.default_rng(0))
    assert data.continuous and data.actions.shape == (60, env.horizon, DIM) and data.actions.dtype == np.float32
    assert data.successes.mean() >= 0.95
    assert np.abs(data.actions).max() <= 1.0
    # Every recorded transition is the env's step of the recorded action (motion noise aside).
    row = int(np.argmax(data.lengths))
    for t in range(int(data.lengths[row])):
        balls, pushes = ball_env.continuous_moves(data.actions[row, t][None])
        delta = (data.observations[row, t + 1] - data.observations[row, t]).reshape(5, 2)
        assert np.abs(delta[balls[0]] - env.step_size * pushes[0]).max() < 0.06


def test_trajectory_set_refuses_action_vectors_of_the_wrong_length():
    data = kalm_data.collect(ball_env.BallPushContinuousEnv(horizon=3), "train", 2, 0.0, np.random.default_rng(1))
    with pytest.raises(KalmDataError, match="actions has shape"):
        kalm_data.TrajectorySet(**{**vars(data), "actions": data.actions[:, :2]})
    discrete = kalm_data.collect(ball_env.BallPushEnv(horizon=3), "train", 2, 0.0, np.random.default_rng(1))
    with pytest.raises(KalmDataError, match="different action layouts"):
        kalm_data.concatenate([data, discrete])


# ---------------------------------------------------------------------------------------------------------------
# Grounded model
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> grounding.GroundedLM:
    torch.manual_seed(0)
    return grounding.build_grounded_model(TINY, ball_env.STATE_DIM, DIM, "continuous")


def test_continuous_model_projects_and_regresses_action_vectors(model):
    assert isinstance(model.action_in, torch.nn.Linear) and model.action_in.in_features == DIM
    assert model.action_head.out_features == DIM and model.action_dim == DIM
    data = kalm_data.collect(ball_env.BallPushContinuousEnv(horizon=4), "train", 3, 0.0, np.random.default_rng(2))
    builder = model.prompt_builder()
    example = grounding.episode_example(builder, data, 0, 0, np.random.default_rng(0))
    positions = [i for i, kind in enumerate(example.kinds) if kind == grounding.ACTION]
    assert example.actions.shape == (len(example.kinds), DIM)
    np.testing.assert_allclose(example.actions[positions], data.actions[0, : data.lengths[0]])
    batch = grounding.collate([example], model.tokenizer.pad_token_id)
    assert batch["actions"].dtype == torch.float32 and batch["actions"].shape[-1] == DIM
    losses = model(batch)
    assert torch.isfinite(losses["loss"]) and losses["action_loss"] > 0


def test_mse_action_loss_against_hand_numbers():
    # One prompt of 3 positions; actions are 2-d. Targets: the actions at positions 1 and 2, predicted by the
    # head's outputs at positions 0 and 1. MSE per position (mean over the 2 numbers), then mean over targets:
    # position 1: ((1 - 0)^2 + (2 - 0)^2) / 2 = 2.5; position 2: ((0.5 - 1.5)^2 + (-0.5 - 0.5)^2) / 2 = 1.0;
    # action loss (2.5 + 1.0) / 2 = 1.75; no state or token targets, so loss = 0.5 * 1.75 = 0.875.
    batch = {
        "states": torch.zeros(1, 3, 10),
        "actions": torch.tensor([[[9.0, 9.0], [0.0, 0.0], [1.5, 0.5]]]),
        "input_ids": torch.zeros(1, 3, dtype=torch.long),
        "state_targets": torch.tensor([[False, False, False]]),
        "action_targets": torch.tensor([[False, True, True]]),
        "token_targets": torch.tensor([[False, False, False]]),
    }
    head = torch.tensor([[[1.0, 2.0], [0.5, -0.5], [100.0, 100.0]]])  # the last position predicts nothing
    losses = grounding.grounding_losses(torch.zeros(1, 3, 10), head, torch.zeros(1, 3, 4), batch)
    assert losses["action_loss"].item() == pytest.approx(1.75)
    assert losses["state_loss"].item() == 0.0 and losses["token_loss"].item() == 0.0
    assert losses["loss"].item() == pytest.approx(0.875)
    # Only position 2 a target: 1.0; with action_weight 1 the total is 1.0.
    batch["action_targets"] = torch.tensor([[False, False, True]])
    only = grounding.grounding_losses(torch.zeros(1, 3, 10), head, torch.zeros(1, 3, 4), batch, 0.5, 1.0)
    assert only["action_loss"].item() == pytest.approx(1.0) and only["loss"].item() == pytest.approx(1.0)


def test_continuous_model_saves_loads_and_refuses_discrete_data(model, tmp_path):
    model.save_pretrained(tmp_path / "m")
    loaded = grounding.GroundedLM.from_pretrained(tmp_path / "m")
    assert loaded.continuous and loaded.num_actions == DIM
    for key, value in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[key], value)
    discrete = kalm_data.collect(ball_env.BallPushEnv(horizon=3), "train", 2, 0.0, np.random.default_rng(1))
    with pytest.raises(KalmDataError, match="discrete actions, the grounded model continuous"):
        grounding.check_sizes(model, discrete)


def test_training_and_measures_run_on_continuous_data(model):
    data = kalm_data.collect(ball_env.BallPushContinuousEnv(horizon=4), "train", 6, 0.1, np.random.default_rng(3))
    history, _ = grounding.train_grounding(model, data, TINY, np.random.default_rng(0))
    assert len(history) == 2 and all(np.isfinite(r["action_loss"]) for r in history)
    measures = grounding.measure_grounding(model, data, np.random.default_rng(0))
    assert measures["grounding/action_mse"] >= 0 and "grounding/action_accuracy" not in measures


class ScriptedContinuousLM(torch.nn.Module):
    """Stands in for the grounded model: always the action vector 'push ball 0 by (0, +1)', state +0.15 in y."""

    continuous, num_actions = True, DIM

    def __init__(self, real):
        super().__init__()
        self.tokenizer, self.placeholder_ids = real.tokenizer, real.placeholder_ids

    def prompt_builder(self):
        return grounding.PromptBuilder(self.tokenizer, self.placeholder_ids, 10, DIM)

    def hidden_states(self, batch):
        return batch["states"], None

    def predict_actions(self, hidden):
        return torch.from_numpy(push(0, 0.0, 1.0)).expand(hidden.shape[0], DIM)

    def predict_states(self, hidden, batch):
        return grounding.latest_states(batch["kinds"], batch["states"]) + torch.tensor([0.0, 0.15] + [0.0] * 8)


def test_imagined_continuous_rollouts_stop_at_success(model):
    start = np.zeros((2, 10), np.float32)
    start[:, 0:2] = (0.0, -0.5)
    start[:, 4:] = [0.5, 0.5, -0.5, 0.5, 0.5, -0.5]
    goals = np.stack([ball_env.goal_vector(((0, 1, 0),)), ball_env.goal_vector(((0, 1, 1),))])
    imagined = imagination.imagine(ScriptedContinuousLM(model), ["push the red ball"] * 2, start, goals, horizon=10)
    first = next(t for t in range(1, 11) if ball_env.success(start[0] + np.r_[0, 0.15 * t, [0] * 8], goals[0])[0])
    assert imagined.continuous and imagined.actions.shape == (2, 10, DIM)
    assert imagined.lengths[0] == first and imagined.terminals[0, first - 1] and imagined.rewards[0].sum() == 1.0
    assert imagined.lengths[1] == 10 and not imagined.terminals[1].any()
    np.testing.assert_allclose(imagined.actions[0, :first], np.repeat(push(0, 0.0, 1.0)[None], first, 0))


# ---------------------------------------------------------------------------------------------------------------
# Offline RL (d3rlpy)
# ---------------------------------------------------------------------------------------------------------------


def test_d3rlpy_continuous_dataset_round_trips():
    d3rlpy = pytest.importorskip("d3rlpy", reason="the kalm extra (d3rlpy) is not installed")
    from archer.kalm import offline_rl

    data = kalm_data.collect(ball_env.BallPushContinuousEnv(horizon=4), "hard", 12, 0.5, np.random.default_rng(3))
    assert data.successes.any() and not data.successes.all()
    dataset = offline_rl.to_d3rlpy(data, "relations")
    assert dataset.dataset_info.action_space == d3rlpy.constants.ActionSpace.CONTINUOUS
    assert dataset.dataset_info.action_size == DIM
    episodes = offline_rl.from_d3rlpy(dataset)
    assert len(episodes) == len(data) and dataset.transition_count == int(data.lengths.sum())
    for row, episode in enumerate(episodes):
        length, reached = int(data.lengths[row]), bool(data.successes[row])
        assert episode["terminated"] is reached
        kept = length if reached else length + 1
        np.testing.assert_allclose(episode["observations"][:, :10], data.observations[row, :kept])
        assert episode["actions"].shape == (kept, DIM) and episode["actions"].dtype == np.float32
        np.testing.assert_array_equal(episode["actions"][:length], data.actions[row, :length])
        np.testing.assert_allclose(episode["rewards"][:length], data.rewards[row, :length])


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [("bc", "BC"), ("cql", "CQL"), ("awac", "AWAC"), ("td3_plus_bc", "TD3PlusBC")],
)
def test_short_continuous_fit_and_evaluation(algorithm, expected):
    pytest.importorskip("d3rlpy", reason="the kalm extra (d3rlpy) is not installed")
    from archer.kalm import offline_rl

    env = ball_env.BallPushContinuousEnv(horizon=6)
    data = kalm_data.collect(env, "train", 20, 0.1, np.random.default_rng(0))
    cfg = KalmOfflineConfig(algorithm=algorithm, steps=3, batch_size=16, hidden_units=[16])
    fitted, metrics = offline_rl.train_offline(cfg, data, seed=0)
    assert type(fitted).__name__ == expected and metrics
    actions = fitted.predict(
        offline_rl.policy_observations(data.observations[:2, 0], data.goals[:2], ["x"] * 2, "relations")
    )
    assert actions.shape == (2, DIM) and np.abs(actions).max() <= 1.0
    assert 0.0 <= offline_rl.success_rate(fitted, env, "easy", 6, 1, "relations") <= 1.0


def test_discrete_and_continuous_mismatches_are_refused():
    continuous = KalmEnvConfig(name="ball_push_continuous")
    with pytest.raises(KalmConfigError, match="discrete_bc needs discrete actions.*ball_push_continuous"):
        KalmRunConfig(env=continuous, offline=KalmOfflineConfig(algorithm="discrete_bc"))
    with pytest.raises(KalmConfigError, match="td3_plus_bc needs continuous actions"):
        KalmRunConfig(offline=KalmOfflineConfig(algorithm="td3_plus_bc"))
    with pytest.raises(KalmConfigError, match="collect.kalm_file"):
        KalmRunConfig(env=continuous, collect=kalm_data_file_config())
    for algorithm in ("bc", "cql", "awac", "td3_plus_bc"):
        KalmRunConfig(env=continuous, offline=KalmOfflineConfig(algorithm=algorithm))
    KalmRunConfig(offline=KalmOfflineConfig(algorithm="discrete_cql"))
    pytest.importorskip("d3rlpy", reason="the kalm extra (d3rlpy) is not installed")
    from archer.kalm import offline_rl

    assert offline_rl.algorithm_class_name("bc", "continuous") == "BCConfig"
    assert offline_rl.algorithm_class_name("bc", "discrete") == "DiscreteBCConfig"
    with pytest.raises(KalmConfigError, match="awac does not work with discrete actions"):
        offline_rl.algorithm_class_name("awac", "discrete")
    # Data decides at fit time too: continuous data with a discrete-only algorithm.
    data = kalm_data.collect(ball_env.BallPushContinuousEnv(horizon=3), "train", 4, 0.0, np.random.default_rng(0))
    with pytest.raises(KalmConfigError, match="discrete_cql does not work with continuous actions"):
        offline_rl.train_offline(KalmOfflineConfig(algorithm="discrete_cql", steps=1), data, seed=0)


def kalm_data_file_config():
    from archer.kalm.config import KalmCollectConfig

    return KalmCollectConfig(kalm_file="clevr_robot.npy")


def test_continuous_config_composes():
    from hydra import compose, initialize_config_dir

    from archer.cli import register_configs
    from archer.kalm.pipeline import make_env, to_kalm_config
    from tests.conftest import CONFIG_DIR

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = to_kalm_config(compose("kalm_ball_push_continuous", overrides=["run_dir=unused"]))
        assert cfg.env.name == "ball_push_continuous" and cfg.offline.algorithm == "bc"
        assert isinstance(make_env(cfg).env, ball_env.BallPushContinuousEnv)
        with pytest.raises(KalmConfigError, match="discrete_bc needs discrete actions"):
            to_kalm_config(
                compose("kalm_ball_push_continuous", overrides=["run_dir=unused", "offline.algorithm=discrete_bc"])
            )
