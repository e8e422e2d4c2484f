"""``archer.utils.atomic_open``: the one place files are replaced whole (text records, JSON, checkpoints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archer.utils import atomic_open, atomic_write_text


def test_text_and_binary_writes_replace_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "records.json"
    atomic_write_text(target, "first\n")
    atomic_write_text(target, "ünïcode\n")
    assert target.read_text(encoding="utf-8") == "ünïcode\n"
    with atomic_open(tmp_path / "blob.bin", binary=True) as handle:
        # The handle is the temporary file beside the target, named after it.
        assert Path(handle.name).name.startswith(".blob.bin.") and handle.name.endswith(".tmp")
        handle.write(b"\x00\x01")
    assert (tmp_path / "blob.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blob.bin", "sub"]


def test_a_write_that_fails_keeps_the_previous_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.pt"
    target.write_bytes(b"previous")
    with pytest.raises(RuntimeError, match="half way"), atomic_open(target, binary=True) as handle:
        handle.write(b"half a file")
        raise RuntimeError("half way")
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]
