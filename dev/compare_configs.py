"""Does a change keep every shipped run config's behaviour? Same seed, same metrics, before and after.

Usage (from the repository root; ``--before`` is a copy of the code before the change, e.g. ``git worktree add
<dir> <commit>`` or ``git archive <commit> | tar -x -C <dir>``)::

    python dev/compare_configs.py --before <dir> --out <folder>
    python dev/compare_configs.py --before <dir> --out <folder> --renamed archer_20q_paper_cpu=archer_20q_plain
    python dev/compare_configs.py --before <dir> --out <folder> --configs archer_20q,chai_20q --skip-kalm

Every top-level config of this checkout's ``scripts/config`` (``--configs`` picks some; ``experiments/<name>`` ones
too) runs twice through ``scripts/run.py``: once with the code of ``--before`` and once with this checkout's, each
side with its own ``PYTHONPATH``, run folder and model cache (``ARCHER_CACHE_DIR``), so neither reuses what the other
built. A config renamed by the change runs under its old name on the ``--before`` side (``--renamed NEW=OLD``).

Each run is made tiny by the overrides of ``TINY`` whose keys the config has (``model=tiny``, a few short games, two
iterations, evaluation every iteration, one torch thread, seed 0); the KALM pipeline's configs take ``TINY_KALM``.
Then every number the runs wrote (``metrics.jsonl``, ``eval_results.json`` or ``kalm_metrics.json``) is compared
for equality, except timings (``IGNORED``). A run that finished before is reused, so an interrupted comparison
continues. Printed: one line per config, ``same``, or the keys that differ; the exit status is 1 if any differs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devkit import CONFIG_DIR, REPO
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from archer.cli import register_configs

# Key -> value of a tiny run, applied where the composed config has the key with a value (a null, which switches
# something off, stays null), or has the key at all for those of FORCED (their null means "all" or "as many as").
TINY = {
    "seed": 0,
    "torch_threads": 1,
    "logging.progress_bars": "false",
    "env.batch_size": 4,
    "env.max_turns": 4,
    "eval.num_episodes": 4,
    "eval.every_iters": 1,
    "eval.sampled_episodes": 4,
    "data.generate_episodes": 24,
    "algorithm.num_iterations": 2,
    "algorithm.warmup_iters": 1,
    "algorithm.rollout.episodes_per_iter": 4,
    "algorithm.group_size": 2,  # GRPO and GiGPO: whole groups of identical starts in the 4 games
    "algorithm.critic_steps_per_iter": 2,
    "algorithm.critic_batch_size": 8,
    "algorithm.critic.micro_batch_size": 4,
    "algorithm.actor_steps_per_iter": 1,
    "algorithm.actor_batch_size": 8,
    "algorithm.actor_micro_batch_size": 4,
    "algorithm.generation_batch_size": 8,
    "algorithm.v_target_pool": 16,
    "algorithm.steps_per_iter": 2,
    "algorithm.batch_size": 8,
    "algorithm.num_candidates": 2,
    "algorithm.num_minibatches": 2,
    "algorithm.ppo_epochs": 2,
    "pretrain.num_iterations": 1,
    "pretrain.steps_per_iter": 2,
    "pretrain.batch_size": 8,
    "pretrain.actor_micro_batch_size": 4,
    # The built-in shop, small: its catalogue and search index cost little to build.
    "env.num_products": 200,
    "env.num_instructions": 300,
    "env.train_lower": 200,
    "env.train_upper": 250,
    "env.data_upper": 100,
}
TINY_KALM = [
    "torch_threads=1",
    "seeds=[0]",
    "env.horizon=6",
    "collect.num_episodes=40",
    "grounding.steps=2",
    "grounding.batch_size=4",
    "grounding.n_layer=1",
    "grounding.n_embd=16",
    "grounding.n_head=2",
    "grounding.max_positions=64",
    "imagine.episodes_per_level=4",
    "imagine.batch_size=4",
    "offline.batch_size=16",
    "offline.hidden_units=[16]",
    "offline.steps=5",
    "eval.episodes_per_level=5",
]
FORCED = ("torch_threads", "eval.num_episodes")
# Configs this machine cannot run, and why: the comparison lists them as skipped.
NEEDS = {
    "archer_llm_20q": "Mistral-7B-Instruct's tokenizer and chat template (the hub)",
    "kalm_clevr_mujoco": "the clevr_mujoco extra (mujoco)",
    "kalm_metaworld": "the metaworld extra",
}
ABSENT = object()
RESULT_FILES = ("metrics.jsonl", "eval_results.json", "kalm_metrics.json")
# Leaves whose value is a measurement of time (or of where the run was), not of what it computed.
IGNORED = re.compile(r"(^|[./])(time/|[a-z_]*_s$|[a-z_]*seconds$|timestamp|run_dir|cache_dir|path)")


def top_level_configs() -> list[str]:
    """The shipped top-level run configs: ``scripts/config/*.yaml`` but ``common``."""
    return sorted(path.stem for path in CONFIG_DIR.glob("*.yaml") if path.stem != "common")


def tiny_overrides(name: str, detective: Path) -> list[str]:
    """The overrides that make ``name`` tiny: ``TINY``'s keys that its composed config sets to a value."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose(name)
    if cfg.get("pipeline") == "kalm":
        return list(TINY_KALM)
    overrides = ["model=tiny", "resume=false"]
    if not cfg.model.policy.name_or_path:  # eval_20q asks for the policy to evaluate
        overrides.append("model.policy.name_or_path=embedded")
    for key, value in TINY.items():
        present = OmegaConf.select(cfg, key, default=ABSENT)
        if present is not ABSENT and (present is not None or key in FORCED):
            overrides.append(f"{key}={value}")
    if OmegaConf.select(cfg, "env.game_path", default=None) is not None or cfg.env.get("name") == "adventure":
        overrides.append(f"env.game_path={detective}")
    return overrides


def run(root: Path, name: str, overrides: Sequence[str], folder: Path) -> tuple[Path | None, str]:
    """Run ``name`` with the code under ``root`` into ``folder/run``; the result file, or None and the error."""
    run_dir = folder / "run"
    for result in RESULT_FILES:
        if (run_dir / result).exists() and (folder / "done").exists():
            return run_dir / result, ""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(root), "ARCHER_CACHE_DIR": str(folder / "cache"), "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable, str(root / "scripts" / "run.py"), "--config-name", name, f"run_dir={run_dir}",
        f"cache_dir={folder / 'cache'}", *overrides,
    ]  # fmt: skip
    process = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root / "scripts")
    (folder / "log.txt").write_text(process.stdout + process.stderr)
    if process.returncode != 0:
        return None, (process.stderr.strip().splitlines() or [f"exit status {process.returncode}"])[-1]
    (folder / "done").touch()
    found = [run_dir / result for result in RESULT_FILES if (run_dir / result).exists()]
    return (found[0], "") if found else (None, "wrote none of " + ", ".join(RESULT_FILES))


def leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    """Every scalar of a JSON value by its dotted path (list items by index)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in leaves(item, f"{prefix}{key}.").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in leaves(item, f"{prefix}{i}.").items()}
    return {prefix.rstrip("."): value}


def numbers(path: Path) -> dict[str, Any]:
    """The compared values of a result file: every leaf but the timings, ``metrics.jsonl`` records by line."""
    text = path.read_text()
    data = [json.loads(line) for line in text.splitlines()] if path.suffix == ".jsonl" else json.loads(text)
    return {key: value for key, value in leaves(data).items() if not IGNORED.search(key)}


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """``key: before -> after`` for every value that differs (NaN equals NaN) or is on one side only."""
    out = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key, "<absent>"), after.get(key, "<absent>")
        both_nan = isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new)
        if old != new and not both_nan:
            out.append(f"{key}: {old} -> {new}")
    return out


def compare(name: str, old_name: str, args: argparse.Namespace) -> tuple[str, bool]:
    """Run ``name`` (``old_name`` on the before side) on both sides; a report line and whether they agree."""
    if name in NEEDS:
        return f"{name}: skipped, needs {NEEDS[name]}", True
    overrides = tiny_overrides(name, args.detective)
    folder = args.out / name.replace("/", "__")
    results = {}
    for side, root, config in (("before", args.before, old_name), ("after", REPO, name)):
        result, error = run(root, config, overrides, folder / side)
        if result is None:
            return f"{name}: the {side} run ({config}) failed: {error} (log: {folder / side / 'log.txt'})", False
        results[side] = numbers(result)
    changed = differences(results["before"], results["after"])
    shown = f" (before: {old_name})" if old_name != name else ""
    if not changed:
        return f"{name}{shown}: same ({len(results['after'])} values)", True
    return f"{name}{shown}: {len(changed)} values differ\n    " + "\n    ".join(changed[:20]), False


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the repository before the change (a copy)")
    parser.add_argument("--out", type=Path, required=True, help="run folders and caches go here")
    parser.add_argument("--configs", default=None, help="comma-separated config names (default: every top-level)")
    parser.add_argument("--renamed", action="append", default=[], help="NEW=OLD: a config's name before the change")
    parser.add_argument("--skip-kalm", action="store_true", help="leave out the KALM pipeline's configs")
    parser.add_argument(
        "--detective", type=Path, default=REPO.parent / "shared" / "data" / "detective.z5", help="Detective's file"
    )
    args = parser.parse_args(argv)
    pairs = [item.split("=", 1) for item in args.renamed]
    if any(len(pair) != 2 for pair in pairs):
        parser.error("--renamed takes NEW=OLD")
    args.renamed = dict(pairs)
    args.before = args.before.resolve()
    if not (args.before / "scripts" / "run.py").is_file():
        parser.error(f"--before {args.before}: no scripts/run.py there; give a copy of the repository")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.configs.split(",") if args.configs else top_level_configs()
    if args.skip_kalm:
        names = [name for name in names if not name.startswith("kalm_")]
    agree = True
    for name in names:
        line, same = compare(name, args.renamed.get(name, name), args)
        print(line, flush=True)
        agree &= same
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
