"""The schema of ``env=external`` (``scripts/config/env/external.yaml``): a user's environment named by import path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from archer.config import EnvConfig, check

# ``package.module:callable`` or ``package.module:Class.method``.
_TARGET = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


@dataclass
class ExternalEnvConfig(EnvConfig):
    """An environment the package does not hold: ``target`` names a callable in the user's code that returns either a
    ``BatchedTextEnv`` or one gymnasium-shaped text game (``archer/envs/gym_adapter.py``), which is then played
    ``batch_size`` at a time. ``docs/add_an_environment.md`` gives the contract.

    Attributes:
        target: ``module:callable``, the module importable (on ``PYTHONPATH``), e.g. ``my_games:GuessTheNumber``.
        kwargs: keyword arguments of the callable. Besides them, the callable gets ``batch_size``, ``max_turns`` and
            ``seed`` when it names such parameters.
        batch_size: games played at once.
        max_turns: steps after which a single game still running ends truncated (a ``BatchedTextEnv`` gets the value
            when its callable takes ``max_turns``, and keeps its own limit otherwise).
        num_games: single games: game ids ``0 .. num_games - 1``, game ``i`` starting with ``reset(seed=i)``.
        num_eval_games: single games: evaluation plays game ids ``0 .. num_eval_games - 1`` (with ``eval.num_episodes``
            null, each once); training draws from all ``num_games``.
        history: single games: the policy sees the whole game so far (first observation, then each action after
            ``"> "`` and the answer) instead of the last observation alone.
        corpus_games: games played to collect the embedded tokenizer's text when the environment brings no
            ``corpus()``.
        check_games: games the start-up check plays (``archer.envs.checker``, as ``python -m archer.check_env``);
            0 skips it.
        slow_step_s: the start-up check warns about a step slower than this.
    """

    name: str = "external"
    target: str = MISSING
    kwargs: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 32
    max_turns: int = 20
    num_games: int = 10_000
    num_eval_games: int = 100
    history: bool = False
    corpus_games: int = 16
    check_games: int = 2
    slow_step_s: float = 1.0

    def validate(self) -> None:
        super().validate()
        check(
            bool(_TARGET.match(self.target)),
            "env.target",
            f"got {self.target!r}; give module:callable (e.g. my_games:GuessTheNumber), the module on PYTHONPATH",
        )
        check(self.num_games > 0, "env.num_games", "must be positive")
        check(self.num_eval_games > 0, "env.num_eval_games", "must be positive")
        check(self.corpus_games >= 0, "env.corpus_games", "must be >= 0")
        check(self.check_games >= 0, "env.check_games", "must be >= 0 (0 skips the start-up check)")
        check(self.slow_step_s > 0, "env.slow_step_s", "must be positive")
