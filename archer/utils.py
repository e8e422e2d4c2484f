"""Small helpers with no algorithmic content: seeding, paths, atomic file writes."""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def process_seed(seed: int, process_index: int) -> int:
    """The seed of one process's own randomness (environment draws, sampling), derived from the run's seed."""
    return seed * 1000 + process_index


def resolve_cache_dir(cache_dir: str | None) -> Path:
    """The cache folder: the configured one, else ``$ARCHER_CACHE_DIR``, else ``~/.cache/archer``."""
    chosen = cache_dir or os.environ.get("ARCHER_CACHE_DIR") or "~/.cache/archer"
    path = Path(chosen).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so readers never see half a file."""
    path = Path(path)
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


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """``atomic_write_text`` of ``obj`` as JSON."""
    atomic_write_text(path, json.dumps(obj, indent=1))
