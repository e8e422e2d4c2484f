"""The method benchmark's pages: the analysis of a task's runs (final figures, games to half the gap from the start
to the best and to the ArCHer recipe's final, ratios to the ArCHer runs, the paper's orderings on
twenty_questions_strong) and what it writes:
``results.md``, ``runs.csv``, ``curves.csv``, ``curves.png`` per task and the rows of ``summary.md``.

``benchmark_methods.py`` plans and runs the benchmark and calls ``report``; this module reads its results and runs
nothing.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark_tasks import Task

from archer.utils import atomic_open, atomic_write_text

if TYPE_CHECKING:
    from benchmark_methods import Plan, RunResult, RunSpec

    from archer.config import RunConfig

SCRIPTS = Path(__file__).resolve().parent
ARCHIVE = "archive.json"
RUNS_TABLE = "runs.csv"
# Names in twenty_questions_strong's paper checks (its orderings, PPO against ArCHer, IQL + REINFORCE's collapse).
ARCHER = "archer_20q_base"
TOKEN_PPO = "ppo_20q"
IQL_REINFORCE, OFFLINE_BC = "iql_reinforce_20q", "offline_bc_20q"
CHAI = "chai_20q"


# ---- analysis ----------------------------------------------------------------------------------------------------


def stopping_level(task: Task, results: Sequence[RunResult]) -> float | None:
    """The final mean of the task's first ArCHer over its finished runs; None without one."""
    values = finals(group(results).get(task.archers[0], []), task.point_key)
    return statistics.fmean(values) if values else None


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def fmt(values: Sequence[float], digits: int = 2) -> str:
    if not values:
        return "n/a"
    mean, std = mean_std(values)
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if len(values) > 1 else f"{mean:.{digits}f}"


def finals(runs: Sequence[RunResult], key: str = "return") -> list[float]:
    """The final greedy ``key`` (return or success) of every finished run."""
    return [r.final[key] for r in runs if r.final]


def difference(high: Sequence[float], low: Sequence[float]) -> tuple[float, float | None, str]:
    """``mean(high) - mean(low)``, two standard errors of that difference (None under 2 seeds a side), and a verdict.

    The verdict is "holds" when the difference is above two standard errors, "reversed" when below minus two.
    """
    (m1, s1), (m2, s2) = mean_std(high), mean_std(low)
    diff = m1 - m2
    if min(len(high), len(low)) < 2:
        return diff, None, "one seed, so no spread to judge it by: not resolved"
    two_se = 2 * math.sqrt(s1**2 / len(high) + s2**2 / len(low))
    if diff > two_se:
        return diff, two_se, "holds"
    if diff < -two_se:
        return diff, two_se, "reversed"
    return diff, two_se, "not resolved within the spread"


def compare(higher: str, high: Sequence[float], lower: str, low: Sequence[float]) -> str:
    """Whether ``high`` is above ``low`` beyond two standard errors of the difference of their means."""
    if not high or not low:
        return f"{higher} > {lower}: no finished runs of both"
    diff, two_se, verdict = difference(high, low)
    head = f"{higher} > {lower}: difference {diff:+.2f}"
    if two_se is None:
        return f"{head}; {verdict}"
    return f"{head} (2 standard errors: {two_se:.2f}, {len(high)} and {len(low)} seeds): {verdict}"


def ordering_verdict(results: dict[str, list[RunResult]], higher: str, lower: str) -> str:
    """Whether ``higher``'s final greedy return is above ``lower``'s beyond two standard errors of the difference."""
    return compare(higher, finals(results.get(higher, [])), lower, finals(results.get(lower, [])))


def sampled_finals(runs: Sequence[RunResult]) -> list[float]:
    """The last iteration's training-game return of every finished run."""
    return [r.final_rollout_return for r in runs if r.final and r.final_rollout_return is not None]


def chai_play_line(grouped: dict[str, list[RunResult]]) -> str:
    """ArCHer against CHAI as each acts while training: CHAI's policy is frozen, so its greedy return is the start's
    by construction and only its training games show its critic's reranking."""
    return compare(
        ARCHER,
        sampled_finals(grouped.get(ARCHER, [])),
        f"{CHAI} in the last iteration's training games (ArCHer samples its policy; CHAI plays its critic's pick of "
        "its policy's samples)",
        sampled_finals(grouped.get(CHAI, [])),
    )


def seed_mean_curve(runs: Sequence[RunResult], key: str = "return") -> list[tuple[float, float]]:
    """(x, seed-mean greedy ``key``) at the evaluations every given run has, in order of x."""
    curves = [{p["x"]: p[key] for p in r.curve} for r in runs if r.curve]
    if not curves:
        return []
    xs = sorted(set.intersection(*(set(c) for c in curves)))
    return [(x, statistics.fmean(c[x] for c in curves)) for x in xs]


def games_to_reach(curve: Sequence[tuple[float, float]], target: float) -> float | None:
    """The first x at which the curve's value is at least ``target``; None if it never is."""
    return next((x for x, value in curve if value >= target), None)


def value_at(curve: Sequence[dict[str, float]], x: float) -> dict[str, float] | None:
    """The run's last evaluation at or before ``x``, provided the run has been evaluated at or beyond ``x``."""
    if not curve or curve[-1]["x"] < x:
        return None
    return [p for p in curve if p["x"] <= x][-1]


def half_gap_level(start: float, best: float) -> float:
    """The figure halfway from the start to the best."""
    return start + (best - start) / 2


@dataclass(frozen=True)
class Reach:
    """When a method's seed-mean curve first reaches a level: ``games`` (None: not within ``played``)."""

    games: float | None
    played: float


def reach(runs: Sequence[RunResult], level: float, key: str) -> Reach | None:
    """The games the finished runs' seed-mean curve needs to reach ``level``; None without finished runs."""
    curve = seed_mean_curve([r for r in runs if r.finished], key)
    if not curve:
        return None
    return Reach(games_to_reach(curve, level), curve[-1][0])


def reach_text(gap: Reach | None) -> str:
    if gap is None:
        return "n/a"
    return f"{gap.games:.0f}" if gap.games is not None else f"not reached within {gap.played:.0f} games"


def ratio_text(gap: Reach | None, archer: Reach | None) -> str:
    """A method's games to a level over an ArCHer's: a bound when one of them has not reached it."""
    if gap is None or archer is None:
        return "n/a"
    if gap.games is not None and archer.games:
        return f"{gap.games / archer.games:.1f}x"
    if gap.games is None and archer.games:
        return f"> {gap.played / archer.games:.1f}x"
    if gap.games is not None and archer.games is None:
        return f"< {gap.games / archer.played:.1f}x"
    return "n/a"


def archer_final_problem(task: Task, results: Sequence[RunResult], start: float | None) -> str | None:
    """Why the final mean of the task's first ArCHer is no level to count games to (None: it is one). Its gain over
    the start must pass the learning bar's test (above twice its seed spread, no seed ending below the start) and,
    for a success rate, be above two binomial standard errors of the start's rate over the evaluation games (seeds
    that end alike have no spread): below that, every curve begins within noise of the level and the games to it
    measure nothing."""
    runs = [r for r in group(results).get(task.archers[0], []) if r.final]
    values = finals(runs, task.point_key)
    if not values or start is None:
        return "it has no finished runs yet"
    mean, std = mean_std(values)
    gain = mean - start
    head = f"its final mean ({mean:.3f}) is {gain:+.3f} from the start ({start:.3f})"
    if gain <= 2 * std or min(values) < start:
        return f"{head}, not above twice its seed spread ({2 * std:.3f}) with no seed below the start"
    if task.point_key == "success":
        games = runs[0].spec.config.eval.num_episodes
        floor = 2 * math.sqrt(start * (1 - start) / games)
        if gain <= floor:
            return f"{head}, not above two standard errors of the start's rate over its {games} games ({floor:.3f})"
    return None


def archer_final_reaches(task: Task, results: Sequence[RunResult], start: float | None) -> dict[str, Reach | None]:
    """Each online method's games to the final mean of the task's first ArCHer (the paper's measure of sample
    efficiency: the games a method needs for the figure ArCHer ends with); empty where ``archer_final_problem``
    says that mean is no level to count to."""
    level = stopping_level(task, results)
    if level is None or archer_final_problem(task, results, start) is not None:
        return {}
    online = group([r for r in results if r.spec.kind == "online"])
    return {method: reach(runs, level, task.point_key) for method, runs in online.items()}


def archer_final_lines(task: Task, results: Sequence[RunResult], start: float | None) -> list[str]:
    """The task page's section on each online method's games to the final mean of the task's first ArCHer."""
    archer = task.archers[0]
    problem = archer_final_problem(task, results, start)
    if problem is not None:
        return [f"Not measured for `{archer}`: {problem}, so every curve begins within noise of it."]
    reaches = archer_final_reaches(task, results, start)
    lines = [
        f"The first evaluation at which each online method's seed-mean curve reaches `{archer}`'s final mean "
        f"({stopping_level(task, results):.3f}; the start {start:.3f}), and those games over `{archer}`'s own (the "
        "paper's measure of sample efficiency: the games a method needs for the figure ArCHer ends with; > : a lower "
        "bound, the method had not reached it in the games it played).",
        "",
    ]
    return lines + [f"- `{method}`: {archer_final_text(reaches, method, archer)}." for method in reaches]


def archer_final_text(reaches: dict[str, Reach | None], method: str, archer: str) -> str:
    """``games (ratio to the ArCHer's)`` of one method, "n/a" where there is no such figure."""
    if method not in reaches or reaches[method] is None:
        return "n/a"
    return f"{reach_text(reaches[method])} ({ratio_text(reaches[method], reaches.get(archer))})"


def ppo_lines(grouped: dict[str, list[RunResult]], args: argparse.Namespace) -> list[str]:
    """ArCHer against token-level PPO at ArCHer's budget and at PPO's, and the games PPO needs to reach ArCHer."""
    archer, ppo = grouped.get(ARCHER, []), grouped.get(TOKEN_PPO, [])
    archer_finals = finals(archer)
    budget = ppo[0].spec.budget if ppo else args.on_policy_factor * args.trajectories
    # PPO's return at ArCHer's budget is read from its curve (unfinished runs count once they are past it).
    at_budget = [p for p in (value_at(r.curve, args.trajectories) for r in ppo) if p is not None]
    read_at = sorted({p["x"] for p in at_budget})
    where = f"{TOKEN_PPO} at {args.trajectories} games" + (
        f" (its evaluation at {'/'.join(f'{x:.0f}' for x in read_at)})"
        if read_at and read_at != [args.trajectories]
        else ""
    )
    lines = [
        compare(ARCHER, archer_finals, where, [p["return"] for p in at_budget]),
        compare(ARCHER, archer_finals, f"{TOKEN_PPO} at its full {budget} games", finals(ppo)),
    ]
    done = [r for r in ppo if r.final]
    if not archer_finals or not done:
        lines.append(f"Games {TOKEN_PPO} needs to reach {ARCHER}'s final return: no finished runs of both")
        return lines
    target = statistics.fmean(archer_finals)
    reached = games_to_reach(seed_mean_curve(done), target)
    head = f"Games token-level PPO ({TOKEN_PPO}, seed-mean greedy curve) needs to reach {ARCHER}'s final return"
    if reached is None:
        lines.append(
            f"{head} ({target:.2f}, seed mean): not reached within {budget} games "
            f"({budget / args.trajectories:g}x {ARCHER}'s {args.trajectories})"
        )
    elif reached == 0:
        lines.append(
            f"{head} ({target:.2f}, seed mean): 0 games: its start is already at or above it, so {ARCHER} did not "
            "improve on the shared start"
        )
    else:
        lines.append(
            f"{head} ({target:.2f}, seed mean): {reached:.0f} games ({reached / args.trajectories:.1f}x "
            f"{ARCHER}'s {args.trajectories})"
        )
    return lines


def collapse_verdict(collapsed: Sequence[float], baseline: Sequence[float], floor: float) -> str:
    """Whether IQL + REINFORCE's final returns (``collapsed``) are below offline BC's beyond two standard errors.

    The paper reports that IQL + REINFORCE without a BC term collapses to the return floor (-20 in Twenty Questions:
    every question asked, the word never found); the verdict also says how far above ``floor`` its mean ends.
    """
    head = f"{IQL_REINFORCE} collapses (paper: to {floor:g})"
    if not collapsed or not baseline:
        return f"{head}: no finished runs of both it and {OFFLINE_BC}"
    diff, two_se, verdict = difference(baseline, collapsed)
    seeds = f"{len(collapsed)} and {len(baseline)} seeds"
    spread = f"2 standard errors: {two_se:.2f}, {seeds}" if two_se is not None else seeds
    below = f"below {OFFLINE_BC} by {diff:+.2f} ({spread}): {verdict}"
    above_floor = statistics.fmean(collapsed) - floor
    return (
        f"{head}: final return {fmt(collapsed)} against {OFFLINE_BC}'s {fmt(baseline)}; {below}; its mean is "
        f"{above_floor:.2f} above the {floor:g} floor"
    )


def group(results: Sequence[RunResult]) -> dict[str, list[RunResult]]:
    grouped: dict[str, list[RunResult]] = {}
    for result in results:
        grouped.setdefault(result.spec.method, []).append(result)
    return grouped


@dataclass(frozen=True)
class Figures:
    """The figures every result of a task is read against: the start, the best and half the gap between them."""

    best: float | None
    solver: str | None
    start: float | None

    @property
    def level(self) -> float | None:
        return half_gap_level(self.start, self.best) if self.start is not None and self.best is not None else None


def best_figures(reference: RunConfig, task: Task) -> tuple[float | None, str | None]:
    """The best achievable primary metric over the task's evaluation games (``GameSpec.best``), and how it was
    computed; (None, None) for a game without one."""
    from archer.envs.registry import GAMES, make_env
    from archer.evaluation import EvalGames

    game = GAMES.get(reference.env.name)
    if game is None or game.best is None:
        return None, None
    env = make_env(reference.env)
    games = EvalGames.from_config(reference.eval, env.evaluation_pool()).greedy
    best = game.best(reference.env, games)
    value = best.return_mean if task.point_key == "return" else best.success_rate
    return value, f"{best.solver}, over the {len(games)} evaluation games"


# The figures of a run's iteration-0 evaluation that tell its start policy: runs from one cached start evaluate it
# alike (greedy play of one policy on the same fixed games), while a start rebuilt on another machine, from the same
# config and data, can differ in floating point and so play differently.
START_KEYS = ("return", "success", "move_state_dependence")


def different_starts(a: dict[str, float] | None, b: dict[str, float] | None) -> bool:
    """Whether two iteration-0 evaluations show two start policies: some figure both have differs (False when
    either is missing: nothing says they differ)."""
    if a is None or b is None:
        return False
    return any(abs(a[key] - b[key]) > 1e-9 for key in START_KEYS if key in a and key in b)


def start_groups(results: Sequence[RunResult]) -> list[list[RunResult]]:
    """The online runs grouped by the start policy their iteration-0 evaluation shows (CHAI's reranked evaluation
    left out); more than one group means the runs did not all start from one policy."""
    groups: list[list[RunResult]] = []
    for result in results:
        if result.spec.kind != "online" or not result.start or reranks_at_eval(result):
            continue
        for runs in groups:
            if not different_starts(runs[0].start, result.start):
                runs.append(result)
                break
        else:
            groups.append([result])
    return groups


def mixed_starts_line(results: Sequence[RunResult], key: str) -> str | None:
    """A warning naming each start's runs when the online runs did not all start from one policy, else None."""
    groups = start_groups(results)
    if len(groups) < 2:
        return None
    described = "; ".join(
        f"{runs[0].start[key]:.4f}: " + ", ".join(f"`{r.spec.method}` s{r.spec.seed}" for r in runs) for runs in groups
    )
    return (
        f"- **The online runs did not all start from one policy** (iteration-0 greedy {key} {described}): a start "
        "rebuilt on another machine can differ in floating point; rerun them from one start (`benchmark_methods.py` "
        "reruns archived runs of another start) before comparing them."
    )


def start_figure(results: Sequence[RunResult], key: str) -> float | None:
    """The start's figure: the online runs' iteration-0 evaluation (one cached policy; CHAI reranking aside)."""
    starts = [r.start[key] for r in results if r.spec.kind == "online" and r.start and not reranks_at_eval(r)]
    return statistics.fmean(starts) if starts else None


# The benchmark's budget of a run: 1,280 games in at most 30 minutes alone on a 2-core CPU with torch_threads=1.
BUDGET_GAMES = 1280
BUDGET_CPU_S = 1800.0


def cpu_per_budget(result: RunResult) -> float | None:
    """A finished online run's CPU seconds per ``BUDGET_GAMES`` games (its CPU time over the games it played)."""
    if result.spec.kind != "online" or result.cpu_s is None or result.final is None:
        return None
    games = result.final["x"]
    return result.cpu_s * BUDGET_GAMES / games if games else None


def over_budget(results: Sequence[RunResult]) -> list[str]:
    """Each online method with runs over ``BUDGET_CPU_S`` per ``BUDGET_GAMES`` games, as ```ppo` 2 of 3 (1,900-2,000
    s)``: the range over the runs that are over."""
    parts = []
    for method, runs in group(results).items():
        costs = [cost for cost in map(cpu_per_budget, runs) if cost is not None]
        over = [cost for cost in costs if cost > BUDGET_CPU_S]
        if over:
            low, high = f"{min(over):,.0f}", f"{max(over):,.0f}"
            spread = low if low == high else f"{low}-{high}"
            parts.append(f"`{method}` {len(over)} of {len(costs)} ({spread} s)")
    return parts


BUDGET_TEXT = (
    f"the budget of {BUDGET_CPU_S:,.0f} CPU s per {BUDGET_GAMES:,} games (30 minutes alone on one core with "
    "`torch_threads=1`; each run's CPU time over the games it played, with the neighbours it had)"
)


# Why a run's CPU time on the pages can exceed what it takes alone, and where runs timed alone are recorded.
NEIGHBOURS_TEXT = (
    "The benchmark runs two at a time by default (`--jobs 2`), and one thread beside a busy neighbour runs 1.6-1.8 "
    "times slower than alone ([speed.md](../speed.md#threads-under-load)); runs timed alone: "
    "[speed.md](../speed.md#ppo-on-the-grid-games-alone)."
)


def budget_line(results: Sequence[RunResult]) -> str:
    """The page's note on which online methods' runs went over the budget."""
    over = over_budget(results)
    return f"Over {BUDGET_TEXT}: {'; '.join(over)}." if over else f"Every finished online run within {BUDGET_TEXT}."


def cpu_hours(results: Sequence[RunResult], info: dict[str, Any]) -> float:
    """The task's CPU-hours: every run's (``RunResult.cost_s``) and building the start policy."""
    return (sum(r.cost_s for r in results) + info.get("start_policy_cpu_s", 0.0)) / 3600


# ---- pages -------------------------------------------------------------------------------------------------------


def table_rows(results: Sequence[RunResult], out: Path) -> list[dict[str, Any]]:
    """One CSV row per run: the numbers read from its metrics.jsonl (``run_dir`` relative to ``out``)."""
    rows = []
    for r in results:
        start, final = r.start, r.final
        rows.append(
            {
                "method": r.spec.method,
                "kind": r.spec.kind,
                "seed": r.spec.seed,
                "finished": r.finished,
                "x_unit": "env_trajectories" if r.spec.kind == "online" else "gradient_steps",
                "x_budget": r.spec.budget,
                "x_final": final["x"] if final else None,
                "dataset_trajectories": r.dataset_trajectories,
                "start_return": start["return"] if start else None,
                "final_return": final["return"] if final else None,
                "start_success": start["success"] if start else None,
                "final_success": final["success"] if final else None,
                "final_rollout_return": r.final_rollout_return,
                "train_s": round(r.train_s, 1),
                "seconds_per_game": round(r.seconds_per_game, 3) if r.seconds_per_game is not None else None,
                "wall_s": round(r.wall_s, 1) if r.wall_s is not None else None,
                "cpu_s": round(r.cpu_s, 1) if r.cpu_s is not None else None,
                "run_dir": os.path.relpath(r.spec.run_dir, out),
                "source": ARCHIVE if r.archived else "run folder",
                "commit": r.commit,
                "transformers": (r.versions or {}).get("transformers"),
            }
        )
    return rows


def write_csvs(results: Sequence[RunResult], out: Path, docs: Path) -> None:
    """``runs.csv`` (``table_rows``) and ``curves.csv`` (every evaluation point), each written atomically."""
    rows = table_rows(results, out)
    runs = io.StringIO(newline="")
    writer = csv.DictWriter(runs, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(docs / RUNS_TABLE, runs.getvalue())
    curves = io.StringIO(newline="")
    writer = csv.writer(curves)
    writer.writerow(["method", "kind", "seed", "iteration", "x", "eval_return_mean", "eval_success_rate"])
    for r in results:
        for p in r.curve:
            writer.writerow(
                [r.spec.method, r.spec.kind, r.spec.seed, p["iteration"], p["x"], p["return"], p["success"]]
            )
    atomic_write_text(docs / "curves.csv", curves.getvalue())


def dropped_runs(docs: Path, results: Sequence[RunResult]) -> list[str]:
    """The finished runs (``"<method> seed <N>"``) that the pages in ``docs`` hold (their ``runs.csv``) and
    ``results`` do not: what writing ``results``' pages there would lose. None without pages.

    Raises:
        SystemExit: ``runs.csv`` is not the benchmark's table (one line naming it).
    """
    path = docs / RUNS_TABLE
    if not path.exists():
        return []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            held = [(row["method"], int(row["seed"])) for row in csv.DictReader(handle) if row["finished"] == "True"]
    except (csv.Error, KeyError, TypeError, ValueError, UnicodeDecodeError) as error:
        raise SystemExit(
            f"{path}: not the benchmark's runs table ({type(error).__name__}: {error}); fix or delete it"
        ) from None
    ours = {(r.spec.method, r.spec.seed) for r in results if r.finished}
    return [f"{method} seed {seed}" for method, seed in held if (method, seed) not in ours]


def reranks_at_eval(result: RunResult) -> bool:
    """Whether the run is CHAI evaluated by reranking (``algorithm.rerank_at_eval``) rather than one greedy decode."""
    algorithm = result.spec.config.algorithm
    return algorithm.name == "chai" and getattr(algorithm, "rerank_at_eval", False)


def describe(spec: RunSpec) -> str:
    """The table's name for a run config: what it is, and the switches that change what it is."""
    algorithm = spec.config.algorithm
    what = spec.definition.what
    if hasattr(algorithm, "filter_fraction"):
        what = what.format(fraction=f"{algorithm.filter_fraction:.0%}")
    if algorithm.name == "chai":
        what += ", policy trained" if getattr(algorithm, "update_policy", False) else ", policy frozen"
    if algorithm.name == "iql_reinforce":
        kl = getattr(algorithm, "kl_coeff", 0.0)
        what += ", no BC term (kl_coeff 0)" if not kl else f", KL to the start (kl_coeff {kl:g})"
    recipe = " + the recipe" if spec.definition.overrides else ""
    return f"{what}, as in `{spec.config_name}`{recipe}"


def command_text(argv: Sequence[str], cwd: str | None) -> str:
    """The benchmark's command line as a reader would type it (from ``scripts/`` when it was run there), with the
    folders outside the repository ``shown`` as placeholders."""
    tail = shlex.join(shown_argument(item) for item in argv)
    from_scripts = f"cd scripts && python benchmark_methods.py {tail}".rstrip()
    if cwd is None or Path(cwd) == SCRIPTS:
        return from_scripts
    if (Path(cwd) / "benchmark_methods.py").exists():  # the scripts folder of another checkout
        return f"{from_scripts} (in another checkout)"
    return f"python scripts/benchmark_methods.py {tail}".rstrip() + f" (run from {shown(Path(cwd))})"


def shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (the page is committed); else ``<name>``, the
    folder's name as a placeholder for a folder of the machine that ran it."""
    try:
        return str(path.resolve().relative_to(SCRIPTS.parent))
    except ValueError:
        return f"<{path.name}>"


def shown_argument(item: str) -> str:
    """A command-line argument with an absolute path in it (``--out=/x/y`` or ``/x/y``) ``shown``."""
    option, equals, value = item.rpartition("=")
    if value.startswith("/"):
        return f"{option}{equals}{shown(Path(value))}"
    return item


def evaluation_games(reference: RunConfig) -> str:
    """The evaluation games in words: every game of the pool once, or a fixed draw."""
    if reference.eval.num_episodes is None:
        return "every game of the evaluation pool once"
    return f"{reference.eval.num_episodes} fixed games drawn with `eval.seed` {reference.eval.seed}"


def header(
    results: Sequence[RunResult], args: argparse.Namespace, info: dict[str, Any], plan_: Plan, figures: Figures
) -> list[str]:
    """What produced the page: the command, the task, seeds, budgets, the start, the best and half the gap."""
    task = plan_.task
    lines = [f"# Method benchmark: {task.name}", "", f"{task.description}.", ""]
    if "argv" in info:
        lines.append(f"Runs produced by: `{command_text(info['argv'], info.get('cwd'))}`")
        if info["argv"] != args.argv:
            lines.append(f"This page rebuilt by: `{command_text(args.argv, str(Path.cwd()))}`")
    else:
        lines.append(f"Produced by: `{command_text(args.argv, str(Path.cwd()))}`")
    seeds = ", ".join(map(str, args.seeds))
    lines.append("")
    overrides = f" with `{' '.join(task.overrides)}`" if task.overrides else ""
    kinds = [k for k in ("online", "offline") if any(r.spec.kind == k for r in results)] or ["online"]
    takes = "; ".join(f"every {kind} run takes {', '.join(f'`{s}`' for s in task.shared[kind])}" for kind in kinds)
    own = ", ".join(f"`{k}`" for k in task.not_shared if k != "eval.every_iters")
    lines.append(
        f"- Task: {takes} from `{task.reference}`{overrides} (`{task.env}`)"
        + (f"; each method keeps its own algorithm, critic and sampling settings ({own})." if own else ".")
    )
    key = task.point_key
    metric = task.metric_name
    lines.append(f"- Metric: greedy `{task.metric}` on {evaluation_games(plan_.reference)}.")
    if figures.best is not None:
        lines.append(f"- Best: {figures.best:.2f} ({figures.solver}).")
    lines.append(f"- Seeds: {len(args.seeds)} ({seeds}) for every method; runs under `{shown(args.out)}`.")
    online = [r for r in results if r.spec.kind == "online"]
    offline = [r for r in results if r.spec.kind == "offline"]
    if online:
        budgets = "; ".join(
            f"`{m}` {runs[0].spec.budget} games, evaluated every {runs[0].spec.eval_every}"
            for m, runs in group(online).items()
            if runs[0].spec.budget != args.trajectories or runs[0].spec.eval_every != args.eval_every
        )
        lines.append(
            f"- Online budget: {args.trajectories} environment games per run, greedy evaluation every "
            f"{args.eval_every} games" + (f"; {budgets}" if budgets else "") + "."
        )
        starts = [r.start[key] for r in online if r.start and not reranks_at_eval(r)]
        pretrain = online[0].spec.config.pretrain
        built = (
            f"behaviour cloning on `data` with `{task.reference}`'s `pretrain` ({pretrain.num_iterations} x "
            f"{pretrain.steps_per_iter} steps of {pretrain.batch_size}), built once and cached"
            if pretrain is not None
            else "`model.policy` (no `pretrain`)"
        )
        reading = [r.start["move_state_dependence"] for r in online if r.start and "move_state_dependence" in r.start]
        lines.append(
            f"- Start policy of every online run: {built}; greedy {metric} "
            + (f"{fmt(starts)} (iteration 0 of the online runs)" if starts else "not measured yet")
            + (
                f"; move-state dependence {fmt(reading, 3)} (0: the same moves on every board; "
                "[running.md](../../running.md#does-the-policy-read-the-board))."
                if reading
                else "."
            )
        )
        mixed = mixed_starts_line(online, key)
        if mixed:
            lines.append(mixed)
        if figures.level is not None:
            lines.append(
                f"- Half the gap: {figures.level:.2f}, halfway from the start ({figures.start:.2f}) to the best "
                f"({figures.best:.2f})."
            )
    if offline:
        steps = offline[0].spec.budget
        starts = [r.start[key] for r in offline if r.start]
        lines.append(
            f"- Offline budget: {steps} gradient steps per run on one fixed dataset, greedy evaluation every "
            f"{args.offline_eval_every} steps; each run starts from its config's untrained `model.policy` (greedy "
            f"{metric} {fmt(starts)})."
        )
    return lines


def start_build_text(seconds: float | None) -> str:
    """The end of the note on the shared start: how long this invocation took to build it, or that it was cached.

    Loading (and evaluating) a cached start takes seconds; building one takes minutes to hours of cloning, so a
    minute separates the two cases."""
    if seconds is None:
        return "."
    if seconds < 60:
        return " (found in the cache)."
    return f" (built in {seconds:.0f} s)."


def notes(results: Sequence[RunResult], args: argparse.Namespace, info: dict[str, Any], task: Task) -> list[str]:
    """Facts the table depends on: budgets, shared settings, and checks of the shared start (one function, as long
    as the list of notes: each paragraph is one note, in the order the page prints them)."""
    lines = []
    online = [r for r in results if r.spec.kind == "online"]
    offline = [r for r in results if r.spec.kind == "offline"]
    if online:
        lines.append(
            f"Online: {args.trajectories} environment games per run, greedy evaluation after every {args.eval_every}; "
            f"every online run starts from the `pretrain` policy of `{task.reference}`, built once before the runs"
            + start_build_text(info.get("start_policy_s"))
        )
        # CHAI with rerank_at_eval reranks candidates with its (untrained, at iteration 0) critic, so its iteration-0
        # return is not the starting policy's greedy return; every other run's must be equal.
        starts = {r.start[task.point_key] for r in online if r.start and not reranks_at_eval(r)}
        if len(starts) > 1:
            lines.append(
                f"WARNING: the online runs' starting figures differ ({sorted(starts)}): they did not all start from "
                "the same policy, or greedy decoding is not deterministic here."
            )
        elif starts:
            lines.append(
                f"Check: every online run's iteration-0 greedy {task.metric_name} is the same ({starts.pop():.2f}; "
                "CHAI with `rerank_at_eval` aside, whose evaluation reranks candidates with its critic)."
            )
        new = info.get("new_pretrained_folders_during_runs", [])
        if new:
            lines.append(f"WARNING: runs built their own starting policy in {new}: the starts are not shared.")
    if not task.stops_early:
        for method, runs in group([r for r in online if r.spec.definition.long]).items():
            spec = runs[0].spec
            coarser = (
                f", the smallest multiple of {args.eval_every} that is a whole number of its iterations"
                if spec.eval_every != args.eval_every
                else ""
            )
            overridden = any(o.startswith("algorithm.rollout.episodes_per_iter=") for o in spec.overrides)
            source = (
                "set by `--override`"
                if overridden
                else f"`{spec.config_name}.yaml`'s `algorithm.rollout.episodes_per_iter`, which divides the budget, "
                "so the benchmark does not override it"
            )
            lines.append(
                f"`{method}`: {args.on_policy_factor} x {args.trajectories} = {spec.budget} games "
                f"(`--on-policy-factor`), {spec.per_iter} games per iteration ({source}): "
                f"{spec.budget // spec.per_iter} iterations, evaluated every {spec.eval_every} games{coarser}."
            )
    if offline:
        sizes = sorted({r.dataset_trajectories for r in offline if r.dataset_trajectories is not None})
        batch = sorted({r.spec.config.algorithm.batch_size for r in offline})
        lines.append(
            f"Offline: a fixed dataset of {', '.join(map(str, sizes)) or 'unknown'} scripted-questioner trajectories "
            f"(`data`); {args.offline_steps} gradient steps of batch {'/'.join(map(str, batch))} per run, greedy "
            f"evaluation after every {args.offline_eval_every}; each starts from its config's `model.policy`."
        )
    for r in results:
        algorithm = r.spec.config.algorithm
        if algorithm.name == "chai" and not getattr(algorithm, "update_policy", True):
            if reranks_at_eval(r):
                lines.append(
                    "CHAI keeps its policy frozen (`update_policy=false`); its evaluation (`rerank_at_eval`) reranks "
                    "the greedy decode and k - 1 samples with its target critic, so its curve, iteration 0 included, "
                    "measures the critic's choices."
                )
            else:
                lines.append(
                    "CHAI keeps its policy frozen (`update_policy=false`) and is evaluated, as every method, by one "
                    "greedy decode of its policy: its greedy curve stays at the start by construction; its reranked "
                    "play shows in the rollout and sampled returns."
                )
            break
    if args.override:
        lines.append(f"Extra overrides: `{shlex.join(args.override)}`.")
    archived = [r for r in results if r.archived]
    if archived:
        commits = sorted({(r.commit or "not recorded")[:12] for r in archived})
        lines.append(
            f"Read from `{ARCHIVE}` (finished by earlier invocations with the same overrides, not rerun by this one): "
            f"{', '.join(f'{r.spec.method}/seed{r.spec.seed}' for r in archived)}; their code: commits "
            f"{', '.join(commits)} (`runs.csv` gives each run's)."
        )
    missing = [f"{r.spec.method}/seed{r.spec.seed}" for r in results if not r.finished]
    if missing:
        lines.append(f"Unfinished or failed runs (left out of the numbers): {', '.join(missing)}.")
    hours = cpu_hours(results, info)
    start = " and building the start policy" if "start_policy_cpu_s" in info else ""
    lines.append(
        f"Total: {hours:.2f} CPU-hours: the runs' process times (the benchmark's record of each attempt, or the runs' "
        f"own `time/process_cpu_s` where larger; `time/*` where neither was recorded){start}."
    )
    if online:
        lines.append(budget_line(online))
    return lines


def stopping_lines(task: Task, results: Sequence[RunResult], args: argparse.Namespace) -> list[str]:
    """The stopping rule of the long methods, and where each stopped."""
    archer = task.archers[0]
    target = stopping_level(task, results)
    ceiling = args.on_policy_factor * args.trajectories
    lines = [
        f"The on-policy methods play {args.trajectories} games, then are continued {args.trajectories} games at a "
        f"time up to {args.on_policy_factor} x {args.trajectories} = {ceiling}; they stop once the seed mean of "
        f"their last evaluations reaches `{archer}`'s final mean "
        + (f"({target:.2f})" if target is not None else "(not known yet)")
        + ", which therefore runs first. Their curves beyond that point are not played, so a method stopped below "
        "half the gap shows as not reaching it within the games it played.",
        "",
    ]
    for method, runs in group(results).items():
        if not runs[0].spec.definition.long:
            continue
        done = [r for r in runs if r.finished]
        spec = runs[0].spec
        if len(done) < len(runs):
            where = f"unfinished at {spec.budget} games"
        elif target is None:
            where = f"waits at {spec.budget} games: `{archer}` has no finished runs"
        else:
            last = statistics.fmean(r.curve[-1][task.point_key] for r in done)
            if last >= target:
                where = f"stopped at {spec.budget} games (seed-mean last evaluation {last:.2f} >= {target:.2f})"
            else:
                where = f"played its ceiling, {spec.budget} games, without reaching it (last: {last:.2f})"
        lines.append(f"- `{method}`: {where}.")
    return lines


def method_lines(results: Sequence[RunResult]) -> list[str]:
    """Each method's config, its switches beyond the paper's ArCHer, and its exact overrides."""
    lines = []
    for method, runs in group(results).items():
        spec = runs[0].spec
        switches = ""
        if spec.definition.paper:
            # Shell-quoted, as every override list of the page, so a line pasted into a shell gives run.py the
            # same arguments (the recipe's reply separator '? ' keeps its space only inside Hydra's quotes).
            departs = shlex.join(spec.definition.overrides)
            switches = (
                f"; switches beyond the paper: `{departs}`, critic-only warm-up {spec.config.algorithm.warmup_iters} "
                f"of {spec.budget // spec.per_iter} iterations"
                if departs
                else "; switches beyond the paper: none (learning rates and model sizes are the config's CPU scale)"
            )
        lines.append(
            f"- `{method}` ({len(runs)} seeds): config `{spec.config_name}`{switches}; overrides: "
            f"`{shlex.join(spec.overrides)}`"
        )
    return lines


def markdown(
    results: Sequence[RunResult], args: argparse.Namespace, info: dict[str, Any], plan_: Plan, figures: Figures
) -> str:
    task = plan_.task
    key, metric = task.point_key, task.metric_name
    other_key, other = ("success", "success") if key == "return" else ("return", "return")
    grouped = group(results)
    gaps = {
        m: reach(runs, figures.level, key) if figures.level is not None and runs[0].spec.kind == "online" else None
        for m, runs in grouped.items()
    }
    archers = [a for a in task.archers if a in grouped]
    lines = [*header(results, args, info, plan_, figures), ""]
    vs = "".join(f" | vs {a}" for a in archers)
    lines += [
        f"| method, as in its config | data used | start {metric} | final {metric} | final − start "
        f"| final {metric} per seed | games to half the gap{vs} | final {other} | final sampled return "
        "| wall s / run | CPU s / run | s / game |",
        "| --- " * (12 + len(archers)) + "|",
    ]
    for method, runs in grouped.items():
        done = [r for r in runs if r.final]
        start = [r.start[key] for r in runs if r.start]
        final = [r.final[key] for r in done]
        gain = [r.final[key] - r.start[key] for r in done if r.start]
        per_seed = ", ".join(f"s{r.spec.seed}: {r.final[key]:.2f}" for r in done) or "n/a"
        others = [r.final[other_key] for r in done]
        sampled = [r.final_rollout_return for r in done if r.final_rollout_return is not None]
        # A run's cost is a finished run's: an unfinished one's partial time counts in the task's total only.
        walls = [r.wall_s for r in done if r.wall_s is not None]
        cpus = [r.cpu_s for r in done if r.cpu_s is not None]
        per_game = [r.seconds_per_game for r in done if r.seconds_per_game is not None]
        if runs[0].spec.kind == "online":
            used = f"{runs[0].spec.budget} env games"
            gap = reach_text(gaps[method]) if figures.level is not None else "n/a"
            ratios = "".join(f" | {ratio_text(gaps[method], gaps[a])}" for a in archers)
        else:
            sizes = sorted({r.dataset_trajectories for r in runs if r.dataset_trajectories is not None})
            used = f"{'/'.join(map(str, sizes)) or '?'} dataset games, {runs[0].spec.budget} steps"
            gap, ratios = "—", " | —" * len(archers)
        lines.append(
            f"| {describe(runs[0].spec)} | {used} | {fmt(start)} | {fmt(final)} | {fmt(gain)} | {per_seed} "
            f"| {gap}{ratios} | {fmt(others)} | {fmt(sampled) if sampled else '—'} | {fmt(walls, 0)} "
            f"| {fmt(cpus, 0)} | {fmt(per_game, 3) if per_game else '—'} |"
        )
    lines.append("")
    lines.append(
        f"Greedy evaluation on the same games every time ({evaluation_games(plan_.reference)}); mean ± sample "
        f"standard deviation over seeds {', '.join(map(str, args.seeds))}. Games to half the gap: the first "
        "evaluation at which the seed-mean curve reaches half the gap (online methods); vs an ArCHer: those games "
        "over the ArCHer's (> : a lower bound, the method had not reached it in the games it played; < : an upper "
        "bound, the ArCHer had not). Sampled return: the last iteration's training games. s / game: seconds of play "
        "and update (`time/rollout_s` + `time/update_s`, evaluation and checkpoints left out) per training game, on "
        "the machine and with the neighbours each run had."
    )
    if task.stops_early and any(r.spec.definition.long for r in results):
        lines.append("")
        lines.append("## Stopping rule\n")
        lines += stopping_lines(task, results, args)
    if task.archers[0] in grouped:
        lines.append("")
        lines.append(f"## Games to `{task.archers[0]}`'s final\n")
        lines += archer_final_lines(task, results, figures.start)
    if task.orderings:
        lines.append("")
        lines.append(
            "## Paper orderings\n\nFinal greedy return; an ordering holds when the difference of the seed means is "
            "above two standard errors of that difference.\n"
        )
        online_orderings = [o for o in task.orderings if not task.method(o[0]).offline]
        offline_orderings = [o for o in task.orderings if task.method(o[0]).offline]
        lines += [f"- {ordering_verdict(grouped, higher, lower)}" for higher, lower in online_orderings]
        if CHAI in grouped:
            lines.append(f"- {chai_play_line(grouped)}")
        lines += [f"- {line}" for line in ppo_lines(grouped, args)]
        lines += [f"- {ordering_verdict(grouped, higher, lower)}" for higher, lower in offline_orderings]
        iql = grouped.get(IQL_REINFORCE, [])
        # Twenty Questions scores -1 per question asked, so a game that never finds the word returns -max_turns.
        floor = -float(iql[0].spec.config.env.max_turns) if iql else -20.0
        lines.append(f"- {collapse_verdict(finals(iql), finals(grouped.get(OFFLINE_BC, [])), floor)}")
    lines.append("")
    lines.append("## Configs, switches and overrides\n")
    settings = " ".join(shown_argument(item) for item in (results[0].spec.settings if results else []))
    lines.append(
        "Each run is `python run.py --config-name <config> seed=<seed> run_dir=<out>/runs/<method>/seed<seed>` with "
        f"`{settings}` and the overrides below (the task's env, the reference's shared settings, the method's own "
        "switches, then `--override` values, then the benchmark's schedule).\n"
    )
    lines += method_lines(results)
    lines.append("")
    lines.append("## Notes\n")
    lines += [f"- {line}" for line in notes(results, args, info, task)]
    return "\n".join(lines) + "\n"


def plot(results: Sequence[RunResult], args: argparse.Namespace, path: Path, task: Task, figures: Figures) -> None:
    """Seed-mean greedy metric against data used, with the min-max band over seeds; online and offline panels; the
    start, the best and half the gap as horizontal lines.

    Only finished runs are drawn, so a partial benchmark shows each method's whole budget (over the seeds finished).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = task.point_key
    kinds = [k for k in ("online", "offline") if any(r.spec.kind == k for r in results)] or ["online"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.8), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        for method, runs in group([r for r in results if r.spec.kind == kind]).items():
            curves = [{p["x"]: p[key] for p in r.curve} for r in runs if r.finished]
            xs = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
            if not xs:
                continue
            values = [[c[x] for c in curves] for x in xs]
            marker = "." if len(xs) <= 25 else None  # a ten-times-longer curve would be a row of dots
            line = ax.plot(
                xs, [statistics.fmean(v) for v in values], marker=marker, label=f"{method} ({len(curves)})"
            )[0]
            ax.fill_between(xs, [min(v) for v in values], [max(v) for v in values], color=line.get_color(), alpha=0.2)
        if figures.best is not None:
            ax.axhline(figures.best, color="tab:green", linestyle="--", linewidth=1.2, label="best")
        if kind == "online":
            if figures.start is not None:
                ax.axhline(figures.start, color="black", linestyle=":", linewidth=1.2, label="start")
            if figures.level is not None:
                ax.axhline(figures.level, color="grey", linestyle="-.", linewidth=0.8, label="half the gap")
            online = [r for r in results if r.spec.kind == kind]
            longest = max((r.spec.budget for r in online), default=args.trajectories)
            if longest > args.trajectories:
                # A ten-times-longer budget on a linear axis would squeeze every other curve into its first tenth:
                # linear up to the common budget, logarithmic beyond it.
                ax.set_xscale("symlog", linthresh=args.trajectories, linscale=1.0)
                ticks = [
                    0,
                    args.trajectories // 2,
                    args.trajectories,
                    *(f * args.trajectories for f in (2, 5, 10, 20)),
                ]
                ax.set_xticks([t for t in ticks if t <= longest] + ([longest] if longest not in ticks else []))
                ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
                ax.axvline(args.trajectories, color="grey", linestyle=":", linewidth=1)
            archer = finals(group(results).get(task.archers[0], []), key)
            if archer:
                ax.axhline(
                    statistics.fmean(archer),
                    color="dimgrey",
                    linestyle="--",
                    linewidth=0.8,
                    label=f"{task.archers[0]}'s final mean",
                )
            scale = f" (linear to {args.trajectories}, logarithmic beyond)" if longest > args.trajectories else ""
            ax.set_xlabel(f"environment games played{scale}")
            ax.set_title(f"{task.name}, online (line: seed mean; band: min-max over seeds)", fontsize=10)
        else:
            sizes = sorted({r.dataset_trajectories for r in results if r.spec.kind == kind and r.dataset_trajectories})
            ax.set_xlabel(f"gradient steps on a fixed dataset of {'/'.join(map(str, sizes))} trajectories")
            ax.set_title(f"{task.name}, offline (line: seed mean; band: min-max over seeds)", fontsize=10)
        ax.set_ylabel(f"greedy evaluation {task.metric_name}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="method (seeds)", title_fontsize=8)
    fig.tight_layout()
    try:
        with atomic_open(path, binary=True) as handle:
            fig.savefig(handle, format="png", dpi=110)
    finally:
        plt.close(fig)


def task_figures(plan_: Plan, results: Sequence[RunResult]) -> Figures:
    best, solver = best_figures(plan_.reference, plan_.task)
    return Figures(best, solver, start_figure(results, plan_.task.point_key))


def report(results: Sequence[RunResult], args: argparse.Namespace, info: dict[str, Any], plan_: Plan) -> str:
    """Write the table, CSVs and plot of the runs into ``--docs``, each file atomically; returns the table."""
    figures = task_figures(plan_, results)
    args.docs.mkdir(parents=True, exist_ok=True)
    write_csvs(results, args.out, args.docs)
    plot(results, args, args.docs / "curves.png", plan_.task, figures)
    text = markdown(results, args, info, plan_, figures)
    atomic_write_text(args.docs / "results.md", text)
    return text


# ---- summary across tasks ----------------------------------------------------------------------------------------


def summary_rows(task: Task, results: Sequence[RunResult], figures: Figures) -> list[str]:
    """The summary's rows of one task: one per online method, in the task's order."""
    key = task.point_key
    grouped = group([r for r in results if r.spec.kind == "online"])
    level = figures.level
    gaps = {m: reach(runs, level, key) if level is not None else None for m, runs in grouped.items()}
    archer = task.archers[0]
    reaches = archer_final_reaches(task, results, figures.start)
    best = f"{figures.best:.2f}" if figures.best is not None else "n/a"
    start = f"{figures.start:.2f}" if figures.start is not None else "n/a"
    rows = []
    for method, runs in grouped.items():
        done = finals(runs, key)
        final = f"{fmt(done)} ({len(done)})" if done else "no finished runs"
        rows.append(
            f"| {task.name} | {task.metric_name} | {start} | {best} | `{method}` | {final} "
            f"| {reach_text(gaps[method])} | {ratio_text(gaps[method], gaps.get(archer))} "
            f"| {archer_final_text(reaches, method, archer)} |"
        )
    return rows


def summary_markdown(
    rows: Sequence[str],
    argv: Sequence[str],
    hours: dict[str, float],
    on_policy_factors: dict[str, int],
    over: dict[str, list[str]],
) -> str:
    lines = [
        "# Method benchmark: summary",
        "",
        f"Rebuilt by: `{command_text(argv, str(Path.cwd()))}`, from each task's runs and archive "
        "(`docs/benchmark/<task>/`, whose `results.md` has every seed, config and switch).",
        "",
        "Final: the greedy metric at the end of each method's budget, mean ± std over seeds (seeds in brackets). "
        "Games to half the gap: the first evaluation at which the seed-mean curve is halfway from the start to the "
        "best. Ratio: those games over the task's ArCHer recipe's (`archer_recipe`; `archer_20q_base` on "
        "twenty_questions_strong), > or < where one of the two did not reach it. Games to the recipe's final: the "
        "first evaluation at which the seed-mean curve reaches that recipe's final mean, and in brackets those games "
        "over the recipe's own (the paper's measure of sample efficiency); n/a where the recipe's gain over the start "
        "is within noise (the task's page says by which test). "
        "Online methods only. "
        "The on-policy methods' ceiling, as each task's pages were built (`--on-policy-factor` x the games): "
        + ", ".join(f"{name} {factor}x" for name, factor in on_policy_factors.items())
        + ".",
        "",
        "| task | metric | start | best | method | final | games to half the gap | ratio to ArCHer "
        "| games to the recipe's final (ratio) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        "CPU-hours of the runs per task (building each start is counted on the task's own page): "
        + ", ".join(f"{name} {h:.1f}" for name, h in hours.items())
        + ".",
        "",
        f"Online runs over {BUDGET_TEXT}: "
        + ("; ".join(f"{name}: {', '.join(parts)}" for name, parts in over.items() if parts) or "none")
        + ".",
        "",
        NEIGHBOURS_TEXT,
    ]
    return "\n".join(lines) + "\n"
