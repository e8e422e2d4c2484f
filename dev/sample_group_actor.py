"""Does the actor take in what CHAI's critic ranks? CHAI with a trained policy whose advantages compare k samples.

Usage (from ``scripts/``, with the config and overrides of a CHAI run that trains its policy)::

    python ../dev/sample_group_actor.py --config-name archer_20q_paper_cpu algorithm=chai \
        algorithm.update_policy=true algorithm.num_candidates=4 run_dir=<folder> <the run's other overrides>

The run is ``run.py``'s run of that config (its start, reranked rollouts, CHAI's critic with its max backup, the
actor's schedule, KL and cloning terms, evaluations, checkpoints, ``metrics.jsonl``; a killed run resumes), with
one change in the actor: at each of ``algorithm.actor_batch_size`` states it samples k = ``algorithm.num_candidates``
utterances and gives sample j the advantage

    A_j(s) = Qbar(s, a_j) - 1 / (k - 1) * sum_{l != j} Qbar(s, a_l),      Qbar = min(Qbar1, Qbar2) (target critic),

the score CHAI reranks with, against the mean of the state's other samples (a leave-one-out baseline: it does not
depend on the sample it is subtracted from, so the policy gradient stays unbiased), instead of ArCHer's
``min(Q1, Q2)(s, a~) - min(V1, V2)(s)`` of one sample against the V head. Both estimate the same policy gradient;
this one needs only the differences between the critic's scores of the moves the policy samples at a state (whose
order CHAI's reranked play shows the critic has), not its V head's level, where ArCHer's can be off by an offset.
Each actor step therefore scores ``actor_batch_size * k`` utterances.

``--advantage best_of_k`` gives the critic's pick of the k samples (the highest score; the first of equal ones)
advantage 1 and the others 0: the actor clones the move CHAI's reranking would play, at the same states, whatever
the size of the score differences (which the leave-one-out advantages keep, and which are small beside the actor's
KL and cloning terms while the critic is young).

Greedy evaluation is the policy's greedy decode (keep ``algorithm.rerank_at_eval=false``), comparable with the
other methods' greedy figures. Rollouts act as CHAI does, by the critic's pick of k samples (``--acting reranked``,
the default), or by one sample of the policy as ArCHer's do (``--acting policy``): the actor then trains at the
states its own play reaches, not at those the critic's picks lead to.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import torch
from devkit import fit_built, parse_run, run_parser

from archer.algorithms.base import Algorithm
from archer.algorithms.chai import CHAIAlgorithm
from archer.config import CHAIConfig, RunConfig
from archer.data.trajectory import TransitionBatch
from archer.trainer import Trainer, build_trainer


def leave_one_out_advantages(scores: torch.Tensor) -> torch.Tensor:
    """Each sample's score minus the mean of its state's other samples' scores.

    Args:
        scores: (B, k) scores of k >= 2 samples at each of B states.

    Returns:
        (B, k) advantages, ``scores[i, j] - mean_{l != j} scores[i, l]``; each row sums to zero.
    """
    if scores.dim() != 2 or scores.shape[1] < 2:
        raise ValueError(f"need (states, k >= 2) scores, got shape {tuple(scores.shape)}")
    k = scores.shape[1]
    others_mean = (scores.sum(dim=1, keepdim=True) - scores) / (k - 1)
    return scores - others_mean


def best_of_k_advantages(scores: torch.Tensor) -> torch.Tensor:
    """1 for each state's highest-scored sample (the first of equal ones), 0 for the others.

    Args:
        scores: (B, k) scores of k >= 2 samples at each of B states.

    Returns:
        (B, k) one-hot rows: REINFORCE with them is the log-likelihood of the critic's pick at each state.
    """
    if scores.dim() != 2 or scores.shape[1] < 2:
        raise ValueError(f"need (states, k >= 2) scores, got shape {tuple(scores.shape)}")
    return torch.nn.functional.one_hot(scores.argmax(dim=1), scores.shape[1]).to(scores.dtype)


#: ``--advantage``: how the k samples' scores become their advantages.
ADVANTAGES = {"leave_one_out": leave_one_out_advantages, "best_of_k": best_of_k_advantages}


def build_group_trainer(cfg: RunConfig, acting: str = "reranked", advantage: str = "leave_one_out") -> Trainer:
    """``run.py``'s trainer of ``cfg`` (CHAI with ``update_policy``), its actor's advantages taken among
    ``num_candidates`` samples per state by ``advantage`` (a key of ``ADVANTAGES``) and its rollouts acting by
    ``acting``: ``reranked`` (CHAI's pick) or ``policy`` (one policy sample), as the module docstring says.

    Raises:
        ValueError: ``cfg`` is not CHAI training its policy, or evaluates by reranking, or an unknown ``acting`` or
            ``advantage`` (before anything is built).
    """
    if acting not in ("reranked", "policy"):
        raise ValueError(f"acting must be 'reranked' or 'policy', got {acting!r}")
    if advantage not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {sorted(ADVANTAGES)}, got {advantage!r}")
    transform = ADVANTAGES[advantage]
    algorithm_cfg = cfg.algorithm
    if not isinstance(algorithm_cfg, CHAIConfig) or not algorithm_cfg.update_policy:
        raise ValueError(f"needs algorithm=chai with algorithm.update_policy=true, got {algorithm_cfg.name}")
    if algorithm_cfg.rerank_at_eval:
        raise ValueError("greedy evaluation must be the policy's own: set algorithm.rerank_at_eval=false")
    trainer = build_trainer(cfg)
    algorithm = trainer.algorithm
    assert isinstance(algorithm, CHAIAlgorithm)
    k = algorithm_cfg.num_candidates
    single_sample_step = algorithm.actor_step

    def actor_advantages(observations: list[str], actions: list[str]) -> torch.Tensor:
        # ``actor_step`` below hands the states over k times each, observation-major, as ``candidate_scores`` wants.
        states = observations[::k]
        return transform(algorithm.candidate_scores(states, actions)).flatten()

    def actor_step(
        observations: list[str], iteration: int, step: int, cloned: TransitionBatch | None = None
    ) -> dict[str, float]:
        repeated = [observation for observation in observations for _ in range(k)]
        return single_sample_step(repeated, iteration, step, cloned)

    # The instance's own methods are replaced: the run is otherwise exactly run.py's.
    algorithm.actor_advantages = actor_advantages
    algorithm.actor_step = actor_step
    if acting == "policy":
        # Sampling acts as the plain policy does; greedy evaluation was the policy's own already.
        algorithm.act = lambda observations, greedy: Algorithm.act(algorithm, observations, greedy)
    return trainer


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.split("\n\n")[0], default_config="archer_20q_paper_cpu")
    parser.add_argument(
        "--acting",
        choices=("reranked", "policy"),
        default="reranked",
        help="rollouts act by the critic's pick of k policy samples (reranked, CHAI's) or one sample (policy)",
    )
    parser.add_argument(
        "--advantage",
        choices=sorted(ADVANTAGES),
        default="leave_one_out",
        help="each sample's score less its state's other samples' mean (leave_one_out), or 1 for the critic's pick "
        "and 0 for the others (best_of_k)",
    )
    args, cfg = parse_run(parser, argv)
    return fit_built(parser, args, lambda: build_group_trainer(cfg, args.acting, args.advantage))


if __name__ == "__main__":
    main(sys.argv[1:])
