"""dev/frozenlake_headroom.py: exact success of FrozenLake's players against hand-solved maps."""

from __future__ import annotations

import pytest

from tests.conftest import compose_run, load_dev_script

# S at the top left, the goal to its right, two frozen cells below.
TWO_BY_TWO = ("SG", "FF")


def test_policy_evaluation_matches_hand_solved_two_by_two_maps() -> None:
    headroom = load_dev_script("frozenlake_headroom")
    evaluate = headroom.policy_success
    # Without slips, random moves: 1/4 straight to the goal; 2/4 bump a wall and stay, then 1/4 again; going down
    # leaves the goal two moves away.
    assert evaluate(TWO_BY_TWO, 1, False, headroom.random_moves) == pytest.approx(0.25)
    assert evaluate(TWO_BY_TWO, 2, False, headroom.random_moves) == pytest.approx(0.25 + 0.5 * 0.25)
    assert evaluate(TWO_BY_TWO, 1, False, headroom.noisy_solver(0.0)) == pytest.approx(1.0)
    # Slippery: "right" goes right, down or up (a bump) with 1/3 each.
    assert evaluate(TWO_BY_TWO, 1, True, headroom.noisy_solver(0.0)) == pytest.approx(1 / 3)
    # Half the solver's move, half a random one (random moves on the slippery lake: 1/4 at the first move).
    assert evaluate(TWO_BY_TWO, 1, True, headroom.noisy_solver(0.5)) == pytest.approx(0.5 / 3 + 0.5 / 4)


def test_headroom_orders_the_players_on_the_evaluation_maps() -> None:
    headroom = load_dev_script("frozenlake_headroom")
    cfg = compose_run("archer_frozenlake", ["eval.num_episodes=6", "env.data_epsilons=[0.0,1.0]"])
    env = headroom.make_frozen_lake_env(cfg.env, seed=0)
    games = headroom.EvalGames.from_config(cfg.eval, env.evaluation_pool()).greedy
    figures = headroom.headroom(cfg.env, games)
    random, solver = figures["random moves"], figures["BFS solver, epsilon 0"]
    # A solver diluted all the way is random play; the data's mix of the two is their mean.
    assert figures["BFS solver, epsilon 1"] == pytest.approx(random)
    assert figures["the data's mix (one epsilon per game)"] == pytest.approx((random + solver) / 2)
    assert random < solver <= figures["optimal (value iteration)"]
    # Uniform moves spread evenly over the four directions whether or not the ice slips.
    unslipped = headroom.headroom(compose_run("archer_frozenlake", ["env.is_slippery=false"]).env, games)
    assert unslipped["random moves"] == pytest.approx(random)
    assert unslipped["BFS solver, epsilon 0"] == pytest.approx(1.0)


def test_refuses_another_game() -> None:
    headroom = load_dev_script("frozenlake_headroom")
    with pytest.raises(SystemExit, match="FrozenLake's"):
        headroom.main(["--config-name", "archer_sokoban"])
