"""``GameSpec``: everything the rest of the project needs to know about one game, exported by its package."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from archer.config import EnvConfig, RunConfig
from archer.envs.base import BatchedTextEnv
from archer.envs.oracles import Oracle

if TYPE_CHECKING:
    from archer.data.trajectory import Trajectory

EnvBuilder = Callable[[EnvConfig, int | None, Oracle | None], BatchedTextEnv]
"""Builds the environment from its config, a seed and an oracle to share (None: the builder makes its own)."""

OracleBuilder = Callable[[EnvConfig], Oracle]


@dataclass(frozen=True)
class BestFigures:
    """What the best play achieves on a list of games: the figure a learning curve is measured against.

    Attributes:
        return_mean: the mean return of the best play over the games.
        success_rate: the share of the games the best play wins (an expectation where the game is random).
        solver: one line naming how the figures were computed.
    """

    return_mean: float
    success_rate: float
    solver: str

    @classmethod
    def averaged(cls, returns: Sequence[float], successes: Sequence[float], solver: str) -> BestFigures:
        """The figures of games whose best play has these ``returns`` and ``successes`` (1 or 0 per game, or its
        chance of winning)."""
        return cls(sum(returns) / len(returns), sum(successes) / len(successes), solver)


BestFn = Callable[[EnvConfig, Sequence[int]], BestFigures]
"""The best figures of a game's config over the given game ids (``GameSpec.best``)."""

OfflineLoader = Callable[[RunConfig, Path, bool], "list[Trajectory]"]
"""The offline dataset as trajectories, given the run config, the cache folder and whether to show progress."""

Preflight = Callable[[RunConfig], None]
"""Refuses a run the game cannot play here, before anything is built (raises an ``ArcherError`` naming the key)."""


@dataclass(frozen=True)
class GameSpec:
    """One game, as registered in ``archer.envs.registry.GAMES``.

    The builders import their game's modules when called, so optional extras (Jericho, gymnasium) are only needed
    by runs that play that game.

    Attributes:
        name: the ``env.name`` that selects the game.
        config: the game's ``EnvConfig`` subclass, in its package's ``config.py``; ``archer.cli.register_configs``
            stores it as the ``env`` option ``base_<name>``, the schema ``scripts/config/env/<name>.yaml`` extends.
        build_env: builds the batched environment.
        build_oracle: builds the oracle, shared by the training and evaluation environments; None if the game has
            no oracle.
        load_offline: loads or generates the offline dataset; None if the game has none.
        chat_instructions: prompts for instruct models by template name (``model.policy.template``), each with
            ``{history}`` where the observation goes; rendered in the policy tokenizer's chat format.
        templates: plain prompt templates by name (``model.policy.template``), functions of the observation alone.
        best: the best achievable figures over a list of games (an optimal policy or an exact solver); None where
            the game has no exact solution the project can compute.
        moves: every move of the game, where that is a short fixed list (the grid games' four directions); each
            evaluation then measures how much the policy's choice among them depends on the state
            (``archer.move_dependence``). Empty for games whose moves are open text.
        preflight: the game's own start-up check, called by ``archer.preflight`` (``env=external`` plays its
            environment through the checker); None for none.
    """

    name: str
    config: type[EnvConfig]
    build_env: EnvBuilder
    build_oracle: OracleBuilder | None = None
    load_offline: OfflineLoader | None = None
    chat_instructions: Mapping[str, str] = field(default_factory=dict)
    templates: Mapping[str, Callable[[str], str]] = field(default_factory=dict)
    best: BestFn | None = None
    moves: tuple[str, ...] = ()
    preflight: Preflight | None = None
