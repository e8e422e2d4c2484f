"""Algorithms by name (the names of the ``algorithm`` config group)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archer.config import AlgorithmConfig

if TYPE_CHECKING:
    from accelerate import Accelerator

    from archer.algorithms.base import Algorithm
    from archer.models.critic import DoubleCritic
    from archer.models.policy import LanguagePolicy

ALGORITHM_NAMES = ("archer", "bc")


def make_algorithm(
    cfg: AlgorithmConfig,
    policy: LanguagePolicy,
    accelerator: Accelerator,
    critic: DoubleCritic | None = None,
    progress: bool = True,
) -> Algorithm:
    """Build the algorithm ``cfg.name`` names; algorithms with ``cfg.uses_critic`` need ``critic``."""
    if cfg.uses_critic and critic is None:
        raise ValueError(f"algorithm {cfg.name!r} needs a critic")
    if cfg.name == "bc":
        from archer.algorithms.bc import BCAlgorithm

        return BCAlgorithm(cfg, policy, accelerator, progress=progress)  # type: ignore[arg-type]
    if cfg.name == "archer":
        from archer.algorithms.archer import ArcherAlgorithm

        return ArcherAlgorithm(cfg, policy, critic, accelerator, progress=progress)  # type: ignore[arg-type]
    raise ValueError(f"unknown algorithm {cfg.name!r}; choose one of {', '.join(ALGORITHM_NAMES)}")
