"""scripts/summarize_runs.py: the last-evaluations mean, its spread and the baseline gain, by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import load_script


def write_run(folder: Path, returns: dict[int, float]) -> Path:
    folder.mkdir(parents=True)
    lines = [
        json.dumps({"iteration": i, "env/trajectories": 32 * i, "eval/return_mean": r}) for i, r in returns.items()
    ]
    lines.insert(1, json.dumps({"iteration": 1, "rollout/return_mean": -9.0}))  # a record without an evaluation
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_last_three_mean_spread_gain_and_runs_below_start(tmp_path: Path) -> None:
    summarize = load_script("summarize_runs.py")
    a = write_run(tmp_path / "a", {0: -6.0, 5: -5.0, 10: -4.0, 15: -3.0})  # last three: -4.0
    b = write_run(tmp_path / "b", {0: -6.0, 5: -7.0, 10: -6.0, 15: -8.0})  # last three: -7.0, ends below start
    figures = summarize.main([str(a), str(b), "--baseline", "-6.5", "--plot", str(tmp_path / "curves.png")])
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")
    assert figures["last_mean"] == pytest.approx(-5.5)
    assert figures["last_std"] == pytest.approx(2.1213203, rel=1e-6)  # stdev of (-4, -7) = 3 / sqrt(2)
    assert figures["gain_over_baseline"] == pytest.approx(1.0)
    assert figures["twice_std"] == pytest.approx(4.2426407, rel=1e-6)
    assert figures["runs_ending_below_start"] == 1
    with pytest.raises(SystemExit, match="need the start and at least 5 more"):
        summarize.main([str(a), "--last", "5"])
    with pytest.raises(SystemExit, match="no metrics.jsonl"):
        summarize.main([str(tmp_path / "missing")])
