"""Side-by-side benchmark of the methods on Twenty Questions: greedy-evaluation return against data used.

Every (method, seed) is an ordinary ``scripts/run.py`` run in its own folder under ``--out``, so a killed benchmark
resumes: finished runs are reused and unfinished ones continue from their checkpoint. Then the script reads every
run's ``metrics.jsonl`` and writes ``results.md`` (the table and whether the paper's orderings hold), ``runs.csv``
(one row per run), ``curves.csv`` (every evaluation point) and ``curves.png``.

What makes the comparison fair:

- every run uses the reference config's (``archer_20q``) environment, models, evaluation games, pretraining data
  and ``pretrain`` settings, applied as overrides where a method's shipped config differs, so all online methods
  start from one cached behaviour-cloning policy (built once, before the runs) and critics of one design; offline
  runs take the reference's policy model but keep their own critic;
- online methods play the same number of environment games (``--trajectories``) and are evaluated after the same
  numbers of games (``--eval-every``); algorithm hyperparameters stay those of each method's shipped config;
- offline methods train on the same fixed dataset (``data``: scripted games) for the same number of gradient
  steps (``--offline-steps``), from each config's ``model.policy`` (the embedded model from scratch).

The default size is the smallest the shipped schedules allow (archer_20q's actor starts after 5 iterations of 32
games, so 192 games give it one actor iteration), with 2 seeds: it compares the methods' first steps, not their
converged returns. Measured on the idle 2-core development machine (``--jobs 2``, 1 thread per run, starting
policy cached): 39 min wall in all, of which chai_20q's two runs take 25 min side by side (about 4.5 min per
iteration; archer_20q about 1 min, online_filteredbc_20q 12 s); offline_archer_20q about 2.5 s per gradient step.
Building the starting policy adds about 3 min once. ``--seeds 3`` takes about 1.5 times as long.

Usage (from ``scripts/``, like ``run.py``)::

    python benchmark_methods.py                       # defaults: 3 seeds, see --help
    python benchmark_methods.py --methods archer_20q,chai_20q --seeds 5 --trajectories 640
    python benchmark_methods.py --report-only         # rebuild the table and plot from the runs
    python benchmark_methods.py --dry-run             # print every run's run.py command
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from archer.cli import to_run_config
from archer.config import ConfigError, RunConfig, register_configs
from archer.tracking import read_metrics

SCRIPTS = Path(__file__).resolve().parent
CONFIG_DIR = SCRIPTS / "config"
RUN_PY = SCRIPTS / "run.py"

ONLINE = ("archer_20q", "chai_20q", "online_filteredbc_20q")
ONLINE_EXTRA = ("archer_20q_plain", "archer_baseline_20q", "archer_ppo_20q", "ppo_20q")
OFFLINE = ("offline_archer_20q", "offline_filteredbc_20q", "offline_bc_20q")
OFFLINE_EXTRA = ("iql_reinforce_20q",)
KNOWN = (*ONLINE, *ONLINE_EXTRA, *OFFLINE, *OFFLINE_EXTRA)
# The paper's orderings (ARCHER_SPEC.md section 6): each pair reads "first above second".
ORDERINGS = (
    ("online", "archer_20q", "chai_20q"),
    ("online", "archer_20q", "online_filteredbc_20q"),
    ("offline", "offline_archer_20q", "offline_filteredbc_20q"),
    ("offline", "offline_filteredbc_20q", "offline_bc_20q"),
)
ENV = "env=twenty_questions_subset"  # the paper's 10-word subset, for every run
# Config sections every run takes from the reference config; offline runs have no `pretrain`, and keep their own
# critic (the reference's may be read from its pretrained policy's body, which an offline run starts without). The
# evaluation's schedule is the benchmark's; its games (and the rest of `eval`, part of the cached pretraining's key)
# are shared.
SHARED = {"online": ("env", "model", "data", "eval", "pretrain"), "offline": ("env", "model.policy", "data", "eval")}
NOT_SHARED = ("eval.every_iters",)
SIDECAR = "benchmark_run.json"
METRICS = "metrics.jsonl"


# ---- planning --------------------------------------------------------------------------------------------------


@dataclass
class RunSpec:
    """One (method, seed) run: its folder and the overrides that make it part of the benchmark."""

    method: str
    kind: str  # "online" or "offline"
    seed: int
    run_dir: Path
    overrides: list[str]
    config: RunConfig

    def command(self, args: argparse.Namespace) -> list[str]:
        head = [str(RUN_PY), "--config-name", self.method, f"run_dir={self.run_dir}", f"seed={self.seed}"]
        return head + run_settings(args) + self.overrides


def run_settings(args: argparse.Namespace) -> list[str]:
    """Settings of every run that do not change what it computes (and are not part of its checkpoint's key)."""
    settings = [f"torch_threads={args.torch_threads}", "logging.progress_bars=false"]
    return settings + ([f"cache_dir={args.cache_dir}"] if args.cache_dir is not None else [])


@contextmanager
def hydra_configs() -> Iterator[None]:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        yield


def compose_config(name: str, overrides: Sequence[str]) -> DictConfig:
    return compose(name, overrides=["run_dir=unused", *overrides])


def flatten(node: Any, prefix: str) -> dict[str, Any]:
    """Dotted leaf keys of a nested dict (a leaf is anything that is not a non-empty dict)."""
    if isinstance(node, dict) and node:
        leaves: dict[str, Any] = {}
        for key, value in node.items():
            leaves.update(flatten(value, f"{prefix}.{key}"))
        return leaves
    return {prefix: node}


def override_value(value: Any) -> str:
    """A Python value in Hydra's override grammar (strings quoted, so '1e-4' or 'null' stay strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{override_value(v)}" for k, v in value.items()) + "}"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def shared_overrides(method_cfg: DictConfig, reference_cfg: DictConfig, sections: Sequence[str]) -> list[str]:
    """Overrides that give ``method_cfg`` the reference's values in ``sections`` (only where they differ)."""
    overrides = []
    for section in sections:
        ours = flatten(OmegaConf.to_container(OmegaConf.select(method_cfg, section), resolve=True), section)
        theirs = flatten(OmegaConf.to_container(OmegaConf.select(reference_cfg, section), resolve=True), section)
        if ours.keys() != theirs.keys():
            raise SystemExit(f"{section}: the method's and the reference's configs have different keys; cannot share")
        overrides += [f"{k}={override_value(v)}" for k, v in theirs.items() if v != ours[k] and k not in NOT_SHARED]
    return overrides


def scoped_overrides(extra: Sequence[str], method: str, kind: str) -> list[str]:
    """The ``--override`` values for one run: unscoped ones, then ``online:``/``offline:``, then ``<method>:``."""
    scoped: dict[str, list[str]] = {"": [], kind: [], method: []}
    for item in extra:
        scope, _, rest = item.partition(":")
        if is_unscoped(item):
            scope, rest = "", item
        if scope not in (*KNOWN, "online", "offline", ""):
            raise SystemExit(f"--override {item}: unknown scope {scope!r} (a method name, online or offline)")
        scoped.setdefault(scope, []).append(rest)
    return scoped[""] + scoped[kind] + scoped[method]


def is_unscoped(item: str) -> bool:
    scope, _, rest = item.partition(":")
    return "=" in scope or not rest


def checked_config(method: str, overrides: Sequence[str]) -> RunConfig:
    try:
        return to_run_config(compose_config(method, overrides))
    except ConfigError as error:
        raise SystemExit(f"{method}: configuration error: {error}") from None


def exact_quotient(total: int, per: int, what: str, method: str) -> int:
    if total <= 0 or total % per:
        raise SystemExit(f"{method}: {what}={total} must be a positive multiple of {per}")
    return total // per


def plan(args: argparse.Namespace) -> list[RunSpec]:
    """Compose every run's config in-process (so errors show before anything trains) and return the runs."""
    specs = []
    with hydra_configs():
        reference = compose_config(args.reference, [ENV, *scoped_overrides(args.override, args.reference, "online")])
        for method in args.methods:
            kind = "online" if method in (*ONLINE, *ONLINE_EXTRA) else "offline"
            # Shared values are computed before the scoped overrides, which therefore win over them.
            unscoped = scoped_overrides([o for o in args.override if is_unscoped(o)], method, kind)
            shared = shared_overrides(compose_config(method, [ENV, *unscoped]), reference, SHARED[kind])
            user = scoped_overrides(args.override, method, kind)
            algorithm = checked_config(method, [ENV, *shared, *user]).algorithm
            if kind == "online":
                per_iter = algorithm.rollout_episodes_per_iter
                iterations = exact_quotient(args.trajectories, per_iter, "--trajectories", method)
                every = exact_quotient(args.eval_every, per_iter, "--eval-every", method)
            else:
                per_iter = algorithm.steps_per_iter
                iterations = exact_quotient(args.offline_steps, per_iter, "--offline-steps", method)
                every = exact_quotient(args.offline_eval_every, per_iter, "--offline-eval-every", method)
            schedule = [f"algorithm.num_iterations={iterations}", f"eval.every_iters={every}"]
            overrides = [ENV, *shared, *user, *schedule]
            for seed in args.seeds:
                config = checked_config(method, [*run_settings(args), *overrides, f"seed={seed}"])
                run_dir = args.out / "runs" / method / f"seed{seed}"
                specs.append(RunSpec(method, kind, seed, run_dir.resolve(), overrides, config))
    return specs


# ---- running ---------------------------------------------------------------------------------------------------


def build_start_policy(spec: RunSpec, out: Path) -> tuple[float, float]:
    """Build (or find in the cache) the online runs' shared starting policy; returns its wall and CPU seconds.

    Constructing a ``Trainer`` runs its ``pretrain`` once and caches it, exactly as the runs themselves would;
    doing it here, alone, means parallel runs never race to build it.
    """
    from archer.trainer import Trainer

    start, cpu = time.perf_counter(), time.process_time()
    Trainer(spec.config, out / "start_policy_probe")
    return time.perf_counter() - start, time.process_time() - cpu


def load_sidecar(run_dir: Path) -> dict[str, Any]:
    path = run_dir / SIDECAR
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"attempts": []}


def is_finished(spec: RunSpec, args: argparse.Namespace) -> bool:
    sidecar = load_sidecar(spec.run_dir)
    attempts = sidecar["attempts"]
    return bool(attempts) and attempts[-1]["returncode"] == 0 and sidecar.get("command") == spec.command(args)


def execute(spec: RunSpec, args: argparse.Namespace) -> int:
    """Run (or resume) one run in a subprocess; its output goes to ``benchmark_stdout.log`` in its folder."""
    if is_finished(spec, args):
        return 0
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    command = spec.command(args)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    with open(spec.run_dir / "benchmark_stdout.log", "a", encoding="utf-8") as log:
        process = subprocess.Popen([sys.executable, *command], stdout=log, stderr=subprocess.STDOUT, env=env)
        # wait4 also gives the run's CPU time: on a shared machine, a better guide than wall time to the wall time
        # the run would take alone on a free core (runs use --torch-threads 1 by default).
        _, status, usage = os.wait4(process.pid, 0)
    returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    sidecar = load_sidecar(spec.run_dir)
    sidecar["command"] = command
    sidecar["attempts"].append({"returncode": returncode, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime})
    (spec.run_dir / SIDECAR).write_text(json.dumps(sidecar, indent=1), encoding="utf-8")
    status = "done" if returncode == 0 else f"FAILED (exit {returncode}, see {spec.run_dir}/benchmark_stdout.log)"
    print(f"{spec.method} seed {spec.seed}: {status} in {wall:.0f} s", flush=True)
    return returncode


# ---- results ---------------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """What one run's ``metrics.jsonl`` says: its evaluation curve and the numbers of the table."""

    spec: RunSpec
    curve: list[dict[str, float]] = field(default_factory=list)  # x, iteration, return, success per evaluation
    finished: bool = False
    final_rollout_return: float | None = None
    train_s: float = 0.0
    wall_s: float | None = None  # of the benchmark's attempts at the run, summed
    cpu_s: float | None = None
    dataset_trajectories: int | None = None

    @property
    def start(self) -> dict[str, float] | None:
        return self.curve[0] if self.curve and self.curve[0]["iteration"] == 0 else None

    @property
    def final(self) -> dict[str, float] | None:
        return self.curve[-1] if self.finished else None


def read_run(spec: RunSpec) -> RunResult:
    """The curve and summary of one run from its folder (x: env trajectories online, gradient steps offline)."""
    result = RunResult(spec)
    path = spec.run_dir / METRICS
    if not path.exists():
        return result
    records = read_metrics(path)
    algorithm = spec.config.algorithm
    for record in records:
        if record.get("eval/return_mean") is not None:
            x = record["env/trajectories"] if spec.kind == "online" else record["iteration"] * algorithm.steps_per_iter
            result.curve.append(
                {
                    "iteration": record["iteration"],
                    "x": x,
                    "return": record["eval/return_mean"],
                    "success": record["eval/success_rate"],
                }
            )
    rollouts = [r["rollout/return_mean"] for r in records if r.get("rollout/return_mean") is not None]
    result.final_rollout_return = rollouts[-1] if rollouts else None
    result.train_s = sum(v for r in records for k, v in r.items() if k.startswith("time/") and v is not None)
    last = records[-1]["iteration"] if records else 0
    result.finished = last == algorithm.num_iterations and bool(result.curve) and result.curve[-1]["iteration"] == last
    attempts = load_sidecar(spec.run_dir)["attempts"]
    result.wall_s = sum(a["wall_s"] for a in attempts) if attempts else None
    result.cpu_s = sum(a["cpu_s"] for a in attempts) if attempts else None
    if spec.kind == "offline":
        result.dataset_trajectories = dataset_size(spec)
    return result


def dataset_size(spec: RunSpec) -> int | None:
    """Episodes in the offline dataset: the trainer's log line, else ``data.generate_episodes`` for generated data."""
    for name in ("run.log", "benchmark_stdout.log"):
        path = spec.run_dir / name
        if path.exists():
            found = re.findall(r"offline dataset: (\d+) episodes", path.read_text(encoding="utf-8", errors="replace"))
            if found:
                return int(found[-1])
    return spec.config.data.generate_episodes if spec.config.data.path is None else None


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def fmt(values: Sequence[float], digits: int = 2) -> str:
    if not values:
        return "n/a"
    mean, std = mean_std(values)
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if len(values) > 1 else f"{mean:.{digits}f}"


def ordering_verdict(results: dict[str, list[RunResult]], higher: str, lower: str) -> str:
    """Whether ``higher``'s final greedy return is above ``lower``'s beyond two standard errors of the difference."""
    finals = {m: [r.final["return"] for r in results.get(m, []) if r.final] for m in (higher, lower)}
    if not finals[higher] or not finals[lower]:
        return f"{higher} > {lower}: no finished runs of both"
    (m1, s1), (m2, s2) = mean_std(finals[higher]), mean_std(finals[lower])
    n1, n2 = len(finals[higher]), len(finals[lower])
    diff = m1 - m2
    head = f"{higher} > {lower}: difference {diff:+.2f}"
    if min(n1, n2) < 2:
        return f"{head}; one seed, so no spread to judge it by: not resolved"
    se = math.sqrt(s1**2 / n1 + s2**2 / n2)
    if diff > 2 * se:
        verdict = "holds"
    elif diff < -2 * se:
        verdict = "reversed"
    else:
        verdict = "not resolved within the spread"
    return f"{head} (2 standard errors: {2 * se:.2f}, {n1} and {n2} seeds): {verdict}"


def group(results: Sequence[RunResult]) -> dict[str, list[RunResult]]:
    grouped: dict[str, list[RunResult]] = {}
    for result in results:
        grouped.setdefault(result.spec.method, []).append(result)
    return grouped


def table_rows(results: Sequence[RunResult]) -> list[dict[str, Any]]:
    """One CSV row per run: the numbers read from its metrics.jsonl."""
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
                "x_final": final["x"] if final else None,
                "dataset_trajectories": r.dataset_trajectories,
                "start_return": start["return"] if start else None,
                "final_return": final["return"] if final else None,
                "start_success": start["success"] if start else None,
                "final_success": final["success"] if final else None,
                "final_rollout_return": r.final_rollout_return,
                "train_s": round(r.train_s, 1),
                "wall_s": round(r.wall_s, 1) if r.wall_s is not None else None,
                "cpu_s": round(r.cpu_s, 1) if r.cpu_s is not None else None,
                "run_dir": str(r.spec.run_dir),
            }
        )
    return rows


def write_csvs(results: Sequence[RunResult], out: Path) -> None:
    rows = table_rows(results)
    with open(out / "runs.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(out / "curves.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "kind", "seed", "iteration", "x", "eval_return_mean", "eval_success_rate"])
        for r in results:
            for p in r.curve:
                writer.writerow(
                    [r.spec.method, r.spec.kind, r.spec.seed, p["iteration"], p["x"], p["return"], p["success"]]
                )


def _reranks_at_eval(result: RunResult) -> bool:
    """Whether the run is CHAI evaluated by reranking (``algorithm.rerank_at_eval``) rather than one greedy decode."""
    algorithm = result.spec.config.algorithm
    return algorithm.name == "chai" and getattr(algorithm, "rerank_at_eval", False)


def notes(results: Sequence[RunResult], args: argparse.Namespace, info: dict[str, Any]) -> list[str]:
    """Facts the table depends on: budgets, shared settings, and checks of the shared start."""
    lines = []
    online = [r for r in results if r.spec.kind == "online"]
    offline = [r for r in results if r.spec.kind == "offline"]
    if online:
        lines.append(
            f"Online: {args.trajectories} environment games per run, greedy evaluation after every {args.eval_every}; "
            f"every online run starts from the `pretrain` policy of `{args.reference}`, built once before the runs"
            + (f" ({info['start_policy_s']:.0f} s; ~0 when cached)." if "start_policy_s" in info else ".")
        )
        # CHAI with rerank_at_eval reranks candidates with its (untrained, at iteration 0) critic, so its iteration-0
        # return is not the starting policy's greedy return; every other run's must be equal.
        starts = {r.start["return"] for r in online if r.start and not _reranks_at_eval(r)}
        if len(starts) > 1:
            lines.append(
                f"WARNING: the online runs' starting returns differ ({sorted(starts)}): they did not all start from "
                "the same policy, or greedy decoding is not deterministic here."
            )
        elif starts:
            lines.append(
                f"Check: every online run's iteration-0 greedy return is the same ({starts.pop():.2f}; CHAI with "
                "`rerank_at_eval` aside, whose evaluation reranks candidates with its critic)."
            )
        new = info.get("new_pretrained_folders_during_runs", [])
        if new:
            lines.append(f"WARNING: runs built their own starting policy in {new}: the starts are not shared.")
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
            if _reranks_at_eval(r):
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
        lines.append(f"Extra overrides: `{' '.join(args.override)}`.")
    missing = [f"{r.spec.method}/seed{r.spec.seed}" for r in results if not r.finished]
    if missing:
        lines.append(f"Unfinished or failed runs (left out of the numbers): {', '.join(missing)}.")
    return lines


def markdown(results: Sequence[RunResult], args: argparse.Namespace, info: dict[str, Any]) -> str:
    grouped = group(results)
    lines = [
        "| method | data used | start return | final return | final − start | final return per seed "
        "| final success | final sampled return | wall s / run | CPU s / run |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method, runs in grouped.items():
        done = [r for r in runs if r.final]
        start = [r.start["return"] for r in runs if r.start]
        final = [r.final["return"] for r in done]
        gain = [r.final["return"] - r.start["return"] for r in done if r.start]
        per_seed = ", ".join(f"s{r.spec.seed}: {r.final['return']:.2f}" for r in done) or "n/a"
        success = [r.final["success"] for r in done]
        sampled = [r.final_rollout_return for r in done if r.final_rollout_return is not None]
        walls = [r.wall_s for r in runs if r.wall_s is not None]
        cpus = [r.cpu_s for r in runs if r.cpu_s is not None]
        if runs[0].spec.kind == "online":
            used = f"{args.trajectories} env games"
        else:
            sizes = sorted({r.dataset_trajectories for r in runs if r.dataset_trajectories is not None})
            used = f"{'/'.join(map(str, sizes)) or '?'} dataset games, {args.offline_steps} steps"
        lines.append(
            f"| `{method}` | {used} | {fmt(start)} | {fmt(final)} | {fmt(gain)} | {per_seed} | {fmt(success)} "
            f"| {fmt(sampled) if sampled else '—'} | {fmt(walls, 0)} | {fmt(cpus, 0)} |"
        )
    lines.append("")
    lines.append(
        "Greedy evaluation on every word of the 10-word subset once; mean ± sample standard deviation over seeds "
        f"{', '.join(map(str, args.seeds))}. Sampled return: the last iteration's training games."
    )
    lines.append("")
    lines.append("Paper orderings (final greedy return):")
    lines += [f"- {ordering_verdict(grouped, higher, lower)}" for _, higher, lower in ORDERINGS]
    lines.append("")
    lines += [f"- {line}" for line in notes(results, args, info)]
    return "\n".join(lines) + "\n"


def plot(results: Sequence[RunResult], path: Path) -> None:
    """Mean greedy return over seeds against data used, with a ±1 standard deviation band; online and offline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ("online", "offline") if any(r.spec.kind == k for r in results)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        for method, runs in group([r for r in results if r.spec.kind == kind]).items():
            curves = [{p["x"]: p["return"] for p in r.curve} for r in runs if r.curve]
            xs = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
            if not xs:
                continue
            stats = [mean_std([c[x] for c in curves]) for x in xs]
            means = [m for m, _ in stats]
            line = ax.plot(xs, means, marker="o", label=f"{method} ({len(curves)} seeds)")[0]
            ax.fill_between(
                xs, [m - s for m, s in stats], [m + s for m, s in stats], color=line.get_color(), alpha=0.2
            )
        if kind == "online":
            ax.set_xlabel("environment trajectories used")
            ax.set_title("online (band: ±1 std over seeds)")
        else:
            sizes = sorted({r.dataset_trajectories for r in results if r.spec.kind == kind and r.dataset_trajectories})
            ax.set_xlabel(f"gradient steps on a fixed dataset of {'/'.join(map(str, sizes))} trajectories")
            ax.set_title("offline (band: ±1 std over seeds)")
        ax.set_ylabel("greedy evaluation return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(specs: Sequence[RunSpec], args: argparse.Namespace, info: dict[str, Any]) -> str:
    results = [read_run(spec) for spec in specs]
    args.out.mkdir(parents=True, exist_ok=True)
    write_csvs(results, args.out)
    plot(results, args.out / "curves.png")
    text = markdown(results, args, info)
    (args.out / "results.md").write_text(text, encoding="utf-8")
    return text


# ---- entry -------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--methods",
        default=",".join((*ONLINE, *OFFLINE)),
        help=f"comma-separated run configs, or 'all' (adds {', '.join((*ONLINE_EXTRA, *OFFLINE_EXTRA))})",
    )
    parser.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1 for every method (2)")
    parser.add_argument("--trajectories", type=int, default=192, help="environment games per online run")
    parser.add_argument("--eval-every", type=int, default=64, help="greedy evaluation every this many games")
    parser.add_argument("--offline-steps", type=int, default=100, help="gradient steps per offline run")
    parser.add_argument("--offline-eval-every", type=int, default=50, help="offline evaluation every N steps")
    parser.add_argument("--out", type=Path, default=Path("outputs/benchmark_methods"), help="benchmark folder")
    parser.add_argument("--cache-dir", default=None, help="model/dataset/start-policy cache (default: the runs')")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads of every run")
    parser.add_argument("--jobs", type=int, default=2, help="runs at the same time")
    parser.add_argument("--reference", default="archer_20q", help="config whose env/model/data/pretrain all share")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="[SCOPE:]KEY=VALUE",
        help="Hydra override for every run; SCOPE (a method, online or offline) limits it (repeatable)",
    )
    parser.add_argument("--report-only", action="store_true", help="only rebuild the table and plot")
    parser.add_argument("--dry-run", action="store_true", help="print every run's command and exit")
    args = parser.parse_args(argv)
    args.methods = list(KNOWN) if args.methods == "all" else [m for m in args.methods.split(",") if m]
    unknown = [m for m in args.methods if m not in KNOWN]
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {', '.join(KNOWN)}")
    args.seeds = list(range(args.seeds))
    args.out = args.out.resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    specs = plan(args)
    if args.dry_run:
        print("\n".join(" ".join(["python", *spec.command(args)]) for spec in specs))
        return 0
    info_path = args.out / "benchmark.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
    failures = 0
    if not args.report_only:
        args.out.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        online = [s for s in specs if s.kind == "online" and not is_finished(s, args)]
        pretrained = Path(online[0].config.cache_dir or _default_cache()) / "pretrained" if online else None
        if online:
            info["start_policy_s"], info["start_policy_cpu_s"] = build_start_policy(online[0], args.out)
        before = set(pretrained.iterdir()) if pretrained and pretrained.exists() else set()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            failures = sum(code != 0 for code in pool.map(lambda s: execute(s, args), specs))
        after = set(pretrained.iterdir()) if pretrained and pretrained.exists() else set()
        info["new_pretrained_folders_during_runs"] = sorted(str(p) for p in after - before)
        info["benchmark_wall_s"] = time.perf_counter() - start
        info["argv"] = sys.argv[1:] if argv is None else list(argv)
        info_path.write_text(json.dumps(info, indent=1), encoding="utf-8")
        print(f"benchmark wall time: {info['benchmark_wall_s']:.0f} s", flush=True)
    print(report(specs, args, info))
    return 1 if failures else 0


def _default_cache() -> str:
    from archer.utils import resolve_cache_dir

    return str(resolve_cache_dir(None))


if __name__ == "__main__":
    sys.exit(main())
