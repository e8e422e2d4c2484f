"""The grid games' schemas: ``env=frozenlake`` and ``env=sokoban`` (``scripts/config/env/<name>.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from omegaconf import MISSING

from archer.config import EnvConfig, check, check_noise_levels

MAX_SIDE = 32
"""The largest side of a map or room: a 32 x 32 board is already longer than a prompt (1,024 cells), and larger
ones take minutes to hours per game to generate (a solvable map within the turn limit grows rare)."""


@dataclass
class GridEnvConfig(EnvConfig):
    """Fields the text grid games (FrozenLake, Sokoban) share.

    Attributes:
        batch_size: games played at once.
        max_turns: moves before a game is cut (RAGEN: 10 actions); every generated game is solvable within it.
        history_length: past moves listed in the observation.
        invalid_action_penalty: added to a turn's reward when the utterance names no move (no move happens either
            way; ``info["invalid_action"]`` marks the turn).
        data_epsilons: offline data: each generated episode follows the BFS solver but moves at random instead
            with a probability drawn uniformly from these levels.
    """

    name: str = MISSING
    batch_size: int = 32
    max_turns: int = 10
    defines_state_key: ClassVar[bool] = True  # the board (GridGameEnv.state_key)
    history_length: int = 3
    invalid_action_penalty: float = 0.0
    data_epsilons: list[float] = field(default_factory=lambda: [0.0, 0.1, 0.25, 0.5, 1.0])

    def validate(self) -> None:
        super().validate()
        check(self.history_length >= 0, "env.history_length", "must be >= 0")
        check(self.invalid_action_penalty <= 0, "env.invalid_action_penalty", "must be <= 0 (it is a penalty)")
        check_noise_levels(self.data_epsilons, "env.data_epsilons")


@dataclass
class FrozenLakeEnvConfig(GridEnvConfig):
    """FrozenLake as text (RAGEN's FrozenLake): reach the goal without falling into a hole; reward 1 on the goal.

    Attributes:
        size: side of the square map (RAGEN: 4).
        frozen_prob: probability that a generated cell is ice rather than a hole (RAGEN ``p``: 0.8).
        is_slippery: a move goes sideways with probability 2/3 (gymnasium's slippery lake; RAGEN: true).
        num_maps: distinct maps; game ``i`` is the map generated from seed ``i``.
    """

    name: str = "frozenlake"
    size: int = 4
    frozen_prob: float = 0.8
    is_slippery: bool = True
    num_maps: int = 10_000

    def validate(self) -> None:
        super().validate()
        check(2 <= self.size <= MAX_SIDE, "env.size", f"got {self.size}; must be between 2 and {MAX_SIDE}")
        check(0 < self.frozen_prob <= 1, "env.frozen_prob", "must be in (0, 1]")
        check(self.num_maps > 0, "env.num_maps", "must be positive")


@dataclass
class SokobanEnvConfig(GridEnvConfig):
    """Sokoban as text (RAGEN's SimpleSokoban): push every box onto a target; gym-sokoban's rewards.

    Attributes:
        height, width: room size including the outer wall (RAGEN: 6 x 6).
        num_boxes: boxes per room (RAGEN SimpleSokoban: 1).
        num_rooms: distinct rooms; game ``i`` is the room generated from seed ``i``.
    """

    name: str = "sokoban"
    height: int = 6
    width: int = 6
    num_boxes: int = 1
    num_rooms: int = 10_000

    def validate(self) -> None:
        super().validate()
        for key in ("height", "width"):
            side = getattr(self, key)
            check(
                4 <= side <= MAX_SIDE,
                f"env.{key}",
                f"got {side}; must be between 4 (2 cells inside the wall) and {MAX_SIDE}",
            )
        check(self.num_boxes > 0, "env.num_boxes", "must be positive")
        check(
            2 * self.num_boxes + 2 <= (self.height - 2) * (self.width - 2),
            "env.num_boxes",
            f"too many boxes for a {self.height}x{self.width} room",
        )
        check(self.num_rooms > 0, "env.num_rooms", "must be positive")
