"""A linear read-out of a critic's encoder: do its vectors of the observations carry the moves' values?

``probe_critic.py --fit-optimal`` regresses the critic's own heads on exact move values; when they fail, this says
whether the vectors under them were the limit. One ridge regression per move (the grid games have four, always the
same words) maps the standardised observation vector to that move's exact value, so the fit is closed-form and
owes nothing to the heads' optimisation; its ranking of held-out states' moves is what the encoder's vectors
support linearly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from critic_probe import MoveScorer, ValuedState

from archer.models.critic import DoubleCritic


@dataclass(frozen=True)
class RidgeFit:
    """``predict(x) = ((x - mean) / scale) @ weights + intercept`` for rows ``x``."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    intercept: float

    def predict(self, rows: np.ndarray) -> np.ndarray:
        return ((rows - self.mean) / self.scale) @ self.weights + self.intercept


def fit_ridge(rows: np.ndarray, targets: np.ndarray, penalty: float) -> RidgeFit:
    """Ridge regression of ``targets`` (N,) on ``rows`` (N, D), each column standardised by its mean and
    (population) standard deviation over ``rows``; a constant column is left at zero. The intercept, the targets'
    mean, is not penalised.

    Raises:
        ValueError: no rows, rows and targets of different lengths, or a negative penalty.
    """
    if len(rows) == 0 or len(rows) != len(targets):
        raise ValueError(f"ridge needs as many targets as rows (at least one), got {len(rows)} and {len(targets)}")
    if penalty < 0:
        raise ValueError(f"ridge penalty must be >= 0, got {penalty}")
    rows = np.asarray(rows, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    standard = (rows - mean) / scale
    intercept = float(targets.mean())
    gram = standard.T @ standard + penalty * np.eye(rows.shape[1])
    # lstsq: with no penalty and fewer rows than columns the system is singular; the least-norm solution is kept.
    weights = np.linalg.lstsq(gram, standard.T @ (targets - intercept), rcond=None)[0]
    return RidgeFit(mean, scale, weights, intercept)


def per_move_readout(
    vectors: dict[str, np.ndarray], states: Sequence[ValuedState], penalty: float
) -> tuple[MoveScorer, int]:
    """One ridge fit per move, from each state's observation vector to that move's exact value
    (``examples_readout`` on every (state, move) pair).

    Raises:
        ValueError: no states.
    """
    if not states:
        raise ValueError("a read-out needs at least one fitted state")
    examples = [
        (state.observation, move, value)
        for state in states
        for move, value in zip(state.moves, state.values, strict=True)
    ]
    return examples_readout(vectors, examples, penalty)


def examples_readout(
    vectors: dict[str, np.ndarray], examples: Sequence[tuple[str, str, float]], penalty: float
) -> tuple[MoveScorer, int]:
    """One ridge fit per move, from the observation vector to the target of each ``(observation, move, target)``
    example: exact values, or the returns that followed the moves in played games.

    Args:
        vectors: observation -> its (D,) vector; every example's observation must be there, and so must any
            observation the returned scorer is asked about.
        examples: the fitted (observation, move, target) triples.
        penalty: the ridge penalty.

    Returns:
        A scorer of (observation, moves) and the number of moves fitted; a move never fitted scores the lowest target
        seen in the fit (so it is never preferred).

    Raises:
        ValueError: no examples.
    """
    if not examples:
        raise ValueError("a read-out needs at least one fitted example")
    by_move: dict[str, tuple[list[np.ndarray], list[float]]] = {}
    for observation, move, target in examples:
        rows, targets = by_move.setdefault(move, ([], []))
        rows.append(vectors[observation])
        targets.append(target)
    fits = {move: fit_ridge(np.stack(rows), np.array(targets), penalty) for move, (rows, targets) in by_move.items()}
    floor = min(target for _, _, target in examples)

    def score(observation: str, moves: Sequence[str]) -> list[float]:
        row = vectors[observation][None, :]
        return [float(fits[move].predict(row)[0]) if move in fits else floor for move in moves]

    return score, len(fits)


def observation_vectors(critic: DoubleCritic, observations: Sequence[str]) -> dict[str, np.ndarray]:
    """``critic.embed`` of each distinct observation, in eval mode and batches of 256, as float64 arrays for a
    read-out; the critic's training mode is left as it was."""
    distinct = list(dict.fromkeys(observations))
    was_training = critic.training
    critic.eval()
    try:
        with torch.no_grad():
            encoded = [critic.embed(distinct[i : i + 256]) for i in range(0, len(distinct), 256)]
    finally:
        critic.train(was_training)
    return dict(zip(distinct, torch.cat(encoded).double().cpu().numpy(), strict=True))
