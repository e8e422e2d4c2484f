"""Twenty Questions (ARCHER_SPEC.md 3.1), batched.

The agent asks yes/no questions about a hidden word; the oracle answers ``Yes.``, ``No.`` or
``Invalid Question.``. The observation is the whole history: ``"Questions:\\n"`` followed by one
``"<question> <answer>\\n"`` line per turn. Reward is -1 per turn and 0 on the winning turn; the game ends on a win
(terminated) or after ``max_turns`` questions (truncated). Returns lie in [-20, 0].

Deliberate differences from the reference, each behind a switch or harmless:
- ``success_check="last_phrase"`` lets multi-word words (soccer ball, lawn mower, ...) be won; the reference's
  ``last_word`` check (the default, for comparability) can never win 7 of the 157 words.
- Line breaks and other control characters inside a question are written to the history as spaces, so a
  question always stays one line of the history (the reference relied on the policy never emitting them).
- Finished games are skipped: the oracle only answers the games still being played.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from archer.envs.base import BatchedTextEnv, StepResult
from archer.envs.oracles import INVALID, NO, YES, Oracle
from archer.envs.twenty_questions_facts import PROPERTY_PHRASINGS
from archer.envs.twenty_questions_words import WORDS, Word

INITIAL_OBSERVATION = "Questions:\n"
SUCCESS_CHECKS = ("last_word", "last_phrase")

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_NON_LETTER = re.compile(r"[^a-z]+")


def clean_question(question: str) -> str:
    """The question as written into the history: one line, no control characters, no outer spaces."""
    return _CONTROL.sub(" ", question).strip()


def names_word_last_word(question: str, word: Word) -> bool:
    """The reference's check: the question's last word (trailing non-letters cut, lower-cased) is an alias."""
    text = question.rstrip()
    while text and not text[-1].isalpha():
        text = text[:-1]
    if not text:
        return False
    return text.split(" ")[-1].lower() in word.aliases


def names_word_last_phrase(question: str, word: Word) -> bool:
    """Fixed check: the question's final words are one of the word's aliases (multi-word aliases included)."""
    words = _NON_LETTER.sub(" ", question.lower()).split()
    for alias in word.aliases:
        alias_words = _NON_LETTER.sub(" ", alias).split()
        if alias_words and words[-len(alias_words) :] == alias_words:
            return True
    return False


class TwentyQuestionsEnv(BatchedTextEnv):
    """Batched Twenty Questions.

    Args:
        words: the hidden words that can be drawn; game id ``i`` is ``words[i]``.
        oracle: answers a batch of (word, question) pairs.
        batch_size: games played at once.
        max_turns: questions per game (reference: 20).
        success_check: ``last_word`` (reference) or ``last_phrase`` (multi-word names can win).
        seed: seed of the generator that draws hidden words.
    """

    def __init__(
        self,
        words: Sequence[Word],
        oracle: Oracle,
        batch_size: int = 32,
        max_turns: int = 20,
        success_check: str = "last_word",
        seed: int | None = None,
    ) -> None:
        if not words:
            raise ValueError("TwentyQuestionsEnv needs at least one word")
        if success_check not in SUCCESS_CHECKS:
            raise ValueError(f"unknown success_check {success_check!r}; choose one of {', '.join(SUCCESS_CHECKS)}")
        self.words = tuple(words)
        self.oracle = oracle
        self.max_turns = max_turns
        self._names_word = names_word_last_word if success_check == "last_word" else names_word_last_phrase
        self._hidden: list[Word] = []
        self._history: list[str] = []
        self._turns: list[int] = []
        super().__init__(batch_size, seed)

    @property
    def num_games(self) -> int:
        return len(self.words)

    def hidden_word(self, slot: int) -> Word:
        """The word hidden in ``slot`` of the current batch (for analysis and scripted players)."""
        return self._hidden[slot]

    def _prepare_batch(self, num_games: int) -> None:
        self._hidden = [self.words[0]] * num_games
        self._history = [INITIAL_OBSERVATION] * num_games
        self._turns = [0] * num_games

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        self._hidden[slot] = self.words[game_id] if game_id is not None else self._rng.choice(self.words)
        return INITIAL_OBSERVATION

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        questions = [clean_question(action) for action in actions]
        answers = self.oracle.answer([self._hidden[i] for i in slots], questions)
        results = []
        for slot, question, answer in zip(slots, questions, answers, strict=True):
            word = self._hidden[slot]
            self._turns[slot] += 1
            self._history[slot] += f"{question} {answer}\n"
            success = answer == YES and self._names_word(question, word)
            truncated = not success and self._turns[slot] >= self.max_turns
            results.append(
                StepResult(
                    observation=self._history[slot],
                    reward=0.0 if success else -1.0,
                    terminated=success,
                    truncated=truncated,
                    info={"success": success, "word": word.name, "answer": answer},
                )
            )
        return results

    def corpus(self) -> list[str]:
        """Histories made of every property question and every guess, for training the embedded tokenizers.

        Deterministic (the tokenizer cache is keyed by it) and independent of the words this env plays, so the
        full game and its subset share tokenizers.
        """
        questions = [p.text for phrasings in PROPERTY_PHRASINGS.values() for p in phrasings]
        questions += [f"Is it {article} {alias}?" for word in WORDS for alias in word.aliases for article in ("a", "")]
        answers = (YES, NO, INVALID)
        lines = [
            f"{q.replace('  ', ' ')} {answers[i % 3] if i % 7 == 6 else answers[i % 2]}"
            for i, q in enumerate(questions)
        ]
        return [
            INITIAL_OBSERVATION + "".join(line + "\n" for line in lines[start : start + 10])
            for start in range(0, len(lines), 10)
        ]
