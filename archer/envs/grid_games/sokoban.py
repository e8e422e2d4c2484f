"""Sokoban as a batched text game (RAGEN's SimpleSokoban: 6x6 rooms, 1 box, 10 actions).

Game ``i`` is the room ``sokoban_rooms.generate_room`` builds from seed ``i``: solvable by construction within
``max_turns`` moves. Rewards are gym-sokoban's, which RAGEN uses: every turn costs 0.1 (invalid utterances and
blocked moves included), pushing a box onto a target gives +1 and off a target -1, and solving the room gives +10
(so a one-box room solved in ``n`` moves returns ``11 - 0.1 n``). The game ends (terminated) when every box is on a
target, and is truncated after ``max_turns`` turns; a room made unsolvable by a bad push simply runs out of turns.

Grid symbols are RAGEN's: ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``√`` box on a target, ``P`` player,
``S`` player on a target.
"""

from __future__ import annotations

from archer.config import EnvConfig
from archer.envs.grid_games.config import SokobanEnvConfig
from archer.envs.grid_games.grid import DIRECTIONS, GridGameEnv, MoveOutcome
from archer.envs.grid_games.sokoban_rooms import SokobanRoom, generate_room, solve

STEP_REWARD = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_REWARD = -1.0
SOLVED_REWARD = 10.0


def move_reward(before: SokobanRoom, after: SokobanRoom) -> float:
    """What a move from ``before`` to ``after`` earns besides the step cost every turn pays: +1 per box pushed
    onto a target, -1 per box pushed off one, +10 when it solves the room."""
    change = after.boxes_on_target - before.boxes_on_target
    reward = BOX_ON_TARGET_REWARD * max(change, 0) + BOX_OFF_TARGET_REWARD * max(-change, 0)
    return reward + (SOLVED_REWARD if after.solved else 0.0)


def move_values(room: SokobanRoom, turns_left: int, gamma: float = 1.0) -> dict[str, float]:
    """``Q*`` of each of the four moves at ``room`` with ``turns_left`` turns to play (this move being the first):
    the discounted return of the move, then of the best play in the turns that remain, under the game's rewards
    (every turn -0.1, a box onto a target +1 and off one -1, +10 solved; the game ends when the room is solved or
    the turns run out).

    Exact dynamic programming over the (player, boxes) positions reachable within the turns left, so a move that
    leaves the room unsolvable in time is worth only its step costs (and box rewards), far below one that keeps a
    solution: with ``gamma`` 1 and one box, a move followed by a shortest solution of ``n`` moves in all is worth
    ``11 - 0.1 n``. Blocked moves cost a turn and change nothing.

    Raises:
        ValueError: ``turns_left`` below 1, ``gamma`` outside [0, 1], or the room already solved (the game is over).
    """
    if turns_left < 1:
        raise ValueError(f"turns_left must be at least 1, got {turns_left}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    if room.solved:
        raise ValueError("the room is solved: the game is over, no move has a value")
    best: dict[tuple[tuple[int, int], frozenset[tuple[int, int]], int], float] = {}

    def value(position: SokobanRoom, turns: int) -> float:
        """``V*`` of an unsolved ``position`` with ``turns`` left."""
        if turns == 0:
            return 0.0
        key = (position.player, position.boxes, turns)
        if key not in best:
            best[key] = max(move_value(position, move, turns) for move in DIRECTIONS)
        return best[key]

    def move_value(position: SokobanRoom, move: str, turns: int) -> float:
        after, _ = position.push(move)
        reward = STEP_REWARD + move_reward(position, after)
        return reward if after.solved else reward + gamma * value(after, turns - 1)

    return {move: move_value(room, move, turns_left) for move in DIRECTIONS}


class SokobanEnv(GridGameEnv):
    """Batched Sokoban with text observations.

    Args:
        batch_size: games played at once.
        max_turns: turns before a game is cut; every room is solvable within it.
        height, width: room size including the outer wall (RAGEN: 6 x 6).
        num_boxes: boxes (and targets) per room (RAGEN SimpleSokoban: 1).
        num_rooms: how many distinct rooms (game ids) there are.
        history_length: past turns listed in the observation.
        invalid_action_penalty: added to the reward of a turn whose utterance names no move (on top of the step
            cost every turn pays).
        seed: seed of the generator that draws rooms.
    """

    SETTINGS = (*GridGameEnv.SETTINGS, "height", "width", "num_boxes", "num_rooms")

    def __init__(
        self,
        batch_size: int = 32,
        max_turns: int = 10,
        height: int = 6,
        width: int = 6,
        num_boxes: int = 1,
        num_rooms: int = 10_000,
        history_length: int = 3,
        invalid_action_penalty: float = 0.0,
        seed: int | None = None,
    ) -> None:
        if min(height, width) < 4:
            raise ValueError(f"a room needs at least 4 x 4 cells (2 x 2 inside the wall), got {height} x {width}")
        if num_boxes <= 0:
            raise ValueError(f"num_boxes must be positive, got {num_boxes}")
        if num_rooms <= 0:
            raise ValueError(f"num_rooms must be positive, got {num_rooms}")
        self.height = height
        self.width = width
        self.num_boxes = num_boxes
        self.num_rooms = num_rooms
        self._rooms: list[SokobanRoom] = []
        super().__init__(batch_size, max_turns, history_length, invalid_action_penalty, seed)

    @property
    def num_games(self) -> int:
        return self.num_rooms

    @property
    def rules(self) -> str:
        return (
            "Sokoban: push every box X onto a target O. Walk into a box to push it one cell; you cannot pull a box, "
            "push two boxes at once or walk through walls #. Answer with one move: left, right, up or down."
        )

    @property
    def legend(self) -> str:
        return "# wall, _ floor, O target, X box, √ box on a target, P player, S player on a target"

    def room(self, slot: int) -> SokobanRoom:
        """The current position in ``slot``."""
        return self._rooms[slot]

    def _prepare_batch(self, num_games: int) -> None:
        super()._prepare_batch(num_games)
        self._rooms = [None] * num_games  # type: ignore[list-item]

    def _new_game(self, slot: int, game_id: int) -> None:
        self._rooms[slot] = generate_room(game_id, self.height, self.width, self.num_boxes, self.max_turns)

    def _step_reward(self) -> float:
        return STEP_REWARD

    def _move(self, slot: int, direction: str) -> MoveOutcome:
        before = self._rooms[slot]
        after, note = before.push(direction)
        self._rooms[slot] = after
        return MoveOutcome(reward=move_reward(before, after), terminated=after.solved, success=after.solved, note=note)

    def render(self, slot: int) -> str:
        room = self._rooms[slot]
        lines = []
        for r in range(room.height):
            cells = []
            for c in range(room.width):
                cell = (r, c)
                if cell in room.walls:
                    cells.append("#")
                elif cell == room.player:
                    cells.append("S" if cell in room.targets else "P")
                elif cell in room.boxes:
                    cells.append("√" if cell in room.targets else "X")
                else:
                    cells.append("O" if cell in room.targets else "_")
            lines.append(" ".join(cells))
        return "\n".join(lines)

    def _info(self, slot: int) -> dict:
        return {"boxes_on_target": self._rooms[slot].boxes_on_target}

    def solver_move(self, slot: int) -> str | None:
        """The first move of a shortest solution from the current position, or None if it cannot be solved."""
        moves = solve(self._rooms[slot])
        return moves[0] if moves else None

    def move_values(self, slot: int, gamma: float = 1.0) -> dict[str, float]:
        """``Q*`` of the four moves in ``slot`` now, with the turns it has left (``move_values``)."""
        return move_values(self._rooms[slot], self.max_turns - self.turns(slot), gamma)


def make_sokoban_env(cfg: EnvConfig, seed: int | None = None) -> SokobanEnv:
    """The environment ``cfg`` (a ``SokobanEnvConfig``) describes."""
    assert isinstance(cfg, SokobanEnvConfig)
    return SokobanEnv.from_config(cfg, seed)
