"""scripts/benchmark_methods.py end to end on tiny models: one online and one offline method, two seeds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import TINY_RUN_OVERRIDES, load_script
from tests.integration.test_training import ARCHER_TINY

pytestmark = pytest.mark.integration

OFFLINE_TINY = [
    "algorithm.steps_per_iter=2",
    "algorithm.batch_size=8",
    "algorithm.actor_micro_batch_size=4",
    "algorithm.actor_lr=1e-3",
]


def metrics(run_dir: str) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_benchmark_runs_every_method_and_reports_the_runs_own_numbers(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    out = tmp_path / "bench"
    # Pretraining keys go to the reference (archer_20q), whose `pretrain` every online run then shares.
    argv = [
        "--methods=archer_20q,offline_bc_20q",
        "--seeds=2",
        "--trajectories=8",
        "--eval-every=4",
        "--offline-steps=4",
        "--offline-eval-every=2",
        f"--out={out}",
        f"--cache-dir={tmp_path / 'cache'}",
        *(f"--override={o}" for o in TINY_RUN_OVERRIDES),
        *(f"--override=archer_20q:{o}" for o in ARCHER_TINY),
        *(f"--override=offline:{o}" for o in OFFLINE_TINY),
    ]
    assert bench.main(argv) == 0
    for name in ("results.md", "runs.csv", "curves.csv", "curves.png"):
        assert (out / name).stat().st_size > 0, name

    rows = read_csv(out / "runs.csv")
    assert [(r["method"], r["seed"]) for r in rows] == [
        ("archer_20q", "0"),
        ("archer_20q", "1"),
        ("offline_bc_20q", "0"),
        ("offline_bc_20q", "1"),
    ]
    for row in rows:
        records = metrics(row["run_dir"])
        evals = [r for r in records if r.get("eval/return_mean") is not None]
        assert row["finished"] == "True"
        assert float(row["start_return"]) == evals[0]["eval/return_mean"] and evals[0]["iteration"] == 0
        assert float(row["final_return"]) == evals[-1]["eval/return_mean"]
        assert float(row["final_success"]) == evals[-1]["eval/success_rate"]
        if row["kind"] == "online":
            # 2 iterations of 4 games, evaluated after each (every 4 games) and before training.
            assert [r["env/trajectories"] for r in evals] == [0, 4, 8]
            assert float(row["x_final"]) == records[-1]["env/trajectories"] == 8
            assert float(row["final_rollout_return"]) == records[-1]["rollout/return_mean"]
        else:
            # 2 iterations of 2 gradient steps; the x-axis is gradient steps on the 24-game dataset.
            assert [r["iteration"] for r in evals] == [0, 1, 2]
            assert float(row["x_final"]) == 4 and row["dataset_trajectories"] == "24"
            assert row["final_rollout_return"] == ""
        config = json.loads((Path(row["run_dir"]) / "config.json").read_text())
        assert config["env"]["words"] == "subset10" and config["seed"] == int(row["seed"])

    curves = read_csv(out / "curves.csv")
    for row in rows:
        expected = [r["eval/return_mean"] for r in metrics(row["run_dir"]) if r.get("eval/return_mean") is not None]
        mine = [
            float(c["eval_return_mean"]) for c in curves if (c["method"], c["seed"]) == (row["method"], row["seed"])
        ]
        assert mine == expected

    # Both online seeds started from the one cached policy built before the runs.
    archer_starts = {r["start_return"] for r in rows if r["method"] == "archer_20q"}
    assert len(archer_starts) == 1
    info = json.loads((out / "benchmark.json").read_text())
    assert info["new_pretrained_folders_during_runs"] == []
    assert len(list((tmp_path / "cache" / "pretrained").iterdir())) == 1
    table = (out / "results.md").read_text()
    assert "| `archer_20q` | 8 env games |" in table and "| `offline_bc_20q` | 24 dataset games, 4 steps |" in table
    assert "archer_20q > chai_20q: no finished runs of both" in table

    # A second invocation reuses the finished runs: no new attempt is recorded.
    assert bench.main(argv) == 0
    sidecar = json.loads((Path(rows[0]["run_dir"]) / "benchmark_run.json").read_text())
    assert len(sidecar["attempts"]) == 1


def test_ordering_verdict_uses_two_standard_errors_of_the_difference() -> None:
    bench = load_script("benchmark_methods.py")

    def runs(method: str, finals: list[float]) -> list:
        return [
            bench.RunResult(spec=None, curve=[{"iteration": 1, "x": 1, "return": f, "success": 0}], finished=True)
            for f in finals
        ]

    # A = [1, 2, 3], B = [-1, 0, 1]: difference of means 2; sample std 1 each, so SE = sqrt(1/3 + 1/3) = 0.816,
    # 2 SE = 1.63 < 2: holds. Against C = [0, 1, 2]: difference 1 < 1.63: not resolved. Reversed: -2 < -1.63.
    results = {"a": runs("a", [1, 2, 3]), "b": runs("b", [-1, 0, 1]), "c": runs("c", [0, 1, 2])}
    assert bench.ordering_verdict(results, "a", "b").endswith("(2 standard errors: 1.63, 3 and 3 seeds): holds")
    assert bench.ordering_verdict(results, "a", "c").endswith("not resolved within the spread")
    assert bench.ordering_verdict(results, "b", "a").endswith("reversed")
    assert bench.ordering_verdict(results, "a", "missing").endswith("no finished runs of both")
