"""Sokoban rooms: the push rule, a seeded room generator that only makes solvable rooms, and a BFS solver.

Written here because ``gym-sokoban`` needs the unmaintained ``gym`` package. The generator follows gym-sokoban's
idea (carve a room by a random walk, then play backwards from the solved position) but plays backwards
exhaustively: a breadth-first search over *pull* moves from every solved position gives each reachable position the
length of its shortest forward solution (a pull is exactly an undone push). The start position is then drawn among
positions whose shortest solution has length ``L``, with ``L`` uniform between half and all of the longest solution
length (at most ``max_solution_length``) the room allows; rooms whose longest is under 3 moves are redrawn. So every
room is solvable within the turn limit by construction, and few are trivial.

Coordinates are (row, column) with row 0 at the top; the outer ring of the room is always wall.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from archer.envs.grid_games.grid import DIRECTIONS, OFFSETS, shortest_moves

Cell = tuple[int, int]

MAX_SEARCH_STATES = 200_000
"""Positions a search may visit; bounds the cost of large rooms with many boxes."""


@dataclass(frozen=True)
class SokobanRoom:
    """A Sokoban position.

    Attributes:
        height, width: the room's size, outer walls included.
        walls: wall cells.
        targets: target cells (as many as boxes).
        boxes: box cells.
        player: the player's cell.
    """

    height: int
    width: int
    walls: frozenset[Cell]
    targets: frozenset[Cell]
    boxes: frozenset[Cell]
    player: Cell

    @property
    def solved(self) -> bool:
        return self.boxes == self.targets

    @property
    def boxes_on_target(self) -> int:
        return len(self.boxes & self.targets)

    def push(self, direction: str) -> tuple[SokobanRoom, str]:
        """The position after one move, and what happened: ``moved``, ``pushed a box`` or ``blocked``.

        The player walks into a free cell; walking into a box pushes it one cell if the cell behind it is free
        (not wall, not box); anything else leaves the position unchanged.
        """
        dr, dc = OFFSETS[direction]
        nxt = (self.player[0] + dr, self.player[1] + dc)
        if nxt in self.walls:
            return self, "blocked"
        if nxt not in self.boxes:
            return SokobanRoom(self.height, self.width, self.walls, self.targets, self.boxes, nxt), "moved"
        beyond = (nxt[0] + dr, nxt[1] + dc)
        if beyond in self.walls or beyond in self.boxes:
            return self, "blocked"
        boxes = (self.boxes - {nxt}) | {beyond}
        return SokobanRoom(self.height, self.width, self.walls, self.targets, boxes, nxt), "pushed a box"


def solve(room: SokobanRoom) -> list[str] | None:
    """A shortest move sequence that puts every box on a target, or None (no solution within the search bound).

    Breadth-first over (player, boxes); moves are tried in the order left, down, right, up, so the answer is
    deterministic. An already solved room gives ``[]``.
    """
    return shortest_moves(
        room,
        lambda current: current.solved,
        lambda current: ((move, current.push(move)[0]) for move in DIRECTIONS),
        key=lambda current: (current.player, current.boxes),
        max_states=MAX_SEARCH_STATES,
    )


# Shapes carved around the walk's current cell (gym-sokoban's masks): a cell, a bar of three, a square, an L.
_MASKS: tuple[tuple[Cell, ...], ...] = (
    ((0, 0),),
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, 0), (0, 1), (1, 0), (1, 1)),
    ((0, 0), (1, 0), (1, 1)),
)


def _carve(rng: np.random.Generator, height: int, width: int) -> set[Cell]:
    """Floor cells carved by a random walk inside the outer wall (gym-sokoban's room topology, simplified)."""
    cell = (int(rng.integers(1, height - 1)), int(rng.integers(1, width - 1)))
    direction = DIRECTIONS[int(rng.integers(4))]
    floor: set[Cell] = set()
    for _ in range(int(1.7 * (height + width))):
        if rng.random() < 0.35:
            direction = DIRECTIONS[int(rng.integers(4))]
        dr, dc = OFFSETS[direction]
        cell = (min(max(cell[0] + dr, 1), height - 2), min(max(cell[1] + dc, 1), width - 2))
        for mr, mc in _MASKS[int(rng.integers(len(_MASKS)))]:
            floor.add((min(max(cell[0] + mr, 1), height - 2), min(max(cell[1] + mc, 1), width - 2)))
    return floor


def _solution_lengths(
    walls: frozenset[Cell], floor: set[Cell], targets: frozenset[Cell]
) -> dict[tuple[Cell, frozenset[Cell]], int]:
    """Shortest forward solution length of every position reachable backwards from a solved one (pull BFS)."""
    distance: dict[tuple[Cell, frozenset[Cell]], int] = {}
    queue: deque[tuple[Cell, frozenset[Cell]]] = deque()
    for player in sorted(floor - targets):
        distance[(player, targets)] = 0
        queue.append((player, targets))
    while queue and len(distance) <= MAX_SEARCH_STATES:
        player, boxes = queue.popleft()
        for move in DIRECTIONS:
            dr, dc = OFFSETS[move]
            # Undo a push made in direction ``move``: the player steps back, and may pull the box in front of it.
            back = (player[0] - dr, player[1] - dc)
            if back in walls or back in boxes:
                continue
            front = (player[0] + dr, player[1] + dc)
            successors = [(back, boxes)]
            if front in boxes:
                successors.append((back, (boxes - {front}) | {player}))
            for key in successors:
                if key not in distance:
                    distance[key] = distance[(player, boxes)] + 1
                    queue.append(key)
    return distance


@lru_cache(maxsize=4096)
def generate_room(game_id: int, height: int, width: int, num_boxes: int, max_solution_length: int) -> SokobanRoom:
    """Room ``game_id``: seeded, and solvable in at most ``max_solution_length`` moves (at least 1).

    Raises:
        RuntimeError: no room with enough floor for ``num_boxes`` boxes in 1,000 attempts (the room is too small).
    """
    rng = np.random.default_rng([game_id, height, width, num_boxes])
    for _ in range(1000):
        floor = _carve(rng, height, width)
        if len(floor) < 2 * num_boxes + 2:
            continue
        walls = frozenset((r, c) for r in range(height) for c in range(width) if (r, c) not in floor)
        cells = sorted(floor)
        targets = frozenset(cells[i] for i in rng.choice(len(cells), size=num_boxes, replace=False))
        lengths = _solution_lengths(walls, floor, targets)
        by_length: dict[int, list[tuple[Cell, frozenset[Cell]]]] = {}
        for key, length in lengths.items():
            if 1 <= length <= max_solution_length:
                by_length.setdefault(length, []).append(key)
        longest = max(by_length, default=0)
        if longest < min(3, max_solution_length):
            continue
        # The harder half of what the room allows: lengths from ceil(longest / 2) to longest, uniformly.
        length = int(rng.integers((longest + 1) // 2, longest + 1))
        while length not in by_length:
            length += 1
        candidates = sorted(by_length[length], key=lambda key: (key[0], sorted(key[1])))
        player, boxes = candidates[int(rng.integers(len(candidates)))]
        return SokobanRoom(height, width, walls, targets, boxes, player)
    raise RuntimeError(
        f"could not generate a {height}x{width} Sokoban room with {num_boxes} boxes in 1000 attempts; "
        "make the room larger (env.height, env.width) or use fewer boxes (env.num_boxes)"
    )
