"""The KALM ball-pushing environment: success rule on hand-placed balls, pushes, expert, splits, templates."""

from __future__ import annotations

import numpy as np
import pytest

from archer.kalm import data as kalm_data
from archer.kalm import env as ball_env
from archer.kalm import language
from archer.kalm.errors import GoalSplitError


def place(**balls: tuple[float, float]) -> np.ndarray:
    """A state with ball ``b<i>`` at the given (x, y); unnamed balls far away in a corner."""
    state = np.array([0.55, -0.55] * ball_env.NUM_BALLS, dtype=np.float32)
    for name, (x, y) in balls.items():
        index = int(name[1:])
        state[2 * index : 2 * index + 2] = (x, y)
    return state


@pytest.mark.parametrize(
    ("source_xy", "direction", "expected"),
    [
        ((0.0, 0.2), 0, True),  # straight behind (+y)
        ((-0.2, 0.0), 1, True),  # left (-x)
        ((0.0, -0.2), 2, True),  # front (-y)
        ((0.2, 0.0), 3, True),  # right (+x)
        ((0.0, 0.2), 2, False),  # behind is not front
        ((0.0, 0.40), 0, False),  # behind, but too far (0.40 > 0.391)
        ((0.0, 0.385), 0, True),  # just inside the distance
        ((0.2, 0.19), 0, False),  # 43.5 degrees: in the right sector, not behind
        ((0.2, 0.21), 0, True),  # 46.4 degrees: behind
        ((0.2, -0.2), 3, True),  # exactly 315 degrees: the right sector starts there (half-open)
        ((-0.2, 0.2), 0, False),  # exactly 135 degrees: the behind sector ends there (half-open)
    ],
)
def test_success_rule_on_hand_placed_balls(source_xy, direction, expected):
    state = place(b0=source_xy, b1=(0.0, 0.0))
    goal = ball_env.goal_vector(((0, 1, direction),))
    assert bool(ball_env.success(state, goal)[0]) is expected


def test_two_relation_goal_needs_both():
    goal = ball_env.goal_vector(((0, 1, 0), (2, 3, 3)))
    both = place(b0=(0.0, 0.2), b1=(0.0, 0.0), b2=(0.3, -0.3), b3=(0.1, -0.3))
    one = place(b0=(0.0, 0.2), b1=(0.0, 0.0), b2=(-0.1, -0.3), b3=(0.1, -0.3))
    assert ball_env.success(np.stack([both, one]), np.stack([goal, goal])).tolist() == [True, False]


def test_goal_vector_layout_matches_kalm_and_round_trips():
    vector = ball_env.goal_vector(((3, 4, 0),))
    # KALM's first episode: "Push the purple ball behind the cyan ball" -> [0, 0, 0, 1, 2, 0].
    assert vector[:6].tolist() == [0, 0, 0, 1, 2, 0] and not vector[6:].any()
    assert (
        language.relation_sentence((3, 4, 0), language.TRAIN_TEMPLATES[0])
        == "push the purple ball behind the cyan ball"
    )
    assert ball_env.relations_of(ball_env.goal_vector(((0, 2, 1), (3, 4, 2)))) == ((0, 2, 1), (3, 4, 2))
    with pytest.raises(GoalSplitError, match="two different balls"):
        ball_env.goal_vector(((1, 1, 0),))


def test_push_moves_only_the_chosen_ball():
    state = place(b0=(0.0, 0.0), b1=(0.3, 0.3))
    env = ball_env.BallPushEnv(motion_noise=0.0)
    rng = np.random.default_rng(0)
    moved = env.step(state[None], np.array([0 * 8 + 1]), rng)[0]  # ball 0, direction [0, 1]
    assert moved[:2] == pytest.approx([0.0, 0.15])
    assert moved[2:] == pytest.approx(state[2:])
    diagonal = env.step(state[None], np.array([1 * 8 + 7]), rng)[0]  # ball 1, direction [-0.8, -0.8]
    assert diagonal[2:4] == pytest.approx([0.3 - 0.12, 0.3 - 0.12])
    with pytest.raises(ValueError, match="0..39"):
        env.step(state[None], np.array([40]), rng)


@pytest.mark.parametrize("split", ["train", "easy", "hard"])
def test_expert_reaches_goals(split):
    env = ball_env.BallPushEnv()
    trajectories = kalm_data.collect(env, split, 60, epsilon=0.0, rng=np.random.default_rng(1))
    assert trajectories.successes.all()
    # Each successful episode ends in a state where the rule holds, and no earlier state satisfied it.
    for row in range(len(trajectories)):
        length = trajectories.lengths[row]
        assert ball_env.success(trajectories.observations[row, length], trajectories.goals[row])[0]
        assert not ball_env.success(trajectories.observations[row, :length], trajectories.goals[[row] * length]).any()


def test_noisy_expert_still_mostly_succeeds_but_differs():
    env = ball_env.BallPushEnv()
    clean = kalm_data.collect(env, "train", 100, epsilon=0.0, rng=np.random.default_rng(2))
    noisy = kalm_data.collect(env, "train", 100, epsilon=0.3, rng=np.random.default_rng(2))
    assert noisy.successes.mean() > 0.9
    assert noisy.lengths.mean() > clean.lengths.mean()


def test_splits_are_disjoint_and_compositional():
    train, easy = set(language.train_relations()), set(language.easy_relations())
    assert len(train) == 64 and len(easy) == 16 and not train & easy
    for s, t, d in easy:  # every part of a held-out relation is seen in training
        assert any(r[0] == s for r in train) and any(r[1] == t for r in train) and any(r[2] == d for r in train)
        assert sum(1 for r in train if r[:2] == (s, t)) >= 3
    for first, second in language.split_goals("hard"):
        assert first in train and second in train and len({*first[:2], *second[:2]}) == 4
    assert language.split_goals("rephrase") == language.split_goals("train")
    assert not set(language.TRAIN_TEMPLATES) & set(language.REPHRASE_TEMPLATES)


def test_goal_outside_the_splits_is_refused():
    with pytest.raises(GoalSplitError, match="not in the 'train' split"):
        language.check_goal_in_split(language.split_goals("easy")[0], "train")
    with pytest.raises(GoalSplitError, match="unknown split 'medium'"):
        language.split_goals("medium")


def test_instructions_use_the_split_templates_and_vocabulary():
    rng = np.random.default_rng(0)
    vocabulary = set(language.vocabulary())
    for split in language.SPLITS:
        for goal in language.split_goals(split)[:5]:
            text = language.instruction(goal, split, rng)
            assert set(text.split()) <= vocabulary
            assert text.count(" and ") == (len(goal) - 1)


def test_goal_encodings():
    goals = language.goal_vectors([((0, 1, 2),), ((3, 4, 0), (1, 2, 3))])
    relations = language.encode_goals(goals, ["", ""], "relations")
    assert relations.shape == (2, 28)
    assert np.flatnonzero(relations[0]).tolist() == [0, 5 + 1, 10 + 2]
    assert np.flatnonzero(relations[1]).tolist() == [3, 5 + 4, 10 + 0, 14 + 1, 14 + 5 + 2, 14 + 10 + 3]
    words = language.encode_goals(goals, ["push the red ball", "the the"], "words")
    assert words[1][language.vocabulary().index("the")] == 2
