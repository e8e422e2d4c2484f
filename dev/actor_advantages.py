"""Do a run's critic advantages agree with the exact ones at the actor's own samples? (Twenty Questions' subset)

Usage (from ``scripts/``, with the config name and overrides of a finished online ArCHer run on Twenty Questions over
a small word list, so that its run folder is found)::

    python ../dev/actor_advantages.py --config-name archer_20q_paper_cpu <the run's overrides> --states 512

The run's checkpoint is loaded as a resumed run would load it (its replay buffer included). ``--states`` states are
drawn from the buffer as its actor draws them (``algorithm.actor_states``), one utterance is sampled at each by the
policy as its actor samples, and ``--baseline-samples`` K more are sampled at each as a baseline. Each sample's
advantage is then computed four ways:

- ``critic``: the online critic's ``min Q - min V``, what the actor weighs the sample by;
- ``critic_q``: the same critic's ``min Q`` less its mean over the K baseline samples (V replaced by the critic's own
  Q at the policy's samples: is it V's error that hides Q's order?);
- ``exact``: ``Q*`` less its mean over the same K samples (``oracle_critic.py``'s advantage, the reference);
- ``noisy``: ``exact`` with the persistent error of ``--value-noise`` SD (``oracle_critic.py --value-noise``) on
  every value.

Printed and, with ``--json``, written, for each way but ``exact``: ``<way>/corr`` (Pearson correlation with
``exact`` over the samples), ``<way>/sign_agreement`` (the fraction of samples whose exact advantage is beyond
``--margin`` that get its sign), and ``<way>/std``; with ``exact/std`` and ``exact/mean``. A critic whose advantages
correlate with the exact ones less than noisy values that train the actor to half the gap do is failing the actor
at its own samples, whatever its order of hand-picked moves.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from critic_probe import pair_values
from devkit import parse_run, run_parser, write_records
from oracle_critic import TwentyQuestionsAdvantages

from archer.checkpointing import CHECKPOINT_FILE
from archer.envs.twenty_questions.config import TwentyQuestionsEnvConfig
from archer.models.prefix_generation import generate_at_states
from archer.trainer import Trainer, build_trainer

log = logging.getLogger(__name__)

WAYS = ("critic", "critic_q", "noisy")


def agreement(estimates: Sequence[float], exact: Sequence[float], margin: float) -> dict[str, float]:
    """Pearson correlation of ``estimates`` with ``exact``, the fraction of samples with ``|exact| > margin`` whose
    sign ``estimates`` gets, and the spread of ``estimates``.

    Raises:
        ValueError: fewer than two samples, or no spread in either (the correlation is undefined).
    """
    x, y = np.asarray(estimates, dtype=float), np.asarray(exact, dtype=float)
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        raise ValueError("the correlation needs two or more samples with some spread in both")
    clear = np.abs(y) > margin
    signs = float(np.mean(np.sign(x[clear]) == np.sign(y[clear]))) if clear.any() else float("nan")
    return {"corr": float(np.corrcoef(x, y)[0, 1]), "sign_agreement": signs, "std": float(x.std())}


def relative(values: Sequence[float], baselines: Sequence[Sequence[float]]) -> list[float]:
    """Each value less the mean of its row of baseline values."""
    return [value - statistics.fmean(row) for value, row in zip(values, baselines, strict=True)]


def sample_advantages(trainer: Trainer, states: int, samples: int, noise: float, rng: np.random.Generator) -> dict:
    """The four ways' advantages (module docstring) of one policy sample at each of ``states`` actor states."""
    cfg, algorithm = trainer.cfg, trainer.algorithm
    assert isinstance(cfg.env, TwentyQuestionsEnvConfig)
    draw = trainer.buffer.sample_policy_states if cfg.algorithm.actor_states == "policy" else trainer.buffer.sample
    observations = list(draw(states, rng).observations)
    batch = cfg.algorithm.generation_batch_size
    actions = generate_at_states(trainer.policy, observations, greedy=False, batch_size=batch).texts
    repeated = [o for o in observations for _ in range(samples)]
    others = generate_at_states(trainer.policy, repeated, greedy=False, batch_size=batch).texts

    def against_samples(value_of: Callable[[list[str], list[str]], Sequence[float]]) -> list[float]:
        """Each sample's value less the mean value of its state's baseline samples."""
        baselines = value_of(repeated, others)
        rows = [list(baselines[i * samples : (i + 1) * samples]) for i in range(len(observations))]
        return relative(value_of(observations, actions), rows)

    def values_of(values: TwentyQuestionsAdvantages) -> Callable[[list[str], list[str]], list[float]]:
        return lambda states, moves: [values.action_value(o, a) for o, a in zip(states, moves, strict=True)]

    exact = TwentyQuestionsAdvantages.of_config(cfg.env, cfg.algorithm.critic.gamma)
    noisy = replace(exact, noise=noise, noise_seed=cfg.seed)
    return {
        "critic": algorithm.actor_advantages(observations, actions).cpu().tolist(),
        "critic_q": against_samples(lambda states, moves: pair_values(algorithm.critic, states, moves)),
        "exact": against_samples(values_of(exact)),
        "noisy": against_samples(values_of(noisy)),
    }


def figures_of(advantages: dict[str, list[float]], margin: float) -> dict[str, float]:
    """``<way>/corr``, ``<way>/sign_agreement``, ``<way>/std`` for each way, and the exact advantages' spread."""
    exact = advantages["exact"]
    figures = {"exact/mean": statistics.fmean(exact), "exact/std": float(np.std(exact))}
    for way in WAYS:
        figures.update({f"{way}/{key}": value for key, value in agreement(advantages[way], exact, margin).items()})
    return figures


def build_parser() -> argparse.ArgumentParser:
    parser = run_parser(__doc__.split("\n\n")[0], default_config="archer_20q_paper_cpu")
    parser.add_argument("--states", type=int, default=512, help="actor states drawn from the buffer (512)")
    parser.add_argument("--baseline-samples", type=int, default=4, help="policy samples per state for baselines (4)")
    parser.add_argument("--value-noise", type=float, default=0.5, help="SD of the noisy way's errors (0.5)")
    parser.add_argument("--margin", type=float, default=0.1, help="exact advantages within this have no sign (0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the states and samples (0)")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = build_parser()
    args, cfg = parse_run(parser, argv)
    if args.states < 2 or args.baseline_samples < 1 or args.value_noise < 0 or args.margin < 0:
        parser.error("--states must be >= 2, --baseline-samples >= 1, --value-noise and --margin >= 0")
    if cfg.algorithm.name != "archer" or not isinstance(cfg.env, TwentyQuestionsEnvConfig):
        parser.error(f"--config-name {args.config_name}: needs an online ArCHer run on Twenty Questions")
    try:
        TwentyQuestionsAdvantages.of_config(cfg.env, cfg.algorithm.critic.gamma)
    except ValueError as error:
        parser.error(f"--config-name {args.config_name}: {error}")
    run_dir = Path(cfg.run_dir).expanduser().resolve()
    if not (run_dir / CHECKPOINT_FILE).exists():
        raise SystemExit(f"no {CHECKPOINT_FILE} in {run_dir}: run the config first")
    trainer = build_trainer(replace(cfg, resume=True), run_dir)
    torch.manual_seed(args.seed)
    advantages = sample_advantages(
        trainer, args.states, args.baseline_samples, args.value_noise, np.random.default_rng(args.seed)
    )
    figures = figures_of(advantages, args.margin)
    log.info("%s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    write_records(args.json, figures)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
