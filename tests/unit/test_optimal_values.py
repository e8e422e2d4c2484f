"""Exact optimal Twenty Questions values, checked against numbers worked out by hand on three words."""

from __future__ import annotations

import random
import statistics

import pytest

from archer.envs.twenty_questions.optimal import OptimalValues
from archer.envs.twenty_questions.words import SUBSET_WORDS

WORDS = [word for word in SUBSET_WORDS if word.name in ("dog", "banana", "truck")]  # list order: dog, banana, truck
DOG, BANANA, TRUCK = 1, 2, 4  # bit of each word in WORDS' order
ALL = DOG | BANANA | TRUCK


@pytest.fixture
def values() -> OptimalValues:
    assert [word.name for word in WORDS] == ["dog", "banana", "truck"]
    return OptimalValues(WORDS, gamma=0.5)


def test_state_values_by_hand(values) -> None:
    # One word: guess it, 0. Two words: guess one, (1/2) * 0 + (1/2) * (-1 + 0.5 * 0) = -0.5 (a question is -1).
    assert values.state_value(DOG) == 0.0
    assert values.state_value(BANANA | TRUCK) == pytest.approx(-0.5)
    # Three words: guess, (2/3) * (-1 + 0.5 * -0.5) = -0.8333; "Is it an animal?" (1 | 2): -1 + 0.5 * (2/3) * -0.5
    # = -1.1667; the guess is better.
    assert values.state_value(ALL) == pytest.approx(-5 / 6)


def test_move_values_by_hand(values) -> None:
    assert values.move_value(ALL, "Is it a dog?") == pytest.approx(-5 / 6)
    assert values.move_value(ALL, "Is it an animal?") == pytest.approx(-1 + 0.5 * (2 / 3) * -0.5)
    assert values.move_value(ALL, "Is it not an animal?") == pytest.approx(-1 + 0.5 * (2 / 3) * -0.5)  # same split
    # Nothing ruled out: -1 + 0.5 * V*(ALL) = -1.4167, for a guess already refuted, a question every word
    # answers alike, and an utterance the oracle cannot read.
    waste = -1 + 0.5 * (-5 / 6)
    assert values.move_value(BANANA | TRUCK, "Is it a dog?") == pytest.approx(-1 + 0.5 * -0.5)
    assert values.move_value(ALL, "Is it a musical instrument?") == pytest.approx(waste)
    assert values.move_value(ALL, "What colour is it?") == pytest.approx(waste)
    assert values.move_value(DOG | TRUCK, "Is it a truck?") == pytest.approx(-0.5)


def test_possible_words_follow_the_answers(values) -> None:
    assert values.possible([]) == ALL
    assert values.possible([("Is it an animal?", "No.")]) == BANANA | TRUCK
    assert values.possible([("Is it an animal?", "No."), ("Is it a truck?", "No.")]) == BANANA


def test_sampled_move_values_are_single_transitions_whose_mean_is_the_exact_value(values) -> None:
    rng = random.Random(0)
    draws = [values.sampled_move_value(ALL, "Is it a dog?", rng) for _ in range(3000)]
    # Win (0) when the dog is hidden, else -1 + 0.5 * V*({banana, truck}) = -1.25.
    assert set(draws) == {0.0, -1.25}
    assert statistics.fmean(draws) == pytest.approx(values.move_value(ALL, "Is it a dog?"), abs=0.05)
    split = {values.sampled_move_value(ALL, "Is it an animal?", rng) for _ in range(200)}
    assert split == {-1.0, -1.25}  # yes: only the dog is left (V* 0); no: two words (V* -0.5)


def test_bad_arguments_are_refused(values) -> None:
    with pytest.raises(ValueError, match="no word is possible"):
        values.move_value(0, "Is it a dog?")
    with pytest.raises(ValueError, match="gamma"):
        OptimalValues(WORDS, gamma=1.5)
    with pytest.raises(ValueError, match="words"):
        OptimalValues(list(SUBSET_WORDS) * 2, gamma=0.9)
