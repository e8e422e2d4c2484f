"""Dataset files as JSON lists of records: checked reading with clear errors, atomic writing."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from archer.errors import ArcherError
from archer.utils import atomic_write_text

log = logging.getLogger(__name__)

T = TypeVar("T")


class DatasetError(ArcherError, ValueError):
    """A dataset file that cannot be used; the message names the file, the record and what is wrong."""


#: The most characters one text of a dataset record may hold: a line, an utterance or an action (the longest the
#: shipped and reference datasets hold is under 1,000). Longer texts are refused before anything tokenises them: a
#: single 30 MB line once held a run at 10 GB of memory.
MAX_TEXT_CHARS = 10_000
#: The most characters one observation of a recorded game may hold (a whole history, or a web page).
MAX_OBSERVATION_CHARS = 200_000


def check_length(text: str, where: str, limit: int = MAX_TEXT_CHARS, error: type[DatasetError] = DatasetError) -> str:
    """``text`` if it has at most ``limit`` characters; otherwise ``error`` naming ``where`` (file, record, field).

    Raises:
        DatasetError: the text is longer than ``limit``.
    """
    if len(text) > limit:
        raise error(f"{where} is {len(text):,} characters long; a dataset text may have at most {limit:,}")
    return text


def read_json_list(path: str, missing: str, items: str, error: type[DatasetError] = DatasetError) -> list[Any]:
    """The top-level JSON list of ``path``, which must hold at least one record.

    Args:
        path: the file.
        missing: the message when the file does not exist (what it is and where to get it).
        items: what the list holds, for messages ("conversations", "games").
        error: the ``DatasetError`` subclass to raise.
    """
    if not os.path.isfile(path):
        raise error(missing)
    try:
        with open(path, encoding="utf-8") as file:
            records = json.load(file)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc}); expected a list of {items}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc}); expected a JSON list of {items}") from exc
    if not isinstance(records, list):
        raise error(f"{path}: the top level is a JSON {type(records).__name__}, expected a list of {items}")
    if not records:
        # Caught here, naming the file, rather than as an empty replay buffer deep in training.
        raise error(f"{path}: holds no {items} (an empty list); give a file with at least one")
    return records


def read_checked_records(
    path: str,
    missing: str,
    items: str,
    check: Callable[[Any, int, str], T],
    error: type[DatasetError] = DatasetError,
) -> list[T]:
    """``check(record, index, path)`` of every record of ``path``'s JSON list (``read_json_list``, whose arguments
    these are): a format's records, checked and converted."""
    return [check(record, index, path) for index, record in enumerate(read_json_list(path, missing, items, error))]


def write_json_list(records: list[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Write ``records`` as a JSON list, one record per line, through a temporary file and a rename."""
    target = Path(path)
    text = ",\n".join(json.dumps(record, ensure_ascii=False) for record in records)
    atomic_write_text(target, f"[\n{text}\n]\n" if records else "[]\n")


def write_checked_records(
    records: list[dict[str, Any]],
    path: str | os.PathLike[str],
    check: Callable[[dict[str, Any], int, str], Any],
) -> None:
    """Check every record with ``check(record, index, where)`` first, then ``write_json_list`` them.

    Nothing is written when a record fails its check (``check`` raises ``DatasetError``).
    """
    target = Path(path)
    for index, record in enumerate(records):
        check(record, index, f"{target} (not written)")
    write_json_list(records, target)


def shorten(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages about bad records."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def require_keys(
    record: Any, where: str, keys: tuple[str, ...], error: type[ArcherError] = DatasetError
) -> dict[str, Any]:
    """``record`` if it is a JSON object holding every one of ``keys``; otherwise ``error`` naming ``where``."""
    if not isinstance(record, dict):
        raise error(f"{where} is a JSON {type(record).__name__}, expected an object with keys {', '.join(keys)}")
    missing = [key for key in keys if key not in record]
    if missing:
        raise error(f"{where} has no {', '.join(repr(k) for k in missing)} (keys found: {sorted(record)})")
    return record


def require_lines(record: dict[str, Any], key: str, where: str, limit: int, item: str, limit_reason: str) -> list[str]:
    """``record[key]``: a non-empty list of at most ``limit`` strings of at most ``MAX_TEXT_CHARS`` characters each;
    otherwise a ``DatasetError`` naming ``where``.

    Args:
        record: a JSON object (``require_keys`` checked it holds ``key``).
        key: the list's key.
        where: the record, for the message (file and record number).
        limit: how many entries a record may hold.
        item: what an entry is called in the message (``line``, ``utterance``).
        limit_reason: what sets the limit, for the message (``the format allows``).
    """
    lines = record[key]
    if not isinstance(lines, list):
        raise DatasetError(f"{where}: {key!r} must be a list of strings, got a {type(lines).__name__}")
    if not lines:
        raise DatasetError(f"{where}: {key!r} is empty; a game has at least one question")
    if len(lines) > limit:
        raise DatasetError(f"{where} has {len(lines)} {item}s; {limit_reason} at most {limit} (one per turn)")
    for number, line in enumerate(lines):
        if not isinstance(line, str):
            raise DatasetError(f"{where}: {item} {number} is a {type(line).__name__}, expected a string")
        check_length(line, f"{where}: {item} {number}")
    return lines


def dataset_file(path: str | None, cached: Path, generate: Callable[[Path], None], what: str) -> Path:
    """The dataset a run reads: ``path`` (a user's file, ``data.path``) when given; else the generated file
    ``cached`` (in the cache folder), written by ``generate`` the first time and reused after.

    Args:
        path: the user's file, or None.
        cached: where the generated dataset is kept.
        generate: writes the dataset to the path it is given.
        what: what is generated, for the log ("2000 Guess My City games").
    """
    if path:
        return Path(path).expanduser()
    if not cached.exists():
        log.info("generating %s into %s", what, cached)
        generate(cached)
    return cached
