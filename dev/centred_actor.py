"""Is ArCHer's actor held back by its advantages' offset, or by V's error? A run whose actor centres them, or
takes them against the critic's own Q.

Usage (from ``scripts/``, with the config and overrides of the run it stands beside)::

    python ../dev/centred_actor.py --config-name archer_20q_paper_cpu --norm mean_norm run_dir=<folder> <overrides>

The run is ``run.py``'s run of that config (a killed run resumes), with one change: each actor step's batch of
the critic's advantages ``min Q - min V`` is centred on its mean (``--norm mean_norm``) or also divided by its
standard deviation (``--norm mean_std_norm``, PPO's normalisation) before the KL penalty and the policy gradient
use it. V is regressed on the slow target critic's Q, so while the critic is young its V lags its Q and the batch
mean of the advantages sits well off zero; REINFORCE then pushes every sampled utterance down (or up) alike, which
in expectation changes nothing and adds variance. The actor's ``actor/advantage_*`` figures are the centred ones.

``--q-baseline K`` changes the baseline instead: each sample's advantage is the online critic's ``min Q`` of it less
the mean of ``min Q`` over K more utterances the policy samples afresh at the same state (``V(s) = E_pi Q(s, a)``
estimated from the critic's own Q, as ``oracle_critic.py`` estimates it from the exact values), so V's own error
leaves the actor's advantages; ``--norm none`` then leaves them as they are.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Sequence

import torch
from critic_probe import pair_values
from devkit import fit_built, parse_run, run_parser

from archer.config import RunConfig
from archer.models.prefix_generation import generate_at_states
from archer.trainer import Trainer, build_trainer

NORMS = ("none", "mean_norm", "mean_std_norm")

ActorAdvantages = Callable[[list[str], list[str]], torch.Tensor]


def normalised(advantages: torch.Tensor, norm: str, epsilon: float = 1e-6) -> torch.Tensor:
    """``A - mean(A)`` (``mean_norm``) or ``(A - mean(A)) / (std(A) + epsilon)`` (``mean_std_norm``, the standard
    deviation unbiased as in PPO's normalisation here) over the batch; a batch of one is only centred (to 0).

    Raises:
        ValueError: an unknown ``norm``.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if norm == "none":
        return advantages
    centred = advantages - advantages.mean()
    if norm == "mean_norm" or advantages.numel() < 2:
        return centred
    return centred / (advantages.std() + epsilon)


def q_baseline_advantages(trainer: Trainer, samples: int) -> ActorAdvantages:
    """``min Q(s, a) - mean_k min Q(s, a_k)`` from the online critic, ``a_k`` ``samples`` fresh policy utterances at
    ``s``."""
    algorithm = trainer.algorithm

    def actor_advantages(observations: list[str], actions: list[str]) -> torch.Tensor:
        repeated = [o for o in observations for _ in range(samples)]
        others = generate_at_states(
            trainer.policy, repeated, greedy=False, batch_size=trainer.cfg.algorithm.generation_batch_size
        ).texts
        values = pair_values(algorithm.critic, observations + repeated, actions + others)
        own, baseline = values[: len(observations)], values[len(observations) :]
        means = [statistics.fmean(baseline[i * samples : (i + 1) * samples]) for i in range(len(observations))]
        return torch.tensor([q - b for q, b in zip(own, means, strict=True)], device=trainer.policy.device)

    return actor_advantages


def build_centred_trainer(cfg: RunConfig, norm: str, q_baseline: int = 0) -> Trainer:
    """``run.py``'s trainer of ``cfg`` (online ArCHer or CHAI), its actor's advantages normalised by ``norm``; with
    ``q_baseline`` K > 0, taken against the mean of the critic's Q over K policy samples instead of its V.

    Raises:
        ValueError: an unknown ``norm``, a negative ``q_baseline``, or an algorithm whose actor is not online
            ArCHer's (before anything is built).
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if q_baseline < 0:
        raise ValueError(f"q_baseline must be >= 0, got {q_baseline}")
    if cfg.algorithm.name not in ("archer", "chai"):
        raise ValueError(f"needs online ArCHer's actor (archer or chai), got {cfg.algorithm.name}")
    trainer = build_trainer(cfg)
    algorithm = trainer.algorithm
    critic_advantages = q_baseline_advantages(trainer, q_baseline) if q_baseline else algorithm.actor_advantages
    # The instance's own method is replaced: the run is otherwise exactly run.py's.
    algorithm.actor_advantages = lambda observations, actions: normalised(
        critic_advantages(observations, actions), norm
    )
    return trainer


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.split("\n\n")[0], default_config="archer_20q")
    parser.add_argument("--norm", choices=NORMS, default="mean_norm", help="centre (mean_norm) or standardise")
    parser.add_argument(
        "--q-baseline", type=int, default=0, metavar="K", help="baseline: mean critic Q of K policy samples (0: V)"
    )
    args, cfg = parse_run(parser, argv)
    return fit_built(parser, args, lambda: build_centred_trainer(cfg, args.norm, args.q_baseline))


if __name__ == "__main__":
    main(sys.argv[1:])
