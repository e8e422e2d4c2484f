"""The Twenty Questions critic probe: states played by the rules, and fractions computed from hand-set scores."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch
from critic_probe import (
    ValuedState,
    fit_to_move_values,
    optimal_ranking,
    pairwise_agreement,
    policy_figures,
    policy_scorer,
    probe_critic,
    probe_scores,
    twenty_questions_valued,
)
from torch import nn

from archer.data.trajectory import Trajectory
from archer.envs.oracles import INVALID, NO, YES
from archer.envs.registry import make_env, make_oracle
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.envs.twenty_questions.env import names_word_last_word
from archer.envs.twenty_questions.optimal import OptimalValues
from archer.envs.twenty_questions.oracle import parse_question
from archer.envs.twenty_questions.probe import (
    ProbeState,
    history_turns,
    policy_move_returns,
    probe_states,
    probe_states_from_games,
)
from archer.envs.twenty_questions.questioners import GreedyQuestioner
from archer.envs.twenty_questions.words import SUBSET_WORDS
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy


@pytest.fixture(scope="module")
def env():
    cfg = TwentyQuestionsEnvConfig(name="twenty_questions", words="subset10", batch_size=4)
    return make_env(cfg, seed=0, oracle=make_oracle(cfg))


def history_pairs(observation: str) -> list[tuple[str, str]]:
    lines = observation.splitlines()[1:]
    return [(line.rsplit(" ", 1)[0], line.rsplit(" ", 1)[1]) for line in lines]


def test_probe_states_follow_the_rules(env) -> None:
    states = probe_states(env, 30, seed=3)
    assert len(states) == 30
    assert probe_states(env, 30, seed=3) == states  # deterministic
    assert [s.secret for s in states[:10]] == [w.name for w in env.words]  # hidden words in turn
    knowledge = GreedyQuestioner(words=env.words)
    by_name = {w.name: w for w in env.words}
    for state in states:
        assert state.observation.startswith("Questions:\n")
        assert state.observation.endswith(f"{state.repeat} {NO}\n")
        pairs = history_pairs(state.observation)
        assert 1 <= len(pairs) <= 3
        # Every answer in the history is the oracle's answer for the hidden word.
        secret = by_name[state.secret]
        assert [env.oracle.answer([secret], [q])[0] for q, _ in pairs] == [a for _, a in pairs]
        possible = {w.name for w in knowledge.candidates(pairs)}
        assert state.secret in possible
        guessed = {next(iter(parse_question(g).words)) for g in state.other_wrong_guesses}
        refuted = next(iter(parse_question(state.repeat).words))
        assert guessed == possible - {state.secret}
        assert refuted not in guessed and state.secret not in guessed
        # Each splitting question gets both answers among the words still possible.
        for question in state.splitting_questions:
            answers = {env.oracle.answer([by_name[name]], [question])[0] for name in possible}
            assert answers == {YES, NO}, question


def test_probe_states_refuse_bad_arguments(env) -> None:
    with pytest.raises(ValueError, match="num_states must be positive"):
        probe_states(env, 0)


class TableCritic(nn.Module):
    """A critic whose twin Q values are looked up by action text: Q1 from ``q1``, Q2 = Q1 + ``offset``."""

    def __init__(self, q1: dict[str, float], offset: dict[str, float] | None = None) -> None:
        super().__init__()
        self.table = q1
        self.offset = offset or {}

    def q_values(self, observations: list[str], actions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        q1 = torch.tensor([self.table[a] for a in actions])
        return q1, q1 + torch.tensor([self.offset.get(a, 0.0) for a in actions])


def test_probe_fractions_and_gaps_from_hand_set_scores() -> None:
    first = ProbeState("h1", "dog", "R", ("G1", "G2"), ("S1", "S2"))
    second = ProbeState("h2", "pen", "R2", ("G3",), ("S3",))
    # State 1: repeat -3 is below both guesses (-1, -2) and below S1 (-2.5) but above S2 (-4).
    # State 2: repeat -1; the guess G3 has Q1 -0.5 but Q2 = -0.5 - 1 = -1.5, so min Q = -1.5 < -1: not below all.
    critic = TableCritic(
        {"R": -3.0, "G1": -1.0, "G2": -2.0, "S1": -2.5, "S2": -4.0, "R2": -1.0, "G3": -0.5, "S3": 0.0},
        offset={"G3": -1.0},
    )
    figures = probe_critic(critic, [first, second])
    assert figures["probe/repeat_below_all_wrong"] == pytest.approx(0.5)
    assert figures["probe/split_above_repeat"] == pytest.approx(1.0)  # S1 > -3, S3 > -1
    assert figures["probe/any_split_above_repeat"] == pytest.approx(2 / 3)  # S1 yes, S2 no, S3 yes
    # Gaps: state 1 mean(-1, -2) - (-3) = 1.5, state 2 -1.5 - (-1) = -0.5 -> 0.5; splits 0.5 and 1 -> 0.75.
    assert figures["probe/repeat_gap_mean"] == pytest.approx(0.5)
    assert figures["probe/split_gap_mean"] == pytest.approx(0.75)
    assert figures["probe/states"] == 2
    with pytest.raises(ValueError, match="at least one probe state"):
        probe_critic(critic, [])


def test_history_turns_split_each_line_at_its_answer() -> None:
    observation = "Questions:\nIs it alive? No.\nIs it red? Yes.\nblah Invalid Question.\n"
    assert history_turns(observation) == [("Is it alive?", "No."), ("Is it red?", "Yes."), ("blah", INVALID)]


def test_probe_states_from_a_policys_games_are_the_moments_after_a_refuted_guess(env) -> None:
    words = env.words
    dog = next(w for w in words if w.name == "dog")
    first = "Questions:\n"
    after_guess = first + "Is it alive? Yes.\nIs it a banana? No.\n"  # impossible word: still a refuted guess
    game = Trajectory(
        [first, first + "Is it alive? Yes.\n", after_guess, after_guess + "Is it a dog? Yes.\n"],
        ["Is it alive?", "Is it a banana?", "Is it a dog?"],
        [-1.0, -1.0, 0.0],
        terminated=True,
    )
    states = probe_states_from_games([game], [dog], words)
    # Only "alive" words remain besides the hidden dog; none is, so there is no other guess and no state.
    assert states == []
    pen = next(w for w in words if w.name == "pen")
    lost = first + "Is it bigger than a breadbox? No.\nIs it a football? No.\n"
    game = Trajectory([first, first + "Is it bigger than a breadbox? No.\n", lost], ["a", "b"], [-1.0, -1.0])
    (state,) = probe_states_from_games([game], [pen], words)
    assert state.observation == lost and state.repeat == "Is it a football?" and state.secret == "pen"
    # Small things other than the football and the pen: banana and scissors.
    assert state.other_wrong_guesses == ("Is it a banana?", "Is it scissors?")
    assert probe_states_from_games([game, game], [pen, pen], words, max_states=1) == [state]


def test_policy_move_returns_average_over_every_word_still_possible(env) -> None:
    states = probe_states(env, 3, seed=1)
    gamma = 0.5
    max_turns = env.max_turns
    # A policy that never ends the game: every move, forced or not, costs -1 until the turn limit, unless the forced
    # move names the hidden word. The critic does not see the hidden word, so each move's value is the mean over
    # the words the history still allows.
    stalling = policy_move_returns(env, lambda observations: ["Is it alive?"] * len(observations), states, 2, gamma)
    words = {word.name: word for word in env.words}
    for state in states:
        turns_left = max_turns - len(history_turns(state.observation))  # the forced move is the first of them
        stall = -(1 - gamma**turns_left) / (1 - gamma)
        possible = [
            name
            for name in (w.name for w in env.words)
            if name == state.secret
            or any(guess == f"Is it a {name}?" or guess == f"Is it {name}?" for guess in state.other_wrong_guesses)
        ]
        assert len(possible) == 1 + len(state.other_wrong_guesses)
        for move in (state.repeat, *state.other_wrong_guesses, *state.splitting_questions):
            # The game's (the reference's) win rule: the last word names the hidden word, so "Is it used in
            # football?" wins when the football is hidden.
            wins = [names_word_last_word(move, words[name]) for name in possible]
            expected = sum(0.0 if won else stall for won in wins) / len(possible)
            assert stalling[(state.observation, move)] == pytest.approx(expected)
        assert stalling[(state.observation, state.repeat)] == pytest.approx(stall)  # the repeat never wins
        for guess in state.other_wrong_guesses:  # wins for one possible word in k
            assert stalling[(state.observation, guess)] == pytest.approx(stall * (len(possible) - 1) / len(possible))
    # A policy that always guesses the dog: -1 for the forced move, then 0 if the dog is hidden, else stalling.
    dog_states = [state for state in probe_states(env, 10, seed=1) if state.secret == "dog"]
    winning = policy_move_returns(env, lambda observations: ["Is it a dog?"] * len(observations), dog_states, 1, gamma)
    assert dog_states
    for state in dog_states:
        turns_left = max_turns - len(history_turns(state.observation))
        stall = -(1 - gamma**turns_left) / (1 - gamma)
        k = 1 + len(state.other_wrong_guesses)
        assert winning[(state.observation, state.repeat)] == pytest.approx((-1.0 + (k - 1) * stall) / k)
    with pytest.raises(ValueError, match="games_per_move must be positive"):
        policy_move_returns(env, lambda observations: observations, states, 0, gamma)


def test_pairwise_agreement_counts_pairs_the_reference_separates() -> None:
    state = ProbeState("h", "dog", "R", ("G1", "G2"), ("S1",))
    reference = {"R": -5.0, "G1": -3.0, "G2": -3.2, "S1": -1.0}
    scores = {"R": -1.0, "G1": -2.0, "G2": 0.0, "S1": 1.0}
    # Pairs beyond a margin of 0.5: (R,G1), (R,G2), (R,S1), (G1,S1), (G2,S1); G1-G2 differ by 0.2 only.
    # The scores order R above G1 (wrong), R below G2, R below S1, G1 below S1 and G2 below S1 (right): 4 of 5.
    assert pairwise_agreement(table(scores), table(reference), [state], margin=0.5) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="no two moves"):
        pairwise_agreement(table(scores), table(reference), [state], margin=10.0)


def table(values: dict[str, float]):
    return lambda observation, moves: [values[m] for m in moves]


def test_optimal_ranking_by_hand() -> None:
    first = ValuedState("h1", ("a", "b", "c", "d"), (10.9, 9.7, 9.7, -1.0))
    second = ValuedState("h2", ("e", "f", "g"), (0.5, 0.2, 0.0))
    flat = ValuedState("h3", ("h", "i"), (0.3, 0.3 + 1e-12))  # one value computed two ways: nothing to rank
    scores = {"a": 2.0, "b": 3.0, "c": 1.0, "d": 0.0, "e": 1.0, "f": 1.0, "g": 0.0, "h": 0.0, "i": 5.0}
    figures = optimal_ranking(table(scores), [first, second, flat])
    # State 1: five pairs differ (b-c tie in truth): a-b wrong (2 < 3), a-c, a-d, b-d, c-d right: 4/5. The critic's
    # best is b (9.7), not a truly best move: regret 10.9 - 9.7 = 1.2; one move in four is truly best.
    # State 2: three pairs: e-f tied by the critic (wrong), e-g and f-g right: 2/3. The critic's best ties between e
    # (truly best) and f: not every one of them is best, and the worse of them, f, loses 0.3. One move in three.
    assert figures["optimal/pair_agreement"] == pytest.approx((4 / 5 + 2 / 3) / 2)
    assert figures["optimal/best_move"] == 0.0
    assert figures["optimal/best_by_chance"] == pytest.approx((1 / 4 + 1 / 3) / 2)
    assert figures["optimal/regret_mean"] == pytest.approx((1.2 + 0.3) / 2)
    assert figures["optimal/states"] == 2
    # A critic ordering every move as the truth does: every pair agrees, its best is the best, nothing lost.
    truths = {move: value for state in (first, second) for move, value in zip(state.moves, state.values, strict=True)}
    perfect = optimal_ranking(table(truths), [first, second])
    assert perfect["optimal/pair_agreement"] == perfect["optimal/best_move"] == 1.0
    assert perfect["optimal/regret_mean"] == 0.0
    with pytest.raises(ValueError, match="nothing to rank"):
        optimal_ranking(table(scores), [flat])


def test_twenty_questions_probe_moves_get_their_exact_values_by_hand() -> None:
    words = [word for word in SUBSET_WORDS if word.name in ("dog", "banana", "truck")]
    state = ProbeState(
        "Questions:\nIs it a dog? No.\n", "truck", "Is it a dog?", ("Is it a banana?",), ("Is it a fruit?",)
    )
    (valued,) = twenty_questions_valued([state], OptimalValues(words, gamma=1.0))
    # Banana and truck remain, V* = (1/2) 0 + (1/2)(-1 + 0) = -0.5 (guess one). The repeat rules nothing out:
    # -1 + V* = -1.5; guessing the banana: -0.5; asking whether it is a fruit splits them: -1 + 0 = -1.
    assert valued.moves == ("Is it a dog?", "Is it a banana?", "Is it a fruit?")
    assert valued.values == pytest.approx((-1.5, -0.5, -1.0))
    # Discounted by 0.5: the repeat -1 + 0.5 (-0.5) = -1.25, the guess (1/2)(-1 + 0) = -0.5, the split -1.
    (discounted,) = twenty_questions_valued([state], OptimalValues(words, gamma=0.5))
    assert discounted.values == pytest.approx((-1.25, -0.5, -1.0))


class LearnableTable(nn.Module):
    """Twin Q values that are free parameters, one pair per action text, starting at 0."""

    def __init__(self, actions: list[str]) -> None:
        super().__init__()
        self.row = {action: i for i, action in enumerate(actions)}
        self.q = nn.Parameter(torch.zeros(2, len(actions)))
        self.frozen = nn.Parameter(torch.zeros(1), requires_grad=False)

    def q_values(self, observations: list[str], actions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.tensor([self.row[a] for a in actions])
        return self.q[0, rows], self.q[1, rows]


def test_fitting_to_move_values_moves_both_heads_to_the_targets_and_reports() -> None:
    critic = LearnableTable(["A", "B"])
    targets = {"A": -1.0, "B": -3.0}
    reports = []
    loss = fit_to_move_values(
        critic,
        [("h", "A"), ("h", "B")],
        lambda batch: [targets[move] for _, move in batch],
        steps=300,
        batch_size=4,
        lr=0.05,
        rng=random.Random(0),
        every=100,
        report=lambda step, loss: reports.append((step, loss)),
    )
    torch.testing.assert_close(critic.q.detach(), torch.tensor([[-1.0, -3.0], [-1.0, -3.0]]), atol=0.05, rtol=0)
    assert [step for step, _ in reports] == [100, 200, 300] and reports[-1][1] == loss < reports[0][1]
    assert critic.frozen.item() == 0.0  # only trainable parameters are optimised


def test_fitting_draws_random_targets_afresh_and_converges_to_their_mean() -> None:
    critic = LearnableTable(["A"])
    draw = random.Random(1)
    steps = []
    fit_to_move_values(
        critic,
        [("h", "A")],
        lambda batch: [draw.choice([0.0, -2.0]) for _ in batch],
        2000,
        16,
        0.01,
        random.Random(0),
        after_step=lambda: steps.append(1),
    )
    assert len(steps) == 2000
    assert critic.q.detach().mean().item() == pytest.approx(-1.0, abs=0.15)


def test_fitting_refuses_bad_arguments() -> None:
    critic = LearnableTable(["A"])
    with pytest.raises(ValueError, match="at least one"):
        fit_to_move_values(critic, [], lambda batch: [0.0] * len(batch), 1, 1, 0.1, random.Random(0))
    with pytest.raises(ValueError, match="positive"):
        fit_to_move_values(critic, [("h", "A")], lambda batch: [0.0] * len(batch), 0, 1, 0.1, random.Random(0))


def test_the_policy_scorer_is_log_pi_of_each_move_as_sampled_and_names_its_figures(
    tiny_policy_config, model_cache_dir, tiny_corpus
) -> None:
    torch.set_num_threads(1)
    cfg = dataclasses.replace(tiny_policy_config, temperature=0.5, top_k=0, stop_string="\n")
    model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    policy = LanguagePolicy(model, tokenizer, cfg)
    observation = "Questions:\nIs it a dog? No.\n"
    moves = ["Is it a dog?", "Is it alive?"]
    model.train()
    scores = policy_scorer(policy)(observation, moves)
    assert model.training, "the scorer scores in eval mode and gives the model back as it found it"
    model.eval()
    # By hand: the prompt's and each move's token ids through the bare model, each next token's log-probability
    # under the logits divided by the temperature, summed over the move's tokens and its stop string.
    prompt = tokenizer(observation)["input_ids"]
    for move, score in zip(moves, scores, strict=True):
        action = tokenizer(move + "\n", add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([prompt + action])).logits[0].double() / 0.5
        steps = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
        assert score == pytest.approx(sum(steps[i, t].item() for i, t in enumerate(action)), abs=1e-4)
    # The repeat (first move) scored below every other guess in one state of two: the probe's fractions, renamed.
    state = ProbeState(
        observation=observation, secret="cat", repeat="a", other_wrong_guesses=("b",), splitting_questions=("c",)
    )
    table = {"a": -3.0, "b": -1.0, "c": -2.0}
    other = dataclasses.replace(state, observation="x")
    figures = probe_scores(lambda obs, moves: [table[m] if obs != "x" else -table[m] for m in moves], [state, other])
    named = policy_figures(figures)
    assert named["policy_probe/repeat_below_all_wrong"] == 0.5 and named["policy_probe/states"] == 2.0
    assert set(named) == {f"policy_{key}" for key in figures}
