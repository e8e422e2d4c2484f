"""Evaluation on fixed, seeded sets of games, so curves are comparable across iterations and runs: greedy play, and
optionally sampled play (``eval.sampled_episodes``) with its own seeded random draws."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from archer.config import EvalConfig
from archer.data.rollout import ActFn, collect_trajectories
from archer.data.trajectory import Trajectory
from archer.envs.base import BatchedTextEnv


@dataclass
class EvalResult:
    """Summary of one evaluation.

    Attributes:
        returns: undiscounted return of each game, in the order of the evaluation set.
        successes: whether each game was won.
        lengths: turns of each game.
        sample_games: a few finished games (final observation and info) to read.
    """

    returns: list[float]
    successes: list[bool]
    lengths: list[int]
    sample_games: list[dict] = field(default_factory=list)

    @property
    def mean_return(self) -> float:
        return statistics.fmean(self.returns)

    @property
    def std_return(self) -> float:
        return statistics.pstdev(self.returns)

    @property
    def success_rate(self) -> float:
        return sum(self.successes) / len(self.successes)

    def metrics(self, prefix: str = "eval", kind: str = "") -> dict[str, float]:
        """Return, success and length statistics as ``{prefix}/{kind}return_mean`` and so on.

        Args:
            prefix: the metric section.
            kind: put before each quantity: ``"sampled_"`` gives ``eval/sampled_return_mean``.
        """
        return {
            f"{prefix}/{kind}return_mean": self.mean_return,
            f"{prefix}/{kind}return_std": self.std_return,
            f"{prefix}/{kind}success_rate": self.success_rate,
            f"{prefix}/{kind}length_mean": statistics.fmean(self.lengths),
            f"{prefix}/{kind}episodes": float(len(self.returns)),
        }

    @classmethod
    def from_trajectories(cls, trajectories: list[Trajectory], num_samples: int = 5) -> EvalResult:
        return cls(
            returns=[t.episode_return for t in trajectories],
            successes=[t.success for t in trajectories],
            lengths=[t.length for t in trajectories],
            sample_games=[{"final_observation": t.observations[-1], **t.info} for t in trajectories[:num_samples]],
        )


def evaluation_game_ids(cfg: EvalConfig, pool: Sequence[int]) -> list[int]:
    """The fixed evaluation set: every game of ``pool`` once, or ``num_episodes`` games drawn with ``cfg.seed``."""
    pool = list(pool)
    if cfg.num_episodes is None:
        return pool
    rng = random.Random(cfg.seed)
    return [rng.choice(pool) for _ in range(cfg.num_episodes)]


def sampled_evaluation_game_ids(cfg: EvalConfig, pool: Sequence[int]) -> list[int]:
    """The fixed games of the sampled evaluation: the evaluation games in an order shuffled with ``cfg.seed``,
    repeated until there are ``cfg.sampled_episodes``, so every game is played equally often (to within one)."""
    order = list(evaluation_game_ids(cfg, pool))
    random.Random(cfg.seed).shuffle(order)
    return [order[i % len(order)] for i in range(cfg.sampled_episodes)]


def evaluate(env: BatchedTextEnv, act: ActFn, game_ids: list[int], progress: bool = False) -> EvalResult:
    """Play ``game_ids`` with ``act`` (which should decode greedily) and summarise."""
    trajectories = collect_trajectories(env, act, game_ids=game_ids, progress=progress, description="eval")
    return EvalResult.from_trajectories(trajectories)
