"""Folder locks: one process owns a run folder, and the runs that share a cache folder build it one at a time.

A lock is an exclusive ``fcntl.flock`` on ``<folder>/.archer.lock``, held on an open file: the kernel releases it
when the process dies, however it dies, so a killed run never leaves a stale lock. The file records its holder
(process id, host, command, start time) for the message of the process that finds the folder taken. A folder lock
is re-entrant within a process: a process that holds it may ask again (a resumed ``Trainer`` in the same process).

``flock`` locks are local to one machine (and are not shared over some network file systems): two machines writing
one folder are not kept apart.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from archer.errors import ArcherError, StorageError
from archer.utils import make_folder

log = logging.getLogger(__name__)

LOCK_FILE = ".archer.lock"
#: What to do about a run folder another process owns.
RUN_FOLDER_BUSY = "wait for that run to finish (or stop it), or choose another run_dir"

# The open lock files of this process, by folder; closing one releases its lock.
_held: dict[Path, IO[str]] = {}


class FolderBusyError(ArcherError, RuntimeError):
    """A folder is owned by another running process; the message names that process."""


def open_no_follow(path: Path, flags: int, mode: str) -> IO[str]:
    """``open(path, mode)`` (text, UTF-8) with ``os.open``'s ``flags``, refusing a symbolic link at ``path``: a run
    folder's files are never written through a link to a file elsewhere (which a truncation would destroy).

    Raises:
        StorageError: ``path`` is a symbolic link (dangling or not); the message names it.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        if not path.is_symlink():
            raise
        raise StorageError(
            f"{path} is a symbolic link (to {os.readlink(path)}); archer never writes through links in its folders: "
            "remove the link"
        ) from error
    return os.fdopen(fd, mode, encoding="utf-8")


def _owner_record(extra: dict[str, object] | None = None) -> str:
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        **(extra or {}),
    }
    return json.dumps(record)


def read_owner(folder: Path) -> dict[str, object]:
    """What the lock file of ``folder`` says about its holder (empty if it says nothing readable)."""
    try:
        record = json.loads((folder / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def describe_owner(folder: Path) -> str:
    """The holder of ``folder``'s lock, for messages: ``process 123 on host (python run.py ...), since ...``."""
    owner = read_owner(folder)
    if "pid" not in owner:
        return "another process (it has not written its name yet)"
    host, command, since = (owner.get(key, "?") for key in ("host", "command", "since"))
    return f"process {owner['pid']} on {host} ({command}), since {since}"


def _try_lock(folder: Path, extra: dict[str, object] | None) -> IO[str] | None:
    """The open lock file of ``folder``, locked by this process, or None when another process holds it."""
    path = folder / LOCK_FILE
    while True:
        # Appending: opening must not erase the holder's record.
        handle = open_no_follow(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        # A holder may have removed the folder (a refused run's) between our open and our lock: the file we locked
        # is then not the one at the path any more, and another process may lock that one. Lock the current file.
        try:
            current = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            current = False
        if current:
            handle.seek(0)
            handle.truncate()
            handle.write(_owner_record(extra))
            handle.flush()
            return handle
        handle.close()
        make_folder(folder, "the folder", "remove the file")


def hold(folder: Path, what: str, instead: str, extra: dict[str, object] | None = None) -> None:
    """Lock ``folder`` for the rest of this process's life (or until ``release``); a no-op if this process holds it.

    Args:
        folder: the folder (created if missing).
        what: what the folder is, for the message ("run folder").
        instead: what the user can do instead, for the message.
        extra: more facts to record in the lock file for the next process that finds the folder taken.

    Raises:
        FolderBusyError: another process holds the folder; the message names it.
    """
    key = folder.resolve()
    if key in _held:
        return
    make_folder(key, f"the {what}", instead)
    handle = _try_lock(key, extra)
    for _ in range(3):  # another process's look (``check_free``) holds the lock for an instant
        if handle is not None:
            break
        time.sleep(0.05)
        handle = _try_lock(key, extra)
    if handle is None:
        raise FolderBusyError(f"the {what} {key} is in use by {describe_owner(key)}; {instead}")
    _held[key] = handle


def check_free(folder: Path, what: str, instead: str) -> None:
    """Refuse at once when another process holds ``folder``'s lock, without taking it (a cheap look before a
    process spends seconds importing what ``hold`` protects; ``hold`` still decides).

    Raises:
        FolderBusyError: another process holds the folder; the message names it.
    """
    key = folder.resolve()
    if key in _held or not (key / LOCK_FILE).is_file():
        return
    with open_no_follow(key / LOCK_FILE, os.O_WRONLY | os.O_APPEND, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusyError(f"the {what} {key} is in use by {describe_owner(key)}; {instead}") from None


def release(folder: Path) -> None:
    """Release this process's lock of ``folder`` (nothing happens if it holds none)."""
    handle = _held.pop(folder.resolve(), None)
    if handle is not None:
        handle.close()


def holds(folder: Path) -> bool:
    """Whether this process holds ``folder``'s lock."""
    return folder.resolve() in _held


# Polls a waiter gives a lock's holder to write its name before the waiter logs whom it waits for.
NAMING_POLLS = 3


@contextmanager
def turn(folder: Path, what: str, poll_s: float = 1.0) -> Iterator[None]:
    """Hold ``folder``'s lock for the body of the ``with``; while another process holds it, wait (saying for whom).

    Args:
        folder: the folder (created if missing).
        what: what is built in the folder, for the log line ("the starting policy").
        poll_s: seconds between attempts while waiting.
    """
    key = folder.resolve()
    if key in _held:
        yield
        return
    make_folder(key, f"the folder of {what}", "remove the file or choose another cache_dir")
    handle = _try_lock(key, None)
    announced = False
    polls = 0
    while handle is None:
        # The holder writes its name just after it locks: on a loaded machine a waiter can get here in between, so it
        # gives the holder a few polls to name itself before saying whom it waits for.
        if not announced and ("pid" in read_owner(key) or polls >= NAMING_POLLS):
            log.info("waiting for %s, which is building %s in %s", describe_owner(key), what, key)
            announced = True
        time.sleep(poll_s)
        polls += 1
        handle = _try_lock(key, None)
    if announced:
        log.info("%s is free: continuing", key)
    _held[key] = handle
    try:
        yield
    finally:
        release(key)
