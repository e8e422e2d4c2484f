"""A numpy CLEVR-style ball-pushing environment with KALM's state, actions, goal vector and success rule.

State: the (x, y) positions of 5 balls, 10 numbers ``[x0, y0, x1, y1, ...]``. Action: ``obj * 8 + dir``, 40 pushes,
with the 8 push directions of CLEVR-Robot (``PUSH_DIRECTIONS``); a push moves the ball by ``step_size`` times
the direction vector (diagonals are 0.8 per axis, as in CLEVR-Robot), plus optional Gaussian noise, clipped to the
arena. Balls do not collide here; ``archer.kalm.clevr_mujoco_env`` simulates the same pushes in MuJoCo.

A goal is one or two relations ``(source, destination, direction)``. Its vector is KALM's 6-d layout per relation
(role per ball: 1 source, 2 destination, 0 other; then the direction code 0 behind (+y), 1 left (-x), 2 front
(-y), 3 right (+x)), two relations side by side: 12 numbers, the second relation all zero when there is one.
A relation holds when the source ball lies in the 90-degree sector of its direction around the destination ball
and within ``SUCCESS_DISTANCE`` of it (KALM's ``_success``: 0.13 * 3 + 1e-3).

The continuous-action variant (``BallPushContinuousEnv``, ``env.name=ball_push_continuous``) keeps the state, goal
vector and success rule; its action is a vector of ``CONTINUOUS_ACTION_DIM`` = 7 numbers in [-1, 1] (the range of
d3rlpy's tanh policies): 5 ball scores (the ball with the highest score is pushed; the expert writes +1 for it and
-1 for the others) and a 2-d push ``(dx, dy)``, scaled so the ball moves by ``step_size * (dx, dy)``, with the push
clipped to length 1 first (a move is never longer than ``step_size``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archer.kalm.errors import GoalSplitError

NUM_BALLS = 5
STATE_DIM = 2 * NUM_BALLS
NUM_PUSH_DIRECTIONS = 8
NUM_ACTIONS = NUM_BALLS * NUM_PUSH_DIRECTIONS
#: CLEVR-Robot's push directions, in action order (``action % 8``).
PUSH_DIRECTIONS = np.array(
    [[1, 0], [0, 1], [-1, 0], [0, -1], [0.8, 0.8], [-0.8, 0.8], [0.8, -0.8], [-0.8, -0.8]], dtype=np.float64
)
#: Relation directions: behind (+y), left (-x), front (-y), right (+x); the sector centres in degrees.
DIRECTION_NAMES = ("behind", "left", "front", "right")
SECTOR_CENTRES_DEG = np.array([90.0, 180.0, 270.0, 0.0])
SECTOR_HALF_WIDTH_DEG = 45.0
SUCCESS_DISTANCE = 0.13 * 3 + 1e-3
RELATION_DIM = NUM_BALLS + 1
MAX_RELATIONS = 2
GOAL_DIM = RELATION_DIM * MAX_RELATIONS
SOURCE, DESTINATION = 1, 2
#: Continuous actions: 5 ball scores (argmax picks the ball) and a 2-d push, each in [-1, 1].
CONTINUOUS_ACTION_DIM = NUM_BALLS + 2

Relation = tuple[int, int, int]  # (source ball, destination ball, direction code)


def check_relation(relation: Relation) -> None:
    source, destination, direction = relation
    if not (0 <= source < NUM_BALLS and 0 <= destination < NUM_BALLS and source != destination):
        raise GoalSplitError(f"relation {relation}: source and destination must be two different balls in 0..4")
    if not 0 <= direction < len(DIRECTION_NAMES):
        raise GoalSplitError(f"relation {relation}: direction must be 0..3 ({', '.join(DIRECTION_NAMES)})")


def goal_vector(relations: tuple[Relation, ...]) -> np.ndarray:
    """The 12-d goal vector of one or two relations (KALM's 6-d layout per relation)."""
    if not 1 <= len(relations) <= MAX_RELATIONS:
        raise GoalSplitError(f"a goal has 1 or {MAX_RELATIONS} relations, got {len(relations)}")
    vector = np.zeros(GOAL_DIM, dtype=np.float32)
    for index, relation in enumerate(relations):
        check_relation(relation)
        source, destination, direction = relation
        block = vector[index * RELATION_DIM : (index + 1) * RELATION_DIM]
        block[source], block[destination], block[NUM_BALLS] = SOURCE, DESTINATION, direction
    return vector


def relations_of(vector: np.ndarray) -> tuple[Relation, ...]:
    """Inverse of ``goal_vector`` (accepts a 6-d KALM vector too)."""
    vector = np.asarray(vector)
    if vector.shape[-1] not in (RELATION_DIM, GOAL_DIM):
        raise GoalSplitError(f"a goal vector has {RELATION_DIM} or {GOAL_DIM} numbers, got {vector.shape[-1]}")
    relations = []
    for index in range(vector.shape[-1] // RELATION_DIM):
        block = vector[index * RELATION_DIM : (index + 1) * RELATION_DIM]
        roles = np.rint(block[:NUM_BALLS]).astype(int)
        if not roles.any():
            continue
        sources, destinations = np.flatnonzero(roles == SOURCE), np.flatnonzero(roles == DESTINATION)
        if len(sources) != 1 or len(destinations) != 1:
            raise GoalSplitError(f"goal vector {vector.tolist()}: each relation needs one source and one destination")
        relations.append((int(sources[0]), int(destinations[0]), int(round(float(block[NUM_BALLS])))))
    return tuple(relations)


def relation_holds(states: np.ndarray, relation: Relation) -> np.ndarray:
    """Whether ``relation`` holds in each state: states ``[..., 10]`` -> bool ``[...]``."""
    source, destination, direction = relation
    balls = np.asarray(states, dtype=np.float64).reshape(*np.shape(states)[:-1], NUM_BALLS, 2)
    delta = balls[..., source, :] - balls[..., destination, :]
    delta = np.where(np.abs(delta) >= 1e-3, delta, 0.0)  # KALM ignores sub-millimetre offsets
    angle = np.degrees(np.arctan2(delta[..., 1], delta[..., 0])) % 360.0
    angle = np.where((delta == 0).all(axis=-1), 90.0, angle)  # KALM's arccos(0 / eps) reads "on top" as behind
    offset = (angle - SECTOR_CENTRES_DEG[direction] + 180.0) % 360.0 - 180.0
    # KALM's sectors are half-open, [centre - 45, centre + 45).
    in_sector = (offset >= -SECTOR_HALF_WIDTH_DEG) & (offset < SECTOR_HALF_WIDTH_DEG)
    return in_sector & (np.linalg.norm(delta, axis=-1) < SUCCESS_DISTANCE)


def success(states: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """Whether every relation of each goal holds: states ``[B, 10]``, goal vectors ``[B, 12]`` -> bool ``[B]``."""
    states, goals = np.atleast_2d(states), np.atleast_2d(goals)
    if states.shape[-1] != STATE_DIM:
        raise GoalSplitError(f"states have {states.shape[-1]} numbers, the environment's have {STATE_DIM}")
    result = np.ones(len(states), dtype=bool)
    for row, goal in enumerate(goals):
        for relation in relations_of(goal):
            result[row] &= bool(relation_holds(states[row], relation))
    return result


def step_states(states: np.ndarray, actions: np.ndarray, step_size: float, noise: float, rng, bound: float):
    """Apply one push per state: ``[B, 10]``, ``[B]`` -> next states ``[B, 10]``."""
    states = np.array(states, dtype=np.float64, copy=True).reshape(-1, NUM_BALLS, 2)
    actions = np.asarray(actions, dtype=np.int64).reshape(-1)
    if actions.min(initial=0) < 0 or actions.max(initial=0) >= NUM_ACTIONS:
        raise ValueError(f"actions must be in 0..{NUM_ACTIONS - 1}, got {actions.tolist()}")
    rows = np.arange(len(actions))
    moves = step_size * PUSH_DIRECTIONS[actions % NUM_PUSH_DIRECTIONS]
    if noise > 0:
        moves = moves + rng.normal(0.0, noise, size=moves.shape)
    states[rows, actions // NUM_PUSH_DIRECTIONS] += moves
    return np.clip(states, -bound, bound).reshape(-1, STATE_DIM).astype(np.float32)


@dataclass
class BallPushEnv:
    """A batch of ball-pushing episodes (numpy, no physics engine).

    Attributes:
        step_size: how far a push moves a ball along its direction vector.
        motion_noise: standard deviation of the Gaussian noise added to each push.
        start_range: balls start uniformly in ``[-start_range, start_range]^2``, at least ``min_gap`` apart.
        bound: balls stay in ``[-bound, bound]^2``.
        horizon: steps per episode.
    """

    step_size: float = 0.15
    motion_noise: float = 0.01
    start_range: float = 0.35
    min_gap: float = 0.15
    bound: float = 0.6
    horizon: int = 20

    def initial_states(self, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One random start per goal, with balls ``min_gap`` apart and the goal not yet achieved."""
        goals = np.atleast_2d(goals)
        states = np.zeros((len(goals), STATE_DIM), dtype=np.float32)
        for row, goal in enumerate(goals):
            while True:
                balls = rng.uniform(-self.start_range, self.start_range, size=(NUM_BALLS, 2))
                gaps = np.linalg.norm(balls[:, None] - balls[None], axis=-1) + np.eye(NUM_BALLS)
                candidate = balls.reshape(-1).astype(np.float32)
                if gaps.min() >= self.min_gap and not success(candidate, goal)[0]:
                    states[row] = candidate
                    break
        return states

    #: ``discrete``: an action is one of ``action_size`` pushes; ``continuous``: a vector of ``action_size``.
    action_type = "discrete"
    action_size = NUM_ACTIONS
    state_dim = STATE_DIM

    def step(self, states: np.ndarray, actions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return step_states(states, actions, self.step_size, self.motion_noise, rng, self.bound)

    def random_actions(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(NUM_ACTIONS, size=count)

    def expert_actions(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        return expert_actions(states, goals, self.step_size)


def _expert_target(state: np.ndarray, goal: np.ndarray, target_distance: float) -> tuple[int, np.ndarray, np.ndarray]:
    """The ball the expert pushes (the source of the first unmet relation), the balls' positions ``[5, 2]``, and the
    point it aims for: ``target_distance`` from the destination ball at the centre of the relation's sector."""
    relations = relations_of(goal)
    pending = [r for r in relations if not relation_holds(state, r)] or list(relations)
    source, destination, direction = pending[0]
    balls = state.reshape(NUM_BALLS, 2).astype(np.float64)
    centre = np.radians(SECTOR_CENTRES_DEG[direction])
    return source, balls, balls[destination] + target_distance * np.array([np.cos(centre), np.sin(centre)])


def expert_actions(states: np.ndarray, goals: np.ndarray, step_size: float, target_distance: float = 0.22):
    """The scripted expert: push the source ball of the first unmet relation towards the point ``target_distance``
    from its destination at the sector centre, choosing the push that lands closest to it. ``[B]`` int actions."""
    states, goals = np.atleast_2d(states), np.atleast_2d(goals)
    actions = np.zeros(len(states), dtype=np.int64)
    for row, (state, goal) in enumerate(zip(states, goals, strict=True)):
        source, balls, target = _expert_target(state, goal, target_distance)
        landing = balls[source] + step_size * PUSH_DIRECTIONS
        actions[row] = source * NUM_PUSH_DIRECTIONS + int(np.argmin(np.linalg.norm(landing - target, axis=-1)))
    return actions


def continuous_moves(actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Continuous actions ``[B, 7]`` -> (pushed ball ``[B]``, push ``[B, 2]`` of length <= 1)."""
    actions = np.asarray(actions, dtype=np.float64)
    if actions.ndim != 2 or actions.shape[-1] != CONTINUOUS_ACTION_DIM:
        raise ValueError(f"continuous actions must be [B, {CONTINUOUS_ACTION_DIM}], got shape {actions.shape}")
    if not np.isfinite(actions).all():
        raise ValueError("continuous actions must be finite")
    balls = actions[:, :NUM_BALLS].argmax(axis=-1)
    push = np.clip(actions[:, NUM_BALLS:], -1.0, 1.0)
    length = np.linalg.norm(push, axis=-1, keepdims=True)
    return balls, push / np.maximum(length, 1.0)


def step_states_continuous(states: np.ndarray, actions: np.ndarray, step_size: float, noise: float, rng, bound):
    """Apply one continuous push per state: ``[B, 10]``, ``[B, 7]`` -> next states ``[B, 10]``."""
    states = np.array(states, dtype=np.float64, copy=True).reshape(-1, NUM_BALLS, 2)
    balls, push = continuous_moves(np.asarray(actions).reshape(len(states), -1))
    moves = step_size * push
    if noise > 0:
        moves = moves + rng.normal(0.0, noise, size=moves.shape)
    states[np.arange(len(balls)), balls] += moves
    return np.clip(states, -bound, bound).reshape(-1, STATE_DIM).astype(np.float32)


@dataclass
class BallPushContinuousEnv(BallPushEnv):
    """``BallPushEnv`` with continuous actions (``CONTINUOUS_ACTION_DIM`` numbers in [-1, 1]; module docstring)."""

    action_type = "continuous"
    action_size = CONTINUOUS_ACTION_DIM

    def step(self, states: np.ndarray, actions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return step_states_continuous(states, actions, self.step_size, self.motion_noise, rng, self.bound)

    def random_actions(self, count: int, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, size=(count, CONTINUOUS_ACTION_DIM)).astype(np.float32)

    def expert_actions(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        return expert_continuous_actions(states, goals, self.step_size)


def expert_continuous_actions(
    states: np.ndarray, goals: np.ndarray, step_size: float, target_distance: float = 0.22
) -> np.ndarray:
    """The scripted continuous expert: the same target point as ``expert_actions``, reached by a straight push
    (one-hot +1/-1 ball scores for the source ball; the push points at the target, at most ``step_size`` long).
    ``[B, 7]`` float32 actions."""
    states, goals = np.atleast_2d(states), np.atleast_2d(goals)
    actions = -np.ones((len(states), CONTINUOUS_ACTION_DIM), dtype=np.float32)
    for row, (state, goal) in enumerate(zip(states, goals, strict=True)):
        source, balls, target = _expert_target(state, goal, target_distance)
        push = (target - balls[source]) / step_size
        actions[row, source] = 1.0
        actions[row, NUM_BALLS:] = push / max(1.0, float(np.linalg.norm(push)))
    return actions
