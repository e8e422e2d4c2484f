"""archer.locking.turn: a waiter names the holder of a lock, even one that has not written its name yet."""

from __future__ import annotations

import fcntl
import json
import logging
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from archer import locking


def held_without_a_name(folder: Path) -> IO[str]:
    """An open file description locked as another process's lock is, its record not yet written."""
    folder.mkdir()
    holder = open(folder / locking.LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 - held open: the lock
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return holder


def wait_in_thread(folder: Path, poll_s: float) -> tuple[threading.Thread, threading.Event]:
    entered = threading.Event()

    def take_turn() -> None:
        with locking.turn(folder, "the starting policy", poll_s=poll_s):
            entered.set()

    thread = threading.Thread(target=take_turn)
    thread.start()
    return thread, entered


def logged(caplog: pytest.LogCaptureFixture, start: str, timeout_s: float = 20.0) -> list[str]:
    """The lock's log lines, once one starting with ``start`` is among them (or the timeout has passed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        messages = [r.getMessage() for r in caplog.records if r.name == "archer.locking"]
        if any(m.startswith(start) for m in messages) or time.monotonic() > deadline:
            return messages
        time.sleep(0.01)


def test_a_waiter_names_a_holder_that_writes_its_name_late(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="archer.locking")
    holder = held_without_a_name(tmp_path / "start")
    # Polls of 0.5 s: the holder names itself well within the waiter's NAMING_POLLS.
    thread, entered = wait_in_thread(tmp_path / "start", poll_s=0.5)
    time.sleep(0.2)  # the waiter has found the lock taken and its record empty
    holder.write(json.dumps({"pid": 4242, "host": "h", "command": "python run.py", "since": "now"}))
    holder.flush()
    messages = logged(caplog, "waiting for")
    assert any(m.startswith("waiting for process 4242 on h (python run.py)") for m in messages), messages
    assert not entered.is_set()
    holder.close()  # releases the lock
    thread.join(timeout=20)
    assert entered.is_set()
    messages = logged(caplog, "waiting for")
    assert not any("has not written its name" in m for m in messages) and messages[-1].endswith("free: continuing")


def test_a_holder_that_never_names_itself_is_still_announced(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="archer.locking")
    holder = held_without_a_name(tmp_path / "start")
    thread, entered = wait_in_thread(tmp_path / "start", poll_s=0.01)
    messages = logged(caplog, "waiting for")  # after NAMING_POLLS polls
    assert any(m.startswith("waiting for another process (it has not written its name yet)") for m in messages)
    holder.close()
    thread.join(timeout=20)
    assert entered.is_set()
