"""dev/weak_data_without_refuted_guesses.py: refutations read by hand, the redraw, and a small dataset end to end."""

from __future__ import annotations

import random
from pathlib import Path

from archer.envs.twenty_questions.dataset import (
    generate_twenty_questions_dataset,
    load_twenty_questions_dataset,
    save_twenty_questions_dataset,
)
from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle
from archer.envs.twenty_questions.questioners import History, Questioner
from archer.envs.twenty_questions.words import word_list
from tests.conftest import load_dev_script

weak_data = load_dev_script("weak_data_without_refuted_guesses")

HISTORY = [("Is it a dog?", "No."), ("Is it an animal?", "Yes."), ("Is it a cat?", "Yes."), ("Is it a pen?", "No.")]


class Scripted(Questioner):
    """Asks its questions in order, then the last one forever."""

    def __init__(self, *questions: str) -> None:
        self.questions = list(questions)

    def ask(self, history: History, rng: random.Random) -> str:
        return self.questions.pop(0) if len(self.questions) > 1 else self.questions[0]


def test_refuted_words_are_the_guesses_answered_no() -> None:
    assert weak_data.refuted_words(HISTORY) == {"dog", "pen"}
    assert weak_data.refuted_words(HISTORY[1:3]) == set()
    assert weak_data.guesses_refuted_word("Is it a dog?", {"dog"})
    assert not weak_data.guesses_refuted_word("Is it a cat?", {"dog"})
    assert not weak_data.guesses_refuted_word("Is it an animal?", {"dog", "pen"})


def test_a_refuted_guess_is_drawn_again_and_kept_only_when_every_draw_is_one() -> None:
    redrawing = weak_data.WithoutRefutedGuesses(Scripted("Is it a dog?", "Is it a pen?", "Is it a chair?"))
    assert redrawing.ask(HISTORY, random.Random(0)) == "Is it a chair?"
    assert (redrawing.redrawn, redrawing.kept) == (1, 0)
    assert redrawing.ask(HISTORY, random.Random(0)) == "Is it a chair?"  # first draw fine: nothing redrawn
    assert (redrawing.redrawn, redrawing.kept) == (1, 0)
    stuck = weak_data.WithoutRefutedGuesses(Scripted("Is it a dog?"), redraws=3)
    assert stuck.ask(HISTORY, random.Random(0)) == "Is it a dog?"
    assert (stuck.redrawn, stuck.kept) == (1, 1)


def refuted_guesses(path: Path) -> tuple[int, int]:
    """(guesses, guesses of a word already refuted in the game) in a dataset file."""
    guesses = repeats = 0
    for conversation in load_twenty_questions_dataset(path):
        history: list[tuple[str, str]] = []
        for line in conversation.lines:
            question, answer = line.rsplit(" ", 1)
            if weak_data.parse_question(question).kind == "guess":
                guesses += 1
                repeats += weak_data.guesses_refuted_word(question, weak_data.refuted_words(history))
            history.append((question, answer))
    return guesses, repeats


def test_the_written_data_never_guesses_a_refuted_word_where_the_weak_players_do(tmp_path: Path, capsys) -> None:
    out = tmp_path / "weak.json"
    weak_data.main(["--out", str(out), "--episodes", "150"])
    assert "150 games" in capsys.readouterr().out
    guesses, repeats = refuted_guesses(out)
    assert guesses > 100 and repeats == 0
    plain = generate_twenty_questions_dataset(
        150, 1234, KnowledgeBaseOracle(), word_list("subset10"), skill_mix=((0.0, 1.0), (0.1, 1.0)), max_turns=20
    )
    save_twenty_questions_dataset(plain, tmp_path / "plain.json")
    assert refuted_guesses(tmp_path / "plain.json")[1] > 0
