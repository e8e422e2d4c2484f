"""scripts/probe_critic.py end to end on a tiny archer_20q run: the critic's figures, the policy's Monte Carlo
move values and the critic's agreement with them, and the refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from archer.data.trajectory import TransitionBatch
from archer.envs.twenty_questions.optimal import OptimalValues
from archer.envs.twenty_questions.probe import history_turns
from archer.envs.twenty_questions.words import SUBSET_WORDS
from tests.conftest import TINY_RUN_OVERRIDES, load_script
from tests.integration.test_training import ARCHER_TINY, tiny_archer

pytestmark = pytest.mark.integration


def test_probe_script_scores_a_finished_run_and_its_policys_returns(tmp_path: Path) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    tiny_archer(run, cache, *ARCHER_TINY, "algorithm.v_target_pool=16").fit()
    probe = load_script("probe_critic.py")
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
            "--json",
            str(out),
        ]
    )
    assert figures["probe/states"] == 4 and figures["truth/states"] == 4
    for key in ("probe/repeat_below_all_wrong", "probe/split_above_repeat", "truth/repeat_below_all_wrong"):
        assert 0.0 <= figures[key] <= 1.0
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
    probe = load_script("probe_critic.py")
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
    # Two moves per state, as a replay buffer holds, at distinct states.
    sparse = probe.main([*args, "--fit-moves", "2"])
    assert sparse["fit/examples"] == 2 * sparse["fit/states"] and 0 < sparse["fit/states"] <= 6
    for wrong in (["--fit-moves", "-1"], ["--fit-sample-once"]):  # the second without --fit-targets policy
        with pytest.raises(SystemExit):
            probe.main([*args, *wrong])
    with pytest.raises(SystemExit):
        probe.main([*args, "--online"])
    with pytest.raises(SystemExit, match="words"):
        probe.main([*args, "env=twenty_questions"])


def test_bootstrapped_targets_are_r_plus_gamma_times_the_best_next_move_by_hand() -> None:
    import random

    import torch
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

    probe = load_script("probe_critic.py")
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
        return ["Does it bark?"] * len(observations)

    sampled = probe.bootstrapped_targets(env, Table(), 0.9, random.Random(0), policy)
    assert sampled([("Questions:\n", "Does it have wool?")] * 3) == [pytest.approx(-3.7)] * 3
    assert asked == ["Questions:\nDoes it have wool? No.\n"] * 3  # the next observations, as the env shows them


def test_drawn_once_asks_the_policy_once_per_distinct_state() -> None:
    probe = load_script("probe_critic.py")
    asked: list[list[str]] = []

    def policy(observations: list[str]) -> list[str]:
        asked.append(list(observations))
        return [f"move {len(asked)} at {o}" for o in observations]

    once = probe.drawn_once(policy)
    assert once(["a", "b", "a"]) == ["move 1 at a", "move 1 at b", "move 1 at a"]
    assert once(["b", "c"]) == ["move 1 at b", "move 2 at c"]
    assert once(["c", "a"]) == ["move 2 at c", "move 1 at a"]
    assert asked == [["a", "b"], ["c"]]


def test_fit_buffer_targets_by_hand() -> None:
    fit = load_script("fit_buffer_critic.py")
    # Three words, gamma 0.5 (tests/unit/test_optimal_values.py): V*({dog, banana, truck}) = -5/6, V* of two
    # words -0.5, of one 0.
    words = [word for word in SUBSET_WORDS if word.name in ("dog", "banana", "truck")]
    values = OptimalValues(words, gamma=0.5)
    start = "Questions:\n"
    not_animal = start + "Is it an animal? No.\n"
    batch = TransitionBatch(
        observations=[start, start, not_animal],
        actions=["Is it an animal?", "Is it a dog?", "Is it a truck?"],
        rewards=torch.tensor([-1.0, 0.0, -1.0]),
        next_observations=[not_animal, start + "Is it a dog? Yes.\n", not_animal + "Is it a truck? No.\n"],
        terminated=torch.tensor([0.0, 1.0, 0.0]),
        truncated=torch.tensor([0.0, 0.0, 1.0]),
        mc_returns=torch.zeros(3),
        episode_returns=torch.zeros(3),
    )
    # A split to two words: -1 + 0.5 * -0.5; a win: 0, no bootstrap; a cut by the turn limit: no bootstrap.
    torch.testing.assert_close(fit.next_value_targets(values, batch, 0.5), torch.tensor([-1.25, 0.0, -1.0]))
    state_values = fit.state_value_targets(values, batch.observations)
    torch.testing.assert_close(state_values, torch.tensor([-5 / 6, -5 / 6, -0.5]))
    # Q*: the question -1 + 0.5 * (2/3) * -0.5; the guess -5/6; a guess among two words -0.5.
    expected = torch.tensor([-1 + 0.5 * (2 / 3) * -0.5, -5 / 6, -0.5])
    torch.testing.assert_close(fit.exact_targets(values, batch.observations, batch.actions), expected)


def test_script_moves_split_the_words_still_possible_or_guess_the_last() -> None:
    fit = load_script("fit_buffer_critic.py")
    words = [word for word in SUBSET_WORDS if word.name in ("dog", "banana", "truck")]
    values = OptimalValues(words, gamma=0.5)
    start = "Questions:\n"
    states = [start + "Is it an animal? Yes.\n", start + "Is it an animal? No.\n"]
    moves = fit.script_moves(states, np.array([4, 9]), words, seed=0)
    assert list(moves) == [4, 9] and all(len(drawn) == 1 for drawn in moves.values())
    # Only dog is left after "an animal? Yes": the player guesses it, which wins (Q* 0).
    dog_only = values.possible(history_turns(states[0]))
    assert dog_only.bit_count() == 1 and values.move_value(dog_only, moves[4][0]) == 0.0
    # banana and truck are left after "No": the player splits them (it guesses only when one word is left), worth
    # -1 + 0.5 * 0 = -1 (each half a single word, V* 0); a move that rules nothing out is -1 + 0.5 * -0.5 = -1.25.
    two = values.possible(history_turns(states[1]))
    assert two.bit_count() == 2 and values.move_value(two, moves[9][0]) == -1.0
    assert values.move_value(two, "Is it a dog?") == -1.25


class _TableCritic:
    """A target critic whose ``Q_i(s, a)`` is a table entry."""

    def __init__(self, table: dict[tuple[str, str], tuple[float, float]]) -> None:
        self.table = table

    def q_values(self, observations: list[str], actions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.tensor([self.table[pair] for pair in zip(observations, actions, strict=True)])
        return rows[:, 0], rows[:, 1]


def test_sampled_value_targets_average_or_take_the_best_sample_per_head() -> None:
    fit = load_script("fit_buffer_critic.py")
    table = {("s", "a"): (1.0, -2.0), ("s", "b"): (3.0, 0.0), ("t", "c"): (-1.0, 5.0), ("t", "d"): (-4.0, 1.0)}
    samples = {7: ["a", "b"], 2: ["d", "c"]}  # buffer rows 7 (state s) and 2 (state t), two moves drawn each
    rows = np.array([7, 2, 7])
    mean = fit.sampled_value_targets(_TableCritic(table), ["s", "t", "s"], rows, samples, "mean")
    # Head 1: s (1 + 3) / 2 = 2, t (-4 - 1) / 2 = -2.5; head 2: s (-2 + 0) / 2 = -1, t (1 + 5) / 2 = 3.
    torch.testing.assert_close(mean[0], torch.tensor([2.0, -2.5, 2.0]))
    torch.testing.assert_close(mean[1], torch.tensor([-1.0, 3.0, -1.0]))
    best = fit.sampled_value_targets(_TableCritic(table), ["s", "t", "s"], rows, samples, "max")
    # Each head takes its own best sample: head 1 s 3, t -1; head 2 s 0, t 5.
    torch.testing.assert_close(best[0], torch.tensor([3.0, -1.0, 3.0]))
    torch.testing.assert_close(best[1], torch.tensor([0.0, 5.0, 0.0]))


def test_fit_buffer_script_fits_each_target_on_a_finished_runs_buffer(tmp_path: Path) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    tiny_archer(run, cache, *ARCHER_TINY, "algorithm.v_target_pool=16").fit()
    fit = load_script("fit_buffer_critic.py")
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", *ARCHER_TINY, "model.critic.turns.repeat_similarity=true"]
    base = ["--config-name", "archer_20q", *overrides]
    args = [*base, "--buffer-from", str(run), "--states", "3", "--steps", "2", "--max-games", "32"]
    for targets in fit.TARGETS:
        out = tmp_path / f"{targets}.json"
        figures = fit.main([*args, "--every", "1", "--targets", targets, "--json", str(out)])
        assert figures["fit/step"] == 2 and figures["fit/loss"] >= 0.0 and "script/split_above_repeat" in figures
        for kind in {key.split("/")[0] for key in figures} - {"fit"}:  # "policy" when its games refuted a guess
            for key in ("repeat_below_all_wrong", "split_above_repeat"):
                assert 0.0 <= figures[f"{kind}/{key}"] <= 1.0
            # V's ranking of next states: only where the V heads are trained.
            assert (f"{kind}/next_repeat_below_all_wrong" in figures) == (targets in fit.TD_TARGETS)
        assert json.loads(out.read_text()) == figures
    with pytest.raises(SystemExit):
        fit.main([*base, "--buffer-from", str(tmp_path / "none"), "--targets", "exact"])
    with pytest.raises(SystemExit):
        fit.main([*args, "--targets", "exact", "--steps", "0"])
    with pytest.raises(SystemExit):  # samples shape only the policy's V target
        fit.main([*args, "--targets", "state-value", "--samples", "2"])
    figures = fit.main([*args, "--targets", "policy-value", "--samples", "2", "--reduce", "max"])
    assert figures["fit/step"] == 2 and 0.0 <= figures["script/next_repeat_below_all_wrong"] <= 1.0
    # The run's target schedule is the fit's: hard copies every second step.
    hard = ["algorithm.critic.tau=1.0", "algorithm.critic.target_update_period=2"]
    figures = fit.main([*args, "--targets", "replay-value", *hard])
    assert figures["fit/step"] == 2 and 0.0 <= figures["script/next_repeat_below_all_wrong"] <= 1.0
