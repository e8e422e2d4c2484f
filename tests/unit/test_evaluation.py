"""The fixed evaluation game lists, the evaluation metrics' names and the repeated-action count."""

from __future__ import annotations

from collections import Counter

import pytest

from archer.config import EvalConfig
from archer.evaluation import EvalResult, evaluation_game_ids, sampled_evaluation_game_ids


def test_sampled_games_cycle_through_the_evaluation_games_in_a_seeded_order() -> None:
    cfg = EvalConfig(sampled_episodes=10, seed=7)
    ids = sampled_evaluation_game_ids(cfg, range(4))
    assert len(ids) == 10
    assert sorted(ids[:4]) == [0, 1, 2, 3]  # one pass over every game first
    assert ids[4:8] == ids[:4] and ids[8:] == ids[:2]  # then the same order again
    assert sorted(Counter(ids).values()) == [2, 2, 3, 3]  # every game as often as another, to within one
    assert sampled_evaluation_game_ids(cfg, range(4)) == ids  # fixed by the seed
    assert sampled_evaluation_game_ids(EvalConfig(sampled_episodes=0), range(4)) == []
    # With num_episodes set, the sampled games cycle through the greedy evaluation's games.
    drawn = EvalConfig(num_episodes=3, seed=7, sampled_episodes=6)
    assert sorted(sampled_evaluation_game_ids(drawn, range(100))[:3]) == sorted(evaluation_game_ids(drawn, range(100)))


def test_sampled_metrics_mirror_the_greedy_names() -> None:
    result = EvalResult(returns=[-3.0, -5.0], successes=[True, False], lengths=[3, 5])
    # mean (-3 - 5) / 2 = -4; population std |(-3) - (-4)| = 1; one win in two; mean length 4.
    expected = {"return_mean": -4.0, "return_std": 1.0, "success_rate": 0.5, "length_mean": 4.0, "episodes": 2.0}
    assert result.metrics() == pytest.approx({f"eval/{k}": v for k, v in expected.items()})
    assert result.metrics(kind="sampled_") == pytest.approx({f"eval/sampled_{k}": v for k, v in expected.items()})


def test_repeated_actions_are_counted_per_game_over_all_turns() -> None:
    from archer.data.trajectory import Trajectory
    from archer.evaluation import repeated_turns

    # "banana" twice more after its first asking (spaces aside), "cat" once more: 3 repeats in 6 turns.
    looping = [
        "Is it a banana?",
        "Is it a cat?",
        " Is it a banana?",
        "Is it a banana?\n",
        "Is it a cat?",
        "Is it red?",
    ]
    assert repeated_turns(looping) == 3 and repeated_turns(["a", "b"]) == 0 and repeated_turns([]) == 0

    def game(actions: list[str]) -> Trajectory:
        n = len(actions)
        return Trajectory([f"o{i}" for i in range(n + 1)], actions, [-1.0] * n, terminated=True)

    # Repeats are counted within a game only: "Is it red?" in both games repeats nothing. 3 of 6 + 2 turns.
    result = EvalResult.from_trajectories([game(looping), game(["Is it red?", "Is it a dog?"])])
    assert result.repeats == [3, 0]
    assert result.metrics()["eval/repeated_action_fraction"] == pytest.approx(3 / 8)
    assert result.metrics(kind="sampled_")["eval/sampled_repeated_action_fraction"] == pytest.approx(3 / 8)


def test_greedy_evaluation_replays_the_same_slips_every_time() -> None:
    """FrozenLake's ice is random: each greedy evaluation must draw the same slips (and leave the env's stream as it
    was), or an evaluation curve would move with the dice rather than the policy."""
    pytest.importorskip("gymnasium")
    from archer.envs.grid_games.frozen_lake import FrozenLakeEnv
    from archer.evaluation import EvalGames, evaluate

    env = FrozenLakeEnv(batch_size=8, max_turns=10, is_slippery=True, seed=0)
    games = EvalGames(greedy=list(range(16)), sampled=[], seed=5)

    def always_right(observations: list[str]) -> list[str]:
        return ["right"] * len(observations)

    state = env.get_rng_state()
    first = evaluate(env, games, greedy_act=always_right).greedy
    assert env.get_rng_state() == state
    env.reset(count=8)  # the stream moves on between evaluations (as training's never does here, but could)
    second = evaluate(env, games, greedy_act=always_right).greedy
    assert first.returns == second.returns and first.lengths == second.lengths
    # The slips do happen: the same moves on the same maps end at different lengths than without slips.
    calm = FrozenLakeEnv(batch_size=8, max_turns=10, is_slippery=False, seed=0)
    assert evaluate(calm, games, greedy_act=always_right).greedy.lengths != first.lengths
