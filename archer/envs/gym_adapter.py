"""A single-game text environment of gymnasium's shape, played as a batched one (``GymTextEnv``).

The single game is what gymnasium, GEM and most text-game libraries write::

    reset(seed=None) -> (observation, info)
    step(text) -> (observation, reward, terminated, truncated, info)

with string observations and a real-number reward. ``GymTextEnv`` plays ``batch_size`` instances of it side by side
and adds what the trainer needs of every environment:

- **seeding per game**: game id ``i`` is ``reset(seed=i)``, so a game id names one start, grouped resets (GRPO,
  GiGPO) replay it ``group_size`` times, and evaluation plays the same games in every run;
- **the turn limit**: a game still running after ``max_turns`` steps ends ``truncated``;
- **success**: ``info["success"]`` when the game sets it; otherwise the game is won when it ends by its own rules
  (``terminated``, not cut by a turn limit) with a positive last reward (``SUCCESS_RULE``);
- **the action length bound** (``BatchedTextEnv.step`` cuts actions to ``MAX_ACTION_CHARS``);
- **a tokenizer corpus** for the embedded models: the game's own ``corpus()`` when it has one, else the observations
  of a few seeded games played with a placeholder action.

What a game returns is checked at every call; a wrong type or a reward that is not a finite number raises
``TextGameError`` naming the game (``label``) and what it returned.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from archer.envs.base import BatchedTextEnv, StepResult
from archer.errors import ArcherError

SUCCESS_RULE = (
    "a game that sets no info['success'] is won when it ends by its own rules (terminated, not truncated) with a "
    "positive last reward"
)

#: The action the corpus games are played with (any text the game answers to).
CORPUS_ACTION = "?"

#: Types of ``info`` values kept in a step's info (others, such as arrays, are dropped: infos are stored as JSON).
_INFO_TYPES = (str, int, float, bool, type(None))

GameFactory = Callable[[], Any]
"""Makes one single-game environment (a fresh instance each call)."""


class TextGameError(ArcherError, TypeError):
    """A single-game environment returned something of the wrong shape or type; the message says what and where."""


def is_text_game(obj: Any) -> bool:
    """Whether ``obj`` has gymnasium's ``reset`` and ``step`` methods (the shape ``GymTextEnv`` plays)."""
    return callable(getattr(obj, "reset", None)) and callable(getattr(obj, "step", None))


def _is_bool(value: Any) -> bool:
    # numpy's bool_ is no subclass of bool; games built on numpy return it.
    return isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"


def _info_dict(info: Any, where: str, label: str) -> dict[str, Any]:
    if not isinstance(info, dict):
        raise TextGameError(f"{label}: {where} returned an info of type {type(info).__name__}; give a dict")
    return info


def _observation(observation: Any, where: str, label: str) -> str:
    if not isinstance(observation, str):
        raise TextGameError(
            f"{label}: {where} returned an observation of type {type(observation).__name__}; give a string"
        )
    return observation


def check_reset_output(output: Any, label: str = "the game") -> tuple[str, dict[str, Any]]:
    """``(observation, info)`` from what ``reset`` returned, checked.

    Raises:
        TextGameError: not a pair, the observation is no string or the info no dict.
    """
    if not isinstance(output, tuple) or len(output) != 2:
        raise TextGameError(
            f"{label}: reset must return (observation, info), got {type(output).__name__}"
            + (f" of length {len(output)}" if isinstance(output, tuple) else "")
        )
    return _observation(output[0], "reset", label), _info_dict(output[1], "reset", label)


def check_step_output(output: Any, label: str = "the game") -> tuple[str, float, bool, bool, dict[str, Any]]:
    """``(observation, reward, terminated, truncated, info)`` from what ``step`` returned, checked, the reward a
    float and the flags bools.

    Raises:
        TextGameError: not a 5-tuple (a 4-tuple is gym's old API), the observation is no string, the reward no finite
            real number, a flag no bool or the info no dict.
    """
    if not isinstance(output, tuple) or len(output) != 5:
        length = f" of length {len(output)}" if isinstance(output, tuple) else ""
        old = " (gym's old 4-tuple: split done into terminated and truncated)" if length == " of length 4" else ""
        raise TextGameError(
            f"{label}: step must return (observation, reward, terminated, truncated, info), got "
            f"{type(output).__name__}{length}{old}"
        )
    observation, reward, terminated, truncated, info = output
    observation = _observation(observation, "step", label)
    if not isinstance(reward, numbers.Real):
        raise TextGameError(f"{label}: step returned a reward of type {type(reward).__name__}; give a number")
    if not math.isfinite(float(reward)):
        raise TextGameError(f"{label}: step returned the reward {float(reward)}; give a finite number")
    for flag, value in (("terminated", terminated), ("truncated", truncated)):
        if not _is_bool(value):
            raise TextGameError(f"{label}: step returned {flag} of type {type(value).__name__}; give a bool")
    return observation, float(reward), bool(terminated), bool(truncated), _info_dict(info, "step", label)


def game_success(info: dict[str, Any], terminated: bool, reward: float) -> bool:
    """The success of a game's last step: ``info["success"]`` when given, else ``SUCCESS_RULE``."""
    if "success" in info:
        return bool(info["success"])
    return terminated and reward > 0


def played_corpus(env: BatchedTextEnv, game_ids: Sequence[int], action: str = CORPUS_ACTION) -> list[str]:
    """The observations of ``game_ids``, each played to its end with ``action`` every turn (deterministic when the
    games are), without repeats, in the order seen."""
    texts: dict[str, None] = {}
    ids = list(game_ids)
    for start in range(0, len(ids), env.batch_size):
        observations = env.reset(game_ids=ids[start : start + env.batch_size])
        texts.update(dict.fromkeys(observations))
        while any(env.active):
            results = env.step([action if alive else None for alive in env.active])
            texts.update(dict.fromkeys(r.observation for r in results if r is not None))
    return list(texts)


class GymTextEnv(BatchedTextEnv):
    """``batch_size`` single-game environments made by ``make_game``, played as one batched environment.

    Args:
        make_game: makes one single game (called once per slot, and again for the corpus).
        batch_size: games played at once.
        max_turns: steps after which a game still running ends truncated.
        num_games: game ids ``0 .. num_games - 1``; game ``i`` starts with ``reset(seed=i)``.
        num_eval_games: evaluation plays game ids ``0 .. num_eval_games - 1`` (training draws from all).
        seed: seed of the generator that draws game ids.
        history: the observation is the whole game so far (the first observation, then each turn's action after
            ``"> "`` and the game's answer) instead of the game's last observation alone.
        corpus_games: games played for the tokenizer corpus when the game brings no ``corpus()``.
        label: names the game in error messages (``env.target=module:callable``).
    """

    def __init__(
        self,
        make_game: GameFactory,
        batch_size: int,
        max_turns: int,
        num_games: int,
        num_eval_games: int = 100,
        seed: int | None = None,
        history: bool = False,
        corpus_games: int = 16,
        label: str = "the game",
    ) -> None:
        if max_turns <= 0 or num_games <= 0 or num_eval_games <= 0:
            raise ValueError(
                f"GymTextEnv needs max_turns, num_games and num_eval_games > 0, got {max_turns}, {num_games}, "
                f"{num_eval_games}"
            )
        super().__init__(batch_size, seed)
        self._make_game = make_game
        self.max_turns = max_turns
        self._num_games = num_games
        self.num_eval_games = num_eval_games
        self.history = history
        self.corpus_games = corpus_games
        self.label = label
        self.games = [make_game() for _ in range(batch_size)]
        self._turns = [0] * batch_size
        self._shown = [""] * batch_size  # what the agent sees of each game (its observation, or its history)

    @property
    def num_games(self) -> int:
        return self._num_games

    def evaluation_pool(self) -> Sequence[int]:
        return range(min(self.num_eval_games, self._num_games))

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        game_id = game_id if game_id is not None else self.draw_game_id()
        observation, _ = check_reset_output(self.games[slot].reset(seed=game_id), self.label)
        self._turns[slot] = 0
        self._shown[slot] = observation
        return observation

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        return [self._step_game(slot, action) for slot, action in zip(slots, actions, strict=True)]

    def _step_game(self, slot: int, action: str) -> StepResult:
        observation, reward, terminated, truncated, info = check_step_output(self.games[slot].step(action), self.label)
        self._turns[slot] += 1
        # The contract keeps the two apart: a game that says both ended by its own rules.
        truncated = not terminated and (truncated or self._turns[slot] >= self.max_turns)
        self._shown[slot] = f"{self._shown[slot]}\n> {action}\n{observation}" if self.history else observation
        kept = {key: value for key, value in info.items() if isinstance(value, _INFO_TYPES)}
        kept["success"] = game_success(info, terminated, reward)
        return StepResult(self._shown[slot], reward, terminated, truncated, kept)

    def corpus(self) -> list[str]:
        """The game's ``corpus()`` when it has one; else the observations of game ids ``0 .. corpus_games - 1``
        played with ``CORPUS_ACTION`` on a fresh instance (``played_corpus``)."""
        own = getattr(self.games[0], "corpus", None)
        if callable(own):
            return [str(text) for text in own()]
        fresh = GymTextEnv(
            self._make_game,
            batch_size=1,
            max_turns=self.max_turns,
            num_games=self._num_games,
            history=self.history,
            label=self.label,
        )
        return played_corpus(fresh, range(min(self.corpus_games, self._num_games)))
