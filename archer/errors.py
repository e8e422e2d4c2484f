"""The base of the project's own errors: those whose message alone says what is wrong and how to fix it.

The command line (``scripts/run.py``) prints an ``ArcherError`` as one line, without a traceback, and exits with
status 1; any other exception is a bug and keeps its traceback. Each subclass also derives from the built-in type
callers already catch (``ValueError``, ``FileNotFoundError``, ...).
"""

from __future__ import annotations


class ArcherError(Exception):
    """An error whose message names the config key, file or URL at fault and the fix."""


class MissingFileError(ArcherError, FileNotFoundError):
    """A file the configuration names does not exist; the message says which key names it and where to get it."""


class MissingExtraError(ArcherError, ImportError):
    """An optional dependency is not installed; the message gives the ``pip install`` command."""
