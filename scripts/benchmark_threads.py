"""Seconds per iteration under thread settings, on an idle machine and beside a busy neighbour (issue 18).

Usage (from ``scripts/``; Hydra overrides of the run config go after the options)::

    python benchmark_threads.py                                   # archer_20q, the full grid below
    python benchmark_threads.py --threads 1 2 --loads busy --wait-policies default PASSIVE

For every combination of ``--loads`` (``none``: nothing else runs; ``busy``: a neighbour process doing what another
training run does, dense matrix products on ``--neighbour-threads`` torch threads), ``--threads`` (the run's
``torch_threads``) and ``--wait-policies`` (the ``OMP_WAIT_POLICY`` the run starts with; ``default`` leaves it unset,
so torch's OpenMP runtime spins for a while before a waiting thread sleeps; ``PASSIVE`` sleeps at once), it runs
``benchmark_iteration.py --no-schedule`` in a fresh process (OpenMP reads its wait policy once, at start) and prints
seconds per iteration and per phase, and each setting's slow-down against the idle setting with the same threads and
wait policy.

The machine's other work counts too: run it with nothing else on the cores. Each setting runs
``--warmup-iterations`` untimed iterations first (default 1) so model loading and the first call's warm-up stay
out of the figure. The run's own ``torch_threads`` and the environment variable are the only differences between
settings; the overrides are the same for all and printed first.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
#: What every setting runs on top of the config: the actor from the first iteration, no evaluation in the timed
#: iterations. (Evaluation settings that change the cached starting policy's key, such as ``eval.before_training``,
#: are left alone: changing them would clone a new start first.)
DEFAULT_OVERRIDES = ("algorithm.warmup_iters=0", "eval.every_iters=0")
PHASE_COLUMNS = ("rollout", "critic_generation", "critic_update", "actor_generation", "actor_update")

NEIGHBOUR_CODE = """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
a = torch.randn(512, 512)
while True:
    a = torch.tanh(a @ a / 512.0)
"""


@dataclass(frozen=True)
class Setting:
    """One measured combination."""

    load: str
    threads: int
    wait_policy: str

    @property
    def label(self) -> str:
        return f"load={self.load} torch_threads={self.threads} OMP_WAIT_POLICY={self.wait_policy}"


def settings(loads: Sequence[str], threads: Sequence[int], wait_policies: Sequence[str]) -> list[Setting]:
    """Every combination, idle ones first (their figures are the others' reference)."""
    ordered = sorted(loads, key=lambda load: load != "none")
    return [Setting(*combo) for combo in itertools.product(ordered, threads, wait_policies)]


def run_environment(wait_policy: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a setting's run starts with: ``OMP_WAIT_POLICY`` set, or removed for ``default``."""
    env = dict(os.environ if base is None else base)
    env.pop("OMP_WAIT_POLICY", None)
    if wait_policy != "default":
        env["OMP_WAIT_POLICY"] = wait_policy
    return env


class Neighbour:
    """A busy process beside the run (``with Neighbour(threads):``), or nothing for ``threads=0``."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Neighbour:
        if self.threads > 0:
            self.process = subprocess.Popen([sys.executable, "-c", NEIGHBOUR_CODE, str(self.threads)])
            time.sleep(2.0)  # let it reach its loop
            if self.process.poll() is not None:
                raise RuntimeError(f"the busy neighbour exited at once with code {self.process.returncode}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


def measure(setting: Setting, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """Run ``benchmark_iteration.py`` under ``setting``; returns its training figures."""
    out = scratch / f"{setting.load}_{setting.threads}_{setting.wait_policy}.json"
    command = [
        sys.executable,
        str(SCRIPTS / "benchmark_iteration.py"),
        "--no-schedule",
        "--no-floors",
        "--oracle",
        "knowledge_base",
        "--config-name",
        args.config_name,
        "--iterations",
        str(args.iterations),
        "--warmup-iterations",
        str(args.warmup_iterations),
        "--json",
        str(out),
        *DEFAULT_OVERRIDES,
        *args.overrides,
        f"torch_threads={setting.threads}",
    ]
    with Neighbour(args.neighbour_threads if setting.load == "busy" else 0):
        done = subprocess.run(command, cwd=SCRIPTS, env=run_environment(setting.wait_policy), capture_output=True)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{setting.label}: benchmark_iteration.py failed ({done.returncode}):\n{tail}")
    return json.loads(out.read_text())["training"]


def rows(results: dict[Setting, dict[str, Any]]) -> Iterator[list[str]]:
    """One table row per setting: seconds per iteration and phase, and the slow-down against the idle setting with
    the same threads and wait policy."""
    idle = {(s.threads, s.wait_policy): r["phases_s"]["iteration"] for s, r in results.items() if s.load == "none"}
    for setting, training in results.items():
        phases = training["phases_s"]
        iteration = phases["iteration"]
        reference = idle.get((setting.threads, setting.wait_policy))
        slowdown = "" if reference is None else f"{iteration / reference:.2f}x"
        cells = [f"{phases[p]:.1f}" if p in phases else "-" for p in PHASE_COLUMNS]
        yield [setting.load, str(setting.threads), setting.wait_policy, f"{iteration:.1f}", slowdown, *cells]


def format_table(results: dict[Setting, dict[str, Any]]) -> str:
    header = ["load", "torch_threads", "OMP_WAIT_POLICY", "s/iteration", "vs idle", *PHASE_COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(results)]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Seconds per iteration under thread settings and load.")
    parser.add_argument("--config-name", default="archer_20q", help="top-level file of scripts/config")
    parser.add_argument("--loads", nargs="+", choices=("none", "busy"), default=["none", "busy"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="torch_threads values")
    parser.add_argument(
        "--wait-policies", nargs="+", choices=("default", "PASSIVE", "ACTIVE"), default=["default", "PASSIVE"]
    )
    parser.add_argument("--neighbour-threads", type=int, default=2, help="torch threads of the busy neighbour (2)")
    parser.add_argument("--iterations", type=int, default=2, help="measured iterations per setting (2)")
    parser.add_argument("--warmup-iterations", type=int, default=1, help="untimed iterations first (1)")
    parser.add_argument("--json", type=Path, default=None, help="also write every setting's figures here")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every setting")
    args = parser.parse_args(argv)
    if min(args.threads) < 1 or args.neighbour_threads < 1 or args.iterations < 1 or args.warmup_iterations < 0:
        parser.error("--threads, --neighbour-threads and --iterations must be >= 1, --warmup-iterations >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> dict[Setting, dict[str, Any]]:
    args = parse_args(argv)
    overrides = " ".join([*DEFAULT_OVERRIDES, *args.overrides])
    print(f"benchmark_threads: --config-name {args.config_name}; overrides: {overrides}")
    print(
        f"busy neighbour: {args.neighbour_threads} torch threads of 512 x 512 matrix products; {os.cpu_count()} CPUs"
    )
    results: dict[Setting, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="benchmark_threads_") as scratch:
        for setting in settings(args.loads, args.threads, args.wait_policies):
            start = time.perf_counter()
            results[setting] = measure(setting, args, Path(scratch))
            print(
                f"{setting.label}: {results[setting]['phases_s']['iteration']:.1f} s/iteration "
                f"({time.perf_counter() - start:.0f} s with start-up)",
                flush=True,
            )
    print(format_table(results))
    if args.json is not None:
        args.json.write_text(json.dumps({s.label: r for s, r in results.items()}, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
