"""How well does a finished run act, over more games than its evaluations played?

A run evaluates on its fixed games (Twenty Questions' subset: each of its 10 words once). Greedy decoding plays
them the same way every time, but some acting is random: CHAI with ``algorithm.rerank_at_eval`` picks among policy
samples, and sampled play draws every move. Ten such games move the mean by about 1.5 with one word. This script
loads a run's checkpoint (as a resumed run would; nothing is written to the run folder) and plays its evaluation
games ``--repeats`` times each, seeded from ``eval.seed`` as a run's sampled evaluation is:

- ``--acting greedy`` (default): the algorithm's greedy evaluation (``rollout_actor(greedy=True)``: one greedy decode
  for most methods, CHAI's reranking with ``rerank_at_eval``);
- ``--acting sampled``: as its training rollouts act (``rollout_actor(greedy=False)``: CHAI reranks samples).

``--untrained`` plays a fresh run's networks instead: the starting policy, and for CHAI an untrained critic, the
figure a trained run's reranked play should be set against. Printed and, with ``--json``, written: ``eval/*`` as a
run's evaluation logs them, and ``eval/return_sem``, the standard error of the mean return.

Usage (from ``scripts/``, with the run's config name and overrides, so the same run folder is found)::

    python ../dev/evaluate_run.py --config-name chai_20q algorithm.rerank_at_eval=true seed=1 --repeats 20
    python ../dev/evaluate_run.py --config-name chai_20q algorithm.rerank_at_eval=true --untrained --repeats 20
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from devkit import parse_run, run_parser, write_records

from archer.evaluation import play_seeded
from archer.trainer import CHECKPOINT_FILE, build_trainer

log = logging.getLogger("evaluate_run")


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="times each evaluation game is played (20)")
    parser.add_argument(
        "--acting", choices=("greedy", "sampled"), default="greedy", help="the run's greedy evaluation or its rollouts"
    )
    parser.add_argument("--untrained", action="store_true", help="a fresh run's networks instead of the checkpoint's")
    args, cfg = parse_run(parser, argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    run_dir = Path(cfg.run_dir).expanduser().resolve()
    if not args.untrained and not (run_dir / CHECKPOINT_FILE).exists():
        parser.error(f"no {CHECKPOINT_FILE} in {run_dir}: run the config first (or pass --untrained)")
    # The trainer is built in a scratch folder from the run's checkpoint, so the run's own records stay untouched.
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        if not args.untrained:
            (scratch / CHECKPOINT_FILE).symlink_to(run_dir / CHECKPOINT_FILE)
        trainer = build_trainer(replace(cfg, resume=not args.untrained), scratch)
        games = [game for game in trainer.eval_games.greedy for _ in range(args.repeats)]
        result = play_seeded(
            trainer.eval_env,
            trainer.algorithm.rollout_actor(greedy=args.acting == "greedy"),
            games,
            cfg.eval.seed,
            trainer.placement,
            trainer.policy.model,
            trainer.progress,
        )
    figures = result.metrics()
    figures["eval/return_sem"] = result.std_return / math.sqrt(len(games))
    figures["eval/iteration"] = float(trainer.start_iteration)
    log.info("%s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    write_records(args.json, figures)
    return figures


if __name__ == "__main__":
    main()
