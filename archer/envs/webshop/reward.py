"""WebShop's purchase score (Yao et al. 2022, section 3; ``web_agent_site/engine/goal.py``), without spaCy.

    r = r_type * (|matched attributes| + |matched options| + 1[price <= bound]) / (|attributes| + |options| + 1)

where the attributes and options are the goal's. The pieces, as WebShop computes them:

- A goal attribute is matched when one of the bought product's attributes has a token-set similarity above 85 with
  it, or else when it appears in the product's title, features or description.
- Each option the buyer selected is matched when it equals one of the goal's option values (``size`` options), or
  has a token-set similarity above 85 with one (other options), or else appears in the title, features or
  description. The count is capped at the number of goal options, so the score stays in [0, 1] as the done page
  promises (uncapped, an extra selected option that happens to match could push it past 1).
- ``r_type`` says whether the bought product is the requested kind: 1 when the queries are equal, at least two
  category levels are shared, or the type similarity exceeds 0.2; otherwise 0.5; then 0.1 if the similarity is
  below 0.1, and 0 if it is 0.

The type similarity is where this module differs from WebShop. WebShop takes the nouns (spaCy POS tags) of both
product titles and scores |shared nouns| / |goal nouns|. Our titles are generated, so the words that name the
product's kind are known exactly: the similarity is |shared words| / |goal words| over the lower-cased words of the
two ``product_type`` phrases ("trail running shoes" vs "running shoes" gives 2/2 = 1.0; "coffee beans" vs "herbal
tea" gives 0). The token-set similarity reimplements ``thefuzz.fuzz.token_set_ratio`` with ``difflib``'s ratio in
place of Levenshtein's (equal on identical and disjoint strings, within a few points elsewhere). WebShop's colour
normalisation (``normalize_color``) is not applied: the catalogue's colour values are already canonical.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from archer.envs.webshop.catalogue import CATEGORY_SEPARATOR, Product
from archer.envs.webshop.instructions import NO_PRICE_BOUND, Instruction

EXACT_MATCH_OPTIONS = ("size",)
FUZZY_THRESHOLD = 85

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def _words(text: str) -> list[str]:
    return _NON_ALNUM.sub(" ", text.lower()).split()


def _ratio(a: str, b: str) -> int:
    if not a and not b:
        return 0
    return round(100 * SequenceMatcher(None, a, b).ratio())


def token_set_ratio(a: str, b: str) -> int:
    """Similarity of two strings' word sets in 0..100, as ``thefuzz.fuzz.token_set_ratio``.

    Shared words are compared with each side's shared-plus-own words; a word set contained in the other scores 100.
    """
    set_a, set_b = set(_words(a)), set(_words(b))
    if not set_a or not set_b:
        return 0
    shared = " ".join(sorted(set_a & set_b))
    with_a = " ".join(sorted(set_a & set_b) + sorted(set_a - set_b)).strip()
    with_b = " ".join(sorted(set_a & set_b) + sorted(set_b - set_a)).strip()
    return max(_ratio(shared, with_a), _ratio(shared, with_b), _ratio(with_a, with_b))


@dataclass(frozen=True)
class TypeMatch:
    """The pieces of ``r_type``."""

    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


@dataclass(frozen=True)
class Score:
    """A purchase's score and its parts.

    Attributes:
        reward: the score in [0, 1].
        type_match: how ``r_type`` came about.
        attribute_matches: goal attributes found in the product.
        option_matches: selected options that match the goal's (at most the number of goal options).
        price_ok: the price is within the goal's bound.
        num_attributes: goal attributes.
        num_options: goal options.
    """

    reward: float
    type_match: TypeMatch
    attribute_matches: int
    option_matches: int
    price_ok: bool
    num_attributes: int
    num_options: int


def type_match(product: Product, goal: Instruction) -> TypeMatch:
    """WebShop's ``get_type_reward`` with the type similarity described in the module docstring."""
    query_match = product.query == goal.query
    levels_bought = {level.strip() for level in product.product_category.split(CATEGORY_SEPARATOR.strip())}
    levels_goal = {level.strip() for level in goal.product_category.split(CATEGORY_SEPARATOR.strip())}
    category_match = len(levels_bought & levels_goal) >= 2
    goal_words = set(_words(goal.product_type))
    title_score = len(set(_words(product.product_type)) & goal_words) / len(goal_words) if goal_words else 0.2
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeMatch(r_type, query_match, category_match, title_score)


def _in_product_text(value: str, product: Product) -> bool:
    return (
        value in product.title.lower()
        or value in " ".join(product.bullet_points).lower()
        or value in product.description.lower()
    )


def attribute_matches(product: Product, goal_attributes: Sequence[str]) -> int:
    """How many goal attributes the product has (fuzzy on its attributes, else a substring of its text)."""
    count = 0
    for wanted in goal_attributes:
        if any(token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in product.attributes):
            count += 1
        elif _in_product_text(wanted, product):
            count += 1
    return count


def option_matches(product: Product, goal_values: Sequence[str], selected: Mapping[str, str]) -> int:
    """How many selected options match a goal value (exact for sizes, fuzzy otherwise, else product text)."""
    count = 0
    for name, value in selected.items():
        if name.lower() in EXACT_MATCH_OPTIONS:
            matched = value in goal_values
        else:
            matched = any(token_set_ratio(wanted, value) > FUZZY_THRESHOLD for wanted in goal_values)
        if matched or _in_product_text(value, product):
            count += 1
    return min(count, len(goal_values))


def score_purchase(product: Product, goal: Instruction, selected: Mapping[str, str]) -> Score:
    """Score buying ``product`` with the ``selected`` options (option name -> value) for ``goal``."""
    match = type_match(product, goal)
    attributes = attribute_matches(product, goal.attributes)
    options = option_matches(product, list(goal.goal_options.values()), selected)
    price_ok = goal.price_upper == NO_PRICE_BOUND or product.price <= goal.price_upper
    total = len(goal.attributes) + len(goal.goal_options) + 1
    reward = match.r_type * (attributes + options + int(price_ok)) / total
    return Score(reward, match, attributes, options, price_ok, len(goal.attributes), len(goal.goal_options))
