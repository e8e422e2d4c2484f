"""scripts/summarize_runs.py: the last-evaluations mean, its spread and the baseline gain, by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import load_script


def write_run(folder: Path, returns: dict[int, float], best: float | None = None) -> Path:
    folder.mkdir(parents=True)
    records = [{"iteration": i, "env/trajectories": 32 * i, "eval/return_mean": r} for i, r in returns.items()]
    if best is not None:
        records[0]["eval/best_return_mean"] = best  # logged once, with the start
    lines = [json.dumps(record) for record in records]
    lines.insert(1, json.dumps({"iteration": 1, "rollout/return_mean": -9.0}))  # a record without an evaluation
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_last_three_mean_spread_gain_and_runs_below_start(tmp_path: Path) -> None:
    summarize = load_script("summarize_runs.py")
    a = write_run(tmp_path / "a", {0: -6.0, 5: -5.0, 10: -4.0, 15: -3.0}, best=-2.8)  # last three: -4.0
    b = write_run(tmp_path / "b", {0: -6.0, 5: -7.0, 10: -6.0, 15: -8.0}, best=-2.8)  # last three: -7.0, below start
    figures = summarize.main([str(a), str(b), "--baseline", "-6.5", "--plot", str(tmp_path / "curves.png")])
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")
    assert figures["last_mean"] == pytest.approx(-5.5)
    assert figures["last_std"] == pytest.approx(2.1213203, rel=1e-6)  # stdev of (-4, -7) = 3 / sqrt(2)
    assert figures["gain_over_baseline"] == pytest.approx(1.0)
    assert figures["twice_std"] == pytest.approx(4.2426407, rel=1e-6)
    assert figures["runs_ending_below_start"] == 1
    assert figures["best"] == -2.8
    # A run without the best figure (an older run, or a game without a solver): none is reported.
    c = write_run(tmp_path / "c", {0: -6.0, 5: -5.0, 10: -4.0, 15: -3.0})
    assert "best" not in summarize.main([str(a), str(c)])
    with pytest.raises(SystemExit, match="need the start and at least 5 more"):
        summarize.main([str(a), "--last", "5"])
    with pytest.raises(SystemExit, match="no metrics.jsonl"):
        summarize.main([str(tmp_path / "missing")])
