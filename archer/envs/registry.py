"""Every game by name: one ``GameSpec`` per game package. Adding a game is its package, its YAML file
``scripts/config/env/<name>.yaml`` and one line in ``GAMES``, from which ``archer.cli.register_configs`` stores the
``env`` group's schemas."""

from __future__ import annotations

from archer.config import EnvConfig
from archer.envs.adventure import ADVENTURE
from archer.envs.base import BatchedTextEnv
from archer.envs.external import EXTERNAL
from archer.envs.grid_games import FROZEN_LAKE, SOKOBAN
from archer.envs.guess_my_city import GUESS_MY_CITY
from archer.envs.openenv import OPENENV
from archer.envs.oracles import Oracle
from archer.envs.spec import GameSpec
from archer.envs.twenty_questions import TWENTY_QUESTIONS
from archer.envs.webshop import WEBSHOP

GAMES: dict[str, GameSpec] = {
    spec.name: spec
    for spec in (TWENTY_QUESTIONS, WEBSHOP, GUESS_MY_CITY, ADVENTURE, FROZEN_LAKE, SOKOBAN, EXTERNAL, OPENENV)
}
"""``external`` plays a user's environment named by import path (``env.target``), without a package of its own
(``docs/add_an_environment.md``); ``openenv`` plays an OpenEnv environment server by address (``env.server_url``)."""


def game(name: str) -> GameSpec:
    """The game registered as ``name``.

    Raises:
        ValueError: no game has that name; the message lists the names.
    """
    try:
        return GAMES[name]
    except KeyError:
        raise ValueError(f"unknown environment {name!r}; choose one of {', '.join(sorted(GAMES))}") from None


def make_oracle(cfg: EnvConfig) -> Oracle | None:
    """The oracle of ``cfg``'s environment, or None for environments without one."""
    builder = GAMES[cfg.name].build_oracle if cfg.name in GAMES else None
    return builder(cfg) if builder is not None else None


def make_env(cfg: EnvConfig, seed: int | None = None, oracle: Oracle | None = None) -> BatchedTextEnv:
    """Build the environment ``cfg.name`` names; ``oracle`` shares one oracle object between environments."""
    return game(cfg.name).build_env(cfg, seed, oracle)
