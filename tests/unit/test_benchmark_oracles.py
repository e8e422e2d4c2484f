"""The oracle benchmark prints every figure (throughput is measured by the script, never asserted by a test)."""

from __future__ import annotations

import pytest

from tests.conftest import load_script


def test_every_oracle_reports_new_and_cached_rates(capsys) -> None:
    benchmark_oracles = load_script("benchmark_oracles.py")
    figures = benchmark_oracles.main(["--questions", "40"])
    assert set(figures) == {
        f"{name}/{kind}_questions_per_s"
        for name in ("twenty_questions", "guess_my_city")
        for kind in ("new", "cached")
    }
    assert all(value > 0 for value in figures.values())
    printed = capsys.readouterr().out
    assert all(key in printed for key in figures)
    with pytest.raises(SystemExit):
        benchmark_oracles.main(["--questions", "0"])
