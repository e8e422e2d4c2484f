"""dev/probe_critic.py end to end on tiny archer_20q, archer_sokoban and archer_frozenlake runs: the critic's
figures against exact move values, the policy's Monte Carlo move values and the critic's agreement with them, the
policy's own ranking of the moves, and the refusals."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from archer.envs.twenty_questions.oracle import names_word, parse_question
from archer.envs.twenty_questions.questioners import guess_phrasings
from archer.envs.twenty_questions.words import SUBSET_WORDS
from tests.conftest import TINY_RUN_OVERRIDES, load_dev_script
from tests.integration.test_training import ARCHER_TINY, tiny_archer

pytestmark = pytest.mark.integration


def test_probe_script_scores_a_finished_run_and_its_policys_returns(tmp_path: Path) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    tiny_archer(run, cache, *ARCHER_TINY, "algorithm.v_target_pool=16").fit()
    probe = load_dev_script("probe_critic")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={cache}",
        "algorithm.num_iterations=2",
        *ARCHER_TINY,
        "algorithm.v_target_pool=16",
        f"run_dir={run}",
    ]
    out = tmp_path / "probe.json"
    figures = probe.main(
        [
            "--config-name",
            "archer_20q",
            *overrides,
            "--states",
            "4",
            "--policy-returns",
            "1",
            "--margin",
            "0",
            "--score-policy",
            "--json",
            str(out),
        ]
    )
    assert figures["probe/states"] == 4 and figures["truth/states"] == 4
    # The policy's own ranking of the same moves at the same states (log-probabilities, never above 0).
    assert figures["policy_probe/states"] == 4 and figures["policy_optimal/states"] == 4
    assert 0.0 <= figures["policy_probe/repeat_below_all_wrong"] <= 1.0
    assert 0.0 <= figures["policy_optimal/pair_agreement"] <= 1.0
    for key in ("probe/repeat_below_all_wrong", "probe/split_above_repeat", "truth/repeat_below_all_wrong"):
        assert 0.0 <= figures[key] <= 1.0
    # The policy's Monte Carlo returns ranked against the exact values at the same states.
    assert figures["truth_optimal/states"] == 4 and 0.0 <= figures["truth_optimal/pair_agreement"] <= 1.0
    # The 10-word subset has exact values: every probe state ranks its repeat strictly below the other guesses.
    assert figures["optimal/states"] == 4 and 0.0 <= figures["optimal/pair_agreement"] <= 1.0
    assert 0.0 < figures["optimal/best_by_chance"] < 1.0 and figures["optimal/regret_mean"] >= 0.0
    # A barely trained policy may lose every 4-turn game whatever the move: then no pair is ranked (nan).
    pair = figures.pop("probe/pair_agreement")
    assert math.isnan(pair) or 0.0 <= pair <= 1.0
    written = json.loads(out.read_text())
    assert math.isnan(pair) == math.isnan(written.pop("probe/pair_agreement")) and written == figures
    with pytest.raises(SystemExit):
        probe.main(["--config-name", "archer_20q", *overrides, "--policy-returns", "-1"])
    with pytest.raises(SystemExit):
        probe.main(["--config-name", "archer_20q", *overrides[:-1], f"run_dir={tmp_path / 'none'}"])


def test_probe_script_fits_an_untrained_critic_to_optimal_values(tmp_path: Path) -> None:
    probe = load_dev_script("probe_critic")
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}", *ARCHER_TINY, f"run_dir={tmp_path / 'run'}"]
    args = ["--config-name", "archer_20q", *overrides, "--states", "4", "--fit-optimal", "6", "--fit-steps", "4"]
    figures = probe.main([*args, "--fit-every", "2", "--fit-targets", "sampled"])
    assert figures["probe/states"] == 4 and figures["fit/states"] == 6
    # Each state: the repeat, a guess of each of the 10 words (one of them the repeat's word), questions.
    assert figures["fit/examples"] >= 6 * 10 and figures["fit/loss"] >= 0.0
    for key in ("probe/repeat_below_all_wrong", "probe/split_above_repeat"):
        assert 0.0 <= figures[key] <= 1.0
    assert not (tmp_path / "run").exists()  # no run is needed, and none is written
    bootstrapped = probe.main([*args, "--fit-targets", "bootstrapped"])
    assert bootstrapped["fit/examples"] == figures["fit/examples"] and bootstrapped["fit/loss"] >= 0.0
    # CHAI's target: the best of 2 samples of the starting policy at each next state, drawn once.
    best_of_two = probe.main([*args, "--fit-targets", "policy", "--fit-policy-samples", "2", "--fit-sample-once"])
    assert best_of_two["fit/examples"] == figures["fit/examples"] and best_of_two["fit/loss"] >= 0.0
    double = probe.main([*args, "--fit-targets", "bootstrapped", "--fit-double-q"])
    assert double["fit/examples"] == figures["fit/examples"] and double["fit/loss"] >= 0.0
    # Two moves per state, as a replay buffer holds, at distinct states.
    sparse = probe.main([*args, "--fit-moves", "2"])
    assert sparse["fit/examples"] == 2 * sparse["fit/states"] and 0 < sparse["fit/states"] <= 6
    # --fit-sample-once and --fit-policy-samples 2 without --fit-targets policy; no sample at all.
    for wrong in (
        ["--fit-moves", "-1"],
        ["--fit-sample-once"],
        ["--fit-policy-samples", "2"],
        ["--fit-targets", "policy", "--fit-policy-samples", "0"],
        ["--fit-double-q"],  # the exact targets take no max
        ["--fit-targets", "policy", "--fit-double-q"],  # one sample: nothing to pick among
    ):
        with pytest.raises(SystemExit):
            probe.main([*args, *wrong])
    with pytest.raises(SystemExit):
        probe.main([*args, "--online"])
    with pytest.raises(SystemExit, match="words"):
        probe.main([*args, "env=twenty_questions"])


def test_bootstrapped_targets_are_r_plus_gamma_times_the_best_next_move_by_hand() -> None:
    import random

    from torch import nn

    from archer.envs.registry import make_env, make_oracle
    from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig

    class Table(nn.Module):
        """min(Q1, Q2) looked up by move: guesses -2 (a pen -0.5), questions -3; Q2 = Q1 + 1, so min is Q1."""

        def q_values(self, observations, actions):
            q1 = torch.tensor(
                [-0.5 if a == "Is it a pen?" else -2.0 if a.startswith("Is it a") else -3.0 for a in actions]
            )
            return q1, q1 + 1.0

    probe = load_dev_script("probe_critic")
    cfg = TwentyQuestionsEnvConfig(words="subset10")
    env = make_env(cfg, seed=0, oracle=make_oracle(cfg))
    targets = probe.bootstrapped_targets(env, Table(), 0.9, random.Random(0))
    # "Is it a dog?" from the opening: a win (0) when the dog is hidden, else -1 + 0.9 * max(-0.5, ...) = -1.45.
    draws = targets([("Questions:\n", "Is it a dog?")] * 400)
    assert {round(value, 6) for value in draws} == {0.0, -1.45}
    assert 0.04 < draws.count(0.0) / 400 < 0.18  # one word in ten
    # After "Is it alive? Yes." only the dog is possible: the guess always wins.
    assert targets([("Questions:\nIs it alive? Yes.\n", "Is it a dog?")] * 5) == [0.0] * 5
    # A question never wins: -1 + 0.9 * -0.5 whatever the answer.
    assert targets([("Questions:\n", "Is it alive?")] * 5) == [pytest.approx(-1.45)] * 5
    # With a policy's samples, the next state is scored at the sampled move, not the best: -1 + 0.9 * -3 = -3.7.
    asked = []

    def policy(observations):
        asked.extend(observations)
        return [["Does it bark?"]] * len(observations)

    sampled = probe.bootstrapped_targets(env, Table(), 0.9, random.Random(0), policy)
    assert sampled([("Questions:\n", "Does it have wool?")] * 3) == [pytest.approx(-3.7)] * 3
    assert asked == ["Questions:\nDoes it have wool? No.\n"] * 3  # the next observations, as the env shows them

    # With k samples, the best of them by the table (CHAI's max backup): a pen (-0.5) over a question (-3), so
    # -1 + 0.9 * -0.5 = -1.45; a dog (-2) over a question: -1 + 0.9 * -2 = -2.8.
    def policy_of_two(observations):
        return [["Does it bark?", "Is it a pen?"], ["Is it a dog?", "Does it bark?"]][: len(observations)]

    best_of_two = probe.bootstrapped_targets(env, Table(), 0.9, random.Random(0), policy_of_two)
    assert best_of_two([("Questions:\n", "Is it alive?"), ("Questions:\n", "Does it have wool?")]) == [
        pytest.approx(-1.45),
        pytest.approx(-2.8),
    ]
    # Double Q: both heads pick the pen; each is valued by the other head, (Q2 + Q1) / 2 = (0.5 - 0.5) / 2 = 0,
    # so -1 + 0.9 * 0 = -1.0 (over min(Q1, Q2) it would be -1.45).
    double = probe.bootstrapped_targets(env, Table(), 0.9, random.Random(0), double_q=True)
    assert double([("Questions:\n", "Is it alive?")] * 3) == [pytest.approx(-1.0)] * 3


def test_cross_head_max_values_each_heads_pick_by_the_other_head() -> None:
    probe = load_dev_script("probe_critic")
    # Head 1 picks move 0 (3), which head 2 values 0; head 2 picks move 1 (2), which head 1 values 0: mean 0.
    # The max over min(Q1, Q2) would be move 2's 1, the move neither head prefers.
    assert probe.cross_head_max([3.0, 0.0, 1.0], [0.0, 2.0, 1.0]) == 0.0
    # Agreeing heads: the shared pick, valued by each other: (4 + 2) / 2.
    assert probe.cross_head_max([2.0, 1.0], [4.0, 0.0]) == 3.0


def test_drawn_once_asks_the_policy_once_per_distinct_state() -> None:
    probe = load_dev_script("probe_critic")
    asked: list[list[str]] = []

    def policy(observations: list[str]) -> list[str]:
        asked.append(list(observations))
        return [f"move {len(asked)} at {o}" for o in observations]

    once = probe.drawn_once(policy)
    assert once(["a", "b", "a"]) == ["move 1 at a", "move 1 at b", "move 1 at a"]
    assert once(["b", "c"]) == ["move 1 at b", "move 2 at c"]
    assert once(["c", "a"]) == ["move 2 at c", "move 1 at a"]
    assert asked == [["a", "b"], ["c"]]


@pytest.mark.parametrize(
    ("name", "source"),
    [
        pytest.param(
            "archer_frozenlake",
            "script",
            marks=pytest.mark.skipif(importlib.util.find_spec("gymnasium") is None, reason="needs the grid extra"),
        ),
        ("archer_sokoban", "policy"),  # the scripted source's states: tests/dev/test_grid_probe.py
    ],
)
def test_probe_script_ranks_a_grid_runs_moves_against_their_exact_values(
    name: str, source: str, tmp_path: Path
) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    # The raw tiny policy (the probe needs a run, not a good one), writing moves of a few tokens.
    extra = ["pretrain=null", "eval.every_iters=0", "model.policy.max_new_tokens=4"]
    tiny_archer(run, cache, *ARCHER_TINY, *extra, config=name).fit()
    probe = load_dev_script("probe_critic")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={cache}",
        "algorithm.num_iterations=2",
        *ARCHER_TINY,
        *extra,
        f"run_dir={run}",
    ]
    out = tmp_path / "probe.json"
    args = [
        "--config-name",
        name,
        *overrides,
        "--states",
        "6",
        "--states-from",
        source,
        "--show",
        "1",
        "--score-policy",
        "--json",
        str(out),
    ]
    figures = probe.main(args)
    assert figures["policy_optimal/states"] == 6 and 0.0 <= figures["policy_optimal/best_move"] <= 1.0
    # Games are played in batches of env.batch_size=4; each meets a state at least (its start), so two suffice.
    assert figures["optimal/states"] == 6 and figures["optimal/games"] in (4, 8)
    for key in ("optimal/pair_agreement", "optimal/best_move"):
        assert 0.0 <= figures[key] <= 1.0
    # Every state has moves of different values: not every move is a best one.
    assert 0.0 < figures["optimal/best_by_chance"] < 1.0 and figures["optimal/regret_mean"] >= 0.0
    assert json.loads(out.read_text()) == figures


def test_probe_script_fits_an_untrained_grid_critic_to_exact_values_beside_a_linear_readout(tmp_path: Path) -> None:
    probe = load_dev_script("probe_critic")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        *ARCHER_TINY,
        "pretrain=null",
        f"run_dir={tmp_path / 'run'}",
    ]
    args = ["--config-name", "archer_sokoban", *overrides, "--states", "4", "--fit-optimal", "6", "--fit-steps", "4"]
    figures = probe.main([*args, "--fit-every", "2"])
    # The four moves at each of 6 fitted positions, none of them one of the 4 probe positions.
    assert figures["fit/states"] == 6 and figures["fit/examples"] == 24 and figures["fit/loss"] >= 0.0
    for prefix in ("optimal", "readout"):
        assert figures[f"{prefix}/states"] == 4 and 0.0 <= figures[f"{prefix}/pair_agreement"] <= 1.0
        assert 0.0 < figures[f"{prefix}/best_by_chance"] < 1.0
    assert 0.0 <= figures["fit/train_pair_agreement"] <= 1.0 and figures["fit/value_variance"] > 0.0
    assert not (tmp_path / "run").exists()
    sparse = probe.main([*args, "--fit-moves", "2"])
    assert sparse["fit/examples"] == 12
    for wrong in (["--fit-targets", "sampled"], ["--readout-penalty", "-1"]):
        with pytest.raises(SystemExit):
            probe.main([*args, *wrong])


def test_probe_script_refuses_a_game_without_exact_values_or_a_critic_and_twenty_questions_options() -> None:
    probe = load_dev_script("probe_critic")
    for config, option in (("archer_city", []), ("bc_sokoban", []), ("archer_sokoban", ["--policy-returns", "1"])):
        with pytest.raises(SystemExit):
            probe.main(["--config-name", config, *TINY_RUN_OVERRIDES, *option])


def test_scripted_act_finishes_games_as_the_cloning_datas_players_would() -> None:
    probe = load_dev_script("probe_critic")
    words = SUBSET_WORDS
    # Every word but the first refuted by a guess: a near-optimal player (skill 1) names the one left.
    refuted = "".join(f"{guess_phrasings(word)[0]} No.\n" for word in words[1:])
    act = probe.scripted_act(SimpleNamespace(words=words), [1.0], seed=0)
    (move,) = act([f"Questions:\n{refuted}"])
    assert names_word(move, words[0])
    # At the opening a mix of players asks something the oracle reads, one move per observation.
    mixed = probe.scripted_act(SimpleNamespace(words=words), [0.1, 0.25], seed=0)
    moves = mixed(["Questions:\n"] * 5)
    assert len(moves) == 5 and all(parse_question(move).kind in ("property", "guess") for move in moves)
    with pytest.raises(SystemExit):  # the players finish --policy-returns' games: nothing to finish without it
        probe.main(["--config-name", "archer_20q", *TINY_RUN_OVERRIDES, "--returns-skill", "0.25"])
