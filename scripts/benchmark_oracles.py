"""Throughput of the built-in oracles: questions answered per second, new and repeated.

Usage (from ``scripts/``)::

    python benchmark_oracles.py --questions 5000

Each oracle answers ``--questions`` questions drawn from its own phrasings with random capitalisation (most of them
new to its parse cache), then the same questions again (all cached). Speed is measured here, not asserted by
tests: a timed assertion fails whenever another process shares the CPU.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from archer.envs.guess_my_city.facts import CITIES
from archer.envs.guess_my_city.oracle import CityKnowledgeOracle
from archer.envs.guess_my_city.questioners import DESCRIPTIVE_QUESTIONS, SPLIT_QUESTIONS
from archer.envs.twenty_questions.facts import PROPERTY_PHRASINGS
from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle
from archer.envs.twenty_questions.words import WORDS


def _shuffled_case(texts: Sequence[str], count: int, rng: random.Random) -> list[str]:
    return ["".join(c.upper() if rng.random() < 0.3 else c for c in rng.choice(texts)) for _ in range(count)]


def _rate(answer: Callable[[list, list[str]], object], secrets: list, questions: list[str]) -> float:
    start = time.perf_counter()
    answer(secrets, questions)
    return len(questions) / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=5000, help="questions per oracle (5000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.questions <= 0:
        parser.error(f"--questions must be positive, got {args.questions}")
    rng = random.Random(args.seed)
    figures = {}
    twenty = [p.text for phrasings in PROPERTY_PHRASINGS.values() for p in phrasings]
    twenty += [f"Is it a {word.name}?" for word in WORDS]
    city = [*DESCRIPTIVE_QUESTIONS, *SPLIT_QUESTIONS]
    for name, oracle, texts, secrets in (
        ("twenty_questions", KnowledgeBaseOracle(), twenty, WORDS),
        ("guess_my_city", CityKnowledgeOracle(), city, CITIES),
    ):
        questions = _shuffled_case(texts, args.questions, rng)
        drawn = [rng.choice(secrets) for _ in questions]
        figures[f"{name}/new_questions_per_s"] = _rate(oracle.answer, drawn, questions)
        figures[f"{name}/cached_questions_per_s"] = _rate(oracle.answer, drawn, questions)
    for key, value in figures.items():
        print(f"{key}: {value:,.0f}")
    return figures


if __name__ == "__main__":
    main()
