"""Trajectory sets in KALM's keys, collection with the scripted expert, and the reader for KALM's ``.npy`` files.

A ``TrajectorySet`` of N episodes with horizon T holds
    observations  float32 [N, T+1, obs_dim]  states s_0 .. s_T (steps after the end repeat the last state)
    actions       int64   [N, T]             action a_t taken in s_t (discrete actions), or
                  float32 [N, T, action_dim] action vectors (continuous actions, ``BallPushContinuousEnv``)
    rewards       float32 [N, T]             1.0 on the step that reaches the goal, else 0.0
    terminals     bool    [N, T]             the goal was reached on this step (the episode ends there)
    masks         bool    [N, T]             valid steps (an episode is valid up to its terminal or T)
    goals         float32 [N, G]             goal vector (archer.kalm.env: 12; Meta-World: task one-hot)
    instructions  str     [N]                one wording per episode
It is saved as ``.npz`` without pickles (the stage caches) and read back with ``load_trajectories``.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from archer.kalm import env as ball_env
from archer.kalm import language
from archer.kalm.errors import KalmDataError, MissingFileError


@dataclass
class TrajectorySet:
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    masks: np.ndarray
    goals: np.ndarray
    instructions: np.ndarray

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def rewarded_on_success(
        cls,
        observations: np.ndarray,
        actions: np.ndarray,
        terminals: np.ndarray,
        masks: np.ndarray,
        goals: np.ndarray,
        instructions,
    ) -> TrajectorySet:
        """Episodes whose only reward is 1 on the step that reaches the goal (``terminals``), as KALM's data."""
        return cls(
            observations=observations,
            actions=actions,
            rewards=terminals.astype(np.float32),
            terminals=terminals,
            masks=masks,
            goals=np.asarray(goals, dtype=np.float32),
            instructions=np.asarray(instructions, dtype=str),
        )

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def horizon(self) -> int:
        return self.actions.shape[1]

    @property
    def lengths(self) -> np.ndarray:
        return self.masks.sum(axis=1).astype(np.int64)

    @property
    def successes(self) -> np.ndarray:
        return self.terminals.any(axis=1)

    @property
    def continuous(self) -> bool:
        """Whether the actions are vectors (``[N, T, action_dim]``) rather than indices (``[N, T]``)."""
        return self.actions.ndim == 3

    def validate(self) -> None:
        if self.observations.ndim != 3:
            raise KalmDataError(f"observations must be [N, T+1, obs_dim], got shape {self.observations.shape}")
        n, t_plus_1, _ = self.observations.shape
        if self.actions.ndim not in (2, 3):
            raise KalmDataError(
                f"actions must be [N, T] (discrete) or [N, T, action_dim] (continuous), got shape {self.actions.shape}"
            )
        expected = {
            "actions": (n, t_plus_1 - 1, *self.actions.shape[2:]),
            "rewards": (n, t_plus_1 - 1),
            "terminals": (n, t_plus_1 - 1),
            "masks": (n, t_plus_1 - 1),
            "instructions": (n,),
        }
        for key, shape in expected.items():
            if getattr(self, key).shape != shape:
                raise KalmDataError(
                    f"{key} has shape {getattr(self, key).shape}, expected {shape} from observations "
                    f"{self.observations.shape} (state and action arrays must describe the same episodes and steps)"
                )
        if self.goals.ndim != 2 or len(self.goals) != n:
            raise KalmDataError(f"goals has shape {self.goals.shape}, expected [{n}, goal_dim] (12 for ball pushing)")

    def subset(self, rows: np.ndarray) -> TrajectorySet:
        return TrajectorySet(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def save(self, path: str | Path) -> None:
        arrays = {f.name: getattr(self, f.name) for f in fields(self)}
        arrays["instructions"] = arrays["instructions"].astype(str)
        np.savez_compressed(path, **arrays)


def concatenate(sets: list[TrajectorySet]) -> TrajectorySet:
    horizons = {s.horizon for s in sets}
    if len(horizons) != 1:
        raise KalmDataError(f"cannot join trajectory sets of different horizons {sorted(horizons)}")
    action_shapes = {s.actions.shape[2:] for s in sets}
    if len(action_shapes) != 1:
        raise KalmDataError(f"cannot join trajectory sets with different action layouts {sorted(action_shapes)}")
    return TrajectorySet(**{f.name: np.concatenate([getattr(s, f.name) for s in sets]) for f in fields(TrajectorySet)})


def load_trajectories(path: str | Path) -> TrajectorySet:
    """Read a set written by ``TrajectorySet.save`` (no pickles are loaded)."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"trajectory file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as stored:
            missing = [f.name for f in fields(TrajectorySet) if f.name not in stored]
            if missing:
                raise KalmDataError(f"{path}: missing arrays {', '.join(missing)}")
            return TrajectorySet(**{f.name: stored[f.name] for f in fields(TrajectorySet)})
    except (OSError, ValueError) as error:
        if isinstance(error, KalmDataError):
            raise
        raise KalmDataError(f"{path} is not a trajectory .npz file: {error}") from error


def rollout(
    policy,
    env: ball_env.BallPushEnv,
    goals: np.ndarray,
    instructions: list[str],
    rng: np.random.Generator,
    initial_states: np.ndarray | None = None,
) -> TrajectorySet:
    """Play one episode per goal with ``policy(states [B, 10], goals [B, 12], rows [B]) -> actions`` (``[B]``
    indices, or ``[B, action_dim]`` vectors for a continuous env; ``rows`` index the episodes still running),
    stopping each episode at success or after ``env.horizon`` steps."""
    n, horizon = len(goals), env.horizon
    states = env.initial_states(goals, rng) if initial_states is None else np.asarray(initial_states, np.float32)
    observations = np.repeat(states[:, None], horizon + 1, axis=1)
    continuous = env.action_type == "continuous"
    action_dtype = np.float32 if continuous else np.int64
    actions = np.zeros((n, horizon, env.action_size) if continuous else (n, horizon), dtype=action_dtype)
    terminals = np.zeros((n, horizon), dtype=bool)
    masks = np.zeros((n, horizon), dtype=bool)
    active = np.ones(n, dtype=bool)
    for t in range(horizon):
        rows = np.flatnonzero(active)
        if len(rows) == 0:
            break
        chosen = np.asarray(policy(observations[rows, t], goals[rows], rows), dtype=action_dtype)
        if continuous:
            chosen = chosen.reshape(len(rows), env.action_size)
        next_states = env.step(observations[rows, t], chosen, rng)
        observations[rows, t + 1 :] = next_states[:, None]
        actions[rows, t], masks[rows, t] = chosen, True
        reached = ball_env.success(next_states, goals[rows])
        terminals[rows, t] = reached
        active[rows[reached]] = False
    return TrajectorySet.rewarded_on_success(observations, actions, terminals, masks, goals, instructions)


def noisy_expert(env: ball_env.BallPushEnv, epsilon: float, rng: np.random.Generator):
    """The scripted expert (``env.expert_actions``), replaced by a uniformly random action (``env.random_actions``:
    one of the 40 pushes, or a vector uniform in [-1, 1]^7) with probability ``epsilon``."""

    def act(states: np.ndarray, goals: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        actions = env.expert_actions(states, goals)
        random = rng.random(len(actions)) < epsilon
        actions[random] = env.random_actions(int(random.sum()), rng)
        return actions

    return act


class BallPushSuite:
    """The interface the pipeline uses to reach an environment, over a ball-push env (``BallPushEnv`` or
    ``BallPushContinuousEnv``; other attributes pass through). ``archer.kalm.metaworld_env.MetaWorldEnv``
    implements the same methods itself."""

    def __init__(self, env: ball_env.BallPushEnv):
        self.env = env

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    def sample_episodes(self, split: str, num_episodes: int, rng: np.random.Generator):
        """``num_episodes`` goals of ``split`` drawn uniformly, one wording each, and random starts:
        (goal vectors ``[N, 12]``, instructions, initial states ``[N, 10]``)."""
        goals = language.split_goals(split)
        chosen = [goals[i] for i in rng.integers(len(goals), size=num_episodes)]
        instructions = [language.instruction(goal, split, rng) for goal in chosen]
        vectors = language.goal_vectors(chosen)
        return vectors, instructions, self.env.initial_states(vectors, rng)

    def initial_observations(self, goals: np.ndarray, starts) -> np.ndarray:
        """The first states of episodes with these goals and starts (here the starts are the states)."""
        return np.asarray(starts, np.float32)

    def play(self, policy, goals: np.ndarray, instructions: list[str], starts, rng: np.random.Generator):
        return rollout(policy, self.env, goals, instructions, rng, initial_states=starts)

    def noisy_expert(self, epsilon: float, rng: np.random.Generator):
        return noisy_expert(self.env, epsilon, rng)

    def success(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        return ball_env.success(states, goals)

    def goal_features(self, goals: np.ndarray, instructions: list[str], encoding: str) -> np.ndarray:
        return language.encode_goals(goals, instructions, encoding)

    def vocabulary(self) -> list[str]:
        return language.vocabulary()


def suite(env):
    """``env`` behind the pipeline's interface (``BallPushSuite``); an env that has it already is returned."""
    return env if hasattr(env, "sample_episodes") else BallPushSuite(env)


def collect(env, split: str, num_episodes: int, epsilon: float, rng: np.random.Generator) -> TrajectorySet:
    """Real data: ``num_episodes`` noisy-expert episodes on goals drawn uniformly from ``split``."""
    env = suite(env)
    goals, instructions, starts = env.sample_episodes(split, num_episodes, rng)
    return env.play(env.noisy_expert(epsilon, rng), goals, instructions, starts, rng)


# ---------------------------------------------------------------------------------------------------------------
# KALM's own files (pickled dicts): load only from a path the user gives.
# ---------------------------------------------------------------------------------------------------------------

KALM_TRAJECTORY_KEYS = ("observations", "next_observations", "actions", "masks", "terminals", "goals", "instructions")
KALM_PROMPT_KEYS = ("instructions", "observations", "goals")


def _load_pickled_dict(path: str | Path, what: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"KALM {what} file {path} does not exist")
    try:
        # KALM stores its data as a pickled dict inside a .npy: only ever called on a path the user names.
        loaded = np.load(path, allow_pickle=True)
    except (OSError, ValueError, EOFError, pickle.UnpicklingError) as error:
        raise KalmDataError(f"{path} is not a KALM {what} file (not a readable .npy): {error}") from error
    if not (isinstance(loaded, np.ndarray) and loaded.shape == () and isinstance(loaded.item(), dict)):
        raise KalmDataError(f"{path} is not a KALM {what} file: expected a pickled dict, got {type(loaded).__name__}")
    return loaded.item()


def read_kalm_trajectories(path: str | Path) -> TrajectorySet:
    """Read KALM's ``clevr_robot.npy`` layout into a ``TrajectorySet`` (first wording of each episode).

    KALM's ``observations``/``next_observations`` are ``[N, T, 10]`` and ``goals`` ``[N, T, 6]``; its rewards
    (dense shaping) are replaced by this project's 0/1 success reward so real and imagined data agree.
    """
    data = _load_pickled_dict(path, "trajectory")
    missing = [key for key in KALM_TRAJECTORY_KEYS if key not in data]
    if missing:
        raise KalmDataError(
            f"{path}: missing keys {', '.join(missing)} (KALM trajectory files have {KALM_TRAJECTORY_KEYS})"
        )
    observations = np.asarray(data["observations"], dtype=np.float32)
    next_observations = np.asarray(data["next_observations"], dtype=np.float32)
    if observations.ndim != 3 or observations.shape[-1] != ball_env.STATE_DIM:
        raise KalmDataError(
            f"{path}: observations have shape {observations.shape}, expected [N, T, {ball_env.STATE_DIM}] "
            "(5 ball positions)"
        )
    n, horizon, _ = observations.shape
    if next_observations.shape != observations.shape:
        raise KalmDataError(
            f"{path}: next_observations {next_observations.shape} != observations {observations.shape}"
        )
    actions = np.asarray(data["actions"]).reshape(n, -1) if np.size(data["actions"]) == n * horizon else None
    if actions is None:
        raise KalmDataError(f"{path}: actions have shape {np.shape(data['actions'])}, expected {(n, horizon)}")
    if actions.min() < 0 or actions.max() >= ball_env.NUM_ACTIONS:
        raise KalmDataError(f"{path}: actions outside 0..{ball_env.NUM_ACTIONS - 1}")
    masks = np.asarray(data["masks"]).reshape(n, -1).astype(bool)
    terminals = np.asarray(data["terminals"]).reshape(n, -1).astype(bool)
    if masks.shape != (n, horizon) or terminals.shape != (n, horizon):
        raise KalmDataError(f"{path}: masks {masks.shape} / terminals {terminals.shape}, expected {(n, horizon)}")
    goals = np.asarray(data["goals"], dtype=np.float32)
    if goals.shape[:1] != (n,) or goals.shape[-1] != ball_env.RELATION_DIM:
        raise KalmDataError(f"{path}: goals have shape {goals.shape}, expected [N, ..., {ball_env.RELATION_DIM}]")
    goals = goals.reshape(n, -1, ball_env.RELATION_DIM)[:, 0]
    instructions = np.asarray(data["instructions"]).reshape(n, -1)[:, 0].astype(str)
    full = np.empty((n, horizon + 1, ball_env.STATE_DIM), dtype=np.float32)
    full[:, 0] = observations[:, 0]
    full[:, 1:] = next_observations
    lengths = masks.sum(axis=1)
    for row, length in enumerate(lengths):  # repeat the last valid state after the end, as collected sets do
        full[row, length + 1 :] = full[row, length]
    terminals &= masks
    padded_goals = np.zeros((n, ball_env.GOAL_DIM), dtype=np.float32)
    padded_goals[:, : ball_env.RELATION_DIM] = goals
    actions = actions.astype(np.int64)
    return TrajectorySet.rewarded_on_success(full, actions, terminals, masks, padded_goals, instructions)


@dataclass
class PromptSet:
    """Generation prompts: one instruction, initial state and goal per entry (KALM's ``*_prompt.npy``)."""

    instructions: list[str]
    initial_states: np.ndarray  # [N, 10]
    goals: np.ndarray  # [N, 12]


def read_kalm_prompts(path: str | Path) -> PromptSet:
    """Read KALM's ``clevr_*_prompt.npy``: per entry an instruction, observations (the first is the start state)
    and a 6-d goal."""
    data = _load_pickled_dict(path, "prompt")
    missing = [key for key in KALM_PROMPT_KEYS if key not in data]
    if missing:
        raise KalmDataError(f"{path}: missing keys {', '.join(missing)} (KALM prompt files have {KALM_PROMPT_KEYS})")
    sizes = {key: len(data[key]) for key in KALM_PROMPT_KEYS}
    if len(set(sizes.values())) != 1:
        raise KalmDataError(f"{path}: entries per key differ: {sizes}")
    instructions, states, goals = [], [], []
    for index in range(sizes["instructions"]):
        observation = np.asarray(data["observations"][index], dtype=np.float32)
        if observation.ndim != 2 or observation.shape[-1] != ball_env.STATE_DIM:
            raise KalmDataError(f"{path}: entry {index} observations have shape {observation.shape}, expected [T, 10]")
        goal = np.asarray(data["goals"][index], dtype=np.float32).reshape(-1)
        if goal.shape != (ball_env.RELATION_DIM,):
            raise KalmDataError(f"{path}: entry {index} goal has shape {goal.shape}, expected (6,)")
        instructions.append(str(np.asarray(data["instructions"][index]).reshape(-1)[0]))
        states.append(observation[0])
        goals.append(np.concatenate([goal, np.zeros(ball_env.RELATION_DIM, dtype=np.float32)]))
    return PromptSet(instructions, np.stack(states), np.stack(goals))
