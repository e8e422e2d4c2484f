"""What the tools that wrap ``run.py`` (``benchmark_methods.py``, ``benchmark_speed.py``, ``gpu_check.py``) check
before they start, so that a user's mistake is one line, as ``run.py`` prints it, rather than a traceback after the
work: a path they cannot write, a Hydra override that does not compose.

Standard library only at import time: ``gpu_check.py`` imports it before it has checked that the packages are there.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose refusals are one line, ``<prog>: error: <message>`` (exit status 2), as ``run.py``'s
    are: the usage argparse prints before them (six lines for ``gpu_check.py``) is left to ``--help``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def path_problem(path: Path, folder: bool) -> str | None:
    """Why ``path`` cannot be written as a folder (``folder``) or a file, or None when it can: created where
    missing, its nearest existing parent must be a writable folder. Nothing is created."""
    path = Path(path).expanduser().absolute()
    if path.exists():
        if folder and not path.is_dir():
            return "is a file, not a folder; give a folder"
        if not folder and path.is_dir():
            return "is a folder; give the name of a file"
        where = path if folder else path.parent
        return None if os.access(where, os.W_OK | os.X_OK) else f"{where} is not writable"
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot be created: {parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: {parent} is not writable"
    return None


def refuse_unwritable(option: str, path: Path | None, folder: bool) -> None:
    """Refuse (one line) a path given as ``option`` that cannot be written (``path_problem``); None passes.

    Raises:
        SystemExit: ``"<option> <path>: <why>"``.
    """
    if path is not None and (problem := path_problem(path, folder)) is not None:
        raise SystemExit(f"{option} {path}: {problem}")


def composition_message(error: BaseException) -> str:
    """One line for a refused Hydra composition (a misspelt key, a value of the wrong type): the text ``run.py``
    prints for it (``archer.cli.report_composition_errors``), its lines joined, and a moved key named with its new
    path."""
    from omegaconf.errors import OmegaConfBaseException

    from archer.config import renamed_key_message

    renamed = renamed_key_message(error)
    if renamed is not None:
        return renamed
    text = str(error)
    if isinstance(error.__cause__, OmegaConfBaseException):
        text += "\n" + str(error.__cause__).splitlines()[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(line if line[-1] in ".:;!?" else f"{line}." for line in lines)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename, so that a reader (or the next
    invocation) never finds half a file; the temporary file is removed when the write fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
