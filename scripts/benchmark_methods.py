"""The method benchmark: methods side by side on named tasks, from one cached start, at equal game budgets.

One command trains every method of a task over the same seeds and regenerates, into ``docs/benchmark/<task>/``,
``results.md`` (the exact command; the start, the best achievable figure and half the gap between them; each
method's final metric, mean, std and every seed; the games each needs to close half the gap and its ratio to the
ArCHer runs'; the games each needs to reach the ArCHer recipe's final mean, where the recipe's gain is beyond noise;
every method's config and every switch that departs from the paper; the stopping rule; the task's CPU-hours),
``runs.csv`` (one row per run), ``curves.csv`` (every evaluation point) and ``curves.png`` (the greedy metric
against games: seed mean and min-max band per method, the start and the best as horizontal lines).
``--summary`` rebuilds ``docs/benchmark/summary.md``, one row per task and method, from the tasks' archives.

Tasks (``benchmark_tasks.py`` defines them; each run takes its task reference config's ``env``, ``model.policy``,
``data``, ``eval`` and ``pretrain``, so every online run starts from one cached policy and plays the same evaluation
games; each method keeps its own algorithm, critic and sampling settings):

- ``twenty_questions_weak``: Twenty Questions' 10-word subset from a start cloned for 3,000 steps on a mix of weak
  scripted questioners (``archer_20q_paper_cpu`` with ``env.data_skills=[0.1,0.25] pretrain.num_iterations=30``);
  every word once, greedy ``eval/return_mean`` (and 50 sampled games); the best: the optimal questioner's return.
- ``sokoban``: RAGEN's Sokoban (6x6, one box, 10 turns) from ``archer_sokoban``'s start; 256 fixed rooms, greedy
  ``eval/success_rate``; the best: the exact solver's.
- ``frozenlake``: RAGEN's FrozenLake (4x4, slippery) from ``archer_frozenlake``'s start; 256 fixed maps, greedy
  ``eval/success_rate``; the best: each map's optimal policy by value iteration.
- ``twenty_questions_strong``: issue 14's benchmark, the 10-word subset from ``experiments/archer_20q_base``'s start
  (cloned on the default scripted mix), its online and offline methods.

Methods of the three headroom tasks: ``archer_paper`` (ArCHer as the paper defines it: ``archer_20q_paper_cpu``,
``archer_sokoban``, ``archer_frozenlake``), ``archer_recipe`` (the same config plus ``benchmark_tasks.RECIPE``, one
set of switches on every task, and a critic-only warm-up of 30% of the iterations), ``ppo`` (``ppo_20q``), ``grpo``
(``grpo_20q``, ``grpo_sokoban``), ``gigpo`` (``gigpo_20q``, ``gigpo_sokoban``, ``gigpo_frozenlake``) and
``filtered_bc`` (``online_filteredbc_20q``), each with the task's env; ``chai`` (``chai_20q``) when named in
``--methods``.

Budgets (defaults): ``--trajectories`` 1,280 games per run, a greedy evaluation every ``--eval-every`` games (160 on
Twenty Questions, 128 on the grid games; a coarser multiple where a method's games per iteration do not divide it),
``--seeds`` 3. On the headroom tasks the on-policy methods (ppo, grpo, gigpo) are continued in chunks of
``--trajectories`` games up to ``--on-policy-factor`` (10) times that, and stop once the seed mean of their last
evaluations reaches the final mean of ``archer_recipe`` on the task (which therefore runs first); on
``twenty_questions_strong`` they play the whole 10x at once and the offline methods take
``--offline-steps`` 3,000 gradient steps, evaluated every ``--offline-eval-every`` 500.

Every (method, seed) is an ordinary ``scripts/run.py`` run in ``--out``/runs/<method>/seed<N>, so a killed benchmark
resumes: finished runs are reused and unfinished ones continue from their checkpoint (raising
``algorithm.num_iterations`` extends a run); a SIGTERM to the benchmark stops its running runs with it
(``stop_runs``). Every finished run's numbers (its curve, timings, overrides and commit)
are also kept in ``docs/benchmark/<task>/archive.json``, which is committed: a later invocation, on another machine
or after ``--out`` is gone, reuses a run the archive holds with the same config, method, seed and overrides (any
length at least the one asked for) and the same start: before serving archived online runs the benchmark evaluates
the start policy it builds (``build_start_policy``) and reruns those whose iteration 0 played otherwise (a start cloned
on another machine from the same config and data can differ in floating point; ``other_start_runs``). So a task can
be run in pieces (``--methods``) across sessions, and across machines that build the same start.

A task's pages never lose a finished run they hold (``dropped_runs``, read from their ``runs.csv``): a
``--report-only`` that would (other ``--seeds``, ``--methods``, ``--override`` values or budgets) is refused, and a
benchmark that ran runs writes such pages to ``--out``/pages instead, saying so; ``--report-only`` with the pages' own
arguments rebuilds them from the archive. Every file the benchmark writes is written atomically.

CPU time, measured (1 torch thread per run; each method's mean CPU s per 1,280-game run over its 3 seeds, from the
pages' ``CPU s / run``): on ``twenty_questions_weak`` archer_recipe 1,458, archer_paper about 1,500, ppo 724, grpo and
gigpo about 325, filtered_bc 289; on ``sokoban`` 491-635 per method but ppo 1,282; on ``frozenlake`` 570-1,356 (ppo
the most; gigpo, continued to 3,840 games, about 540 per 1,280). Those runs ran two at a time; alone on one core a
grid game's ppo run took 1,504 CPU s (sokoban, from an earlier, weaker start) and 1,281 (frozenlake)
(``docs/speed.md``, "PPO on the grid games, alone"). A headroom task's 18 runs take 3-6 CPU-hours
(``docs/benchmark/summary.md`` prints each task's total; ``twenty_questions_strong``, with its 10x on-policy runs and
offline methods, 11). Building the start policy once adds minutes (FrozenLake), about half an hour (Twenty
Questions) or about two and a half hours (Sokoban's 12,840 cloning steps) at one thread.

Usage (from ``scripts/``, like ``run.py``)::

    python benchmark_methods.py twenty_questions_weak  # its default methods, 3 seeds: ../docs/benchmark/<task>/
    python benchmark_methods.py sokoban --methods archer_recipe,ppo --jobs 2
    python benchmark_methods.py frozenlake --methods all --on-policy-factor 4
    python benchmark_methods.py twenty_questions_strong --report-only   # rebuild the pages from the runs and archive
    python benchmark_methods.py sokoban --dry-run     # print every run's run.py command
    python benchmark_methods.py --summary             # rebuild ../docs/benchmark/summary.md from the archives
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from benchmark_report import (
    ARCHIVE,
    RUNS_TABLE,
    cpu_hours,
    different_starts,
    dropped_runs,
    group,
    over_budget,
    report,
    reranks_at_eval,
    shown,
    stopping_level,
    summary_markdown,
    summary_rows,
    task_figures,
)
from benchmark_tasks import TASKS, Method, Task, recipe_warmup
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf
from tool_refusals import OneLineParser, composition_message, refuse_unwritable

from archer.cli import register_configs, to_run_config, yaml_error_message
from archer.config import ConfigError, RunConfig
from archer.tracking import read_metrics
from archer.utils import atomic_write_json, atomic_write_text

SCRIPTS = Path(__file__).resolve().parent
CONFIG_DIR = SCRIPTS / "config"
RUN_PY = SCRIPTS / "run.py"

DOCS = SCRIPTS.parent / "docs" / "benchmark"
SUMMARY = "summary.md"

SIDECAR = "benchmark_run.json"
STDOUT_LOG = "benchmark_stdout.log"
METRICS = "metrics.jsonl"
CHECKPOINT = "checkpoint.pt"
ITERATIONS = "algorithm.num_iterations="
MOVE_DEPENDENCE = "eval/move_state_dependence"


# ---- planning --------------------------------------------------------------------------------------------------


@dataclass
class RunSpec:
    """One (method, seed) run: its folder and the overrides that make it part of the benchmark."""

    method: str
    definition: Method
    seed: int
    run_dir: Path
    overrides: list[str]
    settings: list[str]  # run settings that compute nothing (threads, progress bars, cache folder)
    config: RunConfig
    budget: int  # environment games (online) or gradient steps (offline)
    eval_every: int  # in the same unit
    per_iter: int  # games or gradient steps per iteration
    ceiling: int  # the most games a long method may be continued to (else its budget)
    run: bool = True  # False: read from its folder or the archive, never run (the stopping level's runs)

    @property
    def kind(self) -> str:
        return self.definition.kind

    @property
    def config_name(self) -> str:
        return self.definition.config

    def command(self) -> list[str]:
        head = [str(RUN_PY), "--config-name", self.config_name, f"run_dir={self.run_dir}", f"seed={self.seed}"]
        return head + self.settings + self.overrides


@dataclass
class Plan:
    """A task's runs and its reference config (with the task's start and evaluation overrides)."""

    task: Task
    specs: list[RunSpec]
    reference: RunConfig


def run_settings(args: argparse.Namespace) -> list[str]:
    """Settings of every run that do not change what it computes (and are not part of its checkpoint's key)."""
    settings = [f"torch_threads={args.torch_threads}", "logging.progress_bars=false"]
    return settings + ([f"cache_dir={args.cache_dir}"] if args.cache_dir is not None else [])


@contextmanager
def hydra_configs() -> Iterator[None]:
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        yield


def compose_config(config_name: str, overrides: Sequence[str]) -> DictConfig:
    """Compose ``config_name`` with ``overrides``; a misspelt key or a value of the wrong type (from ``--override``)
    is refused in one line, as ``run.py`` prints it."""
    try:
        return compose(config_name, overrides=["run_dir=unused", *overrides])
    except ConfigCompositionException as error:
        raise SystemExit(f"{config_name}: configuration error: {composition_message(error)}") from None
    except yaml.YAMLError as error:
        raise SystemExit(f"{config_name}: configuration error: {yaml_error_message(error)}") from None


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


def shared_overrides(
    method_cfg: DictConfig, reference_cfg: DictConfig, sections: Sequence[str], not_shared: Sequence[str]
) -> list[str]:
    """Overrides that give ``method_cfg`` the reference's values in ``sections`` (only where they differ), except
    the keys in ``not_shared``."""
    overrides = []
    for section in sections:
        ours = flatten(OmegaConf.to_container(OmegaConf.select(method_cfg, section), resolve=True), section)
        theirs = flatten(OmegaConf.to_container(OmegaConf.select(reference_cfg, section), resolve=True), section)
        if ours.keys() != theirs.keys():
            raise SystemExit(f"{section}: the method's and the reference's configs have different keys; cannot share")
        overrides += [f"{k}={override_value(v)}" for k, v in theirs.items() if v != ours[k] and k not in not_shared]
    return overrides


def scoped_overrides(task: Task, extra: Sequence[str], method: str, kind: str) -> list[str]:
    """The ``--override`` values for one run: unscoped ones, then ``online:``/``offline:``, then ``<method>:``."""
    scoped: dict[str, list[str]] = {"": [], kind: [], method: []}
    for item in extra:
        scope, _, rest = item.partition(":")
        if is_unscoped(item):
            scope, rest = "", item
        if scope not in (*task.method_names, "online", "offline", ""):
            raise SystemExit(
                f"--override {item}: unknown scope {scope!r} (a method of {task.name}: "
                f"{', '.join(task.method_names)}; or online, offline)"
            )
        scoped.setdefault(scope, []).append(rest)
    return scoped[""] + scoped[kind] + (scoped[method] if method else [])


def is_unscoped(item: str) -> bool:
    scope, _, rest = item.partition(":")
    return "=" in scope or not rest


def checked_config(method: str, composed: DictConfig) -> RunConfig:
    try:
        return to_run_config(composed)
    except ConfigError as error:
        raise SystemExit(f"{method}: configuration error: {error}") from None


def exact_quotient(total: int, per: int, what: str, method: str) -> int:
    if total <= 0 or total % per:
        raise SystemExit(f"{method}: {what}={total} must be a positive multiple of {per}")
    return total // per


def reference_method(task: Task) -> str:
    """The method that runs the reference config unchanged: ``--override`` values scoped to it also go to the
    reference (so they reach every run through the shared sections); empty if none."""
    return next((m.name for m in task.all_methods if m.config == task.reference and not m.overrides), "")


@dataclass(frozen=True)
class Schedule:
    budget: int
    ceiling: int
    eval_every: int
    what: str  # the options the budget comes from, for error messages


def schedule(task: Task, method: Method, per_iter: int, args: argparse.Namespace) -> Schedule:
    """A run's budget, ceiling and evaluation interval (games online, gradient steps offline).

    A long method gets ``--on-policy-factor`` times the games: as its ceiling on a task that stops it early (it
    starts with ``--trajectories``), else as its budget. Where a method's games per iteration do not divide
    ``--eval-every``, it is evaluated every smallest multiple of ``--eval-every`` that is a whole number of its
    iterations, so its points coincide with the other methods'.
    """
    if method.offline:
        return Schedule(args.offline_steps, args.offline_steps, args.offline_eval_every, "--offline-steps")
    eval_every = math.lcm(args.eval_every, per_iter)
    if not method.long:
        return Schedule(args.trajectories, args.trajectories, eval_every, "--trajectories")
    longest = args.on_policy_factor * args.trajectories
    if task.stops_early:
        return Schedule(args.trajectories, longest, eval_every, "--trajectories")
    return Schedule(longest, longest, eval_every, "--on-policy-factor x --trajectories")


def plan(args: argparse.Namespace) -> Plan:
    """Compose every run's config in-process (so errors show before anything trains) and return the runs."""
    task = TASKS[args.task]
    specs = []
    names = list(args.methods)
    stopping = task.stops_early and any(task.method(m).long for m in names)
    read_only = [task.archers[0]] if stopping and task.archers[0] not in names else []
    settings = run_settings(args)
    with hydra_configs():
        reference_user = scoped_overrides(task, args.override, reference_method(task), "online")
        reference = compose_config(task.reference, [task.env, *task.overrides, *reference_user])
        for name in [*names, *read_only]:
            method = task.method(name)
            kind = method.kind
            # Shared values are computed before the scoped overrides, which therefore win over them.
            unscoped = scoped_overrides(task, [o for o in args.override if is_unscoped(o)], name, kind)
            own = compose_config(method.config, [task.env, *unscoped])
            shared = shared_overrides(own, reference, task.shared[kind], task.not_shared)
            user = scoped_overrides(task, args.override, name, kind)
            base = [task.env, *shared, *method.overrides, *user]
            composed = compose_config(method.config, [*settings, *base])
            per_iter = OmegaConf.select(
                composed, "algorithm.steps_per_iter" if method.offline else "algorithm.rollout.episodes_per_iter"
            )
            sched = schedule(task, method, per_iter, args)
            iterations = exact_quotient(sched.budget, per_iter, sched.what, name)
            exact_quotient(sched.ceiling, per_iter, "--on-policy-factor x --trajectories", name)
            steps = {"algorithm.num_iterations": iterations}
            if method.recipe_warmup:
                steps["algorithm.warmup_iters"] = recipe_warmup(iterations)
            steps["eval.every_iters"] = exact_quotient(sched.eval_every, per_iter, "the evaluation interval", name)
            # The schedule goes last, as overrides would; set on the composed config, it costs no second composition.
            for key, value in steps.items():
                OmegaConf.update(composed, key, value)
            config = checked_config(name, composed)
            overrides = [*base, *(f"{key}={value}" for key, value in steps.items())]
            for seed in args.seeds:
                run_dir = (args.out / "runs" / name / f"seed{seed}").resolve()
                specs.append(
                    RunSpec(
                        name,
                        method,
                        seed,
                        run_dir,
                        overrides,
                        settings,
                        replace(config, seed=seed),
                        sched.budget,
                        sched.eval_every,
                        per_iter,
                        sched.ceiling,
                        run=name in names,
                    )
                )
    return Plan(task, specs, to_run_config(reference))


def extended(spec: RunSpec, budget: int) -> RunSpec:
    """The same run continued to ``budget`` games (raising ``algorithm.num_iterations`` extends a run)."""
    iterations = budget // spec.per_iter
    overrides = [f"{ITERATIONS}{iterations}" if o.startswith(ITERATIONS) else o for o in spec.overrides]
    algorithm = replace(spec.config.algorithm, num_iterations=iterations)
    return replace(spec, overrides=overrides, config=replace(spec.config, algorithm=algorithm), budget=budget)


# ---- running ---------------------------------------------------------------------------------------------------


# Where the start policy is built (a trainer needs a run folder); its lock is released once it is built.
PROBE_FOLDER = "start_policy_probe"


def build_start_policy(
    spec: RunSpec, out: Path, evaluate: bool = False
) -> tuple[float, float, dict[str, float] | None]:
    """Build (or find in the cache) the online runs' shared starting policy; returns the wall and CPU seconds this
    took and, with ``evaluate``, the start's greedy evaluation as a run's iteration 0 records it (``eval_point``;
    its seconds are counted in), else None.

    Building a trainer (``build_trainer``) runs its ``pretrain`` once and caches it, exactly as the runs themselves
    would; doing it here, alone, means parallel runs never race to build it.
    """
    from archer import locking
    from archer.trainer import build_trainer

    start, cpu = time.perf_counter(), time.process_time()
    # Another invocation on the same --out (other --methods, side by side) waits for this build and then finds the
    # start cached; the lock is released once the start is built, not held for the benchmark's life.
    with locking.turn(out / PROBE_FOLDER, "the starting policy"):
        trainer = build_trainer(spec.config, out / PROBE_FOLDER)
    point = eval_point(trainer.evaluation_metrics()) if evaluate else None
    return time.perf_counter() - start, time.process_time() - cpu, point


def read_record(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` (one of the benchmark's own records), refused in one line naming the file when it
    is not one (a write cut short before they were written atomically, or an edit)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        record, problem = None, f"{type(error).__name__}: {error}"
    else:
        problem = "not a JSON object"
    if not isinstance(record, dict):
        raise SystemExit(f"{path}: not {what} ({problem}); delete it (or fix it) and rerun") from None
    return record


def load_sidecar(run_dir: Path) -> dict[str, Any]:
    """The benchmark's record of the run in ``run_dir``: its command, config fingerprint and attempts."""
    path = run_dir / SIDECAR
    if not path.exists():
        return {"attempts": []}
    sidecar = read_record(path, "the benchmark's record of a run")
    if not isinstance(sidecar.get("attempts"), list):
        raise SystemExit(f"{path}: not the benchmark's record of a run (no attempts list); delete it and rerun")
    return sidecar


def write_sidecar(run_dir: Path, sidecar: dict[str, Any]) -> None:
    """Write the run's record atomically: a kill or a full disk leaves the previous one whole."""
    atomic_write_json(run_dir / SIDECAR, sidecar)


def load_info(path: Path) -> dict[str, Any]:
    """The benchmark's own record in ``--out`` (``benchmark.json``: its wall time, the start policy's build), or
    nothing when it does not exist."""
    return read_record(path, "the benchmark's record") if path.exists() else {}


def write_info(path: Path, info: dict[str, Any]) -> None:
    atomic_write_json(path, info)


# Command-line items that may change between a run's attempts without making it another run: its length (raising
# it extends the run), its folder's path (a moved --out) and the settings that compute nothing.
VOLATILE = (ITERATIONS, "run_dir=", "torch_threads=", "logging.progress_bars=", "cache_dir=")


def run_identity(command: Sequence[str]) -> list[str]:
    """What makes a command the same run as another: everything but the script's path (a run is the same from
    another checkout of the repository) and the ``VOLATILE`` items."""
    return [item for item in command[1:] if not item.startswith(VOLATILE)]


@functools.lru_cache(maxsize=1024)
def _checkpoint_fingerprint(path: Path, modified_ns: int) -> str | None:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # a checkpoint being written, or not one: nothing to say about the run
        return None
    return state.get("config_fingerprint") if isinstance(state, dict) else None


def recorded_fingerprint(run_dir: Path) -> str | None:
    """The config fingerprint of the run in ``run_dir``: the one the benchmark recorded when it started the run, else
    its checkpoint's (runs started before the benchmark recorded it); None when neither is there."""
    sidecar = load_sidecar(run_dir)
    if "config_fingerprint" in sidecar:
        return sidecar["config_fingerprint"]
    path = run_dir / CHECKPOINT
    return _checkpoint_fingerprint(path, path.stat().st_mtime_ns) if path.exists() else None


def holds_another_config(spec: RunSpec) -> bool:
    """Whether ``spec.run_dir`` holds a run of the same command whose composed config differs from ``spec``'s (a
    config file, a default or the start's pretraining changed since): its numbers are not this run's."""
    recorded = recorded_fingerprint(spec.run_dir)
    return recorded is not None and recorded != run_fingerprint(spec)


def execute(spec: RunSpec) -> int:
    """Run (or resume, or extend) one run in a subprocess; its output goes to ``benchmark_stdout.log``.

    A folder holding a run of another config keeps it, moved into ``previous-<time>/`` (``move_previous_run``), and
    the run starts over; while another process runs in the folder nothing is moved and the run is refused (exit 1)."""
    from archer import locking
    from archer.trainer import move_previous_run

    spec.run_dir.mkdir(parents=True, exist_ok=True)
    if holds_another_config(spec):
        try:
            locking.check_free(spec.run_dir, "run folder", locking.RUN_FOLDER_BUSY)
        except locking.FolderBusyError as busy:
            print(f"{spec.method} seed {spec.seed}: not run: {busy}", flush=True)
            return 1
        aside = move_previous_run(spec.run_dir) or spec.run_dir
        for name in (SIDECAR, STDOUT_LOG):
            if (spec.run_dir / name).exists() and aside != spec.run_dir:
                os.replace(spec.run_dir / name, aside / name)
        print(f"{spec.method} seed {spec.seed}: {spec.run_dir} held a run of another config; moved to {aside}")
    command = spec.command()
    sidecar = load_sidecar(spec.run_dir)
    # Written before the run starts, so a run killed with the benchmark is still known as this command's and config's.
    sidecar["command"] = command
    sidecar["config_fingerprint"] = run_fingerprint(spec)
    write_sidecar(spec.run_dir, sidecar)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    with open(spec.run_dir / STDOUT_LOG, "a", encoding="utf-8") as log:
        with _CHILDREN.lock:
            if _CHILDREN.stopping.is_set():  # the benchmark was stopped while this run waited for its turn
                return 1
            process = subprocess.Popen([sys.executable, *command], stdout=log, stderr=subprocess.STDOUT, env=env)
            done = _CHILDREN.running[process.pid] = threading.Event()
        try:
            # wait4 also gives the run's CPU time: on a shared machine, a better guide than wall time to the wall
            # time the run would take alone on a free core (runs use --torch-threads 1 by default).
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            with _CHILDREN.lock:
                del _CHILDREN.running[process.pid]
            done.set()
    returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    attempt = {"returncode": returncode, "wall_s": wall, "cpu_s": cpu, "commit": code_commit()}
    sidecar["attempts"].append({**attempt, "games": spec.budget, "versions": library_versions()})
    write_sidecar(spec.run_dir, sidecar)
    if returncode == 0:
        status = "done"
    elif _CHILDREN.stopping.is_set():
        status = f"stopped with the benchmark (exit {returncode}); a rerun resumes it from its last checkpoint"
    else:
        status = f"FAILED (exit {returncode}, see {spec.run_dir / STDOUT_LOG})"
    print(f"{spec.method} seed {spec.seed} to {spec.budget}: {status} in {wall:.0f} s", flush=True)
    return returncode


@dataclass
class Children:
    """The ``run.py`` processes the benchmark has running (their pids, each with an event set once it is reaped),
    so that a SIGTERM to the benchmark stops them too (``stop_runs``); ``stopping`` keeps the queued runs from
    starting."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    running: dict[int, threading.Event] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)


_CHILDREN = Children()
# Seconds the runs get to exit after the benchmark passes them its SIGTERM, before they are killed.
STOP_GRACE_S = 30.0


class BenchmarkStopped(Exception):
    """A SIGTERM stopped the benchmark; ``runs``: how many of its runs were running (and were stopped)."""

    def __init__(self, runs: int) -> None:
        super().__init__(f"{runs} runs stopped")
        self.runs = runs


def stop_runs(signum: int, frame: Any) -> None:
    """The benchmark's SIGTERM handler: pass the signal to every running ``run.py`` (else they would train on as
    orphans, and a rerun would find their folders busy), kill those still running after ``STOP_GRACE_S``, and stop
    the benchmark (``BenchmarkStopped``). A second SIGTERM ends the benchmark at once."""
    signal.signal(signum, signal.SIG_DFL)
    _CHILDREN.stopping.set()
    with _CHILDREN.lock:
        running = dict(_CHILDREN.running)
    for pid in running:
        _signal_child(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for pid, reaped in running.items():
        if not reaped.wait(max(deadline - time.monotonic(), 0.0)):
            _signal_child(pid, signal.SIGKILL)
            reaped.wait(10.0)
    raise BenchmarkStopped(len(running))


def _signal_child(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:  # it has just exited
        pass


@contextmanager
def runs_stop_with_the_benchmark() -> Iterator[None]:
    """Install ``stop_runs`` for SIGTERM in the body (in the main thread only: elsewhere Python cannot), and put the
    previous handler back after it."""
    _CHILDREN.stopping.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, stop_runs)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def code_commit() -> str | None:
    """The commit of the checkout that runs the benchmark (``+dirty`` with uncommitted changes), None outside git."""

    def git(*command: str) -> str:
        return subprocess.run(
            ["git", *command], cwd=SCRIPTS, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", str(SCRIPTS.parent / "archer")))
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def library_versions() -> dict[str, str | None]:
    """Versions of the libraries whose changes can change a run's numbers."""
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {name: version(name) for name in ("torch", "transformers", "accelerate", "numpy")}


# ---- results ---------------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """What one run's ``metrics.jsonl`` says, up to its spec's length: its evaluation curve and the table's numbers."""

    spec: RunSpec
    curve: list[dict[str, float]] = field(default_factory=list)  # x, iteration, return, success per evaluation
    finished: bool = False
    final_rollout_return: float | None = None
    train_s: float = 0.0
    play_update_s: float | None = None  # time/rollout_s + time/update_s over the run (online runs)
    wall_s: float | None = None  # of the benchmark's attempts at the run, summed
    cpu_s: float | None = None
    dataset_trajectories: int | None = None
    commit: str | None = None  # of the code that ran it (the last attempt's), when recorded
    versions: dict[str, str | None] | None = None  # of torch, transformers, ... (the last attempt's), when recorded
    archived: bool = False  # read from the archive rather than from its folder

    @property
    def start(self) -> dict[str, float] | None:
        return self.curve[0] if self.curve and self.curve[0]["iteration"] == 0 else None

    @property
    def final(self) -> dict[str, float] | None:
        return self.curve[-1] if self.finished else None

    @property
    def seconds_per_game(self) -> float | None:
        """Playing and updating time per training game (evaluation and checkpoints left out); online runs only."""
        games = self.curve[-1]["x"] if self.curve and self.spec.kind == "online" else 0
        return self.play_update_s / games if self.play_update_s is not None and games else None

    @property
    def cost_s(self) -> float:
        """The run's CPU seconds (the benchmark's process times or the run's records), else its ``time/*`` figures."""
        return self.cpu_s if self.cpu_s is not None else self.train_s


def read_run(spec: RunSpec) -> RunResult:
    """The curve and summary of one run from its folder, up to the spec's iterations (x: env trajectories online,
    gradient steps offline); nothing when the folder holds a run of another config.

    A run is known by the config it composed (``holds_another_config``), however its overrides were spelled: an
    override that a config file now sets itself changes the command, not the run. Only a folder whose config was
    never recorded is judged by its command."""
    from archer.trainer import PROCESS_CPU_KEY

    result = RunResult(spec)
    path = spec.run_dir / METRICS
    sidecar = load_sidecar(spec.run_dir)
    if recorded_fingerprint(spec.run_dir) is not None:
        foreign = holds_another_config(spec)
    else:
        foreign = "command" in sidecar and run_identity(sidecar["command"]) != run_identity(spec.command())
    if not path.exists() or foreign:
        return result
    iterations = spec.config.algorithm.num_iterations
    records = [r for r in read_metrics(path) if r["iteration"] <= iterations]
    for record in records:
        if record.get("eval/return_mean") is not None:
            x = record["env/trajectories"] if spec.kind == "online" else record["iteration"] * spec.per_iter
            result.curve.append({"iteration": record["iteration"], "x": x, **eval_point(record)})
    rollouts = [r["rollout/return_mean"] for r in records if r.get("rollout/return_mean") is not None]
    result.final_rollout_return = rollouts[-1] if rollouts else None
    result.train_s = sum(
        v for r in records for k, v in r.items() if k.startswith("time/") and k != PROCESS_CPU_KEY and v is not None
    )
    if spec.kind == "online":
        result.play_update_s = sum(r.get("time/rollout_s") or 0.0 for r in records) + sum(
            r.get("time/update_s") or 0.0 for r in records
        )
    last = records[-1]["iteration"] if records else 0
    result.finished = last == iterations and bool(result.curve) and result.curve[-1]["iteration"] == last
    attempts = sidecar["attempts"]
    result.wall_s = sum(a["wall_s"] for a in attempts) if attempts else None
    result.cpu_s = sum(a["cpu_s"] for a in attempts) if attempts else None
    # A killed attempt records no time, but the iterations it kept record theirs in the metrics (their phases'
    # wall seconds and their process CPU seconds), so a resumed run is not shown as cheap as its last attempt.
    recorded_cpu = sum(r.get(PROCESS_CPU_KEY) or 0.0 for r in records)
    if recorded_cpu > (result.cpu_s or 0.0):
        result.cpu_s = recorded_cpu
    if result.train_s > (result.wall_s or 0.0):
        result.wall_s = result.train_s
    result.commit = attempts[-1].get("commit") if attempts else None
    result.versions = attempts[-1].get("versions") if attempts else None
    if spec.kind == "offline":
        result.dataset_trajectories = dataset_size(spec)
    return result


def eval_point(metrics: dict[str, Any]) -> dict[str, float]:
    """A curve point's figures from a greedy evaluation's metrics (a metrics record or ``evaluation_metrics()``)."""
    point = {"return": metrics["eval/return_mean"], "success": metrics["eval/success_rate"]}
    if metrics.get(MOVE_DEPENDENCE) is not None:  # the grid games': does the policy read the board
        point["move_state_dependence"] = metrics[MOVE_DEPENDENCE]
    return point


def dataset_size(spec: RunSpec) -> int | None:
    """Episodes in the offline dataset: the trainer's log line, else ``data.generate_episodes`` for generated data."""
    for name in ("run.log", STDOUT_LOG):
        path = spec.run_dir / name
        if path.exists():
            found = re.findall(r"offline dataset: (\d+) episodes", path.read_text(encoding="utf-8", errors="replace"))
            if found:
                return int(found[-1])
    return spec.config.data.generate_episodes if spec.config.data.path is None else None


# ---- archive: finished runs kept in the repository ---------------------------------------------------------------

ARCHIVED_FIELDS = ("finished", "curve", "final_rollout_return", "train_s", "wall_s", "cpu_s", "dataset_trajectories")
# Archived since they were added; older records lack them and read back as None.
OPTIONAL_ARCHIVED_FIELDS = ("play_update_s",)
# Whole-run figures that a run read back shorter than it was played does not have.
WHOLE_RUN_FIELDS = ("final_rollout_return", "play_update_s")


def load_archive(path: Path) -> list[dict[str, Any]]:
    """The archived runs (a list of records), or none when the file does not exist."""
    if not path.exists():
        return []
    try:
        records = json.loads(path.read_text(encoding="utf-8"))["runs"]
        for record in records:
            record_key(record)
            missing = [name for name in ARCHIVED_FIELDS if name not in record]
            if missing:
                raise KeyError(f"a run of {record['method']} has no {', '.join(missing)}")
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise SystemExit(f"{path}: not a benchmark archive ({error}); fix or delete it") from None
    return records


def archive_key(method: str, seed: int, fingerprint: str) -> tuple[Any, ...]:
    """What makes two runs the same run: method, seed and the resolved config's fingerprint (the one a checkpoint
    must match to resume: run_dir and the run settings compute nothing), so a run is not served from the archive
    after its config file or the config's defaults changed, and is still served when only the spelling of its
    overrides did. The run's length is not part of it: a longer run holds every shorter one (raising
    ``algorithm.num_iterations`` extends a run)."""
    return method, seed, fingerprint


def run_fingerprint(spec: RunSpec) -> str:
    from archer.checkpointing import config_fingerprint
    from archer.trainer import RESUMABLE_KEYS

    return config_fingerprint(spec.config, ignore=RESUMABLE_KEYS)


def record_key(record: dict[str, Any]) -> tuple[Any, ...]:
    return archive_key(record["method"], record["seed"], record["config_fingerprint"])


def spec_key(spec: RunSpec) -> tuple[Any, ...]:
    return archive_key(spec.method, spec.seed, run_fingerprint(spec))


def from_archive(spec: RunSpec, archive: Sequence[dict[str, Any]]) -> RunResult | None:
    """The archived result of this run (same config, seed and overrides, at least as long), up to its length."""
    key = spec_key(spec)
    iterations = spec.config.algorithm.num_iterations
    for record in archive:
        if record_key(record) != key or not record["finished"]:
            continue
        curve = [p for p in record["curve"] if p["iteration"] <= iterations]
        if not curve or curve[-1]["iteration"] != iterations:
            continue  # a shorter run
        fields = {name: record[name] for name in ARCHIVED_FIELDS}
        fields |= {name: record.get(name) for name in OPTIONAL_ARCHIVED_FIELDS}
        if len(curve) < len(record["curve"]):
            fields |= {name: None for name in WHOLE_RUN_FIELDS}
        fields["curve"] = curve
        provenance = {"commit": record.get("commit"), "versions": record.get("versions")}
        return RunResult(spec, **fields, **provenance, archived=True)
    return None


def record_start(record: dict[str, Any]) -> dict[str, float] | None:
    """An archived run's iteration-0 evaluation (its start policy's), None without one."""
    curve = record["curve"]
    return curve[0] if curve and curve[0]["iteration"] == 0 else None


def other_start_runs(results: Sequence[RunResult], start: dict[str, float]) -> list[RunResult]:
    """The archived online runs whose iteration-0 evaluation is not ``start``'s (this machine's start policy): a
    start rebuilt on another machine from the same config and data can differ in floating point, and runs from two
    starts must not share a page. CHAI evaluated by reranking is left out (its iteration 0 is not a greedy decode)."""
    return [
        r
        for r in results
        if r.archived and r.spec.kind == "online" and not reranks_at_eval(r) and different_starts(r.start, start)
    ]


def archive_record(result: RunResult, out: Path) -> dict[str, Any]:
    spec = result.spec
    record: dict[str, Any] = {"method": spec.method, "seed": spec.seed, "overrides": list(spec.overrides)}
    record["config_fingerprint"] = run_fingerprint(spec)
    record.update({name: getattr(result, name) for name in (*ARCHIVED_FIELDS, *OPTIONAL_ARCHIVED_FIELDS)})
    record["commit"] = result.commit
    record["versions"] = result.versions
    record["run_dir"] = os.path.relpath(spec.run_dir, out)
    return record


def archived_on_policy_factor(path: Path) -> int | None:
    """The ``--on-policy-factor`` the task's pages were last built with (kept in its archive), or None for an archive
    written before it was kept, or none at all. ``--summary`` plans each task with it, so that an on-policy run
    played to that factor's ceiling counts as finished there too."""
    if not path.exists():
        return None
    try:
        factor = json.loads(path.read_text(encoding="utf-8")).get("on_policy_factor")
    except (json.JSONDecodeError, AttributeError) as error:
        raise SystemExit(f"{path}: not a benchmark archive ({error}); fix or delete it") from None
    return factor if isinstance(factor, int) and factor >= 1 else None


def update_archive(
    path: Path,
    archive: Sequence[dict[str, Any]],
    results: Sequence[RunResult],
    out: Path,
    on_policy_factor: int | None = None,
) -> None:
    """Add (or replace by a run at least as long) every finished run read from its folder, and record the
    ``--on-policy-factor`` the pages are built with (``archived_on_policy_factor``); written atomically."""
    records = {record_key(r): r for r in archive}
    for result in results:
        if result.finished and not result.archived:
            key = spec_key(result.spec)
            kept = records.get(key)
            # A run from another start policy (rebuilt elsewhere) replaces the kept one whatever their lengths.
            if (
                kept is None
                or different_starts(record_start(kept), result.start)
                or kept["curve"][-1]["iteration"] <= result.curve[-1]["iteration"]
            ):
                records[key] = archive_record(result, out)
    ordered = sorted(records.values(), key=lambda r: (r["method"], r["seed"], r["overrides"]))
    # One run per line, so a commit that adds runs shows as added lines.
    lines = ",\n".join(json.dumps(record) for record in ordered)
    header = f'"on_policy_factor": {on_policy_factor}, ' if on_policy_factor is not None else ""
    atomic_write_text(path, "{" + header + '"runs": [\n' + lines + "\n]}\n")


def collect(specs: Sequence[RunSpec], archive: Sequence[dict[str, Any]]) -> list[RunResult]:
    """Every run's result: from its folder when finished there, else from the archive, else what its folder has."""
    results = []
    for spec in specs:
        result = read_run(spec)
        if not result.finished:
            result = from_archive(spec, archive) or result
        results.append(result)
    return results


# ---- stopping the on-policy methods -----------------------------------------------------------------------------


def continue_to(last: Sequence[float], target: float | None, budget: int, chunk: int, ceiling: int) -> int | None:
    """The games a long method's runs continue to, or None when they stop.

    Args:
        last: every seed's last evaluation (all at ``budget`` games).
        target: the stopping level (the final mean of the task's ArCHer recipe); None while unknown, when the runs
            wait at ``budget``.
        budget: the games they have played.
        chunk: games added at a time.
        ceiling: the most games they may play.
    """
    if target is None or not last or statistics.fmean(last) >= target or budget >= ceiling:
        return None
    return min(budget + chunk, ceiling)


def settle(
    task: Task, specs: Sequence[RunSpec], archive: Sequence[dict[str, Any]], chunk: int
) -> tuple[list[RunSpec], list[RunResult]]:
    """Continue the long methods' runs as far as their finished results and the stopping rule say, without running
    anything; returns the runs (some longer) and their results."""
    specs = list(specs)
    while True:
        results = collect(specs, archive)
        if not task.stops_early:
            return specs, results
        target = stopping_level(task, results)
        longer = False
        for method, runs in group(results).items():
            if not runs[0].spec.definition.long or not all(r.finished for r in runs):
                continue
            spec = runs[0].spec
            budget = continue_to([r.curve[-1][task.point_key] for r in runs], target, spec.budget, chunk, spec.ceiling)
            if budget is not None:
                specs = [extended(s, budget) if s.method == method else s for s in specs]
                longer = True
        if not longer:
            return specs, results


# ---- summary across tasks ----------------------------------------------------------------------------------------


def write_summary(args: argparse.Namespace) -> int:
    """Rebuild ``summary.md`` from every task's run folders and archive (nothing is run)."""
    root = args.docs
    rows: list[str] = []
    hours: dict[str, float] = {}
    factors: dict[str, int] = {}
    over: dict[str, list[str]] = {}
    for name, task in TASKS.items():
        task_args = copy.copy(args)
        task_args.task = name
        task_args.methods = list(task.method_names)
        task_args.out = (args.out_root / name).resolve()
        task_args.eval_every = task.eval_every if args.eval_every_given is None else args.eval_every_given
        task_args.on_policy_factor = archived_on_policy_factor(root / name / ARCHIVE) or args.on_policy_factor
        factors[name] = task_args.on_policy_factor
        plan_ = plan(task_args)
        archive = load_archive(root / name / ARCHIVE)
        _, results = settle(task, plan_.specs, archive, args.trajectories)
        # Optional methods appear only once they have finished runs.
        ran = {r.spec.method for r in results if r.finished}
        shown_results = [r for r in results if r.spec.definition in task.methods or r.spec.method in ran]
        rows += summary_rows(task, shown_results, task_figures(plan_, shown_results))
        hours[name] = cpu_hours(shown_results, {})
        over[name] = over_budget([r for r in shown_results if r.spec.kind == "online"])
    text = summary_markdown(rows, args.argv, hours, factors, over)
    atomic_write_text(root / SUMMARY, text)
    print(text)
    print(f"written to {root / SUMMARY}", flush=True)
    return 0


# ---- entry -------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    tasks = "\n".join(f"  {t.name}: {t.description}" for t in TASKS.values())
    parser = OneLineParser(
        description=__doc__,
        epilog=f"tasks:\n{tasks}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("task", nargs="?", choices=list(TASKS), help="the task to run or report (see below)")
    parser.add_argument(
        "--methods",
        default=None,
        help="comma-separated methods of the task (default: its default list), or 'all' (adds its optional ones)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 for every method (3)")
    parser.add_argument("--trajectories", type=int, default=1280, help="environment games per online run (1280)")
    parser.add_argument(
        "--eval-every",
        type=int,
        default=None,
        help="greedy evaluation every this many games (default: the task's, 160 on Twenty Questions, 128 on grids)",
    )
    parser.add_argument(
        "--on-policy-factor",
        type=int,
        default=10,
        help="the on-policy methods play up to this many times --trajectories games (10)",
    )
    parser.add_argument("--offline-steps", type=int, default=3000, help="gradient steps per offline run (3000)")
    parser.add_argument("--offline-eval-every", type=int, default=500, help="offline evaluation every N steps (500)")
    parser.add_argument(
        "--out", type=Path, default=None, help="folder of the runs (default: outputs/benchmark/<task>)"
    )
    parser.add_argument(
        "--docs",
        type=Path,
        default=None,
        help="folder of results.md, runs.csv, curves.csv, curves.png and archive.json (default: the repository's "
        "docs/benchmark/<task>); with --summary, the folder holding every task's folder (default: docs/benchmark)",
    )
    parser.add_argument("--cache-dir", default=None, help="model/dataset/start-policy cache (default: the runs')")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads of every run")
    parser.add_argument("--jobs", type=int, default=2, help="runs at the same time")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="[SCOPE:]KEY=VALUE",
        help="Hydra override for every run; SCOPE (a method, online or offline) limits it (repeatable); unscoped "
        "ones and those scoped to the method that runs the reference config unchanged also go to the reference",
    )
    parser.add_argument("--report-only", action="store_true", help="only rebuild the table and plot")
    parser.add_argument("--dry-run", action="store_true", help="print every run's command and exit")
    parser.add_argument("--summary", action="store_true", help="rebuild docs/benchmark/summary.md from the archives")
    args = parser.parse_args(argv)
    # The command as given, for results.md: the page names the exact command that produced it.
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.on_policy_factor < 1:
        parser.error("--on-policy-factor must be at least 1")
    # Counts below one are refused here, before anything is built (a pool of 0 jobs failed after the start was
    # cloned; 0 seeds emptied runs.csv; an --eval-every of 0 became the task's).
    for option, value in (("--seeds", args.seeds), ("--jobs", args.jobs), ("--eval-every", args.eval_every)):
        if value is not None and value < 1:
            parser.error(f"{option} must be at least 1 (got {value})")
    args.seeds = list(range(args.seeds))
    args.eval_every_given = args.eval_every
    if args.summary:
        args.out_root = (args.out or Path("outputs/benchmark")).resolve()
        args.docs = (args.docs or DOCS).resolve()
        refuse_unwritable("--docs", None if args.dry_run else args.docs, folder=True)
        return args
    if args.task is None:
        parser.error(f"name a task ({', '.join(TASKS)}) or give --summary")
    task = TASKS[args.task]
    names = task.method_names if args.methods == "all" else task.method_names[: len(task.methods)]
    args.methods = list(names) if args.methods in (None, "all") else [m for m in args.methods.split(",") if m]
    if not args.methods:
        parser.error(f"--methods names no method; choose from {', '.join(task.method_names)}")
    unknown = [m for m in args.methods if m not in task.method_names]
    if unknown:
        parser.error(f"unknown methods {unknown} of {task.name}; choose from {', '.join(task.method_names)}")
    args.eval_every = task.eval_every if args.eval_every is None else args.eval_every
    args.out = (args.out or Path("outputs/benchmark") / task.name).resolve()
    args.docs = (args.docs or DOCS / task.name).resolve()
    # Folders that cannot be written are refused now, not after the runs (--out is only read by --report-only).
    if args.out.exists() and not args.out.is_dir():
        refuse_unwritable("--out", args.out, folder=True)
    if not args.dry_run:
        refuse_unwritable("--docs", args.docs, folder=True)
        refuse_unwritable("--out", None if args.report_only else args.out, folder=True)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summary:
        return write_summary(args)
    plan_ = plan(args)
    if args.dry_run:
        # Shell-quoted, so a printed line pasted into a shell passes run.py the same arguments (the recipe's
        # reply separator '? ' ends in a space that Hydra keeps only inside its own quotes).
        print("\n".join(shlex.join(["python", *spec.command()]) for spec in plan_.specs if spec.run))
        long = sorted({s.method for s in plan_.specs if s.definition.long and s.budget < s.ceiling})
        if long:
            print(f"# then {', '.join(long)}: continued by --trajectories games up to the ceiling (stopping rule)")
        return 0
    try:
        with runs_stop_with_the_benchmark():
            return run_and_report(args, plan_)
    except BenchmarkStopped as stopped:
        print(
            f"benchmark stopped by SIGTERM ({stopped.runs} running runs stopped with it); rerun the same command: "
            "finished runs are reused and the others resume from their last checkpoints",
            file=sys.stderr,
            flush=True,
        )
        return 128 + signal.SIGTERM


def run_and_report(args: argparse.Namespace, plan_: Plan) -> int:
    """Run the plan's runs that are not finished (unless ``--report-only``), archive them and write the pages."""
    task = plan_.task
    info_path = args.out / "benchmark.json"
    info = load_info(info_path)
    archive_path = args.docs / ARCHIVE
    archive = load_archive(archive_path)
    # The archived runs this invocation may reuse: all of them, unless some started from another policy than the
    # one this machine builds (below).
    usable = archive
    specs = plan_.specs
    failures = 0
    if not args.report_only:
        args.out.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        attempted: set[tuple[str, int, int]] = set()
        pretrained: Path | None = None
        game_prefix = ""
        before: set[Path] = set()
        served = [
            r for r in collect(specs, archive) if r.archived and r.spec.kind == "online" and not reranks_at_eval(r)
        ]
        if served:
            # Reuse an archived run only if this machine's start policy plays as the one it started from did.
            spec = served[0].spec
            pretrained, game_prefix = start_cache(spec)
            *seconds, start_point = build_start_policy(spec, args.out, evaluate=True)
            info["start_policy_s"], info["start_policy_cpu_s"] = seconds
            before = _starts_of(pretrained, game_prefix)
            other = other_start_runs(served, start_point)
            key = task.point_key
            for r in other:
                print(
                    f"{r.spec.method} seed {r.spec.seed}: archived from another start policy (iteration-0 greedy "
                    f"{key} {r.start[key]:.4f}; this machine's start: {start_point[key]:.4f}); run here"
                )
            dropped = {spec_key(r.spec) for r in other}
            usable = [record for record in archive if record_key(record) not in dropped]
        while True:
            specs, results = settle(task, specs, usable, args.trajectories)
            if not attempted:
                for r in results:
                    if r.archived:
                        print(f"{r.spec.method} seed {r.spec.seed}: finished in {shown(archive_path)}, not rerun")
            pending = [
                s
                for s, r in zip(specs, results, strict=True)
                if s.run and not r.finished and (s.method, s.seed, s.budget) not in attempted
            ]
            if not pending:
                break
            # The stopping level's runs first: the on-policy methods' continuation waits for them.
            pending.sort(key=lambda s: s.method != task.archers[0])
            online = [s for s in pending if s.kind == "online"]
            if online and pretrained is None:
                pretrained, game_prefix = start_cache(online[0])
                info["start_policy_s"], info["start_policy_cpu_s"], _ = build_start_policy(online[0], args.out)
                before = _starts_of(pretrained, game_prefix)
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                try:
                    failures += sum(code != 0 for code in pool.map(execute, pending))
                except BaseException:
                    _CHILDREN.stopping.set()  # no queued run starts while the pool winds down
                    raise
            attempted |= {(s.method, s.seed, s.budget) for s in pending}
        after = _starts_of(pretrained, game_prefix) if pretrained else set()
        info["new_pretrained_folders_during_runs"] = sorted(str(p) for p in after - before)
        info["benchmark_wall_s"] = time.perf_counter() - start
        info["argv"] = args.argv
        info["cwd"] = str(Path.cwd())
        write_info(info_path, info)
        print(f"benchmark wall time: {info['benchmark_wall_s']:.0f} s", flush=True)
    specs, results = settle(task, specs, usable, args.trajectories)
    # Runs of the stopping level that were only read appear when they exist.
    shown_results = [r for r in results if r.spec.run or r.finished]
    # A page never loses finished runs it holds: a report without them goes elsewhere (or, alone, is refused).
    dropped_page = dropped_runs(args.docs, shown_results)
    if dropped_page and args.report_only:
        raise SystemExit(
            f"--report-only: {args.docs / RUNS_TABLE} holds {runs_text(dropped_page)}, which this report (its "
            "--seeds, --methods, --override or budgets) would drop; nothing written. Rebuild the pages with the "
            "arguments they were built with (results.md names them), or give --docs <another folder> for this report"
        )
    update_archive(archive_path, archive, results, args.out, args.on_policy_factor)
    pages_args = args
    if dropped_page:
        pages_args = copy.copy(args)
        pages_args.docs = args.out / "pages"
        print(
            f"{args.docs / RUNS_TABLE} holds {runs_text(dropped_page)}, which these runs' pages would drop: its "
            f"pages are kept (the archive there has these runs), and these runs' pages written to {pages_args.docs}; "
            "--report-only with the pages' own arguments rebuilds them from the archive",
            flush=True,
        )
    print(report(shown_results, pages_args, info, replace(plan_, specs=specs)))
    written = "results.md, runs.csv, curves.csv, curves.png"
    if pages_args.docs == args.docs:
        print(f"written to {args.docs}: {written}, {ARCHIVE}", flush=True)
    else:
        print(f"written to {pages_args.docs}: {written}; to {args.docs}: {ARCHIVE}", flush=True)
    print(f"{task.name}: total {cpu_hours(shown_results, info):.2f} CPU-hours", flush=True)
    return 1 if failures else 0


def runs_text(runs: Sequence[str], shown_at_most: int = 4) -> str:
    """``"5 finished runs (a seed 0, a seed 1, b seed 0, b seed 1 and 1 more)"``."""
    more = f" and {len(runs) - shown_at_most} more" if len(runs) > shown_at_most else ""
    return f"{len(runs)} finished runs ({', '.join(runs[:shown_at_most])}{more})"


def start_cache(spec: RunSpec) -> tuple[Path, str]:
    """The folder of cached starting policies the runs use, and this task's game's prefix there (a cache shared
    with another task's benchmark gains that task's starts, not this one's)."""
    return Path(spec.config.cache_dir or _default_cache()) / "pretrained", f"{spec.config.env.name}-"


def _starts_of(pretrained: Path, prefix: str) -> set[Path]:
    """The cached starting policies in ``pretrained`` whose folder names start with ``prefix`` (a game's)."""
    if not pretrained.exists():
        return set()
    return {folder for folder in pretrained.iterdir() if folder.name.startswith(prefix)}


def _default_cache() -> str:
    from archer.utils import resolve_cache_dir

    return str(resolve_cache_dir(None))


if __name__ == "__main__":
    sys.exit(main())
