"""scripts/gpu_check.py: its dry run (every step at tiny sizes on the CPU), its budget guard and its refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import load_script

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gpu_check():
    return load_script("gpu_check.py")


def test_the_dry_run_runs_every_step(tmp_path: Path, gpu_check, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "check.json"
    report = gpu_check.main(["--dry-run", "--out", str(out), "--work-dir", str(tmp_path / "work")])
    assert json.loads(out.read_text()) == report
    steps = report["steps"]
    assert list(steps) == ["requirements", "cuda_tests", "paper_20q", "llm_20q", "llm_20q_accelerate"]
    assert {name: step["status"] for name, step in steps.items()} == dict.fromkeys(steps, "ok")
    assert gpu_check.failed(report) == []
    # The dry run runs the CUDA tests' checks on the CPU: every one passes.
    assert re.fullmatch(r"\d+ passed", steps["cuda_tests"]["figures"]["summary"])
    llm, launched = steps["llm_20q"]["figures"], steps["llm_20q_accelerate"]["figures"]
    assert launched["launched_by_accelerate"] and not llm["launched_by_accelerate"]
    for figures in (llm, launched):
        assert figures["policy_dtype"] == "torch.bfloat16" and figures["trainable_parameters"] > 0
        assert figures["games"] == 4 and figures["transitions"] == 4 * 3  # random weights never win: 3 turns each
        assert set(figures["phases_s"]) >= {"rollout", "critic_generation", "critic_update", "actor_update"}
        assert figures["tokens_per_s"]["rollout"] > 0
        bare = figures["bare_first_turn"]
        assert bare["rows"] == 4 and bare["steps"] == 8 and bare["ms_per_step"] > 0
    paper = steps["paper_20q"]["figures"]
    assert paper["iterations"] == 2 and len(paper["phases_s_per_iteration"]["iteration"]) == 2
    for phase in ("rollout", "critic_generation", "critic_update", "actor_generation", "actor_update"):
        assert paper["ratio_to_floor"][phase] > 0, phase
    assert paper["floors_s"]["rollout_no_cache"] > 0 and paper["floors_s"]["rollout_kept_cache"] > 0
    assert paper["floor_critic_share"] == 0.2
    table = capsys.readouterr().out
    assert "paper_20q: 2 iteration(s)" in table and "training phases / their floors" in table
    assert "bare generate, first turn:" in table


def test_steps_that_do_not_fit_the_budget_are_skipped_with_a_note(
    tmp_path: Path, gpu_check, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    def quick(context, deadline: float) -> dict:
        return {"summary": "1 passed"}

    steps = [dataclasses.replace(s, run=quick) if s.name == "cuda_tests" else s for s in gpu_check.STEPS]
    monkeypatch.setattr(gpu_check, "STEPS", tuple(steps))
    out = tmp_path / "check.json"
    # The dry run's needs are a tenth: cuda_tests 4.5 s fits 20 s, paper_20q's 28 s never does.
    report = gpu_check.main(["--dry-run", "--budget-s", "20", "--steps", "cuda_tests,paper_20q", "--out", str(out)])
    steps = report["steps"]
    assert steps["requirements"]["status"] == "ok" and steps["cuda_tests"]["status"] == "ok"
    assert steps["paper_20q"]["status"] == "skipped"
    assert re.fullmatch(r"skipped: \d+ s left for it, it needs about 28 s", steps["paper_20q"]["note"])
    assert json.loads(out.read_text())["steps"]["paper_20q"]["status"] == "skipped"
    assert gpu_check.exit_status(report) == 0  # something was checked
    # A budget that fits none of the chosen steps is refused before anything runs (it would pass, checking nothing).
    with pytest.raises(SystemExit):
        gpu_check.main(["--dry-run", "--budget-s", "0.5", "--out", str(tmp_path / "none.json")])
    assert not (tmp_path / "none.json").exists()


def test_a_step_deadline_keeps_the_later_steps_reserve_but_never_cuts_into_the_steps_own_needs(gpu_check) -> None:
    steps = [gpu_check.Step(name, needs, None) for name, needs in (("a", 100.0), ("b", 50.0), ("c", 30.0))]
    assert gpu_check.step_deadline(1000.0, 0.0, steps) == 920.0  # room for all: b and c keep their 80 s
    assert gpu_check.step_deadline(150.0, 10.0, steps) == 110.0  # too little: a still gets its 100 s
    assert gpu_check.step_deadline(1000.0, 0.0, steps, scale=0.1) == 992.0
    assert gpu_check.step_deadline(1000.0, 0.0, steps[2:]) == 1000.0  # the last step: the budget's end


def test_an_earlier_step_runs_when_it_fits_though_the_later_ones_then_do_not(tmp_path: Path, gpu_check) -> None:
    import argparse
    import time

    deadlines: list[float] = []

    def record(context, deadline: float) -> dict:
        deadlines.append(deadline)
        return {"phases_s": {"iteration": 1.0}, "transitions": 1}

    start = time.monotonic()
    args = argparse.Namespace(budget_s=120.0, dry_run=False, out=None)
    context = gpu_check.Context(args=args, work_dir=tmp_path, end=start + 120.0)
    report: dict = {"steps": {}}
    gpu_check.run_steps(
        context, [gpu_check.Step("first", 100.0, record), gpu_check.Step("second", 150.0, record)], report
    )
    assert report["steps"]["first"]["status"] == "ok"
    assert report["steps"]["second"]["status"] == "skipped"
    assert report["steps"]["second"]["note"].endswith("it needs about 150 s")
    # The first step's optional work ends at its own 100 s, not at the (impossible) reserve for the second.
    assert len(deadlines) == 1 and start + 100.0 <= deadlines[0] <= time.monotonic() + 100.0


def test_a_failed_step_keeps_its_traceback_and_the_next_step_runs(tmp_path: Path, gpu_check) -> None:
    import argparse
    import time

    def broken(context, deadline: float) -> dict:
        raise RuntimeError("probability tensor contains either inf, nan or element < 0")

    def fine(context, deadline: float) -> dict:
        return {"phases_s": {"iteration": 1.0}, "transitions": 1}

    out = tmp_path / "check.json"
    args = argparse.Namespace(budget_s=60.0, dry_run=False, out=out)
    context = gpu_check.Context(args=args, work_dir=tmp_path, end=time.monotonic() + 60.0)
    report: dict = {"steps": {}}
    gpu_check.run_steps(context, [gpu_check.Step("broken", 0.0, broken), gpu_check.Step("fine", 0.0, fine)], report)
    failed = json.loads(out.read_text())["steps"]["broken"]
    assert failed["status"] == "failed" and failed["note"].startswith("RuntimeError: probability tensor")
    # Where it broke, not only what: the frame of the step that raised.
    assert "in broken" in failed["traceback"] and failed["traceback"].rstrip().endswith("element < 0")
    assert report["steps"]["fine"]["status"] == "ok"


def test_a_missing_package_is_named_with_the_install_command(
    tmp_path: Path, gpu_check, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(gpu_check.REQUIRED, "archer_absent_module", "archer-absent-package")
    out = tmp_path / "check.json"
    with pytest.raises(SystemExit, match=r"missing packages: archer-absent-package\. Install them with `pip install"):
        gpu_check.main(["--dry-run", "--out", str(out)])
    assert json.loads(out.read_text())["steps"]["requirements"]["status"] == "failed"


def test_without_a_gpu_only_the_dry_run_runs(gpu_check) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit, match="no CUDA device"):
        gpu_check.main(["--steps", "requirements"])


def test_pytest_summary_reads_the_closing_line(gpu_check) -> None:
    output = "ss.\n=== 1 passed, 2 skipped in 3.21s ===\n"
    assert gpu_check.pytest_summary(output) == "1 passed, 2 skipped"
    assert gpu_check.pytest_summary("no tests ran") == "no summary line"
