"""The grounded LM: prompt patterns and placeholder positions, losses against hand numbers, save/load,
imagination that stops at the success rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from archer.kalm import env as ball_env
from archer.kalm import grounding, imagination
from archer.kalm.config import KalmGroundingConfig
from archer.kalm.data import TrajectorySet
from archer.kalm.errors import KalmDataError

TINY = KalmGroundingConfig(n_layer=1, n_embd=16, n_head=2, max_positions=96, steps=2, batch_size=4)


@pytest.fixture(scope="module")
def model() -> grounding.GroundedLM:
    torch.manual_seed(0)
    return grounding.build_grounded_model(TINY, ball_env.STATE_DIM, ball_env.NUM_ACTIONS)


def episode(length: int = 2, horizon: int = 3) -> TrajectorySet:
    observations = np.zeros((1, horizon + 1, 10), np.float32)
    for t in range(horizon + 1):
        observations[0, t] = t + 1  # state s_t is filled with t + 1
    actions = np.array([[5, 7, 0]])[:, :horizon]
    masks = np.arange(horizon)[None] < length
    return TrajectorySet(
        observations=observations,
        actions=actions,
        rewards=np.zeros((1, horizon), np.float32),
        terminals=np.zeros((1, horizon), bool),
        masks=masks,
        goals=ball_env.goal_vector(((0, 1, 0),))[None],
        instructions=np.array(["push the red ball behind the blue ball"]),
    )


def build(model, pattern: int, data: TrajectorySet, step: int = 0) -> grounding.Example:
    builder = grounding.PromptBuilder(model.tokenizer, model.placeholder_ids, model.state_dim)
    length = int(data.lengths[0])
    segments = grounding.pattern_segments(
        pattern,
        data.observations[0, : length + 1],
        data.actions[0, :length],
        data.instructions[0],
        step,
        eos=model.tokenizer.eos_token,
    )
    return builder.build(segments)


def words(model, example) -> list[str]:
    return model.tokenizer.convert_ids_to_tokens(example.input_ids)


def test_pattern_0_goal_to_rollout_places_states_and_actions(model):
    example = build(model, 0, episode())
    tokens = words(model, example)
    start = tokens.index("trajectory", tokens.index("blue")) + 1
    assert tokens[:3] == ["translate", "the", "textual"]
    assert example.kinds[start:] == [1, 2, 1, 2, 1]  # s0 a0 s1 a1 s2
    assert all(k == 0 for k in example.kinds[:start])
    assert [example.actions[i] for i in (start + 1, start + 3)] == [5, 7]
    assert [example.states[i][0] for i in (start, start + 2, start + 4)] == [1, 2, 3]
    # targets: both actions and the states after the first; no text target.
    assert [i for i, v in enumerate(example.action_targets) if v] == [start + 1, start + 3]
    assert [i for i, v in enumerate(example.state_targets) if v] == [start + 2, start + 4]
    assert not any(example.token_targets)


def test_pattern_1_dynamics(model):
    example = build(model, 1, episode(), step=1)
    tokens = words(model, example)
    assert tokens == [
        "current",
        "state",
        "is",
        "#",
        "after",
        "executing",
        "action",
        "@",
        "we",
        "get",
        "next",
        "state",
        "#",
    ]
    assert example.kinds == [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 1]
    assert example.states[3][0] == 2 and example.actions[7] == 7 and example.states[12][0] == 3
    assert [i for i, v in enumerate(example.state_targets) if v] == [12]
    assert not any(example.action_targets) and not any(example.token_targets)


def test_pattern_2_terminal_state(model):
    example = build(model, 2, episode())
    assert example.kinds[3] == 1 and example.kinds[-1] == 1 and sum(example.kinds) == 2
    assert example.states[3][0] == 1 and example.states[-1][0] == 3  # s0 in, s_L (length 2) as the target
    assert [i for i, v in enumerate(example.state_targets) if v] == [len(example.kinds) - 1]
    assert "behind" in words(model, example)


def test_pattern_3_rollout_to_instruction(model):
    example = build(model, 3, episode())
    tokens = words(model, example)
    instruction_at = len(tokens) - 1 - tokens[::-1].index("instruction")
    assert example.kinds[instruction_at - 5 : instruction_at] == [1, 2, 1, 2, 1]
    targets = [tokens[i] for i, v in enumerate(example.token_targets) if v]
    assert targets == ["push", "the", "red", "ball", "behind", "the", "blue", "ball", "[EOS]"]
    assert not any(example.state_targets) and not any(example.action_targets)


def test_losses_against_hand_numbers():
    # One row, 4 positions: text, state, action, state. Targets: state at 1 (from 0), action at 2 (from 1),
    # token at 3 (from 2) -- an artificial mix so every term is exercised once.
    batch = {
        "input_ids": torch.tensor([[0, 1, 2, 1]]),
        "states": torch.tensor([[[0.0, 0.0], [1.0, 3.0], [0.0, 0.0], [0.0, 0.0]]]),
        "actions": torch.tensor([[0, 0, 1, 0]]),
        "state_targets": torch.tensor([[False, True, False, False]]),
        "action_targets": torch.tensor([[False, False, True, False]]),
        "token_targets": torch.tensor([[False, False, False, True]]),
    }
    state_pred = torch.zeros(1, 4, 2)
    state_pred[0, 0] = torch.tensor([0.0, 1.0])  # errors (1, 2) -> MSE (1 + 4) / 2 = 2.5
    action_logits = torch.zeros(1, 4, 3)
    action_logits[0, 1] = torch.tensor([0.0, math.log(3.0), 0.0])  # p(action 1) = 3/5
    token_logits = torch.zeros(1, 4, 4)  # uniform over 4 tokens -> CE log 4
    losses = grounding.grounding_losses(state_pred, action_logits, token_logits, batch, 0.5, 0.5)
    assert losses["state_loss"].item() == pytest.approx(2.5)
    assert losses["action_loss"].item() == pytest.approx(-math.log(3 / 5))
    assert losses["token_loss"].item() == pytest.approx(math.log(4))
    assert losses["loss"].item() == pytest.approx(0.5 * 2.5 + 0.5 * -math.log(3 / 5) + math.log(4))
    # No targets of a kind: that term is 0, not NaN.
    empty = {**batch, "action_targets": torch.zeros(1, 4, dtype=torch.bool)}
    assert grounding.grounding_losses(state_pred, action_logits, token_logits, empty)["action_loss"].item() == 0.0


def test_latest_states_for_residual_prediction():
    kinds = torch.tensor([[0, 1, 2, 0, 1, 2]])
    states = torch.arange(6, dtype=torch.float32).reshape(1, 6, 1) * torch.tensor([0, 1, 0, 0, 1, 0]).reshape(1, 6, 1)
    latest = grounding.latest_states(kinds, states)[0, :, 0].tolist()
    assert latest == [0.0, 1.0, 1.0, 1.0, 4.0, 4.0]


def test_left_padding_does_not_change_the_outputs(model):
    data = episode()
    short, long = build(model, 1, data), build(model, 0, data)
    model.eval()  # no dropout
    alone = grounding.collate([short], model.tokenizer.pad_token_id)
    padded = grounding.collate([short, long], model.tokenizer.pad_token_id)
    with torch.no_grad():
        h_alone, _ = model.hidden_states(alone)
        h_padded, _ = model.hidden_states(padded)
    assert torch.allclose(h_alone[0], h_padded[0, -h_alone.shape[1] :], atol=1e-5)


def test_training_lowers_the_loss_and_save_load_round_trips(tmp_path):
    torch.manual_seed(0)
    from archer.kalm.data import collect

    data = collect(ball_env.BallPushEnv(horizon=6), "train", 40, 0.0, np.random.default_rng(0))
    cfg = KalmGroundingConfig(n_layer=1, n_embd=32, n_head=2, max_positions=96, steps=60, batch_size=16)
    model = grounding.build_grounded_model(cfg, 10, 40)
    history, _ = grounding.train_grounding(model, data, cfg, np.random.default_rng(0))
    assert history[-1]["loss"] < 0.8 * history[0]["loss"]
    model.save_pretrained(tmp_path / "g")
    loaded = grounding.GroundedLM.from_pretrained(tmp_path / "g")
    batch = grounding.sample_batch(model, data, [0, 1, 2, 3], 6, np.random.default_rng(5))
    with torch.no_grad():
        assert model(batch)["loss"].item() == pytest.approx(loaded(batch)["loss"].item(), rel=1e-5)
    metrics = grounding.measure_grounding(loaded, data.subset(np.arange(5)), np.random.default_rng(0))
    assert 0 <= metrics["grounding/action_accuracy"] <= 1 and metrics["grounding/one_step_state_mse"] > 0
    with pytest.raises(KalmDataError, match="not a grounded model folder"):
        grounding.GroundedLM.from_pretrained(tmp_path)


def test_mismatched_state_size_is_refused(model):
    data = episode()
    wide = TrajectorySet(**{**vars(data), "observations": np.zeros((1, 4, 12), np.float32)})
    with pytest.raises(KalmDataError, match="12 numbers, the grounded model's 10"):
        grounding.check_sizes(model, wide)


class ScriptedLM(torch.nn.Module):
    """Stands in for the grounded model in imagination: always pushes ball 0 in +y by 0.15 (action 1)."""

    continuous, num_actions = False, 40

    def __init__(self, real):
        super().__init__()
        self.tokenizer, self.placeholder_ids, self.state_dim = real.tokenizer, real.placeholder_ids, 10

    def prompt_builder(self):
        return grounding.PromptBuilder(self.tokenizer, self.placeholder_ids, 10, 7 if self.continuous else None)

    def hidden_states(self, batch):
        return batch["states"], None

    def predict_actions(self, hidden):
        logits = torch.zeros(hidden.shape[0], 40)
        logits[:, 1] = 1.0
        return logits.argmax(-1)

    def predict_states(self, hidden, batch):
        latest = grounding.latest_states(batch["kinds"], batch["states"])
        return latest + torch.tensor([0.0, 0.15] + [0.0] * 8)


def test_imagined_rollouts_stop_at_success(model):
    scripted = ScriptedLM(model)
    start = np.zeros((2, 10), np.float32)
    start[:, 2:4] = (0.0, 0.0)  # ball 1 (destination) at the origin
    start[:, 0:2] = (0.0, -0.5)  # ball 0 below it: needs pushes up to get behind (+y) ball 1
    for row in range(2):
        start[row, 4:] = [0.5, 0.5, -0.5, 0.5, 0.5, -0.5]
    goals = np.stack([ball_env.goal_vector(((0, 1, 0),)), ball_env.goal_vector(((0, 1, 1),))])
    imagined = imagination.imagine(scripted, ["push the red ball behind the blue ball"] * 2, start, goals, horizon=10)
    # Row 0: ball 0 climbs by 0.15 per push; the episode ends at the first push that satisfies the rule.
    first_success = next(
        t for t in range(1, 11) if ball_env.success(start[0] + np.r_[0, 0.15 * t, [0] * 8], goals[0])[0]
    )
    assert imagined.lengths[0] == first_success and imagined.terminals[0, first_success - 1]
    assert imagined.rewards[0].sum() == 1.0
    # Row 1 ("to the left of") is never reached by pushing up: it runs the whole horizon without a terminal.
    assert imagined.lengths[1] == 10 and not imagined.terminals[1].any()
    np.testing.assert_allclose(imagined.observations[0, first_success, 1], -0.5 + 0.15 * first_success, atol=1e-5)
    assert (imagined.actions[0, :first_success] == 1).all()
