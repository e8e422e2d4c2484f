"""The Twenty Questions word list (ARCHER_SPEC.md 3.1): 157 entries in 17 categories.

Each entry is a canonical name followed by its aliases, separated by ``;`` in the reference's notation. The
order matters: the 10-word subset is entries 1, 11, 21, ..., 91 of the flattened list.
"""

from __future__ import annotations

from dataclasses import dataclass

_CATEGORIES: dict[str, list[str]] = {
    "Sports": [
        "Basketball",
        "Football",
        "Baseball",
        "Soccer ball",
        "Golf ball",
        "Tennis ball",
        "Volleyball",
        "Tennis racket",
        "Baseball bat",
        "Helmet",
    ],
    "Animals": ["Cat", "Dog", "Horse", "Cow", "Sheep", "Rabbit", "Lion", "Tiger", "Bear", "Elephant"],
    "Fruits": [
        "Apple",
        "Banana",
        "Orange",
        "Strawberry",
        "Grape",
        "Watermelon",
        "Pineapple",
        "Mango",
        "Cantaloupe",
        "Peach",
    ],
    "Vehicles": [
        "Car",
        "Truck",
        "Motorcycle",
        "Boat",
        "Airplane;Plane",
        "Train",
        "Bus",
        "Helicopter",
        "Scooter",
        "Ship",
    ],
    "Clothes": [
        "Shirt",
        "Pants;Pant;Pair of pants",
        "Jacket",
        "Dress",
        "Skirt",
        "Belt",
        "Shoes;Shoe;Pair of shoes",
        "Boots;Boot;Pair of boots",
        "Socks;Sock;Pair of socks",
        "Hat",
        "Scarf",
    ],
    "Electronics": [
        "Computer",
        "Smartphone",
        "Television;TV",
        "Headphone;Headphones;Pair of headphones",
        "Monitor;Computer monitor",
        "Camera",
        "Microwave;Microwave oven",
        "Refrigerator",
        "Blender",
        "Computer keyboard;Keyboard",
    ],
    "Musical Instruments": [
        "Piano",
        "Guitar",
        "Drum;Drums",
        "Violin",
        "Saxophone",
        "Flute",
        "Trumpet",
        "Clarinet",
        "Harp",
        "Trombone",
    ],
    "Furniture": [
        "Chair",
        "Table",
        "Bed",
        "Desk",
        "Couch",
        "Dresser",
        "Bookcase",
        "Nightstand",
        "Mattress",
        "Pillow",
    ],
    "Office Supplies": [
        "Pen",
        "Paper;Piece of paper",
        "Stapler",
        "Printer",
        "Calculator",
        "Battery;Battery pack;Pack of batteries",
        "Toothbrush",
        "Toothpaste",
        "Pencil",
        "Sharpie",
        "Scissors;Pair of scissors",
        "Key",
        "Diary",
        "Calendar",
    ],
    "Vegetables": [
        "Carrot",
        "Potato",
        "Broccoli",
        "Tomato",
        "Onion",
        "Spinach",
        "Corn",
        "Peas;Pea",
        "Celery",
        "Cucumber",
    ],
    "Art": [
        "Painting;Canvas painting;Oil painting;Watercolor painting",
        "Paintbrush",
        "Canvas;Painting canvas",
        "Eraser;Pencil eraser",
        "Marker",
        "Glue;Glue stick;Bottle of glue",
        "Sculpture",
    ],
    "Kitchen Tools": [
        "Knife",
        "Spoon",
        "Fork",
        "Plate",
        "Bowl",
        "Cooking pot;Pot",
        "Pan;Saucepan;Frying pan",
        "Cup",
        "Chopstick;Chopsticks;Pair of chopsticks",
        "Whisk",
    ],
    "Nature": [
        "Rock",
        "Tree",
        "Bush",
        "Mountain",
        "Forest",
        "Ocean",
        "Sea",
        "Lake",
        "River",
        "Meteorite",
        "Cactus",
    ],
    "Toys": ["Lego;Lego set", "Doll;Toy doll;Plush doll", "Kite", "Puzzle;Jigsaw puzzle"],
    "Jewelry": [
        "Earring;Earrings;Pair of earrings",
        "Necklace",
        "Bracelet",
        "Ring",
        "Brooch",
        "Hairclip",
        "Pendant",
        "Watch",
        "Locket",
    ],
    "Garden Supplies": ["Gloves;Glove;Pair of gloves", "Shovel", "Rake", "Watering can", "Lawn mower"],
    "Tools": ["Hammer", "Screwdriver", "Wrench", "Saw", "Pliers;plier;Pair of pliers", "Drill"],
}

SUBSET_INDICES = tuple(range(1, 100, 10))


@dataclass(frozen=True)
class Word:
    """One hidden word of Twenty Questions.

    Attributes:
        aliases: lower-cased names; the first is the canonical one (the reference's oracle prompt uses it).
        category: the reference's category label, e.g. ``"Kitchen Tools"``.
    """

    aliases: tuple[str, ...]
    category: str

    @property
    def name(self) -> str:
        return self.aliases[0]


WORDS: tuple[Word, ...] = tuple(
    Word(tuple(alias.strip().lower() for alias in entry.split(";")), category)
    for category, entries in _CATEGORIES.items()
    for entry in entries
)
SUBSET_WORDS: tuple[Word, ...] = tuple(WORDS[i] for i in SUBSET_INDICES)
CATEGORIES: tuple[str, ...] = tuple(_CATEGORIES)


def word_list(subset: str) -> tuple[Word, ...]:
    """The words played: ``full`` (157) or ``subset10`` (the reference's 10-word subset)."""
    if subset == "full":
        return WORDS
    if subset == "subset10":
        return SUBSET_WORDS
    raise ValueError(f"unknown word subset {subset!r}; choose 'full' or 'subset10'")
