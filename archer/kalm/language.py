"""Instruction templates, the goal splits of each evaluation level, and the policy's goal encodings.

The splits are designed for compositional generalisation by a small model trained from scratch:
    train: 64 of the 80 single relations (source, destination, direction), worded with ``TRAIN_TEMPLATES``.
    rephrase: the same 64 relations worded with ``REPHRASE_TEMPLATES`` (new sentence frames, mostly known words).
    easy: the 16 held-out relations, those with ``(source + destination + direction) % 5 == 0``; every source
        colour, destination colour and direction of them is seen in training, only the combination is new. Each
        (source, destination) pair keeps at least 3 of its 4 directions in training.
    hard: two simultaneous relations over four different balls (never seen together in real data), worded as
        two training sentences joined by "and".
"""

from __future__ import annotations

import itertools

import numpy as np

from archer.kalm.env import DIRECTION_NAMES, NUM_BALLS, Relation, check_relation, goal_vector, relations_of
from archer.kalm.errors import GoalSplitError

#: CLEVR-Robot's colour order (KALM's ``color_list``): ball ``i`` has colour ``COLOURS[i]``.
COLOURS = ("red", "blue", "green", "purple", "cyan")
DIRECTION_PHRASES = ("behind", "to the left of", "in front of", "to the right of")
LEVELS = ("rephrase", "easy", "hard")
SPLITS = ("train", *LEVELS)

TRAIN_TEMPLATES = (
    "push the {s} ball {d} the {t} ball",
    "move the {s} ball {d} the {t} ball",
    "can you push the {s} ball {d} the {t} ball",
    "i want the {s} ball {d} the {t} ball",
    "put the {s} ball {d} the {t} ball",
    "the {s} ball should be {d} the {t} ball",
)
REPHRASE_TEMPLATES = (
    "please move the {s} ball so that it is {d} the {t} ball",
    "could you put the {s} one {d} the {t} one",
    "get the {s} sphere {d} the {t} sphere",
    "{d} the {t} ball is where the {s} ball should be",
)
NUM_HARD_GOALS = 48


def easy_relations() -> list[Relation]:
    return [r for r in all_relations() if sum(r) % NUM_BALLS == 0]


def all_relations() -> list[Relation]:
    balls, directions = range(NUM_BALLS), range(len(DIRECTION_NAMES))
    return [(s, t, d) for s, t, d in itertools.product(balls, balls, directions) if s != t]


def train_relations() -> list[Relation]:
    held_out = set(easy_relations())
    return [r for r in all_relations() if r not in held_out]


def hard_goals() -> list[tuple[Relation, Relation]]:
    """A fixed set of two-relation goals over four different balls, both relations from the training split."""
    train = train_relations()
    pairs = [(a, b) for a, b in itertools.product(train, train) if len({a[0], a[1], b[0], b[1]}) == 4 and a < b]
    picks = np.random.default_rng(1234).choice(len(pairs), size=NUM_HARD_GOALS, replace=False)
    return [pairs[i] for i in sorted(picks)]


def split_goals(split: str) -> list[tuple[Relation, ...]]:
    """The goals (tuples of relations) of ``split``: train, rephrase, easy or hard."""
    if split in ("train", "rephrase"):
        return [(r,) for r in train_relations()]
    if split == "easy":
        return [(r,) for r in easy_relations()]
    if split == "hard":
        return list(hard_goals())
    raise GoalSplitError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")


def templates_of(split: str) -> tuple[str, ...]:
    if split not in SPLITS:
        raise GoalSplitError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return REPHRASE_TEMPLATES if split == "rephrase" else TRAIN_TEMPLATES


def check_goal_in_split(relations: tuple[Relation, ...], split: str) -> None:
    if tuple(relations) not in set(split_goals(split)):
        raise GoalSplitError(f"goal {relations} is not in the {split!r} split (docs/kalm.md lists the splits)")


def relation_sentence(relation: Relation, template: str) -> str:
    check_relation(relation)
    source, destination, direction = relation
    return template.format(s=COLOURS[source], t=COLOURS[destination], d=DIRECTION_PHRASES[direction])


def instruction(relations: tuple[Relation, ...], split: str, rng: np.random.Generator) -> str:
    """A wording of ``relations`` with a random template of ``split``."""
    templates = templates_of(split)
    return " and ".join(relation_sentence(r, templates[rng.integers(len(templates))]) for r in relations)


def vocabulary() -> list[str]:
    """Every word the templates can produce (the word-level vocabulary of the embedded grounding model)."""
    words: set[str] = {"and", *COLOURS}
    for phrase in DIRECTION_PHRASES:
        words.update(phrase.split())
    for template in TRAIN_TEMPLATES + REPHRASE_TEMPLATES:
        words.update(w for w in template.split() if not w.startswith("{"))
    return sorted(words)


# ---------------------------------------------------------------------------------------------------------------
# Goal encodings: what the offline policy sees next to the 10-d state.
# ---------------------------------------------------------------------------------------------------------------

GOAL_ENCODINGS = ("relations", "words")
RELATION_ENCODING_DIM = 2 * NUM_BALLS + len(DIRECTION_NAMES)


def bag_of_words(instructions: list[str], words: list[str]) -> np.ndarray:
    """``[N, len(words)]`` counts of each of ``words`` in each instruction (other words are ignored)."""
    index = {word: i for i, word in enumerate(words)}
    features = np.zeros((len(instructions), len(index)), dtype=np.float32)
    for row, text in enumerate(instructions):
        for word in text.split():
            if word in index:
                features[row, index[word]] += 1.0
    return features


def encode_goals(goals: np.ndarray, instructions: list[str], encoding: str) -> np.ndarray:
    """Goal features per episode: ``relations`` one-hot (source, destination, direction) per relation (28
    numbers); ``words`` a bag of words of the instruction over ``vocabulary()`` (so rephrasings change it)."""
    if encoding == "relations":
        features = np.zeros((len(goals), 2 * RELATION_ENCODING_DIM), dtype=np.float32)
        for row, goal in enumerate(goals):
            for index, (s, t, d) in enumerate(relations_of(goal)):
                base = index * RELATION_ENCODING_DIM
                features[row, base + s] = features[row, base + NUM_BALLS + t] = 1.0
                features[row, base + 2 * NUM_BALLS + d] = 1.0
        return features
    if encoding == "words":
        return bag_of_words(instructions, vocabulary())
    raise GoalSplitError(f"unknown goal encoding {encoding!r}; choose one of {', '.join(GOAL_ENCODINGS)}")


def goal_vectors(goals: list[tuple[Relation, ...]]) -> np.ndarray:
    return np.stack([goal_vector(g) for g in goals]) if goals else np.zeros((0, 12), dtype=np.float32)
