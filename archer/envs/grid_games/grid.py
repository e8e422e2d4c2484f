"""What the text grid games (FrozenLake, Sokoban) share: move parsing, turn limit, short history, observations.

These are the grid puzzles RAGEN trains its ArCHer baseline on, as batched text environments. The agent sees the
rules, a legend, its last few moves and the current grid; it answers with a move. The move is the first direction
word in the utterance (``left``, ``right``, ``up``, ``down``, any case, anywhere in the text): "Up", "move left",
"LEFT." and "<answer>Right</answer>" all parse. An utterance without a direction word is an invalid action: the
board does not change, the turn still counts, the game adds ``invalid_action_penalty`` (default 0) to its usual
reward for the turn, and ``info["invalid_action"]`` is True.

Observation layout (every part on its own lines, ending with a newline so that an utterance's tokens never merge
with the prompt's)::

    <rules, one paragraph>
    Legend: <symbol meanings>
    Recent moves: left (moved), up (blocked), invalid      <- the last ``history_length`` turns, or "none"
    Turns left: 7
    Grid:
    # # # # # #
    ...
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from archer.envs.base import BatchedTextEnv, StepResult
from archer.envs.grid_games.config import GridEnvConfig

DIRECTIONS = ("left", "down", "right", "up")
"""Move words, in gymnasium FrozenLake's action order (0 left, 1 down, 2 right, 3 up)."""

OFFSETS: dict[str, tuple[int, int]] = {"left": (0, -1), "down": (1, 0), "right": (0, 1), "up": (-1, 0)}
"""(row, column) change of each move; row 0 is the top of the grid."""

State = TypeVar("State")
GridEnv = TypeVar("GridEnv", bound="GridGameEnv")

_DIRECTION_WORD = re.compile(r"\b(left|right|up|down)\b", re.IGNORECASE)

GRID_HEADER = "Grid:\n"


def grid_state(observation: str) -> str:
    """The ``grid_state`` prompt template (``model.policy.template``): the state an observation shows, the grid
    first, without the rules and the legend.

    Every grid-game observation (``GridGameEnv.observation``) is the rules, the legend, the recent moves, the turns
    left and the grid, in that order. A policy trained from scratch (the embedded one) cannot read the rules, and
    their hundred tokens stand before the grid in every prompt: its actor then has to find a few dozen informative
    tokens among some 150. With the grid first, each cell also sits at the same position in every prompt. The
    returned text is ``Grid:``, the grid's rows, then the recent-moves and turns-left lines, newline-terminated.
    An observation in another format is returned unchanged.
    """
    head, found, grid = observation.partition(GRID_HEADER)
    if not found:
        return observation
    state = [line for line in head.splitlines() if line.startswith(("Recent moves:", "Turns left:"))]
    return GRID_HEADER + grid.rstrip("\n") + "\n" + "".join(f"{line}\n" for line in state)


def parse_direction(utterance: str) -> str | None:
    """The first direction word in ``utterance``, lower-cased, or None when it has none."""
    match = _DIRECTION_WORD.search(utterance)
    return match.group(1).lower() if match else None


def shortest_moves(
    start: State,
    is_goal: Callable[[State], bool],
    moves: Callable[[State], Iterable[tuple[str, State]]],
    key: Callable[[State], Hashable] = lambda state: state,
    max_states: int | None = None,
) -> list[str] | None:
    """The moves of a shortest path from ``start`` to a state where ``is_goal`` holds (breadth-first search), or
    None when there is none (or none within ``max_states`` distinct states).

    Args:
        start: the first state.
        is_goal: whether a state ends the search.
        moves: a state's ``(move, next state)`` pairs, in the order they are tried (which makes the answer
            deterministic).
        key: what tells states apart (a state seen once is not searched again).
        max_states: the most distinct states the search may see; None for no bound.
    """
    parent: dict[Hashable, tuple[Hashable, str] | None] = {key(start): None}
    queue = deque([start])
    while queue and (max_states is None or len(parent) <= max_states):
        state = queue.popleft()
        here = key(state)
        if is_goal(state):
            path: list[str] = []
            while (step := parent[here]) is not None:
                here, move = step
                path.append(move)
            return path[::-1]
        for move, following in moves(state):
            seen = key(following)
            if seen not in parent:
                parent[seen] = (here, move)
                queue.append(following)
    return None


@dataclass
class MoveOutcome:
    """What one valid move did to one game.

    Attributes:
        reward: the game's reward for the move (before any invalid-action penalty, which cannot apply here).
        terminated: the game ended by its rules (goal reached, fell into a hole, puzzle solved).
        success: the game was won.
        note: a few words for the history line, e.g. ``"moved"``, ``"blocked"``, ``"pushed a box"``.
    """

    reward: float
    terminated: bool
    success: bool
    note: str


class GridGameEnv(BatchedTextEnv):
    """Turn bookkeeping and observations of a batched grid game; subclasses own the board and its rules.

    Args:
        batch_size: games played at once.
        max_turns: turns before a game is cut (truncated).
        history_length: how many past turns the observation lists.
        invalid_action_penalty: added to the turn's reward when the utterance names no move (e.g. -0.1).
        seed: seed of the generator that draws games (and any randomness of the dynamics).
    """

    #: The constructor's arguments besides ``batch_size`` and ``seed``; each is also an attribute of the environment
    #: and a field of its config, so ``copy`` and ``from_config`` pass them on by name. A game adds its own.
    SETTINGS: tuple[str, ...] = ("max_turns", "history_length", "invalid_action_penalty")

    def __init__(
        self,
        batch_size: int,
        max_turns: int,
        history_length: int = 3,
        invalid_action_penalty: float = 0.0,
        seed: int | None = None,
    ) -> None:
        if max_turns <= 0:
            raise ValueError(f"max_turns must be positive, got {max_turns}")
        if history_length < 0:
            raise ValueError(f"history_length must be >= 0, got {history_length}")
        self.max_turns = max_turns
        self.history_length = history_length
        self.invalid_action_penalty = invalid_action_penalty
        self._turns: list[int] = []
        self._history: list[list[str]] = []
        super().__init__(batch_size, seed)

    # ---- what a game supplies -------------------------------------------------------------------------------

    @property
    @abstractmethod
    def rules(self) -> str:
        """One paragraph: the goal, the dynamics and the answer format."""

    @property
    @abstractmethod
    def legend(self) -> str:
        """What each grid symbol means."""

    @abstractmethod
    def _new_game(self, slot: int, game_id: int) -> None:
        """Set up game ``game_id`` in ``slot``."""

    @abstractmethod
    def _move(self, slot: int, direction: str) -> MoveOutcome:
        """Apply one move to the game in ``slot``."""

    @abstractmethod
    def render(self, slot: int) -> str:
        """The current grid of ``slot``: one line per row, cells separated by spaces."""

    @abstractmethod
    def solver_move(self, slot: int) -> str | None:
        """The scripted solver's next move in ``slot`` (first move of a shortest solution), or None if unsolvable."""

    @abstractmethod
    def move_values(self, slot: int, gamma: float = 1.0) -> dict[str, float]:
        """The exact ``Q*`` of each move (``DIRECTIONS``) in ``slot`` now, the turns it has left included, under the
        game's rewards discounted by ``gamma``: what a perfect critic would score them."""

    def copy(self: GridEnv, batch_size: int = 1, seed: int | None = None) -> GridEnv:
        """A new environment with the same settings (``SETTINGS``) and no games started."""
        return type(self)(batch_size=batch_size, seed=seed, **{name: getattr(self, name) for name in self.SETTINGS})

    @classmethod
    def from_config(cls: type[GridEnv], cfg: GridEnvConfig, seed: int | None = None) -> GridEnv:
        """The environment ``cfg`` describes: its ``batch_size`` and its fields named in ``SETTINGS``."""
        return cls(batch_size=cfg.batch_size, seed=seed, **{name: getattr(cfg, name) for name in cls.SETTINGS})

    def _step_reward(self) -> float:
        """Reward every turn gets on top of the move's own (Sokoban's step cost); 0 by default."""
        return 0.0

    def _info(self, slot: int) -> dict:
        """Game-specific facts added to every step's ``info``."""
        return {}

    # ---- the shared turn logic ------------------------------------------------------------------------------

    def turns(self, slot: int) -> int:
        """Turns played so far in ``slot``."""
        return self._turns[slot]

    def state_key(self, slot: int) -> str:
        """The board (``render``): the position whatever the turn and the recent moves."""
        return self.render(slot)

    def observation(self, slot: int) -> str:
        """What the agent sees in ``slot`` now."""
        recent = self._history[slot][-self.history_length :] if self.history_length else []
        lines = [
            self.rules,
            f"Legend: {self.legend}",
            f"Recent moves: {', '.join(recent) if recent else 'none'}",
            f"Turns left: {self.max_turns - self._turns[slot]}",
            "Grid:",
            self.render(slot),
        ]
        return "\n".join(lines) + "\n"

    def corpus(self) -> list[str]:
        """Observations and solver moves of the first 64 games, played by the solver on a seeded copy.

        Deterministic (the embedded tokenizer's cache is keyed by it). Every fourth game opens with an utterance that
        is not a move, so the history's ``invalid`` entry appears too.
        """
        env = self.copy(batch_size=1, seed=0)
        texts = []
        for game_id in range(min(64, self.num_games)):
            observation = env.reset(game_ids=[game_id])[0]
            turn = 0
            while env.active[0]:
                move = "wait" if turn == 0 and game_id % 4 == 3 else (env.solver_move(0) or "up")
                texts.append(f"{observation}{move}\n")
                result = env.step([move])[0]
                assert result is not None
                observation = result.observation
                turn += 1
            texts.append(observation)
        return texts

    def _prepare_batch(self, num_games: int) -> None:
        self._turns = [0] * num_games
        self._history = [[] for _ in range(num_games)]

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        self._new_game(slot, game_id if game_id is not None else self.draw_game_id())
        return self.observation(slot)

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        results = []
        for slot, action in zip(slots, actions, strict=True):
            self._turns[slot] += 1
            direction = parse_direction(action)
            reward = self._step_reward()
            if direction is None:
                outcome = MoveOutcome(reward=self.invalid_action_penalty, terminated=False, success=False, note="")
                self._history[slot].append("invalid")
            else:
                outcome = self._move(slot, direction)
                self._history[slot].append(f"{direction} ({outcome.note})")
            reward += outcome.reward
            truncated = not outcome.terminated and self._turns[slot] >= self.max_turns
            info = {"success": outcome.success, "invalid_action": direction is None, "move": direction or ""}
            results.append(
                StepResult(
                    observation=self.observation(slot),
                    reward=float(reward),
                    terminated=outcome.terminated,
                    truncated=truncated,
                    info=info | self._info(slot),
                )
            )
        return results
