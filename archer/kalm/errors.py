"""Errors of the KALM pipeline; each names its cause (file, key, goal) and the fix."""

from __future__ import annotations

from archer.errors import ArcherError, MissingExtraError, MissingFileError

__all__ = [
    "KalmConfigError",
    "KalmDataError",
    "GoalSplitError",
    "MissingExtraError",
    "MissingFileError",
    "require_d3rlpy",
]


class KalmConfigError(ArcherError, ValueError):
    """A KALM config value that cannot work; the message names the key. (Not ``archer.config.ConfigError``:
    ``archer.config`` registers the KALM schema, so importing it here would make an import circle.)"""


class KalmDataError(ArcherError, ValueError):
    """A trajectory or prompt file, or arrays built from one, that do not have the expected keys or sizes."""


class GoalSplitError(ArcherError, ValueError):
    """A goal or level that is not part of the environment's goal splits."""


def require_d3rlpy():
    """Import d3rlpy, or explain how to install the optional extra."""
    try:
        import d3rlpy
    except ImportError as error:
        raise MissingExtraError(
            "offline RL in the KALM pipeline needs d3rlpy: pip install -e '.[kalm]' (d3rlpy==2.8.0)"
        ) from error
    quiet_d3rlpy()
    return d3rlpy


def quiet_d3rlpy() -> None:
    """d3rlpy logs every fit's parameters through structlog at info level; keep warnings only."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
