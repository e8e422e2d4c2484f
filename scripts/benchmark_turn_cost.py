"""Seconds per turn against turn index, with and without KV-cache reuse across turns.

Plays the same batches of Twenty Questions games (config ``archer_20q`` by default: the embedded policy after its
cached behaviour-cloning pretraining, built once in the cache folder) three ways and times the policy's part of
every turn:

* ``full``: every turn re-tokenises and re-encodes each game's whole history (``LanguagePolicy.generate``);
* ``reuse``: each game's KV cache is kept between turns and the re-tokenised prompt extends it
  (``model.policy.reuse_kv_cache``);
* ``append``: as ``reuse``, with token in, token out (``model.policy.append_token_ids``).

A full re-encode costs more every turn, as the history grows; with reuse a turn costs its new tokens.

Example::

    nice -n 15 python scripts/benchmark_turn_cost.py --games 32 --batches 2 --threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from hydra import compose, initialize_config_dir

from archer.cli import register_configs, to_run_config
from archer.data.rollout import collect_trajectories
from archer.envs.registry import make_env, make_oracle
from archer.models.incremental import IncrementalActor
from archer.trainer import build_trainer

CONFIG_DIR = Path(__file__).resolve().parent / "config"
MODES = ("full", "reuse", "append")


class TimedActor:
    """Plays with ``make_turn()`` for each batch and adds each call's seconds to ``seconds[turn index]``."""

    def __init__(self, make_turn: Callable[[], Callable[[list[str], list[int]], Any]]) -> None:
        self.make_turn = make_turn
        self.seconds: dict[int, list[float]] = defaultdict(list)
        self.live: dict[int, list[int]] = defaultdict(list)

    def start_batch(self) -> Callable[[list[str], list[int]], Any]:
        turn_fn = self.make_turn()
        turn = 0

        def timed(observations: list[str], slots: list[int]) -> Any:
            nonlocal turn
            turn += 1
            start = time.perf_counter()
            actions = turn_fn(observations, slots)
            self.seconds[turn].append(time.perf_counter() - start)
            self.live[turn].append(len(observations))
            return actions

        return timed


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Plays batches of games with the policy of a run config three "
        "ways (full re-encode; KV-cache reuse with re-tokenised prompts; reuse with token in, token out) and prints "
        "the policy's seconds per turn against turn index, and the totals.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--config", default="archer_20q", help="run config in scripts/config")
    parser.add_argument("--games", type=int, default=32, help="games per batch (env.batch_size)")
    parser.add_argument("--batches", type=int, default=1, help="batches played per mode")
    parser.add_argument("--max-turns", type=int, default=20, help="env.max_turns")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--greedy", action="store_true", help="greedy decoding (else sampling, as rollouts do)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES, help="modes to time")
    parser.add_argument("--seed", type=int, default=0, help="seeds the games drawn and the sampling, per mode")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the run config (e.g. cache_dir=/x)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        overrides = ["run_dir=unused", "logging.progress_bars=false", *args.overrides]
        cfg = to_run_config(compose(args.config, overrides=overrides))
    with tempfile.TemporaryDirectory() as run_dir:
        # The trainer builds (or loads from the cache) exactly the policy a run would use; the environment's batch
        # size and turn limit are changed afterwards, as they are part of the cached pretrained policy's key.
        policy = build_trainer(cfg, Path(run_dir)).policy
    env_cfg = dataclasses.replace(cfg.env, batch_size=args.games, max_turns=args.max_turns)
    env = make_env(env_cfg, seed=args.seed, oracle=make_oracle(env_cfg))
    actors = {
        "full": TimedActor(lambda: lambda observations, _: policy.generate(observations, greedy=args.greedy)),
        "reuse": TimedActor(IncrementalActor(policy, args.greedy, append_token_ids=False).start_batch),
        "append": TimedActor(IncrementalActor(policy, args.greedy, append_token_ids=True).start_batch),
    }
    policy.generate(env.reset(count=args.games), greedy=args.greedy)  # warm-up: the first call pays one-off costs
    totals, lengths = {}, {}
    for mode in args.modes:
        torch.manual_seed(args.seed)
        start = time.perf_counter()
        games = collect_trajectories(env, actors[mode], num_episodes=args.games * args.batches, seed=args.seed)
        totals[mode] = time.perf_counter() - start
        lengths[mode] = statistics.fmean(game.length for game in games)

    print(
        f"config={args.config} games/batch={args.games} batches={args.batches} threads={args.threads} "
        f"greedy={args.greedy}; seconds of the policy per turn (mean over batches), live games in brackets"
    )
    header = f"{'turn':>4} " + " ".join(f"{mode:>16}" for mode in args.modes)
    print(header)
    last = max(max(actors[mode].seconds, default=0) for mode in args.modes)
    for turn in range(1, last + 1):
        cells = []
        for mode in args.modes:
            seconds, live = actors[mode].seconds.get(turn), actors[mode].live.get(turn)
            cells.append(f"{statistics.fmean(seconds):9.3f} ({statistics.fmean(live):4.1f})" if seconds else " " * 16)
        print(f"{turn:>4} " + " ".join(f"{cell:>16}" for cell in cells))
    policy_totals = {mode: sum(map(sum, actors[mode].seconds.values())) for mode in args.modes}
    print(f"{'policy':>4} " + " ".join(f"{policy_totals[mode]:>15.2f}s" for mode in args.modes))
    print(f"{'all':>4} " + " ".join(f"{totals[mode]:>15.2f}s" for mode in args.modes) + "  (with the environment)")
    print(f"{'len':>4} " + " ".join(f"{lengths[mode]:>16.2f}" for mode in args.modes) + "  (mean game length)")


if __name__ == "__main__":
    main()
