"""FrozenLake as a batched text game (RAGEN's setting), on gymnasium's FrozenLake dynamics.

Game ``i`` is a random ``size`` x ``size`` map generated from seed ``i``: each cell is frozen with probability
``frozen_prob``, otherwise a hole; start and goal are two random distinct frozen cells (RAGEN places them at random
too; gymnasium's own generator always uses the corners), and the map is redrawn until the goal can be reached in at
most ``max_path_length`` moves. gymnasium's ``FrozenLakeEnv`` then plays the map: with ``is_slippery`` a move goes
the intended way with probability 1/3 and to either side otherwise (RAGEN's default), and the slips are drawn from
a generator seeded by the batched environment, so a seeded reset replays the same games.

Reward 1 on reaching the goal, 0 otherwise (gymnasium's schedule); the game ends (terminated) on the goal or in a
hole, and is truncated after ``max_turns`` turns (RAGEN: 10 actions). A move into the edge leaves the player in
place. Grid symbols are RAGEN's: ``P`` player, ``_`` frozen ice, ``O`` hole, ``G`` goal, ``X`` player in a hole,
``√`` player on the goal.

Requires the optional ``gymnasium`` package (``pip install -e '.[grid]'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from archer.config import EnvConfig
from archer.envs.grid_games.config import FrozenLakeEnvConfig
from archer.envs.grid_games.grid import DIRECTIONS, OFFSETS, GridGameEnv, MoveOutcome, shortest_moves
from archer.errors import MissingExtraError

_SYMBOLS = {"S": "_", "F": "_", "H": "O", "G": "G"}


def _import_frozen_lake():
    try:
        from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv
    except ImportError as error:
        raise MissingExtraError(
            "the frozenlake environment needs gymnasium: pip install -e '.[grid]' (or pip install gymnasium)"
        ) from error
    return FrozenLakeEnv


def shortest_path(desc: tuple[str, ...], start: tuple[int, int]) -> list[str] | None:
    """Moves of a shortest hole-free path from ``start`` to the goal on map ``desc``, or None when there is none.

    Slipping is ignored: this is the plan a non-slippery lake would follow exactly. Moves are tried in the order
    left, down, right, up, so the path is deterministic.
    """
    rows, cols = len(desc), len(desc[0])

    def moves(cell: tuple[int, int]) -> Iterator[tuple[str, tuple[int, int]]]:
        for move in DIRECTIONS:
            dr, dc = OFFSETS[move]
            row, col = cell[0] + dr, cell[1] + dc
            if 0 <= row < rows and 0 <= col < cols and desc[row][col] != "H":
                yield move, (row, col)

    return shortest_moves(start, lambda cell: desc[cell[0]][cell[1]] == "G", moves)


@lru_cache(maxsize=4096)
def generate_map(game_id: int, size: int, frozen_prob: float, max_path_length: int) -> tuple[str, ...]:
    """Map ``game_id``: rows of ``S`` (start), ``F`` (frozen), ``H`` (hole), ``G`` (goal); always solvable.

    Raises:
        RuntimeError: no solvable map within 1,000 draws (a tiny ``frozen_prob`` or ``max_path_length``).
    """
    rng = np.random.default_rng([game_id, size])
    for _ in range(1000):
        frozen = rng.random((size, size)) < frozen_prob
        start, goal = rng.choice(size * size, size=2, replace=False)
        grid = [["F" if cell else "H" for cell in row] for row in frozen]
        grid[start // size][start % size] = "S"
        grid[goal // size][goal % size] = "G"
        desc = tuple("".join(row) for row in grid)
        path = shortest_path(desc, (int(start) // size, int(start) % size))
        if path is not None and len(path) <= max_path_length:
            return desc
    raise RuntimeError(
        f"no solvable {size}x{size} FrozenLake map with frozen_prob={frozen_prob} and a path of at most "
        f"{max_path_length} moves in 1000 draws; raise env.frozen_prob or env.max_turns"
    )


@lru_cache(maxsize=256)
def _turn_values(desc: tuple[str, ...], turns: int, is_slippery: bool, gamma: float) -> tuple[np.ndarray, ...]:
    """``Q_k[s, a]`` for ``k`` = 1 .. ``turns`` turns left (this move the first of them): the discounted chance of
    reaching the goal of ``desc`` from cell ``s`` (row-major) by move ``a`` (gymnasium's action order), then the
    best moves; finite-horizon value iteration over gymnasium's own transition table (``FrozenLakeEnv.P``), so the
    slips are exactly the game's. Read-only arrays; entry ``k - 1`` is ``Q_k``."""
    game = _import_frozen_lake()(desc=list(desc), is_slippery=is_slippery)
    num_states = len(desc) * len(desc[0])
    value = np.zeros(num_states)  # V_0: no turn left, no chance
    tables = []
    for _ in range(turns):
        q = np.array(
            [
                [
                    sum(
                        prob * (reward + (0.0 if done else gamma * value[nxt]))
                        for prob, nxt, reward, done in game.P[s][a]
                    )
                    for a in range(len(DIRECTIONS))
                ]
                for s in range(num_states)
            ]
        )
        q.flags.writeable = False
        tables.append(q)
        value = q.max(axis=1)
    return tuple(tables)


def optimal_success(desc: tuple[str, ...], max_turns: int, is_slippery: bool) -> float:
    """The probability that the best policy reaches the goal of map ``desc`` from its start within ``max_turns``
    moves: finite-horizon value iteration over gymnasium's own transition table (``FrozenLakeEnv.P``), so the slips
    are exactly the game's. The best policy may depend on the turns left, which the observation shows.

    Wasting a turn (an utterance with no move) never raises the chance, so only the four moves are considered.
    """
    start = next(r * len(desc[0]) + c for r, row in enumerate(desc) for c, ch in enumerate(row) if ch == "S")
    return float(_turn_values(tuple(desc), max_turns, is_slippery, 1.0)[max_turns - 1][start].max())


def move_values(
    desc: tuple[str, ...], cell: tuple[int, int], turns_left: int, is_slippery: bool, gamma: float = 1.0
) -> dict[str, float]:
    """``Q*`` of each of the four moves at ``cell`` (row, column) of map ``desc`` with ``turns_left`` turns to play
    (this move being the first): with ``gamma`` 1 the chance of reaching the goal within the turns left by making
    the move and then the best moves; with ``gamma`` below 1 the reward 1 on the goal is discounted by the turns it
    takes. From the same value iteration as ``optimal_success`` (whose figure is the best move's value at the start).

    Raises:
        ValueError: ``turns_left`` below 1, ``gamma`` outside [0, 1], or ``cell`` off the map, in a hole or on the
            goal (the game is over there).
    """
    if turns_left < 1:
        raise ValueError(f"turns_left must be at least 1, got {turns_left}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    row, col = cell
    if not (0 <= row < len(desc) and 0 <= col < len(desc[0])):
        raise ValueError(f"cell {cell} is off the {len(desc)}x{len(desc[0])} map")
    if desc[row][col] in "HG":
        raise ValueError(f"cell {cell} is {'a hole' if desc[row][col] == 'H' else 'the goal'}: the game is over")
    q = _turn_values(tuple(desc), turns_left, is_slippery, float(gamma))[turns_left - 1]
    return {move: float(q[row * len(desc[0]) + col, a]) for a, move in enumerate(DIRECTIONS)}


class FrozenLakeEnv(GridGameEnv):
    """Batched FrozenLake with text observations.

    Args:
        batch_size: games played at once.
        max_turns: turns before a game is cut.
        size: the map's side length (RAGEN: 4).
        frozen_prob: probability that a generated cell is frozen rather than a hole (RAGEN ``p``: 0.8).
        is_slippery: moves slip sideways with probability 2/3 (RAGEN: true).
        num_maps: how many distinct maps (game ids) there are.
        history_length: past turns listed in the observation.
        invalid_action_penalty: added to the reward of a turn whose utterance names no move.
        seed: seed of the generator that draws maps and slips.
    """

    SETTINGS = (*GridGameEnv.SETTINGS, "size", "frozen_prob", "is_slippery", "num_maps")

    def __init__(
        self,
        batch_size: int = 32,
        max_turns: int = 10,
        size: int = 4,
        frozen_prob: float = 0.8,
        is_slippery: bool = True,
        num_maps: int = 10_000,
        history_length: int = 3,
        invalid_action_penalty: float = 0.0,
        seed: int | None = None,
    ) -> None:
        if size < 2:
            raise ValueError(f"size must be at least 2, got {size}")
        if not 0 < frozen_prob <= 1:
            raise ValueError(f"frozen_prob must be in (0, 1], got {frozen_prob}")
        if num_maps <= 0:
            raise ValueError(f"num_maps must be positive, got {num_maps}")
        self._gym_class = _import_frozen_lake()
        self.size = size
        self.frozen_prob = frozen_prob
        self.is_slippery = is_slippery
        self.num_maps = num_maps
        self._maps: list[tuple[str, ...]] = []
        self._games: list = []
        super().__init__(batch_size, max_turns, history_length, invalid_action_penalty, seed)

    @property
    def num_games(self) -> int:
        return self.num_maps

    @property
    def rules(self) -> str:
        slip = " The ice is slippery: a move may take you sideways instead." if self.is_slippery else ""
        return (
            "FrozenLake: walk from your position P to the goal G over the frozen lake without falling into a hole O."
            f"{slip} Answer with one move: left, right, up or down."
        )

    @property
    def legend(self) -> str:
        return "P player, _ frozen ice, O hole, G goal, X player in a hole, √ player on the goal"

    def map(self, slot: int) -> tuple[str, ...]:
        """The map of the game in ``slot`` (rows of S, F, H, G)."""
        return self._maps[slot]

    def position(self, slot: int) -> tuple[int, int]:
        """The player's (row, column) in ``slot``."""
        return divmod(int(self._games[slot].s), self.size)

    def _prepare_batch(self, num_games: int) -> None:
        super()._prepare_batch(num_games)
        self._maps = [()] * num_games
        self._games = [None] * num_games

    def _new_game(self, slot: int, game_id: int) -> None:
        desc = generate_map(game_id, self.size, self.frozen_prob, self.max_turns)
        game = self._gym_class(desc=list(desc), is_slippery=self.is_slippery)
        game.reset(seed=self._rng.randrange(2**31))
        self._maps[slot] = desc
        self._games[slot] = game

    def _move(self, slot: int, direction: str) -> MoveOutcome:
        before = self.position(slot)
        _, reward, terminated, _, _ = self._games[slot].step(DIRECTIONS.index(direction))
        after = self.position(slot)
        tile = self._maps[slot][after[0]][after[1]]
        if tile == "H":
            note = "fell into a hole"
        elif after == before:
            note = "no effect"
        else:
            moved = next(m for m, (dr, dc) in OFFSETS.items() if (before[0] + dr, before[1] + dc) == after)
            note = "moved" if moved == direction else f"slipped {moved}"
        return MoveOutcome(reward=float(reward), terminated=bool(terminated), success=tile == "G", note=note)

    def render(self, slot: int) -> str:
        row, col = self.position(slot)
        lines = []
        for r, line in enumerate(self._maps[slot]):
            cells = [_SYMBOLS[ch] for ch in line]
            if r == row:
                cells[col] = {"H": "X", "G": "√"}.get(line[col], "P")
            lines.append(" ".join(cells))
        return "\n".join(lines)

    def _info(self, slot: int) -> dict:
        return {"map": "/".join(self._maps[slot])}

    def solver_move(self, slot: int) -> str | None:
        """The first move of a shortest hole-free path from the player to the goal (slips ignored), or None."""
        path = shortest_path(self._maps[slot], self.position(slot))
        return path[0] if path else None

    def move_values(self, slot: int, gamma: float = 1.0) -> dict[str, float]:
        """``Q*`` of the four moves in ``slot`` now, with the turns it has left (``move_values``)."""
        return move_values(
            self._maps[slot], self.position(slot), self.max_turns - self.turns(slot), self.is_slippery, gamma
        )


def make_frozen_lake_env(cfg: EnvConfig, seed: int | None = None) -> FrozenLakeEnv:
    """The environment ``cfg`` (a ``FrozenLakeEnvConfig``) describes."""
    assert isinstance(cfg, FrozenLakeEnvConfig)
    return FrozenLakeEnv.from_config(cfg, seed)
