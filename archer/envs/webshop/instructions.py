"""Shopping instructions generated from the catalogue, the way WebShop's goals are built.

A WebShop goal names a target product's type, some of its attributes, a value for its options and a price bound,
and its text reads like "i am looking for a long lasting and aluminum free deodorant with lavender scent, and price
lower than 30.00 dollars". The price bound follows WebShop's ``get_goals``: of the multiples of ten above the
target's price, the first four are candidates and the bound is the larger of two drawn at random (no bound, and no
price text, when fewer than two exist).

Instruction ``i`` depends only on the catalogue, the seed and ``i`` (its own generator is seeded with both), so
any index can be produced on its own, in any order, on any machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from archer.envs.webshop.catalogue import Catalogue

NO_PRICE_BOUND = 1_000_000.0
PRICE_STEPS = tuple(10.0 * i for i in range(1, 100))

_OPENERS = (
    "i am looking for",
    "i need",
    "i want",
    "find me",
    "i would like",
    "i'm looking for",
    "looking for",
    "i want to buy",
    "please find",
    "get me",
)
_PLURAL_TYPES = ("running shoes", "yoga pants", "protein bars", "coffee beans", "bed sheets", "wireless earbuds")
_OPTION_PHRASES = {
    "color": ("in {v} color", "with color {v}", "in the color {v}"),
    "size": ("in size {v}", "in {v} size", "size {v}"),
    "scent": ("with {v} scent", "in the {v} scent"),
    "flavor": ("in {v} flavor", "with {v} flavor"),
    "style": ("in {v} style", "with style {v}"),
    "capacity": ("with {v} capacity", "in {v}"),
}


@dataclass(frozen=True)
class Instruction:
    """One shopping goal (WebShop's goal dict).

    Attributes:
        index: the instruction's index (session ``fixed_<index>`` plays it).
        asin: the target product the goal was made from.
        text: the instruction as the start page shows it.
        name: the target's title (WebShop ``name``).
        product_type: the target's product-type phrase.
        query: the target's ``query`` (WebShop compares it for r_type).
        category: the target's top-level category.
        product_category: the target's category path.
        attributes: the attributes asked for (a subset of the target's).
        goal_options: option name -> the value asked for.
        price_upper: the price bound in dollars (``NO_PRICE_BOUND`` when the text names none).
    """

    index: int
    asin: str
    text: str
    name: str
    product_type: str
    query: str
    category: str
    product_category: str
    attributes: tuple[str, ...]
    goal_options: dict[str, str]
    price_upper: float


def price_bound(price: float, rng: random.Random) -> float:
    """WebShop's price bound for a target of ``price``: the larger of two of the four next multiples of ten."""
    candidates = [p for p in PRICE_STEPS if p > price][:4]
    if len(candidates) < 2:
        return NO_PRICE_BOUND
    return max(rng.sample(candidates, 2))


def _article(product_type: str, next_word: str) -> str:
    """The article before ``next_word`` in a phrase naming ``product_type``."""
    if product_type in _PLURAL_TYPES:
        return "some "
    return "an " if next_word[0] in "aeiou" else "a "


class InstructionSet:
    """Instructions ``0 .. size - 1`` over a catalogue; ``instructions[i]`` is built on first use and kept.

    Args:
        catalogue: the products goals are made from.
        size: how many instructions there are.
        seed: the same seed (and catalogue) gives the same instructions.
    """

    def __init__(self, catalogue: Catalogue, size: int, seed: int = 0) -> None:
        if size < 1:
            raise ValueError(f"an instruction set needs at least one instruction, got size={size}")
        if len(catalogue) == 0:
            raise ValueError("cannot make instructions from an empty catalogue")
        self.catalogue = catalogue
        self.size = size
        self.seed = seed
        self._made: dict[int, Instruction] = {}

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Instruction:
        if not 0 <= index < self.size:
            raise IndexError(f"instruction {index} out of range 0..{self.size - 1}")
        if index not in self._made:
            self._made[index] = self._make(index)
        return self._made[index]

    def _make(self, index: int) -> Instruction:
        rng = random.Random(f"webshop-instruction:{self.seed}:{index}")
        product = rng.choice(self.catalogue.products)
        attributes = tuple(rng.sample(product.attributes, rng.randint(1, min(3, len(product.attributes)))))
        goal_options = {
            name: rng.choice(values) for name, values in product.options.items() if values and rng.random() < 0.85
        }
        price_upper = price_bound(product.price, rng)

        if rng.random() < 0.7:
            joined = " and ".join(attributes) if rng.random() < 0.6 else ", ".join(attributes)
            body = f"{_article(product.product_type, joined)}{joined} {product.product_type}"
        else:
            verb = "are" if product.product_type in _PLURAL_TYPES else "is"
            article = _article(product.product_type, product.product_type)
            body = f"{article}{product.product_type} that {verb} {' and '.join(attributes)}"
        phrases = [rng.choice(_OPTION_PHRASES.get(n, ("with {v}",))).format(v=v) for n, v in goal_options.items()]
        if phrases:
            body += " " + (", ".join(phrases) if rng.random() < 0.5 else " and ".join(phrases))
        text = f"{rng.choice(_OPENERS)} {body}"
        if price_upper != NO_PRICE_BOUND:
            text += f", and price lower than {price_upper:.2f} dollars"
        return Instruction(
            index=index,
            asin=product.asin,
            text=text,
            name=product.title,
            product_type=product.product_type,
            query=product.query,
            category=product.category,
            product_category=product.product_category,
            attributes=attributes,
            goal_options=goal_options,
            price_upper=price_upper,
        )
