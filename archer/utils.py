"""Small helpers with no algorithmic content: seeding, paths, atomic file writes. Importing it does not import
torch."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from archer.errors import StorageError, storage_error


def has_module(name: str) -> bool:
    """Whether the module ``name`` can be imported (found without importing it): an optional extra's check."""
    return importlib.util.find_spec(name) is not None


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators."""
    import torch  # here, so that the command line's first checks (archer.locking) do not wait for torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def process_seed(seed: int, process_index: int) -> int:
    """The seed of one process's own randomness (environment draws, sampling), derived from the run's seed."""
    return seed * 1000 + process_index


def resolve_cache_dir(cache_dir: str | None) -> Path:
    """The cache folder: the configured one, else ``$ARCHER_CACHE_DIR``, else ``~/.cache/archer``; created if missing.

    Raises:
        StorageError: the path is a file, or the folder cannot be created.
    """
    source = "cache_dir" if cache_dir else "$ARCHER_CACHE_DIR" if os.environ.get("ARCHER_CACHE_DIR") else "the default"
    path = Path(cache_dir or os.environ.get("ARCHER_CACHE_DIR") or "~/.cache/archer").expanduser()
    make_folder(path, f"the cache folder ({source})", "set cache_dir or $ARCHER_CACHE_DIR to a folder")
    return path


def make_folder(path: Path, what: str, instead: str) -> None:
    """Create the folder ``path`` (and its parents) unless it exists.

    Args:
        path: the folder.
        what: what it is, for the message ("the run folder (run_dir)").
        instead: what to do about a path that cannot be a folder.

    Raises:
        StorageError: a file stands at ``path`` or above it, or the folder cannot be created (full or read-only).
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StorageError(f"{what} {path} is a file (or lies under one); {instead}") from None
    except OSError as error:
        raise storage_error(error, path) or error from None


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn a full disk or an unwritable folder met while writing ``path`` into a ``StorageError`` naming ``path``.

    Raises:
        StorageError: the write failed for lack of space or permission; other errors pass unchanged.
    """
    try:
        yield
    except StorageError:
        raise
    except OSError as error:
        raise storage_error(error, path) or error from None
    except Exception as error:
        # Writers outside Python's io (safetensors' Rust core) report a full disk only in their message.
        if "No space left on device" not in str(error):
            raise
        raise storage_error(OSError(errno.ENOSPC, "No space left on device"), path) from None


@contextmanager
def atomic_open(path: str | os.PathLike, binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write ``path``'s new content to, so readers never see half a file: a temporary file beside
    ``path`` (``.<name>.<random>.tmp``), synced to disk and renamed over ``path`` when the block ends, removed when
    it raises. Text files are UTF-8.

    Raises:
        StorageError: the disk is full or the folder is not writable (``writing``); ``path`` is left as it was.
    """
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        try:
            # Opened by name, so the handle's ``name`` is the temporary path (writers and tests may look at it).
            with open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (``atomic_open``)."""
    with atomic_open(path) as handle:
        handle.write(text)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """``atomic_write_text`` of ``obj`` as JSON."""
    atomic_write_text(path, json.dumps(obj, indent=1))
