"""Scripted WebShop shoppers: they read only the observation text, so they play any WebShop, local or remote.

A ``ScriptedShopper`` plays one game: it searches with the instruction's keywords, clicks the result whose title
shares the most words with the instruction (a random shown result with probability ``1 - result_accuracy``),
picks for each option the value the instruction names (another value with probability ``1 - option_accuracy``),
and buys. With ``browse_prob`` it first opens a sub-page and goes back; with ``think_prob`` it writes a
``think[...]`` note. With no results it goes back and searches again with fewer words.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from archer.envs.webshop.search import search_words

_RESULT = re.compile(r"\n\[([A-Z0-9]{10})\] \n([^\n]*) \n\$([0-9.]+)")
_OPTION_LINE = re.compile(r"\n([^\n\[\]]+) ((?:\[[^\n]*?\])+)(?=\n|$)")
_LABEL = re.compile(r"\[\[([^\[\]]*)\]\]|\[([^\[\]]*)\]")
_PRICE_BOUND = re.compile(r"price lower than ([0-9.]+) dollars")
_NO_RESULTS = "(Total results: 0)"
_QUERY_STOP_WORDS = frozenset(
    "i am looking for need want would like find me a an the some that is are with in and please to buy get m "
    "color size style flavor scent capacity".split()
)
_BROWSE_PAGES = ("Description", "Features", "Reviews", "Attributes")


def instruction_of(observation: str) -> str:
    """The instruction at the end of an observation (after the last ``"\\nInstruction:\\n"``)."""
    return observation.rsplit("\nInstruction:\n", 1)[-1].strip()


def last_page(observation: str) -> str:
    """The latest page (or message) of an observation's history."""
    history = observation.rsplit("\nInstruction:\n", 1)[0]
    return history.rsplit("\nObservation:\n", 1)[-1]


def search_query(instruction: str, max_words: int | None = None) -> str:
    """Keywords of an instruction: its words before the price, without filler words (at most ``max_words``)."""
    request = instruction.split(", and price lower than")[0].lower()
    words = [w for w in re.findall(r"[a-z0-9.&']+", request) if w not in _QUERY_STOP_WORDS and w != "i'm"]
    return " ".join(words[:max_words] if max_words else words)


def results_of(page: str) -> list[tuple[str, str, float]]:
    """(ASIN, title, price) of each product shown on a results page."""
    return [(asin, title, float(price)) for asin, title, price in _RESULT.findall(page)]


def options_of(page: str) -> dict[str, list[str]]:
    """Option name -> values shown on an item page."""
    options = {}
    for name, labels in _OPTION_LINE.findall(page):
        options[name.strip()] = [selected or plain for selected, plain in _LABEL.findall(labels)]
    return options


def named_value(instruction: str, values: list[str]) -> str | None:
    """The longest of ``values`` the instruction names as a whole phrase, or None."""
    text = instruction.lower()
    named = [v for v in values if re.search(rf"(?<![a-z0-9.]){re.escape(v.lower())}(?![a-z0-9.])", text) is not None]
    return max(named, key=len) if named else None


@dataclass
class ScriptedShopper:
    """One scripted game's player (stateful: make a new one per game).

    Args:
        rng: the shopper's random generator.
        option_accuracy: probability of picking the option value the instruction names.
        result_accuracy: probability of clicking the best-matching result rather than a random shown one.
        browse_prob: probability of opening a sub-page (and going back) before choosing options.
        think_prob: probability of writing a ``think[...]`` note on the item page.
    """

    rng: random.Random
    option_accuracy: float = 1.0
    result_accuracy: float = 1.0
    browse_prob: float = 0.0
    think_prob: float = 0.0
    _plan: list[str] = field(default_factory=list)
    _searches: int = 0

    def act(self, observation: str) -> str:
        """The next action for the game whose current observation is ``observation``."""
        if self._plan:
            return self._plan.pop(0)
        instruction = instruction_of(observation)
        page = last_page(observation)
        if "\n[Search] " in page:
            self._searches += 1
            words = None if self._searches == 1 else max(1, 4 - self._searches)
            return f"search[{search_query(instruction, words)}]"
        if "(Total results:" in page:
            results = results_of(page)
            if not results or _NO_RESULTS in page:
                return "click[Back to Search]"
            return f"click[{self._choose_result(instruction, results)}]"
        if "\n[Buy Now] " in page:
            self._plan = self._item_plan(instruction, page)
            return self._plan.pop(0)
        # A sub-page, or a message ("OK.", "Invalid action!") after which the plan ran out: go back to the item.
        return "click[< Prev]" if "\n[< Prev] " in page else "click[Buy Now]"

    def _choose_result(self, instruction: str, results: list[tuple[str, str, float]]) -> str:
        if self.rng.random() >= self.result_accuracy:
            return self.rng.choice(results)[0]
        wanted = set(search_words(instruction.split(", and price lower than")[0]))
        bound = _PRICE_BOUND.search(instruction)
        limit = float(bound.group(1)) if bound else float("inf")

        def match(result: tuple[str, str, float]) -> tuple[int, bool]:
            return len(wanted & set(search_words(result[1]))), result[2] <= limit

        return max(results, key=match)[0]

    def _item_plan(self, instruction: str, page: str) -> list[str]:
        plan = []
        if self.rng.random() < self.browse_prob:
            plan += [f"click[{self.rng.choice(_BROWSE_PAGES)}]", "click[< Prev]"]
        if self.rng.random() < self.think_prob:
            plan.append("think[This product looks right; I will choose its options and buy it.]")
        for values in options_of(page).values():
            wanted = named_value(instruction, values)
            if wanted is None:
                continue
            others = [v for v in values if v != wanted]
            choice = wanted if (self.rng.random() < self.option_accuracy or not others) else self.rng.choice(others)
            plan.append(f"click[{choice}]")
        plan.append("click[Buy Now]")
        return plan
