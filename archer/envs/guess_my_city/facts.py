"""Facts about the 91 cities of Guess My City, written for this project: the schema here, the facts in
``cities.json`` beside this module (read and checked by ``archer.envs.facts_file.load_facts`` on import).

``CITIES`` lists the reference's cities in the reference's order (game id ``i`` is ``CITIES[i]``). Each city keeps
the reference's spelling as its ``key`` (``Bombay``, ``Kinshaha``, ``Pyong Yang``) and its reference country text
(``Ethopia``, ``China`` for Taipei), which is what the reference's oracle prompt used; ``name`` is the corrected
English display name and ``aliases`` the other names a player may use (``Mumbai``, ``Kinshasa``, ``Pyongyang``).

The facts are what a careful reader of an encyclopedia would agree with, kept coarse where figures are disputed:
population is a size class of the metropolitan area, temperatures are rounded monthly means, and the topics a
city is "known for" (``tags``) are the things it is widely famous for, not everything it has. No text in the
file names the city it describes (the knowledge-base oracle quotes these texts; a test checks it).

Countries, world regions, other place names and the topic vocabulary used by the oracle are here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archer.envs.facts_file import load_facts


@dataclass(frozen=True)
class Country:
    """Facts shared by every city of a country.

    Attributes:
        name: the country's name as used in a sentence ("the United Kingdom").
        aliases: lower-case names a question may use for it.
        languages: languages most people speak, main one first (lower case).
        religion: one sentence about religion.
        currency: the currency, as used in a sentence.
        sports: the most popular sports (lower case).
        landlocked: the country has no sea coast.
    """

    name: str
    aliases: tuple[str, ...]
    languages: tuple[str, ...]
    religion: str
    currency: str
    sports: tuple[str, ...]
    landlocked: bool = False


@dataclass(frozen=True)
class City:
    """Everything the built-in oracle knows about one city.

    Attributes:
        key: the reference's spelling of the city, its game id and the text of the reference's oracle prompt.
        country_ref: the reference's spelling of the country ("Ethopia"; "China" for Taipei).
        name: the corrected English name ("Mumbai" for the reference's "Bombay").
        aliases: other names a player may use, accents left out.
        country: key of ``COUNTRIES``.
        continent: one of ``CONTINENTS`` (the main one for a city that spans two).
        regions: every ``REGION_NAMES`` entry the city lies in, continent included.
        parts: compass position inside its country: any of north, south, east, west, center.
        provinces: names of the first-level division (state, province) it lies in, when that name differs from
            the city's own.
        division: what kind of first-level division it is in, as a sentence fragment.
        lat, lon: degrees (north and east positive).
        elevation: metres above sea level, rounded.
        climate: a sentence fragment describing the climate.
        temps: mean temperature of the coldest and the warmest month, degrees Celsius, rounded.
        rain: mean annual precipitation, millimetres, rounded.
        snow: 0 (almost never), 1 (now and then), 2 (most winters).
        coast: ``coast`` (on the sea), ``near`` (the sea is close but it is not on it), ``lake`` (on a big lake) or
            ``inland``.
        water: the sea, ocean or lake it is on or near.
        rivers: rivers that flow through it.
        island: the island it stands on, if any.
        peninsula: the peninsula it stands on, if any.
        mountains: the mountains or hills in or next to it, if any.
        capital: ``national`` (capital of its country), ``regional`` (capital of a state or province) or ``none``.
        capital_of: for a regional capital, what it is the capital of.
        size: population class of the metropolitan area (``SIZE_TEXT``).
        age: ``AGE_TEXT`` key, or None when the founding date is disputed.
        languages: languages spoken there, main one first (None: the country's).
        religion: one sentence about religion (None: the country's).
        landmarks: famous sights.
        foods: famous dishes and foods.
        sports: sports and teams it is known for (the country's popular sports are added).
        known_for: one sentence fragment: what it is most famous for.
        tags: ``TOPICS`` keys it is famous for.
    """

    key: str
    country_ref: str
    name: str
    country: str
    continent: str
    regions: tuple[str, ...]
    parts: tuple[str, ...]
    lat: float
    lon: float
    elevation: int
    climate: str
    temps: tuple[float, float]
    rain: int
    snow: int
    coast: str
    size: str
    known_for: str
    aliases: tuple[str, ...] = ()
    provinces: tuple[str, ...] = ()
    division: str = ""
    water: str | None = None
    rivers: tuple[str, ...] = ()
    island: str | None = None
    peninsula: str | None = None
    mountains: str | None = None
    capital: str = "none"
    capital_of: str | None = None
    age: str | None = None
    languages: tuple[str, ...] | None = None
    religion: str | None = None
    landmarks: tuple[str, ...] = ()
    foods: tuple[str, ...] = ()
    sports: tuple[str, ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def reference_text(self) -> str:
        """``"City, Country"`` exactly as the reference wrote it (the reference oracle's prompt)."""
        return f"{self.key}, {self.country_ref}"

    @property
    def names(self) -> tuple[str, ...]:
        """Every name of the city: the reference's spelling, the display name and the aliases."""
        seen: dict[str, None] = {}
        for name in (self.key, self.name, *self.aliases):
            seen.setdefault(name, None)
        return tuple(seen)

    @property
    def spoken(self) -> tuple[str, ...]:
        """Languages spoken there, main one first."""
        return self.languages if self.languages is not None else COUNTRIES[self.country].languages


_FACTS = load_facts(
    "archer.envs.guess_my_city",
    "cities.json",
    {
        "countries": dict[str, Country],
        "other_countries": tuple[str, ...],
        "other_cities": tuple[str, ...],
        "main_faith": dict[str, str],
        "largest_city": dict[str, tuple[tuple[str, ...], bool]],
        "former_capital": dict[str, str],
        "lakes": dict[str, str],
        "mountain_ranges": dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
        "continents": tuple[str, ...],
        "region_names": dict[str, tuple[str, ...]],
        "water_names": dict[str, tuple[str, ...]],
        "language_names": dict[str, tuple[str, ...]],
        "religion_names": dict[str, tuple[str, ...]],
        "other_provinces": tuple[str, ...],
        "topics": dict[str, tuple[tuple[str, ...], str]],
        "age_text": dict[str, str],
        "size_text": dict[str, str],
        "cities": tuple[City, ...],
    },
)

COUNTRIES: dict[str, Country] = _FACTS["countries"]
"""Country key (``City.country``) -> its facts."""

OTHER_COUNTRIES: tuple[str, ...] = _FACTS["other_countries"]
"""Countries with none of the game's cities: a question naming one is answered "No"."""

OTHER_CITIES: tuple[str, ...] = _FACTS["other_cities"]
"""Well-known cities outside the game: a guess of one of them is answered "No"."""

MAIN_FAITH: dict[str, str] = _FACTS["main_faith"]
"""Main religion of each country (a ``RELIGION_NAMES`` key, or "none" where most people follow none)."""

LARGEST_CITY: dict[str, tuple[tuple[str, ...], bool]] = _FACTS["largest_city"]
"""Country -> (the game's cities that are, or may be, its largest; whether which one is largest is disputed).

The United States' largest city is not in the game. India, China, Taiwan, Australia and Ecuador depend on whether
one counts the city proper, the urban area or the municipality."""

FORMER_CAPITAL: dict[str, str] = _FACTS["former_capital"]
"""Former national (or imperial) capitals among the game's cities that are not capitals today."""

LAKES: dict[str, str] = _FACTS["lakes"]
"""Lakes in or at a city (cities on a big lake say so through ``City.coast == "lake"``)."""

MOUNTAIN_RANGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = _FACTS["mountain_ranges"]
"""Mountain ranges a question may name: range -> (how a question names it, the game cities in or beside it)."""

CONTINENTS: tuple[str, ...] = _FACTS["continents"]

REGION_NAMES: dict[str, tuple[str, ...]] = _FACTS["region_names"]
"""Region -> how a question may name it. Membership is per city (``City.regions``); a continent is a region too."""

WATER_NAMES: dict[str, tuple[str, ...]] = _FACTS["water_names"]
"""Seas, oceans and lakes a question may name (other than the ones in ``City.water``); naming one that is not the
city's water is answered "No"."""

LANGUAGE_NAMES: dict[str, tuple[str, ...]] = _FACTS["language_names"]
"""Language -> how a question may name it. "Chinese" matches any Chinese language a city speaks."""

RELIGION_NAMES: dict[str, tuple[str, ...]] = _FACTS["religion_names"]

OTHER_PROVINCES: tuple[str, ...] = _FACTS["other_provinces"]
"""Province-level divisions a question may name that contain none of the game's cities ("No")."""

TOPICS: dict[str, tuple[tuple[str, ...], str]] = _FACTS["topics"]
"""Topic tag -> (how a question may name it, how an answer names it). ``City.tags`` says which a city is famous
for."""

AGE_TEXT: dict[str, str] = _FACTS["age_text"]
SIZE_TEXT: dict[str, str] = _FACTS["size_text"]

# Size class -> (lower, upper) bound of the population in millions, for questions such as "more than 5 million?"
# (a rule rather than a fact, and JSON has no infinity, so it stays in code).
SIZE_BOUNDS = {
    "megacity": (10.0, float("inf")),
    "very large": (5.0, 10.0),
    "large": (2.0, 5.0),
    "medium": (0.5, 2.0),
    "small": (0.1, 0.5),
}


CITIES: tuple[City, ...] = _FACTS["cities"]
"""The reference's cities in the reference's order: game id ``i`` is ``CITIES[i]``."""

CITY_BY_KEY: dict[str, City] = {city.key: city for city in CITIES}
