"""Throughput of sampling at replay states: ``LanguagePolicy.generate`` against prefix-sharing generation.

Usage (from the repository root; Hydra overrides of the run config go after the options)::

    nice -n 10 python scripts/benchmark_generation.py --config-name archer_20q --games 64 --states 512 \\
        --batch-sizes 32 128 --threads 1
    python scripts/benchmark_generation.py --samples-per-state 4     # the actor's layout in archer_20q

The run config is composed as ``run.py`` composes it and a ``Trainer`` is built in a temporary folder (its starting
policy: with ``pretrain``, the cached behaviour-cloning policy, built first if it is not cached). The policy plays
``--games`` games by sampling; ``--states`` replay states are then drawn uniformly, with replacement, from the states
those games visited (every observation an action was taken at), as a replay buffer samples them, each repeated
``--samples-per-state`` times in a row as ArCHer's actor phase lays its samples out. At each batch size, both
methods sample one action per state (``greedy=False``, as the critic's V targets and the actor do) and their
samples per second are printed, with the prefill token counts of the prefix-sharing method. Before timing, both
decode the first ``--check`` states greedily and the number of identical actions is reported.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from archer.cli import compose_run_config
from archer.data.rollout import collect_trajectories
from archer.data.trajectory import Trajectory
from archer.models.policy import Generation, LanguagePolicy
from archer.models.prefix_generation import PrefixStats, generate_sharing_prefixes

log = logging.getLogger("benchmark_generation")
CONFIG_DIR = Path(__file__).resolve().parent / "config"


def replay_states(
    games: Sequence[Trajectory], count: int, samples_per_state: int, rng: np.random.Generator
) -> list[str]:
    """``count`` observations: ``count // samples_per_state`` states drawn with replacement from the states the games
    visited (not their final observations), each repeated ``samples_per_state`` times in a row."""
    visited = [obs for game in games for obs in game.observations[:-1]]
    picked = rng.choice(len(visited), count // samples_per_state)
    return [visited[i] for i in picked for _ in range(samples_per_state)]


def timed(fn: Callable[..., Generation], seed: int, *args: Any, **kwargs: Any) -> float:
    """Wall time in seconds of ``fn(*args, **kwargs)``, with torch's generator seeded first."""
    torch.manual_seed(seed)
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def benchmark(
    policy: LanguagePolicy, states: list[str], batch_sizes: Sequence[int], check: int, seed: int
) -> dict[str, Any]:
    """Agreement of greedy decodes on the first ``check`` states, then samples/s of both methods per batch size."""
    figures: dict[str, Any] = {"states": len(states), "distinct_states": len(set(states))}
    prompts = policy.encode_prompts(states)
    figures["mean_prompt_tokens"] = sum(len(p) for p in prompts) / len(prompts)
    if check > 0:
        subset = states[:check]
        plain = policy.generate(subset, greedy=True, batch_size=max(batch_sizes))
        shared = generate_sharing_prefixes(policy, subset, greedy=True, batch_size=max(batch_sizes))
        figures["greedy_identical"] = sum(a == b for a, b in zip(plain.token_ids, shared.token_ids, strict=True))
        figures["greedy_checked"] = len(subset)
    figures["runs"] = []
    for batch_size in batch_sizes:
        stats = PrefixStats()
        plain_s = timed(policy.generate, seed, states, False, batch_size)
        shared_s = timed(generate_sharing_prefixes, seed, policy, states, False, batch_size, stats)
        run = {
            "batch_size": batch_size,
            "generate_s": plain_s,
            "generate_samples_per_s": len(states) / plain_s,
            "shared_s": shared_s,
            "shared_samples_per_s": len(states) / shared_s,
            "speedup": plain_s / shared_s,
            "heads": stats.heads,
            "prompt_tokens": stats.prompt_tokens,
            "prefilled_tokens": stats.prefilled_tokens,
        }
        log.info("batch size %d: %s", batch_size, " ".join(f"{k}={v:.3g}" for k, v in run.items()))
        figures["runs"].append(run)
    return figures


def format_report(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['states']} replay states ({figures['distinct_states']} distinct), "
        f"{figures['mean_prompt_tokens']:.0f} prompt tokens on average",
    ]
    if "greedy_checked" in figures:
        lines.append(f"greedy decodes identical: {figures['greedy_identical']}/{figures['greedy_checked']}")
    lines.append("batch | generate samples/s | shared samples/s | speedup | heads | prefilled / prompt tokens")
    for run in figures["runs"]:
        lines.append(
            f"{run['batch_size']:5d} | {run['generate_samples_per_s']:18.1f} | {run['shared_samples_per_s']:16.1f} | "
            f"{run['speedup']:7.1f} | {run['heads']:5d} | {run['prefilled_tokens']} / {run['prompt_tokens']}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the figures written to ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config-name", default="archer_20q", help="top-level file of scripts/config")
    parser.add_argument("--games", type=int, default=64, help="games the policy plays to visit states (64)")
    parser.add_argument("--states", type=int, default=512, help="replay states sampled at (512)")
    parser.add_argument("--samples-per-state", type=int, default=1, help="consecutive copies of each state (1)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128], help="batch sizes (32 128)")
    parser.add_argument("--check", type=int, default=64, help="states decoded greedily by both methods (64)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args, overrides = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.states < args.samples_per_state or args.samples_per_state < 1:
        parser.error("--states must be at least --samples-per-state, which must be positive")
    from archer.trainer import build_trainer

    with tempfile.TemporaryDirectory(prefix="benchmark_generation_") as scratch:
        overrides = [*overrides, f"run_dir={Path(scratch) / 'run'}", "resume=false", f"torch_threads={args.threads}"]
        trainer = build_trainer(compose_run_config(CONFIG_DIR, args.config_name, overrides))
        torch.manual_seed(args.seed)
        games = collect_trajectories(trainer.env, trainer.algorithm.rollout_actor(greedy=False), args.games)
        states = replay_states(games, args.states, args.samples_per_state, np.random.default_rng(args.seed))
        figures = benchmark(trainer.policy, states, args.batch_sizes, args.check, args.seed)
    figures.update(config_name=args.config_name, games=args.games, threads=args.threads)
    print(format_report(figures))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
