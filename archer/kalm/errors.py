"""Errors of the KALM pipeline; each names its cause (file, key, goal) and the fix."""

from __future__ import annotations

from archer.errors import ArcherError, MissingExtraError, MissingFileError

__all__ = ["KalmDataError", "GoalSplitError", "MissingExtraError", "MissingFileError", "require_d3rlpy"]


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
