"""The tools that wrap ``run.py`` (issue 90, the tools half): ``scripts/benchmark_methods.py``,
``scripts/benchmark_speed.py`` and ``scripts/gpu_check.py`` refuse a user's mistake in one line, before anything is
built; a report never replaces committed pages with fewer runs; the tools' records are written atomically; a
SIGTERM to the benchmark stops its runs.

Everything here is fast: the benchmark is planned (composition only), reported from a hand-made archive or run with
a stand-in for ``run.py``; the check tools are stopped at their refusals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS_DIR, load_script

ROOT = SCRIPTS_DIR.parent
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(SCRIPTS_DIR), os.environ.get("PYTHONPATH")])),
    "PYTHONDONTWRITEBYTECODE": "1",
    "HF_HUB_OFFLINE": "1",
}
# One offline method of twenty_questions_strong: planned in a second, and no start policy to build.
OFFLINE = ["twenty_questions_strong", "--methods=offline_bc_20q"]


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmark_methods.py")


def one_line(error: BaseException) -> str:
    """The message of a refusal, checked to be a single line."""
    text = str(error.code if isinstance(error, SystemExit) else error)
    assert "\n" not in text.strip(), text
    return text


def folders(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "out", tmp_path / "docs"


@pytest.fixture(scope="module")
def built_pages(bench, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pages of two finished offline runs (as the repository's are, built from the archive by ``--report-only``),
    built once; ``committed_pages`` gives each test its own copy."""
    out, docs = folders(tmp_path_factory.mktemp("pages"))
    argv = [*OFFLINE, "--seeds=2", f"--out={out}", f"--docs={docs}"]
    results = []
    for spec in bench.plan(bench.parse_args(argv)).specs:
        iterations, every = spec.config.algorithm.num_iterations, spec.config.eval.every_iters
        curve = [
            {"iteration": i, "x": i * spec.per_iter, "return": -6.0 + i / 100 + spec.seed, "success": 0.5}
            for i in range(0, iterations + 1, every)
        ]
        results.append(bench.RunResult(spec, curve=curve, finished=True, cpu_s=10.0, dataset_trajectories=24))
    bench.update_archive(docs / "archive.json", [], results, out)
    assert bench.main([*argv, "--report-only"]) == 0
    return docs


def committed_pages(built_pages: Path, tmp_path: Path) -> list[str]:
    """A copy of ``built_pages`` in ``<tmp>/docs``; returns the arguments that build them there."""
    out, docs = folders(tmp_path)
    shutil.copytree(built_pages, docs)
    return [*OFFLINE, "--seeds=2", f"--out={out}", f"--docs={docs}"]


def contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


# ---- benchmark_methods.py: the committed pages (items 1, 2) ------------------------------------------------------


def test_a_report_that_would_drop_committed_runs_is_refused_and_the_pages_kept(
    bench, built_pages: Path, tmp_path: Path
) -> None:
    argv = committed_pages(built_pages, tmp_path)
    _, docs = folders(tmp_path)
    before = contents(docs)
    assert set(before) >= {"results.md", "runs.csv", "curves.csv", "curves.png", "archive.json"}
    # An override that changes the runs' config (no run of it anywhere), fewer seeds, no seeds at all.
    for extra in (["--override=offline:algorithm.actor_lr=0.5"], ["--seeds=1"], ["--seeds=0"]):
        with pytest.raises(SystemExit) as refused:
            bench.main([*argv, "--report-only", *extra])
        assert refused.value.code not in (0, None), extra
        assert contents(docs) == before, extra
    with pytest.raises(SystemExit) as refused:
        bench.main([*argv, "--report-only", "--seeds=1"])
    message = one_line(refused.value)
    assert str(docs / "runs.csv") in message and "offline_bc_20q seed 1" in message and "--docs" in message
    # The same arguments rebuild the same tables.
    assert bench.main([*argv, "--report-only"]) == 0
    after = contents(docs)
    assert {name: after[name] for name in ("runs.csv", "curves.csv")} == {
        name: before[name] for name in ("runs.csv", "curves.csv")
    }
    # Elsewhere, the smaller report is written.
    elsewhere = tmp_path / "elsewhere"
    assert bench.main([*argv, "--report-only", "--seeds=1", f"--docs={elsewhere}"]) == 0
    assert len((elsewhere / "runs.csv").read_text().splitlines()) == 2  # the header and seed 0


def test_a_run_that_would_drop_committed_runs_writes_its_pages_under_out(
    bench, built_pages: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = committed_pages(built_pages, tmp_path)
    out, docs = folders(tmp_path)
    before = contents(docs)
    monkeypatch.setattr(bench, "execute", lambda spec: 0)  # the runs "fail" to write anything
    capsys.readouterr()
    assert bench.main([*argv, "--override=offline:algorithm.actor_lr=0.5"]) == 0
    printed = capsys.readouterr().out
    assert {name: contents(docs)[name] for name in before if name != "archive.json"} == {
        name: data for name, data in before.items() if name != "archive.json"
    }
    assert (out / "pages" / "runs.csv").is_file() and f"written to {out / 'pages'}" in printed
    assert str(docs / "runs.csv") in printed


# ---- benchmark_methods.py: refusals before anything runs (items 13, 15, 16, 23) -----------------------------------


@pytest.mark.parametrize(
    ("option", "named"),
    [
        ("--jobs=0", "--jobs"),
        ("--jobs=-2", "--jobs"),
        ("--eval-every=0", "--eval-every"),
        ("--seeds=0", "--seeds"),
        ("--seeds=-1", "--seeds"),
        ("--methods=,", "--methods"),
    ],
)
def test_counts_below_one_are_refused_at_once(
    bench, tmp_path: Path, option: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out, docs = folders(tmp_path)
    with pytest.raises(SystemExit) as refused:
        bench.parse_args([*OFFLINE, option, f"--out={out}", f"--docs={docs}"])
    assert refused.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f": error: {named} " in error, error


def test_folders_that_cannot_be_written_are_refused_before_the_runs(
    bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args, **kwargs):
        raise AssertionError("the benchmark started work before refusing its folders")

    monkeypatch.setattr(bench, "execute", never)
    monkeypatch.setattr(bench, "build_start_policy", never)
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    out, docs = folders(tmp_path)
    for option, path in (
        ("--out", a_file),
        ("--out", a_file / "out"),
        ("--docs", a_file),
        ("--docs", a_file / "sokoban"),
    ):
        chosen = {"--out": out, "--docs": docs, option: path}
        with pytest.raises(SystemExit) as refused:
            bench.main([*OFFLINE, "--seeds=1", f"--out={chosen['--out']}", f"--docs={chosen['--docs']}"])
        message = one_line(refused.value)
        assert message.startswith(f"{option} {path}:"), message
        assert not out.exists() and not docs.exists()
    assert a_file.read_text() == "not a folder"


def test_a_misspelt_override_is_printed_as_run_py_prints_it(bench, tmp_path: Path) -> None:
    out, docs = folders(tmp_path)
    for override in ("algorithm.actor_lrr=0.5", "offline:algorithm.actor_lrr=0.5"):
        with pytest.raises(SystemExit) as refused:
            bench.main([*OFFLINE, "--dry-run", f"--out={out}", f"--docs={docs}", f"--override={override}"])
        message = one_line(refused.value)
        assert "Could not override 'algorithm.actor_lrr'" in message and "actor_lrr" in message, message


def test_a_torn_benchmark_record_is_refused_naming_it(bench, built_pages: Path, tmp_path: Path) -> None:
    argv = committed_pages(built_pages, tmp_path)
    out, _ = folders(tmp_path)
    out.mkdir()
    (out / "benchmark.json").write_text('{"start_policy_s": 12.')
    with pytest.raises(SystemExit) as refused:
        bench.main([*argv, "--report-only"])
    message = one_line(refused.value)
    assert str(out / "benchmark.json") in message and "delete" in message
    (out / "benchmark.json").unlink()
    run_dir = out / "runs" / "offline_bc_20q" / "seed0"
    run_dir.mkdir(parents=True)
    (run_dir / "benchmark_run.json").write_text('{"attempts": [{"returncode"')
    with pytest.raises(SystemExit) as refused:
        bench.main([*argv, "--report-only"])
    message = one_line(refused.value)
    assert str(run_dir / "benchmark_run.json") in message and "delete" in message


# ---- every tool's records: written whole or not at all --------------------------------------------------------


WRITES_UNDER_A_FILE_SIZE_LIMIT = """
import json, resource, signal, sys
from dataclasses import replace
from pathlib import Path

import benchmark_methods as bench
import benchmark_report as pages
import benchmark_speed as speed
import gpu_check

argv, folder = json.loads(sys.argv[1]), Path(sys.argv[2])
args = bench.parse_args(argv)
plan = bench.plan(args)
specs, results = bench.settle(plan.task, plan.specs, bench.load_archive(args.docs / "archive.json"), 1280)
sidecar = folder / "run"
sidecar.mkdir()
bench.write_sidecar(sidecar, {"attempts": []})
bench.write_info(folder / "benchmark.json", {"argv": []})
gpu_check.write_report({"steps": {}}, folder / "gpu_check.json")
speed.write_figures(folder / "speed.json", {"memory": {}})
big = {"attempts": [{"returncode": 0, "wall_s": 1.0}] * 500, "argv": ["x" * 60] * 500}
# Every write past 200 bytes now fails (EFBIG), as a full disk or a kill would stop it.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
failed = []
for name, write in (
    ("sidecar", lambda: bench.write_sidecar(sidecar, big)),
    ("info", lambda: bench.write_info(folder / "benchmark.json", big)),
    ("gpu_check", lambda: gpu_check.write_report(big, folder / "gpu_check.json")),
    ("speed", lambda: speed.write_figures(folder / "speed.json", big)),
    ("pages", lambda: pages.report(results, args, {}, replace(plan, specs=specs))),
):
    try:
        write()
    except OSError:
        failed.append(name)
print(json.dumps(failed))
"""


def test_records_and_pages_are_written_whole_or_not_at_all(bench, built_pages: Path, tmp_path: Path) -> None:
    argv = committed_pages(built_pages, tmp_path)
    _, docs = folders(tmp_path)
    pages_before = contents(docs)
    folder = tmp_path / "records"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", WRITES_UNDER_A_FILE_SIZE_LIMIT, json.dumps(argv), str(folder)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["sidecar", "info", "gpu_check", "speed", "pages"]
    # Every write failed, and every file is as it was before it: none is torn, none has a temporary file beside it.
    assert json.loads((folder / "run" / "benchmark_run.json").read_text()) == {"attempts": []}
    assert json.loads((folder / "benchmark.json").read_text()) == {"argv": []}
    assert json.loads((folder / "gpu_check.json").read_text()) == {"steps": {}}
    assert json.loads((folder / "speed.json").read_text()) == {"memory": {}}
    assert contents(docs) == pages_before
    leftovers = [p.name for p in [*folder.rglob("*"), *docs.iterdir()] if p.name.endswith(".tmp")]
    assert leftovers == []


# ---- SIGTERM stops the benchmark's runs (item 21) ----------------------------------------------------------------


STAND_IN_RUN_PY = """
import fcntl, os, sys, time
from pathlib import Path

run_dir = Path(next(a for a in sys.argv[1:] if a.startswith("run_dir=")).split("=", 1)[1])
lock = open(run_dir / ".archer.lock", "a+")
fcntl.flock(lock, fcntl.LOCK_EX)  # as run.py holds its run folder
(run_dir / "child.pid").write_text(str(os.getpid()))
time.sleep(300)
"""

BENCHMARK_WITH_A_STAND_IN = """
import json, sys
from pathlib import Path

import benchmark_methods as bench

bench.RUN_PY = Path(sys.argv[1])
sys.exit(bench.main(json.loads(sys.argv[2])))
"""


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_sigterm_to_the_benchmark_stops_its_runs_and_frees_their_folders(tmp_path: Path) -> None:
    from archer import locking

    out, docs = folders(tmp_path)
    stand_in = tmp_path / "run.py"
    stand_in.write_text(STAND_IN_RUN_PY)
    argv = [*OFFLINE, "--seeds=2", "--jobs=2", f"--out={out}", f"--docs={docs}"]
    benchmark = subprocess.Popen(
        [sys.executable, "-c", BENCHMARK_WITH_A_STAND_IN, str(stand_in), json.dumps(argv)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_dirs = [out / "runs" / "offline_bc_20q" / f"seed{seed}" for seed in (0, 1)]
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 90
        while not all((d / "child.pid").is_file() and (d / "child.pid").read_text() for d in run_dirs):
            assert benchmark.poll() is None, benchmark.communicate()
            assert time.monotonic() < deadline, "the runs did not start"
            time.sleep(0.2)
        pids = [int((d / "child.pid").read_text()) for d in run_dirs]
        benchmark.send_signal(signal.SIGTERM)
        _, stderr = benchmark.communicate(timeout=60)
        assert benchmark.returncode == 128 + signal.SIGTERM, stderr
        assert "SIGTERM" in stderr and "rerun" in stderr and "Traceback" not in stderr, stderr
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in pids), "run.py children left running"
        # A rerun finds the folders free (and each run resumes from its checkpoint there).
        for run_dir in run_dirs:
            locking.check_free(run_dir, "run folder", locking.RUN_FOLDER_BUSY)
            sidecar = json.loads((run_dir / "benchmark_run.json").read_text())
            assert [a["returncode"] for a in sidecar["attempts"]] == [-signal.SIGTERM]
    finally:
        if benchmark.poll() is None:
            benchmark.kill()
            benchmark.communicate()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# ---- gpu_check.py (items 12, 24) -------------------------------------------------------------------------------


def run_tool(*command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout
    )


def test_gpu_check_with_a_budget_too_small_for_any_step_is_refused() -> None:
    done = run_tool("scripts/gpu_check.py", "--dry-run", "--budget-s", "1")
    assert done.returncode != 0, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--budget-s 1 fits none of the chosen steps" in lines[0], done.stderr


def test_gpu_check_that_checked_nothing_does_not_pass() -> None:
    gpu_check = load_script("gpu_check.py")
    skipped = {"status": "skipped", "note": "skipped: 0 s left"}
    nothing = {"steps": {"requirements": {"status": "ok"}, "cuda_tests": skipped, "paper_20q": skipped}}
    assert gpu_check.exit_status(nothing) != 0
    one = {"steps": {"requirements": {"status": "ok"}, "cuda_tests": {"status": "ok"}, "paper_20q": skipped}}
    assert gpu_check.exit_status(one) == 0
    assert gpu_check.exit_status({"steps": {"requirements": {"status": "ok"}}}) == 0  # --steps requirements


def test_gpu_check_refuses_an_out_it_cannot_write_in_one_line(tmp_path: Path) -> None:
    gpu_check = load_script("gpu_check.py")
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for out in (tmp_path, a_file / "check.json"):
        # Without --dry-run: on a machine without a GPU the check refuses ("no CUDA device"), and that line was
        # buried under the tracebacks of writing --out.
        done = run_tool("scripts/gpu_check.py", "--steps", "requirements", "--out", str(out))
        assert done.returncode != 0
        assert done.stderr.strip().splitlines() == [f"--out {out}: {gpu_check.path_problem(out, folder=False)}"]


# ---- benchmark_speed.py (items 17, 24, 23) -----------------------------------------------------------------------


def test_benchmark_speed_refuses_a_json_path_it_cannot_write_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    speed = load_script("benchmark_speed.py")

    def never(*args, **kwargs):
        raise AssertionError("measured before refusing --json")

    monkeypatch.setattr(speed, "benchmark_training", never)
    monkeypatch.setattr(speed, "fresh_run_config", never)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for path in (tmp_path, a_file / "speed.json"):
        with pytest.raises(SystemExit) as refused:
            speed.main(["--json", str(path), "pretrain=null"])
        assert refused.value.code not in (0, None)
        assert one_line(refused.value).startswith(f"--json {path}:")


def test_benchmark_speed_prints_a_misspelt_override_in_one_line(tmp_path: Path) -> None:
    speed = load_script("benchmark_speed.py")
    with pytest.raises(SystemExit) as refused:
        speed.main(["--run-dir", str(tmp_path / "run"), "algorithm.actor_lrr=0.5"])
    assert "Could not override 'algorithm.actor_lrr'" in one_line(refused.value)
    assert not (tmp_path / "run").exists()


def test_benchmark_speed_prints_the_model_loading_error_alone(tmp_path: Path) -> None:
    done = run_tool(
        "scripts/benchmark_speed.py",
        "--run-dir",
        str(tmp_path / "run"),
        "pretrain=null",
        f"cache_dir={tmp_path / 'cache'}",
        "model.policy.name_or_path=no-such-owner/no-such-model",
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: could not load policy 'no-such-owner/no-such-model'"), last
