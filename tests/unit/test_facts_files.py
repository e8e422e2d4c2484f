"""The games' knowledge tables: shipped as package data, loaded into the schema's types, checked on load."""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass

import pytest

from archer.envs.facts_file import FactsFileError, parse_facts
from archer.envs.guess_my_city.facts import CITIES, CITY_BY_KEY, COUNTRIES, City
from archer.envs.twenty_questions.facts import CONSTANT_PHRASINGS, FACTS, PROPERTIES, PROPERTY_PHRASINGS, Phrasing
from archer.envs.twenty_questions.words import WORDS


@pytest.mark.parametrize(
    "package, filename",
    [
        ("archer.envs.guess_my_city", "cities.json"),
        ("archer.envs.twenty_questions", "facts.json"),
        ("archer.envs.twenty_questions", "words.json"),
    ],
)
def test_the_facts_files_ship_with_their_packages(package: str, filename: str) -> None:
    assert importlib.resources.files(package).joinpath(filename).is_file()


def test_the_city_facts_load_whole_and_consistent() -> None:
    assert len(CITIES) == len(CITY_BY_KEY) == 91
    assert all(isinstance(city, City) for city in CITIES)
    assert {city.country for city in CITIES} <= set(COUNTRIES)
    assert CITY_BY_KEY["Bombay"].name == "Mumbai" and isinstance(CITY_BY_KEY["Bombay"].tags, frozenset)


def test_the_twenty_questions_facts_load_whole_and_consistent() -> None:
    assert set(FACTS) == {word.name for word in WORDS} and len(FACTS) == 157
    assert len(PROPERTIES) == len(set(PROPERTIES)) == len(PROPERTY_PHRASINGS)
    assert PROPERTY_PHRASINGS["is_living"][0] == Phrasing("Is it alive?")
    assert set(CONSTANT_PHRASINGS) == {False, True} and CONSTANT_PHRASINGS[False].startswith("Is it a bird? | ")


@dataclass(frozen=True)
class Place:
    name: str
    temps: tuple[float, float]
    aliases: tuple[str, ...] = ()
    note: str | None = None


SCHEMA = {"places": tuple[Place, ...], "flags": dict[bool, str]}


def test_a_well_formed_file_loads_into_the_declared_types() -> None:
    text = '{"places": [{"name": "Lima", "temps": [16, 23.5]}], "flags": {"true": "Yes.", "false": "No."}}'
    facts = parse_facts(text, "places.json", SCHEMA)
    assert facts == {"places": (Place("Lima", (16.0, 23.5)),), "flags": {True: "Yes.", False: "No."}}
    assert isinstance(facts["places"][0].temps[0], float)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[", "places.json: not valid JSON"),
        ('{"places": []}', "places.json: missing tables ['flags']"),
        ('{"places": [], "flags": {}, "extra": 1}', "places.json: unknown tables ['extra']"),
        ('{"places": [], "flags": {"true": "a", "true": "b"}}', "places.json: repeated keys ['true']"),
        ('{"places": [{"name": "Lima"}], "flags": {}}', "places.json: places[0]: Place needs fields ['temps']"),
        (
            '{"places": [{"name": "Lima", "temps": [1, 2], "size": 3}], "flags": {}}',
            "places.json: places[0]: Place has no fields ['size']",
        ),
        (
            '{"places": [{"name": "Lima", "temps": [1, 2, 3]}], "flags": {}}',
            "places.json: places[0].temps: expected a list of 2 items, got 3",
        ),
        (
            '{"places": [{"name": 7, "temps": [1, 2]}], "flags": {}}',
            "places.json: places[0].name: expected str, got 7",
        ),
        ('{"places": [], "flags": {"yes": "a"}}', "places.json: flags: expected the key true or false, got 'yes'"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_file_and_the_entry(text: str, message: str) -> None:
    with pytest.raises(FactsFileError) as raised:
        parse_facts(text, "places.json", SCHEMA)
    assert str(raised.value).startswith(message)
