"""scripts/benchmark_methods.py on twenty_questions_strong: end to end on tiny models (one online and one offline
method, two seeds), its defaults and budgets through ``--dry-run``, and its verdicts on hand-made curves. The
headroom tasks' table, stopping rule and pages: tests/integration/test_benchmark_tasks.py."""

from __future__ import annotations

import csv
import fcntl
import json
import shlex
import shutil
import statistics
from importlib import metadata
from pathlib import Path

import benchmark_report as pages
import pytest

from archer.locking import LOCK_FILE
from tests.conftest import SCRIPTS_DIR, TINY_RUN_OVERRIDES, load_script
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


def test_benchmark_runs_every_method_and_reports_the_runs_own_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_script("benchmark_methods.py")
    out, docs = tmp_path / "bench", tmp_path / "docs" / "benchmark"
    # Pretraining keys go to the reference (archer_20q_base), whose `pretrain` every online run then shares.
    argv = [
        "twenty_questions_strong",
        "--methods=archer_20q_base,offline_bc_20q",
        "--seeds=2",
        "--trajectories=8",
        "--eval-every=4",
        "--offline-steps=4",
        "--offline-eval-every=2",
        f"--out={out}",
        f"--docs={docs}",
        f"--cache-dir={tmp_path / 'cache'}",
        *(f"--override={o}" for o in TINY_RUN_OVERRIDES),
        *(f"--override=archer_20q_base:{o}" for o in ARCHER_TINY),
        *(f"--override=offline:{o}" for o in OFFLINE_TINY),
    ]
    assert bench.main(argv) == 0
    # The start's build leaves its folder free, so another invocation on the same --out can run beside this one.
    from archer import locking

    assert (out / bench.PROBE_FOLDER).is_dir() and not locking.holds(out / bench.PROBE_FOLDER)
    # The table, plot and CSVs go to --docs; the runs (and the benchmark's own record) stay under --out.
    for name in ("results.md", "runs.csv", "curves.csv", "curves.png"):
        assert (docs / name).stat().st_size > 0, name
        assert not (out / name).exists(), name
    assert (out / "benchmark.json").exists() and (
        out / "runs" / "archer_20q_base" / "seed0" / "metrics.jsonl"
    ).exists()

    rows = read_csv(docs / "runs.csv")
    per_game: list[float] = []
    assert [(r["method"], r["seed"]) for r in rows] == [
        ("archer_20q_base", "0"),
        ("archer_20q_base", "1"),
        ("offline_bc_20q", "0"),
        ("offline_bc_20q", "1"),
    ]
    for row in rows:
        row["run_dir"] = str(out / row["run_dir"])  # written relative to --out
        records = metrics(row["run_dir"])
        evals = [r for r in records if r.get("eval/return_mean") is not None]
        assert row["finished"] == "True"
        assert float(row["start_return"]) == evals[0]["eval/return_mean"] and evals[0]["iteration"] == 0
        assert float(row["final_return"]) == evals[-1]["eval/return_mean"]
        assert float(row["final_success"]) == evals[-1]["eval/success_rate"]
        # The process's CPU time covers what its records count (they leave out its last checkpoint and exit).
        assert float(row["cpu_s"]) >= sum(r["time/process_cpu_s"] for r in records) - 0.05 > 0
        if row["kind"] == "online":
            # 2 iterations of 4 games, evaluated after each (every 4 games) and before training.
            assert [r["env/trajectories"] for r in evals] == [0, 4, 8]
            assert float(row["x_final"]) == records[-1]["env/trajectories"] == 8
            assert float(row["final_rollout_return"]) == records[-1]["rollout/return_mean"]
            # Seconds of play and update per game: the run's rollout and update times over its 8 games.
            played = sum(r["time/rollout_s"] + r["time/update_s"] for r in records if "time/rollout_s" in r)
            assert float(row["seconds_per_game"]) == round(played / 8, 3)
            per_game.append(played / 8)
        else:
            # 2 iterations of 2 gradient steps; the x-axis is gradient steps on the 24-game dataset.
            assert [r["iteration"] for r in evals] == [0, 1, 2]
            assert float(row["x_final"]) == 4 and row["dataset_trajectories"] == "24"
            assert row["final_rollout_return"] == "" and row["seconds_per_game"] == ""
        config = json.loads((Path(row["run_dir"]) / "config.json").read_text())
        assert config["env"]["words"] == "subset10" and config["seed"] == int(row["seed"])

    curves = read_csv(docs / "curves.csv")
    for row in rows:
        expected = [r["eval/return_mean"] for r in metrics(row["run_dir"]) if r.get("eval/return_mean") is not None]
        mine = [
            float(c["eval_return_mean"]) for c in curves if (c["method"], c["seed"]) == (row["method"], row["seed"])
        ]
        assert mine == expected

    # Both online seeds started from the one cached policy built before the runs.
    archer_starts = {r["start_return"] for r in rows if r["method"] == "archer_20q_base"}
    assert len(archer_starts) == 1
    info = json.loads((out / "benchmark.json").read_text())
    assert info["new_pretrained_folders_during_runs"] == []
    assert len(list((tmp_path / "cache" / "pretrained").iterdir())) == 1
    table = (docs / "results.md").read_text()
    # The exact command, with the folders outside the repository as placeholders (the page is committed).
    shown = [item.replace(str(tmp_path / "bench"), "<bench>").replace(str(docs), "<benchmark>") for item in argv]
    shown = [item.replace(str(tmp_path / "cache"), "<cache>") for item in shown]
    assert f"`python scripts/benchmark_methods.py {shlex.join(shown)} (run from " in table
    assert str(tmp_path) not in table
    assert "- Seeds: 2 (0, 1) for every method" in table
    assert "- Online budget: 8 environment games per run, greedy evaluation every 4 games." in table
    start = float(rows[0]["start_return"])
    assert f"greedy return {start:.2f} ± 0.00 (iteration 0 of the online runs)" in table
    # The best figure: the optimal questioner over the 4 evaluation words with the tiny runs' 4-turn limit.
    assert "- Best: " in table and "the optimal questioner" in table and "- Half the gap: " in table
    assert "CPU-hours: the runs' process times (" in table and "and building the start policy." in table
    assert (
        "as in `experiments/archer_20q_base` | 8 env games |" in table
        and "as in `offline_bc_20q` | 24 dataset games, 4 steps |" in table
    )
    assert table.count(" | s / game |") == 1 and f"| {statistics.fmean(per_game):.3f} ± " in table
    assert "archer_20q_base > chai_20q: no finished runs of both" in table
    assert "archer_20q_base > ppo_20q at 8 games: no finished runs of both" in table
    assert "iql_reinforce_20q collapses (paper: to -20): no finished runs of both" in table
    # Every method's overrides, the benchmark's schedule last.
    assert "algorithm.num_iterations=2 eval.every_iters=1`" in table

    # A second invocation reuses the finished runs: no new attempt is recorded.
    assert bench.main(argv) == 0
    sidecar = json.loads((Path(rows[0]["run_dir"]) / "benchmark_run.json").read_text())
    assert len(sidecar["attempts"]) == 1
    assert {r["source"] for r in rows} == {"run folder"}

    # Every finished run is archived in --docs: with --out gone (another machine, a later session), nothing is
    # rerun and the table is rebuilt from the archive with the same numbers.
    archive = json.loads((docs / "archive.json").read_text())["runs"]
    assert [(r["method"], r["seed"]) for r in archive] == [(r["method"], int(r["seed"])) for r in rows]
    assert {r["versions"]["transformers"] for r in archive} == {metadata.version("transformers")}
    assert {r["transformers"] for r in rows} == {metadata.version("transformers")}
    shutil.rmtree(out)
    assert bench.main(argv) == 0
    assert not (out / "runs").exists()
    again = read_csv(docs / "runs.csv")
    assert {r["source"] for r in again} == {"archive.json"}
    for before, after in zip(rows, again, strict=True):
        for column in (
            "start_return",
            "final_return",
            "final_success",
            "final_rollout_return",
            "cpu_s",
            "seconds_per_game",
            "commit",
            "transformers",
        ):
            assert after[column] == before[column], column
    assert read_csv(docs / "curves.csv") == curves
    assert "Read from `archive.json`" in (docs / "results.md").read_text()
    # Before serving archived online runs, the benchmark evaluates the start this machine builds: the same cached
    # start plays as the archived runs' iteration 0 did, so nothing above was rerun. An archived run whose iteration
    # 0 shows another start (a start rebuilt elsewhere) is not served: it runs here and replaces its record.
    record = json.loads((docs / "archive.json").read_text())
    moved = next(r for r in record["runs"] if (r["method"], r["seed"]) == ("archer_20q_base", 1))
    moved["curve"][0]["return"] += 1.0
    (docs / "archive.json").write_text(json.dumps(record))
    capsys.readouterr()
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    assert "archer_20q_base seed 1: archived from another start policy" in printed
    assert "archer_20q_base seed 0: archived from another start" not in printed
    again = {(r["method"], r["seed"]): r for r in read_csv(docs / "runs.csv")}
    assert again["archer_20q_base", "1"]["source"] == "run folder"
    assert {again[k]["source"] for k in again if k != ("archer_20q_base", "1")} == {"archive.json"}
    assert again["archer_20q_base", "1"]["start_return"] == rows[1]["start_return"]
    rerun = next(
        r for r in bench.load_archive(docs / "archive.json") if r["seed"] == 1 and r["method"] == moved["method"]
    )
    assert rerun["curve"][0]["return"] == float(rows[1]["start_return"])


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
    assert pages.ordering_verdict(results, "a", "b").endswith("(2 standard errors: 1.63, 3 and 3 seeds): holds")
    assert pages.ordering_verdict(results, "a", "c").endswith("not resolved within the spread")
    assert pages.ordering_verdict(results, "b", "a").endswith("reversed")
    assert pages.ordering_verdict(results, "a", "missing").endswith("no finished runs of both")


def test_defaults_are_issue_14s_budgets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("benchmark_methods.py")
    args = bench.parse_args(["twenty_questions_strong"])
    assert args.methods == [
        "archer_20q_base",
        "online_filteredbc_20q",
        "chai_20q",
        "ppo_20q",
        "grpo_20q",
        "gigpo_20q",
        "offline_archer_20q",
        "offline_filteredbc_20q",
        "offline_bc_20q",
        "iql_reinforce_20q",
    ]
    assert (args.seeds, args.trajectories, args.eval_every, args.on_policy_factor) == ([0, 1, 2], 1280, 160, 10)
    assert (args.offline_steps, args.offline_eval_every) == (3000, 500)
    assert args.docs == SCRIPTS_DIR.parent / "docs" / "benchmark" / "twenty_questions_strong"
    assert args.out == Path("outputs/benchmark/twenty_questions_strong").resolve()

    assert bench.main(["twenty_questions_strong", "--dry-run", f"--out={tmp_path}"]) == 0
    commands = [shlex.split(line) for line in capsys.readouterr().out.splitlines()]
    schedule: dict[str, set[tuple[str, str]]] = {}
    for command in commands:
        method = command[command.index("--config-name") + 1].removeprefix("experiments/")  # the benchmark's ArCHer
        keys = dict(c.split("=", 1) for c in command if c.startswith(("algorithm.num_iterations=", "eval.every")))
        schedule.setdefault(method, set()).add((keys["algorithm.num_iterations"], keys["eval.every_iters"]))
        assert f"run_dir={tmp_path.resolve()}/runs/{method}/seed" in " ".join(command)
    assert len(commands) == 10 * 3
    # 32 games per iteration online (GRPO and GiGPO: 4 groups of 8): 1,280 games are 40 iterations, 160 games 5; the
    # on-policy methods (PPO, GRPO, GiGPO) play 10 x 1,280 games. The offline configs take 10 gradient steps per
    # iteration: 3,000 steps are 300, 500 50.
    online = {("40", "5")}
    offline = {("300", "50")}
    assert schedule == {
        "archer_20q_base": online,
        "online_filteredbc_20q": online,
        "chai_20q": online,
        "ppo_20q": {("400", "5")},
        "grpo_20q": {("400", "5")},
        "gigpo_20q": {("400", "5")},
        "offline_archer_20q": offline,
        "offline_filteredbc_20q": offline,
        "offline_bc_20q": offline,
        "iql_reinforce_20q": offline,
    }


def test_ppo_gets_the_budget_factor_and_a_whole_number_of_iterations_between_evaluations(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    base = [
        "twenty_questions_strong",
        "--methods=archer_20q_base,ppo_20q",
        "--seeds=1",
        f"--out={tmp_path}",
        "--override=archer_20q_base:algorithm.rollout.episodes_per_iter=6",
        "--override=archer_20q_base:algorithm.warmup_iters=1",  # below its 2 iterations, as the config checks
        "--override=ppo_20q:algorithm.rollout.episodes_per_iter=4",
    ]
    specs = bench.plan(bench.parse_args([*base, "--trajectories=12", "--eval-every=6", "--on-policy-factor=3"])).specs
    archer, ppo = specs
    assert (archer.budget, archer.eval_every) == (12, 6)
    assert archer.overrides[-2:] == ["algorithm.num_iterations=2", "eval.every_iters=1"]
    # 3 x 12 = 36 games of 4 per iteration; 4 does not divide 6, so PPO is evaluated every lcm(6, 4) = 12 games.
    assert (ppo.budget, ppo.eval_every) == (36, 12)
    assert ppo.overrides[-2:] == ["algorithm.num_iterations=9", "eval.every_iters=3"]
    assert ppo.config.algorithm.num_iterations == 9 and ppo.config.algorithm.rollout.episodes_per_iter == 4

    with pytest.raises(
        SystemExit, match="ppo_20q: --on-policy-factor x --trajectories=54 must be a positive multiple of 4"
    ):
        bench.plan(bench.parse_args([*base, "--trajectories=18", "--eval-every=6", "--on-policy-factor=3"]))


def test_games_to_reach_and_value_at_on_hand_made_curves() -> None:
    curve = [(0, -11.0), (160, -9.5), (320, -8.0), (480, -8.5), (640, -7.5)]
    assert pages.games_to_reach(curve, -8.0) == 320  # reached exactly at an evaluation
    assert pages.games_to_reach(curve, -7.9) == 640  # the first point at or above, not the last
    assert pages.games_to_reach(curve, -11.0) == 0  # the start already there
    assert pages.games_to_reach(curve, -7.0) is None  # never reached
    assert pages.games_to_reach([], -7.0) is None

    points = [{"x": x, "return": r} for x, r in curve]
    assert pages.value_at(points, 320)["return"] == -8.0
    assert pages.value_at(points, 400)["x"] == 320  # the last evaluation at or before
    assert pages.value_at(points, 800) is None  # the run has not got that far


def test_collapse_verdict_on_hand_made_finals() -> None:
    # IQL + REINFORCE [-19.5, -19.8, -20.0]: mean -19.77, std 0.252; BC [-15, -16, -14]: mean -15, std 1.
    # 2 SE = 2 sqrt(0.0633 / 3 + 1 / 3) = 1.19 < 4.77: below BC; 0.23 above the -20 floor.
    verdict = pages.collapse_verdict([-19.5, -19.8, -20.0], [-15.0, -16.0, -14.0], -20.0)
    assert verdict == (
        "iql_reinforce_20q collapses (paper: to -20): final return -19.77 ± 0.25 against offline_bc_20q's "
        "-15.00 ± 1.00; below offline_bc_20q by +4.77 (2 standard errors: 1.19, 3 and 3 seeds): holds; its mean "
        "is 0.23 above the -20 floor"
    )
    level = pages.collapse_verdict([-15.0, -17.0, -13.0], [-15.0, -16.0, -14.0], -20.0)
    assert "below offline_bc_20q by +0.00" in level and level.endswith(
        "not resolved within the spread; its mean is 5.00 above the -20 floor"
    )
    assert "reversed" in pages.collapse_verdict([-10.0, -11.0, -9.0], [-15.0, -16.0, -14.0], -20.0)
    assert pages.collapse_verdict([], [-15.0], -20.0).endswith("no finished runs of both it and offline_bc_20q")


def test_report_reads_ppo_against_archer_from_hand_made_curves(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    args = bench.parse_args(
        [
            "twenty_questions_strong",
            "--methods=archer_20q_base,ppo_20q",
            "--seeds=2",
            "--trajectories=64",
            "--eval-every=32",
            "--on-policy-factor=3",
            "--override=archer_20q_base:algorithm.warmup_iters=1",
            f"--out={tmp_path / 'out'}",
            f"--docs={tmp_path / 'docs'}",
        ]
    )
    plan = bench.plan(args)
    specs = plan.specs
    assert [(s.method, s.budget, s.eval_every) for s in specs] == [
        ("archer_20q_base", 64, 32),
        ("archer_20q_base", 64, 32),
        ("ppo_20q", 192, 32),
        ("ppo_20q", 192, 32),
    ]

    def result(spec, returns: list[float]):
        curve = [{"iteration": i, "x": 32 * i, "return": r, "success": 0.0} for i, r in enumerate(returns)]
        return bench.RunResult(spec, curve=curve, finished=True)

    # ArCHer ends at -8.0 (seed mean); PPO's seed mean is -10.5 at 64 games and first reaches -8.0 at 128.
    archer = [result(specs[0], [-11.0, -10.0, -8.5]), result(specs[1], [-11.0, -9.0, -7.5])]
    ppo_runs = [[-11.0, -11.0, -10.5, -9.0, -8.0, -8.5, -9.0], [-11.0, -10.5, -10.5, -8.0, -8.0, -8.5, -8.0]]
    ppo = [result(spec, returns) for spec, returns in zip(specs[2:], ppo_runs, strict=True)]
    # A best of -5.0 puts half the gap from the start's -11.0 at -8.0: ArCHer's seed mean reaches it at 64 games,
    # PPO's at 128 (2.0x).
    figures = pages.Figures(best=-5.0, solver="the optimal questioner", start=-11.0)
    table = pages.markdown([*archer, *ppo], args, {}, plan, figures)
    assert (
        "- Online budget: 64 environment games per run, greedy evaluation every 32 games; `ppo_20q` 192 games" in table
    )
    assert "| token-level PPO (GAE, KL to the start, value model), as in `ppo_20q` | 192 env games |" in table
    assert (
        "- archer_20q_base > ppo_20q at 64 games: difference +2.50 (2 standard errors: 1.00, 2 and 2 seeds): holds"
        in table
    )
    assert "- archer_20q_base > ppo_20q at its full 192 games: difference +0.50 (" in table
    assert (
        "needs to reach archer_20q_base's final return (-8.00, seed mean): 128 games (2.0x archer_20q_base's 64)"
        in table
    )
    assert "`ppo_20q`: 3 x 64 = 192 games (`--on-policy-factor`), 32 games per iteration" in table
    assert "| 64 | 1.0x |" in table and "| 128 | 2.0x |" in table

    # One PPO seed short of ArCHer's return: the seed mean never reaches it.
    ppo[1].curve = [dict(p, **{"return": min(p["return"], -9.0)}) for p in ppo[1].curve]
    again = pages.markdown([*archer, *ppo], args, {}, plan, figures)
    assert "not reached within 192 games (3x archer_20q_base's 64)" in again
    assert "| not reached within 192 games | > 3.0x |" in again  # a lower bound: 192 games over ArCHer's 64
    pages.plot([*archer, *ppo], args, tmp_path / "curves.png", plan.task, figures)
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_archive_serves_only_the_same_run_and_keeps_other_runs(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")

    def specs(*extra: str):
        argv = [
            "twenty_questions_strong",
            "--methods=archer_20q_base",
            "--seeds=2",
            f"--out={tmp_path / 'out'}",
            f"--docs={tmp_path / 'docs'}",
        ]
        return bench.plan(bench.parse_args([*argv, *extra])).specs

    plain = specs()
    curve = [
        {"iteration": 0, "x": 0.0, "return": -5.0, "success": 1.0},
        {"iteration": 20, "x": 640.0, "return": -4.5, "success": 1.0},
        {"iteration": 40, "x": 1280.0, "return": -4.0, "success": 1.0},
    ]
    finished = bench.RunResult(
        plain[0], curve=curve, finished=True, cpu_s=12.5, commit="abc", final_rollout_return=-4.2
    )
    unfinished = bench.RunResult(plain[1], curve=curve[:1], finished=False)
    path = tmp_path / "docs" / "archive.json"
    assert bench.archived_on_policy_factor(path) is None  # no archive yet
    bench.update_archive(path, [], [finished, unfinished], tmp_path / "out", on_policy_factor=3)
    archive = bench.load_archive(path)
    assert [(r["method"], r["seed"], r["commit"]) for r in archive] == [("archer_20q_base", 0, "abc")]  # finished only
    # The factor the pages were built with is kept, for --summary to plan the task with the same ceilings.
    assert bench.archived_on_policy_factor(path) == 3

    served = bench.from_archive(plain[0], archive)
    assert served is not None and served.archived and served.final["return"] == -4.0 and served.cpu_s == 12.5
    assert bench.from_archive(plain[1], archive) is None  # another seed
    changed = specs("--override=archer_20q_base:algorithm.actor_lr=0.5")
    assert bench.from_archive(changed[0], archive) is None  # other overrides: another run
    # An override that restates the config's own value composes the same config: the same run.
    restated = specs(f"--override=archer_20q_base:algorithm.actor_lr={plain[0].config.algorithm.actor_lr}")
    assert restated[0].overrides != plain[0].overrides and bench.from_archive(restated[0], archive) is not None
    # The same overrides on a config whose file or defaults have changed since: another run too.
    edited = [dict(archive[0], config_fingerprint="0" * 16)]
    assert bench.from_archive(plain[0], edited) is None

    # The run's length is not part of what it is: the 1,280-game run serves a 640-game one (its first 20 iterations;
    # the last iteration's sampled return is the longer run's, so it is left out), never a 2,560-game one.
    half = specs("--trajectories=640")[0]
    shorter = bench.from_archive(half, archive)
    assert shorter is not None and shorter.final["return"] == -4.5 and shorter.final["x"] == 640.0
    assert shorter.final_rollout_return is None and served.final_rollout_return == -4.2
    assert bench.from_archive(specs("--trajectories=2560")[0], archive) is None
    # Nor does a shorter run replace a longer one in the archive.
    bench.update_archive(path, archive, [bench.RunResult(half, curve=curve[:2], finished=True)], tmp_path / "out")
    assert [r["curve"][-1]["iteration"] for r in bench.load_archive(path)] == [40]

    # A run finished in its folder replaces nothing else: the archived seed 0 stays beside the new one.
    other = bench.RunResult(changed[1], curve=curve, finished=True)
    bench.update_archive(path, archive, [other], tmp_path / "out")
    assert len(bench.load_archive(path)) == 2
    assert bench.archived_on_policy_factor(path) is None  # written without a factor, as archives before it was kept
    for broken in ("not json", '{"runs": [{"method": "archer_20q_base", "seed": 0, "overrides": []}]}'):
        path.write_text(broken)
        with pytest.raises(SystemExit, match="not a benchmark archive"):
            bench.load_archive(path)


def test_runs_from_two_start_policies_are_told_apart_by_their_iteration_0(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    argv = ["frozenlake", "--methods=archer_recipe,grpo", "--seeds=2", f"--out={tmp_path / 'out'}"]
    recipe_0, recipe_1, grpo_0, grpo_1 = bench.plan(bench.parse_args([*argv, f"--docs={tmp_path}"])).specs

    def result(spec, start: float, reading: float, archived: bool = True):
        curve = [
            {"iteration": 0, "x": 0.0, "return": start, "success": start, "move_state_dependence": reading},
            {"iteration": 20, "x": 1280.0, "return": 0.4, "success": 0.4, "move_state_dependence": 0.3},
        ]
        return bench.RunResult(spec, curve=curve, finished=True, archived=archived)

    here = {"return": 0.3125, "success": 0.3125, "move_state_dependence": 0.2265}
    assert not pages.different_starts(here, dict(here))
    assert pages.different_starts(here, dict(here, move_state_dependence=0.207))  # any figure both have
    assert not pages.different_starts(here, {"return": 0.3125, "success": 0.3125})  # a figure one lacks says nothing
    assert not pages.different_starts(here, None)

    results = [
        result(recipe_0, 0.3125, 0.2265),
        result(recipe_1, 0.3359, 0.2069),  # archived from another machine's start
        result(grpo_0, 0.3359, 0.2069, archived=False),  # run here: never dropped
        result(grpo_1, 0.3125, 0.2069),  # the same success, another board reading: another start
    ]
    assert bench.other_start_runs(results, here) == [results[1], results[3]]

    line = pages.mixed_starts_line(results, "success")
    assert line.startswith("- **The online runs did not all start from one policy** (iteration-0 greedy success ")
    assert "0.3125: `archer_recipe` s0; 0.3359: `archer_recipe` s1, `grpo` s0; 0.3125: `grpo` s1)" in line
    assert pages.mixed_starts_line([results[0]], "success") is None

    # A run from another start replaces the archived one even when shorter; from the same start it must be as long.
    path = tmp_path / "archive.json"
    bench.update_archive(path, [], [result(recipe_1, 0.3359, 0.2069, archived=False)], tmp_path / "out")
    shorter = result(recipe_1, 0.3125, 0.2265, archived=False)
    shorter.curve[-1]["iteration"] = 10
    bench.update_archive(path, bench.load_archive(path), [shorter], tmp_path / "out")
    assert [r["curve"][0]["return"] for r in bench.load_archive(path)] == [0.3125]
    to_iteration_5 = result(recipe_1, 0.3125, 0.2265, archived=False)
    to_iteration_5.curve[-1]["iteration"] = 5
    bench.update_archive(path, [], [result(recipe_1, 0.3125, 0.2265, archived=False)], tmp_path / "out")
    bench.update_archive(path, bench.load_archive(path), [to_iteration_5], tmp_path / "out")
    assert [r["curve"][-1]["iteration"] for r in bench.load_archive(path)] == [20]


def test_a_runs_times_are_its_own_records_when_the_benchmarks_attempts_missed_some(tmp_path: Path) -> None:
    """An attempt killed with the benchmark records no time; the run's records still hold the iterations it kept, so
    the larger of the two sums is the run's cost (CPU and wall), and the CPU key is not added to the wall phases."""
    bench = load_script("benchmark_methods.py")
    argv = ["twenty_questions_strong", "--methods=archer_20q_base", "--seeds=1", f"--out={tmp_path / 'out'}"]
    spec = bench.plan(bench.parse_args([*argv, f"--docs={tmp_path / 'docs'}"])).specs[0]
    iterations = spec.config.algorithm.num_iterations
    spec.run_dir.mkdir(parents=True)
    records = [{"iteration": i, "env/trajectories": 32 * i, "time/update_s": 2.0, "time/process_cpu_s": 30.0}
               for i in range(iterations + 1)]  # fmt: skip
    for record in (records[0], records[-1]):
        record |= {"eval/return_mean": -4.0, "eval/success_rate": 1.0}
    (spec.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    def attempts(*cpu: float) -> None:
        runs = [{"returncode": 0, "wall_s": seconds / 10, "cpu_s": seconds} for seconds in cpu]
        sidecar = {"attempts": runs, "command": spec.command(), "config_fingerprint": bench.run_fingerprint(spec)}
        (spec.run_dir / "benchmark_run.json").write_text(json.dumps(sidecar))

    attempts(100.0)  # the last attempt only: the first was killed
    read = bench.read_run(spec)
    assert read.finished and read.cpu_s == 30.0 * (iterations + 1) and read.train_s == 2.0 * (iterations + 1)
    assert read.wall_s == 2.0 * (iterations + 1)  # the iterations' phases, not the last attempt's 10 s
    attempts(100.0, 10_000.0)  # every attempt recorded (startup and checkpoints are outside the records)
    read = bench.read_run(spec)
    assert read.cpu_s == 10_100.0 and read.wall_s == 1_010.0


def test_a_folder_holding_a_run_of_another_config_is_not_read_and_is_moved_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same command, other composed config (a config file or the start's pretraining edited since): the folder's
    numbers are not the run's, whether the benchmark recorded the config or only the run's checkpoint did; running it
    keeps the old run's files under ``previous-<time>/`` and starts over."""
    import torch

    bench = load_script("benchmark_methods.py")
    argv = ["twenty_questions_strong", "--methods=archer_20q_base", "--seeds=1", f"--out={tmp_path / 'out'}"]
    spec = bench.plan(bench.parse_args([*argv, f"--docs={tmp_path / 'docs'}"])).specs[0]
    iterations = spec.config.algorithm.num_iterations
    spec.run_dir.mkdir(parents=True)
    records = [{"iteration": i, "env/trajectories": 32 * i, "eval/return_mean": -4.0, "eval/success_rate": 1.0}
               for i in (0, iterations)]  # fmt: skip
    records[0]["eval/move_state_dependence"] = 0.25  # read into the curve where an evaluation logged it
    (spec.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    def sidecar(**fields) -> None:
        (spec.run_dir / "benchmark_run.json").write_text(json.dumps({"attempts": [], **fields}))

    sidecar(command=spec.command(), config_fingerprint=bench.run_fingerprint(spec))
    read = bench.read_run(spec)
    assert read.finished and read.start["move_state_dependence"] == 0.25 and "move_state_dependence" not in read.final
    sidecar(command=spec.command(), config_fingerprint="0" * 16)
    assert bench.holds_another_config(spec) and not bench.read_run(spec).curve
    # The same config under another spelling of the command (an override a config file now sets itself): the same
    # run. A folder whose config was never recorded is judged by its command.
    respelled = [*spec.command(), f"algorithm.actor_lr={spec.config.algorithm.actor_lr}"]
    sidecar(command=respelled, config_fingerprint=bench.run_fingerprint(spec))
    assert bench.read_run(spec).finished
    sidecar(command=respelled)
    assert not bench.read_run(spec).curve
    # A run the benchmark started before it recorded configs: its checkpoint says which config it ran.
    sidecar(command=spec.command())
    torch.save({"config_fingerprint": bench.run_fingerprint(spec)}, spec.run_dir / "checkpoint.pt")
    assert not bench.holds_another_config(spec) and bench.read_run(spec).finished
    torch.save({"config_fingerprint": "1" * 16}, spec.run_dir / "checkpoint.pt")
    assert bench.holds_another_config(spec) and not bench.read_run(spec).curve

    # Running it (run.py replaced by a script that only records that it ran) moves the old run aside first.
    fake = tmp_path / "run.py"
    fake.write_text("import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('ran')\n")
    monkeypatch.setattr(bench.RunSpec, "command", lambda s: [str(fake), str(s.run_dir / "ran.txt")])
    # Not while another process runs in the folder (its lock held): refused, nothing moved.
    with open(spec.run_dir / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert bench.execute(spec) == 1
    assert (spec.run_dir / "metrics.jsonl").exists() and not list(spec.run_dir.glob("previous-*"))
    assert bench.execute(spec) == 0
    (aside,) = spec.run_dir.glob("previous-*")
    assert sorted(p.name for p in aside.iterdir()) == ["benchmark_run.json", "checkpoint.pt", "metrics.jsonl"]
    assert (spec.run_dir / "ran.txt").read_text() == "ran" and not (spec.run_dir / "metrics.jsonl").exists()
    recorded = json.loads((spec.run_dir / "benchmark_run.json").read_text())
    assert recorded["config_fingerprint"] == bench.run_fingerprint(spec) and len(recorded["attempts"]) == 1


def test_chai_is_also_compared_on_its_reranked_training_games(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    argv = [
        "twenty_questions_strong",
        "--methods=archer_20q_base,chai_20q",
        "--seeds=2",
        f"--out={tmp_path / 'out'}",
        f"--docs={tmp_path / 'docs'}",
    ]
    args = bench.parse_args(argv)
    plan = bench.plan(args)
    specs = plan.specs
    curve = [
        {"iteration": 0, "x": 0.0, "return": -3.3, "success": 1.0},
        {"iteration": 40, "x": 1280.0, "return": -3.3, "success": 1.0},
    ]
    # Sampled returns: ArCHer -3.0 and -3.2 (mean -3.1, sd 0.141); CHAI -4.0 and -3.6 (mean -3.8, sd 0.283).
    # Difference 0.7; two standard errors 2 * sqrt(0.02 / 2 + 0.08 / 2) = 0.447.
    sampled = [-3.0, -3.2, -4.0, -3.6]
    results = [
        bench.RunResult(spec, curve=curve, finished=True, final_rollout_return=value)
        for spec, value in zip(specs, sampled, strict=True)
    ]
    table = pages.markdown(results, args, {}, plan, pages.Figures(best=-2.8, solver="optimal", start=-3.3))
    # Greedy: CHAI's frozen policy, ArCHer's start here.
    assert "- archer_20q_base > chai_20q: difference +0.00" in table
    assert (
        "- archer_20q_base > chai_20q in the last iteration's training games (ArCHer samples its policy; CHAI plays "
        "its critic's pick of its policy's samples): difference +0.70 (2 standard errors: 0.45, 2 and 2 seeds): holds"
    ) in table


def test_filtered_bc_is_named_with_its_own_filter_fraction(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    argv = [
        "twenty_questions_strong",
        "--methods=online_filteredbc_20q,offline_filteredbc_20q",
        "--seeds=1",
        f"--out={tmp_path}",
    ]
    shipped = [pages.describe(spec) for spec in bench.plan(bench.parse_args(argv)).specs]
    assert shipped == [
        "online filtered BC (clones the top 10% of recent games), as in `online_filteredbc_20q`",
        "offline filtered BC (clones the top 10% of the dataset), as in `offline_filteredbc_20q`",
    ]
    tuned = bench.plan(
        bench.parse_args([*argv, "--override=offline_filteredbc_20q:algorithm.filter_fraction=0.5"])
    ).specs
    assert (
        pages.describe(tuned[1])
        == "offline filtered BC (clones the top 50% of the dataset), as in `offline_filteredbc_20q`"
    )


def test_command_text_says_where_the_benchmark_was_run(tmp_path: Path) -> None:
    argv = ["--methods", "ppo_20q", "--jobs", "2"]
    here = pages.command_text(argv, str(pages.SCRIPTS))
    assert here == "cd scripts && python benchmark_methods.py --methods ppo_20q --jobs 2"
    other = tmp_path / "checkout" / "scripts"  # another checkout's scripts folder runs its own copy
    other.mkdir(parents=True)
    (other / "benchmark_methods.py").write_text("")
    assert pages.command_text(argv, str(other)) == f"{here} (in another checkout)"
    elsewhere = pages.command_text(argv, str(tmp_path))  # this checkout's script, run from another folder
    assert elsewhere == f"python scripts/benchmark_methods.py --methods ppo_20q --jobs 2 (run from <{tmp_path.name}>)"
    # Folders outside the repository are placeholders named after the folder; inside it, relative paths.
    outside = pages.command_text(["--out", str(tmp_path / "runs"), f"--docs={pages.SCRIPTS.parent / 'docs'}"], None)
    assert outside == "cd scripts && python benchmark_methods.py --out '<runs>' --docs=docs"


def test_summary_plans_each_task_with_the_on_policy_factor_its_pages_were_built_with(tmp_path: Path) -> None:
    bench = load_script("benchmark_methods.py")
    docs = tmp_path / "docs"
    bench.update_archive(docs / "frozenlake" / bench.ARCHIVE, [], [], tmp_path / "out", on_policy_factor=1)
    args = bench.parse_args(["--summary", f"--docs={docs}", f"--out={tmp_path / 'out'}", "--on-policy-factor=4"])
    assert bench.write_summary(args) == 0
    summary = (docs / bench.SUMMARY).read_text(encoding="utf-8")
    # frozenlake's archive says 1; the tasks without an archive get the command line's factor.
    assert "frozenlake 1x" in summary and "sokoban 4x" in summary and "twenty_questions_weak 4x" in summary


def test_the_start_note_says_whether_the_start_was_built_or_found_in_the_cache() -> None:
    assert pages.start_build_text(None) == "."
    assert pages.start_build_text(0.4) == " (found in the cache)."
    assert pages.start_build_text(59.9) == " (found in the cache)."
    assert pages.start_build_text(1830.2) == " (built in 1830 s)."


def test_dry_run_lines_pasted_into_a_shell_give_run_py_the_benchmarks_own_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_script("benchmark_methods.py")
    argv = ["sokoban", "--methods=archer_recipe", "--seeds=1", f"--out={tmp_path}", f"--docs={tmp_path / 'docs'}"]
    assert bench.main([*argv, "--dry-run"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    (spec,) = bench.plan(bench.parse_args(argv)).specs
    assert shlex.split(line) == ["python", *spec.command()]
    # The recipe's reply separator keeps its space only inside Hydra's quotes, which the shell must pass on.
    assert "model.critic.turns.reply_separator='? '" in shlex.split(line)
