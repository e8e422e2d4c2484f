"""The Twenty Questions fact table and the knowledge-base oracle: facts, paraphrases, guesses, robustness, speed."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from archer.envs.oracles import INVALID, NO, YES
from archer.envs.twenty_questions.facts import FACTS, PROPERTIES, PROPERTY_PHRASINGS, PROPERTY_WORDS
from archer.envs.twenty_questions.oracle import (
    PROPERTY_QUESTIONS,
    KnowledgeBaseOracle,
    answer_property,
    names_word,
    parse_question,
    resolve_word,
)
from archer.envs.twenty_questions.words import WORDS, Word

ORACLE = KnowledgeBaseOracle()
BY_NAME = {word.name: word for word in WORDS}


def ask(word: str, question: str) -> str:
    return ORACLE.answer([BY_NAME[word]], [question])[0]


# ------------------------------------------------------------------------------------------------ the fact table


def test_table_covers_every_word_with_many_properties() -> None:
    assert set(FACTS) == {word.name for word in WORDS}
    assert len(PROPERTIES) >= 40
    assert all(PROPERTY_WORDS[prop] for prop in PROPERTIES), "a property true of no word asks nothing"


def test_every_pair_of_words_is_distinguishable() -> None:
    vectors = Counter(FACTS[word.name] for word in WORDS)
    clashes = [word.name for word in WORDS if vectors[FACTS[word.name]] > 1]
    assert not clashes, f"words with identical property vectors: {clashes}"


@pytest.mark.parametrize(
    ("word", "prop", "expected"),
    [
        ("dog", "is_animal", True),
        ("dog", "has_fur", True),
        ("dog", "barks", True),
        ("dog", "is_man_made", False),
        ("banana", "is_fruit", True),
        ("banana", "is_edible", True),
        ("banana", "is_yellow", True),
        ("banana", "is_vegetable", False),
        ("car", "has_wheels", True),
        ("car", "has_engine", True),
        ("car", "is_vehicle", True),
        ("car", "flies", False),
        ("piano", "is_musical_instrument", True),
        ("piano", "has_keys", True),
        ("piano", "fits_in_pocket", False),
        ("ocean", "is_man_made", False),
        ("ocean", "is_salty", True),
        ("ocean", "is_water_body", True),
        ("scissors", "is_sharp", True),
        ("scissors", "used_for_cutting", True),
        ("airplane", "flies", True),
        ("airplane", "has_wings", True),
        ("elephant", "bigger_than_a_person", True),
        ("golf ball", "fits_in_pocket", True),
        ("tomato", "is_red", True),
        ("tomato", "is_fruit", False),
        ("guitar", "has_strings", True),
        ("trumpet", "is_wind_instrument", True),
        ("chair", "is_furniture", True),
        ("pillow", "is_furniture", False),
        ("meteorite", "from_space", True),
        ("river", "flows", True),
        ("lake", "is_salty", False),
        ("tree", "is_living", True),
        ("rock", "is_living", False),
        ("smartphone", "has_screen", True),
        ("knife", "used_in_garden", False),
        ("shovel", "used_for_digging", True),
        ("watch", "tells_time", True),
        ("lego", "is_toy", True),
    ],
)
def test_fact_spot_checks(word: str, prop: str, expected: bool) -> None:
    assert answer_property(word, prop) is expected
    assert answer_property(BY_NAME[word], prop) is expected


def test_answer_property_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown property"):
        answer_property("dog", "is_purple")
    with pytest.raises(ValueError, match="unknown Twenty Questions word"):
        answer_property("unicorn", "is_animal")


# ------------------------------------------------------------------------------------------------ questions


def test_every_scripted_phrasing_reads_as_its_property() -> None:
    for prop, phrasings in PROPERTY_PHRASINGS.items():
        for phrasing in phrasings:
            intent = parse_question(phrasing.text)
            assert (intent.kind, intent.prop, intent.negated) == ("property", prop, phrasing.negated), phrasing


def test_property_questions_cover_every_property_and_answer_from_the_table() -> None:
    assert set(PROPERTY_QUESTIONS) == set(PROPERTIES)
    secrets = [word for word in WORDS for _ in PROPERTIES]
    questions = [PROPERTY_QUESTIONS[prop] for _ in WORDS for prop in PROPERTIES]
    answers = ORACLE.answer(secrets, questions)
    expected = [YES if prop in FACTS[word.name] else NO for word in WORDS for prop in PROPERTIES]
    assert answers == expected


PARAPHRASES = {
    "is_living": [
        "Is it alive?",
        "Is it a living thing?",
        "Is it living?",
        "Is the object alive?",
        "Is your word a living thing?",
        "Are they alive?",
        "is it alive",
        "IS IT ALIVE???",
        "Alive?",
        "So, is it alive?",
        "Is it something living?",
    ],
    "is_animal": ["Is it an animal?", "Is the object an animal?", "Is it a kind of animal?", "Is this an animal?"],
    "has_fur": ["Does it have fur?", "Is it furry?", "Does the object have fur?", "Is it covered in fur?"],
    "is_edible": [
        "Can you eat it?",
        "Is it edible?",
        "Is it food?",
        "Is it something you can eat?",
        "Do people eat it?",
        "Can it be eaten?",
        "Is it something that people usually eat?",
    ],
    "bigger_than_a_breadbox": ["Is it bigger than a breadbox?", "Is it larger than a bread box?"],
    "found_in_kitchen": [
        "Would you find it in a kitchen?",
        "Is it typically found in the kitchen?",
        "Can you find it in a kitchen?",
        "Is it something you would find in the kitchen?",
    ],
    "used_for_cutting": ["Is it used for cutting?", "Can you cut things with it?", "Do you use it to cut things?"],
    "made_of_metal": ["Is it made of metal?", "Is it metal?", "Is it made out of metal?", "Is it metallic?"],
    "flies": ["Can it fly?", "Does it fly?", "Is it able to fly?", "Is it something that flies?"],
    "is_red": ["Is it red?", "Is it red in colour?", "Is its color red?", "Is it usually red?"],
}


@pytest.mark.parametrize("prop", sorted(PARAPHRASES))
def test_paraphrases_get_the_same_answer(prop: str) -> None:
    for question in PARAPHRASES[prop]:
        intent = parse_question(question)
        assert (intent.kind, intent.prop, intent.negated) == ("property", prop, False), question
    for word in ("dog", "banana", "car", "ocean", "knife", "apple"):
        expected = YES if prop in FACTS[word] else NO
        assert {ask(word, question) for question in PARAPHRASES[prop]} == {expected}, (word, prop)


@pytest.mark.parametrize(
    ("word", "question", "expected"),
    [
        ("dog", "Is it natural?", YES),
        ("dog", "Is it man-made?", NO),
        ("car", "Is it found in nature?", NO),
        ("dog", "Is it not an animal?", NO),
        ("dog", "Does it not have fur?", NO),
        ("dog", "Is it something you cannot eat?", YES),
        ("dog", "Is it smaller than a breadbox?", NO),
        ("golf ball", "Is it smaller than a breadbox?", YES),
        ("piano", "Can you carry it?", NO),
        ("pen", "Can you carry it?", YES),
    ],
)
def test_negated_questions(word: str, question: str, expected: str) -> None:
    assert ask(word, question) == expected


@pytest.mark.parametrize(
    ("word", "question", "expected"),
    [
        ("banana", "Is it a fruit?", YES),
        ("tomato", "Is it a fruit?", NO),
        ("carrot", "Is it a vegetable?", YES),
        ("couch", "Is it a kind of furniture?", YES),
        ("couch", "Is it a piece of furniture?", YES),
        ("violin", "Is it a musical instrument?", YES),
        ("whisk", "Is it a kitchen tool?", YES),
        ("whisk", "Is it a kitchen utensil?", YES),
        ("microwave", "Is it a kitchen utensil?", NO),
        ("microwave", "Is it an appliance?", YES),
        ("hammer", "Is it a tool?", YES),
        ("bracelet", "Is it jewelry?", YES),
        ("bracelet", "Is it jewellery?", YES),
        ("kite", "Is it a toy?", YES),
        ("bus", "Is it a vehicle?", YES),
        ("shirt", "Is it clothing?", YES),
        ("tennis ball", "Is it a ball?", YES),
        ("tennis racket", "Is it a ball?", NO),
        ("dog", "Is it a bird?", NO),
        ("rock", "Is it real?", YES),
    ],
)
def test_category_questions(word: str, question: str, expected: str) -> None:
    assert ask(word, question) == expected


@pytest.mark.parametrize(
    ("word", "question", "expected"),
    [
        ("dog", "Is it a dog?", YES),
        ("dog", "Is the word dog?", YES),
        ("dog", "Dog?", YES),
        ("dog", "Is it dogs?", YES),
        ("dog", "Are you thinking of a dog?", YES),
        ("dog", "My guess is a dog.", YES),
        ("dog", "Is it a cat?", NO),
        ("cat", "Is it a dog?", NO),
        ("scissors", "Is it a pair of scissors?", YES),
        ("scissors", "Is it scissors?", YES),
        ("soccer ball", "Is it a soccer ball?", YES),
        ("golf ball", "Is it a soccer ball?", NO),
        ("television", "Is it a TV?", YES),
        ("television", "Is it a television?", YES),
        ("airplane", "Is it a plane?", YES),
        ("pants", "Is it a pair of pants?", YES),
        ("shoes", "Is it a shoe?", YES),
        ("cooking pot", "Is it a pot?", YES),
        ("lawn mower", "Is it a lawn mower?", YES),
        ("watering can", "Is it a watering can?", YES),
        ("computer keyboard", "Is it a keyboard?", YES),
        ("orange", "Is it an orange?", YES),
        ("carrot", "Is it an orange?", NO),
        ("carrot", "Is it orange?", YES),
        ("dog", "Is it a unicorn?", INVALID),
    ],
)
def test_guesses(word: str, question: str, expected: str) -> None:
    assert ask(word, question) == expected


def test_names_word_handles_aliases_and_multi_word_names() -> None:
    assert names_word("Is it a pair of scissors?", BY_NAME["scissors"])
    assert names_word("Is it a soccer ball?", "soccer ball")
    assert names_word("Is it a TV?", "television")
    assert not names_word("Is it a TV?", "computer")
    assert not names_word("Is it orange?", "orange")


@pytest.mark.parametrize(
    "question",
    [
        "",
        "?",
        "...",
        "What is it?",
        "How big is it?",
        "Is it a cat or a dog?",
        "Is it bigger or smaller than a car?",
        "Tell me the answer.",
        "asdf qwer zxcv",
        "Is it a spaceship made of cheese?",
        "None",
        "null",
    ],
)
def test_questions_it_cannot_answer_are_invalid(question: str) -> None:
    assert ask("dog", question) == INVALID


def test_secrets_may_be_alias_strings() -> None:
    assert ORACLE.answer(["tv", "Pair of scissors", "DOG"], ["Does it have a screen?"] * 3) == [YES, NO, NO]
    assert resolve_word("plane") == BY_NAME["airplane"]


def test_custom_word_outside_the_list_is_guessable_by_its_alias() -> None:
    custom = Word(("dog", "doggo"), "Animals")
    assert ORACLE.answer([custom], ["Is it a doggo?"]) == [YES]


def test_programmer_errors_raise() -> None:
    with pytest.raises(ValueError, match="unknown Twenty Questions word"):
        ORACLE.answer(["unicorn"], ["Is it alive?"])
    with pytest.raises(ValueError, match="one per question"):
        ORACLE.answer(["dog", "cat"], ["Is it alive?"])
    with pytest.raises(ValueError, match="no facts"):
        ORACLE.answer([Word(("unicorn",), "Animals")], ["Is it alive?"])


def _junk(rng: random.Random) -> str:
    length = rng.choice([0, 1, 2, 5, 20, 100, 301, 1000, 10_000])
    pools = [
        lambda: chr(rng.randrange(0, 32)),
        lambda: chr(rng.randrange(32, 127)),
        lambda: chr(rng.randrange(0x80, 0x3000)),
        lambda: chr(rng.randrange(0xD800, 0xE000)),
        lambda: chr(rng.randrange(0x1F300, 0x1FAFF)),
        lambda: chr(rng.randrange(0, 0x110000)),
        lambda: rng.choice(
            ["Is it ", "a ", "dog", "?", " or ", "not ", "\n", "'", "\u2019", "\u200b", "Does it have "]
        ),
    ]
    return "".join(rng.choice(pools)() for _ in range(length))


def test_junk_never_raises_and_always_gets_one_of_three_answers() -> None:
    rng = random.Random(1234)
    questions = [_junk(rng) for _ in range(3000)]
    secrets = [rng.choice(WORDS) for _ in questions]
    assert set(ORACLE.answer(secrets, questions)) <= {YES, NO, INVALID}
    assert set(ORACLE.answer(["dog"] * 4, [None, 3, b"Is it a dog?", ["x"]])) == {INVALID}  # type: ignore[list-item]
