"""The base of the environment schemas (config group ``env``), and the checks several games' schemas share.

Each game's schema, an ``EnvConfig`` subclass, lives in its package (``archer/envs/<game>/config.py``) and is named
by the game's ``GameSpec``; ``archer.cli.register_configs`` stores every one from ``archer.envs.registry.GAMES`` as
``base_<game>``. ``RunConfig.env`` is typed as the base class here, with ``name`` as the discriminator.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from omegaconf import MISSING

from archer.config.checks import check, check_path


@dataclass
class EnvConfig:
    """Fields every environment has.

    Attributes:
        name: which environment (``twenty_questions``, ...); selects the builder.
        batch_size: games played at once by one environment object (reference ``bsize``: 32).
        max_turns: turns before the game is cut (reference ``max_conversation_length``: 20).
    """

    name: str = MISSING
    batch_size: int = 32
    max_turns: int = 20
    #: Whether the game's environment defines a state key (``BatchedTextEnv.state_key``, the grid games' board),
    #: which ``algorithm.anchor=state`` groups turns by. Not a setting: a fact about the game.
    defines_state_key: ClassVar[bool] = False

    def validate(self) -> None:
        # Each game's schema fixes its name: another name would build a game whose settings this schema lacks.
        game = next(f.default for f in fields(self) if f.name == "name")
        if isinstance(game, str) and game != MISSING:
            check(
                self.name == game,
                "env.name",
                f"got {self.name!r}, but the env group chose {game}; choose the game with env=<game> "
                "(scripts/config/env/), not env.name",
            )
        check(self.batch_size > 0, "env.batch_size", "must be positive")
        check(self.max_turns > 0, "env.max_turns", "must be positive")


def check_oracle_paths(oracle_path: str | None, base_model: str) -> None:
    """Check ``env.oracle_path`` and ``env.oracle_base_model`` of a game with a seq2seq oracle."""
    check_path(oracle_path, "env.oracle_path", "give the t5 oracle's checkpoint file, or null")
    check_path(base_model, "env.oracle_base_model", "give a hub name or a folder")


def check_noise_levels(levels: list[float], key: str) -> None:
    """Check the noise levels (``key``) an offline dataset is generated with."""
    check(len(levels) > 0, key, "give at least one level")
    check(all(0 <= level <= 1 for level in levels), key, f"every level must be in [0, 1], got {levels}")
