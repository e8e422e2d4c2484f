"""Knowledge tables as package data: a JSON file read into typed values (frozen dataclasses, tuples, frozensets).

A game keeps what it knows (the Twenty Questions facts, the city facts) in a JSON file beside its code, so the
code holds only the schema and the rules. ``load_facts`` checks every entry against the type its module declares
and stops at the first wrong one with the file and the entry's path, e.g.
``cities.json: CITIES[3].temps: expected a list of 2 items, got 3``.

JSON has no tuples, sets or non-string keys: tuples and frozensets are lists, ``bool`` keys are ``"true"`` and
``"false"``, and a dataclass is an object of its fields (fields left out take their defaults).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import types
import typing
from typing import Any

from archer.errors import ArcherError


class FactsFileError(ArcherError, ValueError):
    """A facts file is missing, is not JSON, or holds an entry that does not fit its declared type."""


def load_facts(package: str, filename: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Read ``filename`` from ``package``'s data files and convert each top-level entry to its type in ``schema``.

    Args:
        package: the package that ships the file, e.g. ``"archer.envs.guess_my_city"``.
        filename: the file's name inside the package.
        schema: top-level entry name -> its type (``dict[str, Country]``, ``tuple[str, ...]``, ...).

    Returns:
        Entry name -> value, for every name of ``schema``.

    Raises:
        FactsFileError: the file is missing or malformed, lacks an entry, has one more, repeats a key or holds a
            value of the wrong type; the message names the file and the entry.
    """
    resource = importlib.resources.files(package).joinpath(filename)
    try:
        text = resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FactsFileError(f"{filename}: not found in package {package} (see setup.py's package_data)") from None
    return parse_facts(text, filename, schema)


def parse_facts(text: str, filename: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``load_facts`` on the file's ``text``; ``filename`` names it in error messages."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys(filename))
    except json.JSONDecodeError as error:
        raise FactsFileError(f"{filename}: not valid JSON: {error}") from None
    _require(isinstance(data, dict), filename, "expected an object of named tables")
    missing, unknown = sorted(set(schema) - set(data)), sorted(set(data) - set(schema))
    _require(not missing, filename, f"missing tables {missing}")
    _require(not unknown, filename, f"unknown tables {unknown}")
    return {name: convert(data[name], hint, f"{filename}: {name}") for name, hint in schema.items()}


def convert(value: Any, hint: Any, where: str) -> Any:
    """``value`` (parsed JSON) as type ``hint``; ``where`` names the entry in error messages."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return convert(value, inner, where)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _convert_dataclass(value, hint, where)
    if origin is tuple:
        _require(isinstance(value, list), where, f"expected a list, got {_show(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(item, args[0], f"{where}[{index}]") for index, item in enumerate(value))
        _require(len(value) == len(args), where, f"expected a list of {len(args)} items, got {len(value)}")
        pairs = enumerate(zip(value, args, strict=True))
        return tuple(convert(item, arg, f"{where}[{index}]") for index, (item, arg) in pairs)
    if origin is frozenset:
        _require(isinstance(value, list), where, f"expected a list, got {_show(value)}")
        items = [convert(item, args[0], f"{where}[{index}]") for index, item in enumerate(value)]
        _require(len(set(items)) == len(items), where, "repeats an item")
        return frozenset(items)
    if origin is dict:
        _require(isinstance(value, dict), where, f"expected an object, got {_show(value)}")
        return {_key(key, args[0], where): convert(item, args[1], f"{where}[{key!r}]") for key, item in value.items()}
    if hint is float:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        _require(number, where, f"expected a number, got {_show(value)}")
        return float(value)
    if hint in (str, int, bool):
        _require(type(value) is hint, where, f"expected {hint.__name__}, got {_show(value)}")
        return value
    raise TypeError(f"{where}: load_facts cannot read type {hint!r}")


def _convert_dataclass(value: Any, cls: type, where: str) -> Any:
    _require(isinstance(value, dict), where, f"expected an object of {cls.__name__}'s fields, got {_show(value)}")
    hints = typing.get_type_hints(cls)
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    _require(not unknown, where, f"{cls.__name__} has no fields {unknown}")
    required = {
        name
        for name, field in fields.items()
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    }
    missing = sorted(required - set(value))
    _require(not missing, where, f"{cls.__name__} needs fields {missing}")
    return cls(**{name: convert(item, hints[name], f"{where}.{name}") for name, item in value.items()})


def _key(key: str, hint: Any, where: str) -> Any:
    if hint is bool:
        _require(key in ("true", "false"), where, f"expected the key true or false, got {key!r}")
        return key == "true"
    _require(hint is str, where, f"load_facts cannot read keys of type {hint!r}")
    return key


def _unique_keys(filename: str) -> Any:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        if len(built) < len(pairs):
            seen: set[str] = set()
            repeated = sorted({key for key, _ in pairs if key in seen or seen.add(key)})
            raise FactsFileError(f"{filename}: repeated keys {repeated}")
        return built

    return build


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise FactsFileError(f"{where}: {message}")
