"""The oracle interface: the other player of question games (Twenty Questions, Guess My City).

An oracle answers a batch of (secret, question) pairs in one call, so a knowledge-base oracle, a fine-tuned
seq2seq checkpoint and a prompted instruct model are interchangeable by config.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

YES = "Yes."
NO = "No."
INVALID = "Invalid Question."

_YES_WORD = re.compile(r"\byes\b")
_NO_WORD = re.compile(r"\bno\b")


class Oracle(ABC):
    """Answers questions about hidden secrets, a batch at a time."""

    @abstractmethod
    def answer(self, secrets: Sequence[Any], questions: Sequence[str]) -> list[str]:
        """One answer per (secret, question) pair; must never raise on any question string."""


def normalise_yes_no(raw_answer: str, mode: str = "reference") -> str:
    """Map a free-text oracle answer to ``Yes.``, ``No.`` or ``Invalid Question.``.

    Args:
        raw_answer: what the oracle model generated.
        mode: ``reference`` reproduces the reference's substring test (so "I don't know" and "not" count as
            "no", and "eyes" as "yes"); ``word`` matches ``yes``/``no`` as whole words only.
    """
    text = raw_answer.strip().lower()
    if mode == "reference":
        if "yes" in text:
            return YES
        if "no" in text:
            return NO
        return INVALID
    if mode == "word":
        if _YES_WORD.search(text):
            return YES
        if _NO_WORD.search(text):
            return NO
        return INVALID
    raise ValueError(f"unknown answer normalisation {mode!r}; choose 'reference' or 'word'")
