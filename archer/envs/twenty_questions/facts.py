"""Facts about the 157 Twenty Questions words: yes/no properties and how people ask about them.

The schema of ``facts.json`` beside this module (read and checked by ``archer.envs.facts_file.load_facts`` on
import), for the knowledge-base oracle (``oracle.py``) and the scripted questioners. The file is written by
property: each property lists the words for which it is true (every other word is false) and the questions that
ask about it. Facts describe the typical object a careful person pictures for the word (a typical boat has an
engine, a typical scooter is a kick scooter, tomatoes are vegetables in the kitchen sense); where people would
disagree, a fact is left out or given to the majority reading.

A phrasing that starts with ``~`` asks the property's negation ("Is it natural?" is answered "Yes." exactly when
``is_man_made`` is false). The first plain phrasing is the canonical question.

Every word has a distinct property vector, so a questioner that asks enough properties can always tell any two
words apart (``tests/unit/test_knowledge_oracle.py`` checks this).

The other tables hold the oracle's wider vocabulary: more phrasings per property, questions with the same answer
for every word ("Is it a bird?"), what things are used for, and other names of the words ("fridge").
"""

from __future__ import annotations

from dataclasses import dataclass

from archer.envs.facts_file import load_facts
from archer.envs.twenty_questions.words import WORDS

_NAMES: tuple[str, ...] = tuple(word.name for word in WORDS)


@dataclass(frozen=True)
class Phrasing:
    """One way to ask about a property.

    Attributes:
        text: the question, e.g. ``"Is it natural?"``.
        negated: the question asks the property's negation, so "Yes." means the property is false.
    """

    text: str
    negated: bool = False


@dataclass(frozen=True)
class PropertyRow:
    """One property as the file writes it.

    Attributes:
        words: canonical names of the words for which the property is true.
        questions: the questions that ask about it, canonical one first; ``~`` marks a negated one.
    """

    words: frozenset[str]
    questions: tuple[str, ...]


_FACTS = load_facts(
    "archer.envs.twenty_questions",
    "facts.json",
    {
        "properties": dict[str, PropertyRow],
        "oracle_phrasings": dict[str, tuple[str, ...]],
        "constant_phrasings": dict[bool, tuple[str, ...]],
        "purpose_phrases": dict[str, tuple[str, ...]],
        "other_names": dict[str, tuple[str, ...]],
    },
)
_TABLE: dict[str, PropertyRow] = _FACTS["properties"]


def _checked_words(prop: str, words: frozenset[str]) -> frozenset[str]:
    unknown = sorted(words - set(_NAMES))
    if unknown:
        raise ValueError(f"facts.json: property {prop!r} lists words that are not in the word list: {unknown}")
    return words


def _parse_phrasings(questions: tuple[str, ...]) -> tuple[Phrasing, ...]:
    return tuple(Phrasing(question.lstrip("~").strip(), question.startswith("~")) for question in questions)


def _joined(phrasings: tuple[str, ...]) -> str:
    # The oracle reads these tables in the "a | b" notation it also uses for its own phrasings.
    return " | ".join(phrasings)


PROPERTY_WORDS: dict[str, frozenset[str]] = {prop: _checked_words(prop, row.words) for prop, row in _TABLE.items()}
"""Property name -> canonical names of the words for which it is true."""

PROPERTY_PHRASINGS: dict[str, tuple[Phrasing, ...]] = {
    prop: _parse_phrasings(row.questions) for prop, row in _TABLE.items()
}
"""Property name -> the questions that ask about it (scripted questioners draw among these)."""

PROPERTIES: tuple[str, ...] = tuple(_TABLE)

FACTS: dict[str, frozenset[str]] = {
    name: frozenset(prop for prop, words in PROPERTY_WORDS.items() if name in words) for name in _NAMES
}
"""Word canonical name -> the properties that are true for it (every other property is false)."""

ORACLE_PHRASINGS: dict[str, str] = {prop: _joined(texts) for prop, texts in _FACTS["oracle_phrasings"].items()}
"""Property -> more phrasings the oracle understands (the scripted questioners keep to ``PROPERTY_PHRASINGS``)."""

CONSTANT_PHRASINGS: dict[bool, str] = {
    answer: _joined(texts) for answer, texts in _FACTS["constant_phrasings"].items()
}
"""Questions with the same answer for every word: ``False`` -> "No." (none is a bird), ``True`` -> "Yes."."""

PURPOSE_PHRASES: dict[str, str] = {prop: _joined(texts) for prop, texts in _FACTS["purpose_phrases"].items()}
"""Property -> what people say a thing with it is for ("Is it used for <phrase>?", "Do you use it to <phrase>?")."""

OTHER_NAMES: dict[str, str] = {name: _joined(texts) for name, texts in _FACTS["other_names"].items()}
"""Word -> names people use for it that are not among its aliases (the oracle treats them as aliases)."""
