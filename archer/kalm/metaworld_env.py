"""Meta-World (optional extra ``metaworld``: ``metaworld==3.1.1`` with ``mujoco==3.3.0``) behind the KALM pipeline.

A few v3 tasks, goal-observable (the 39-d observation ends with the goal position), 4-d continuous actions in
[-1, 1]. Real data comes from Meta-World's own scripted policies (``metaworld.policies``), replaced by a uniform
random action with probability ``collect.expert_epsilon``. The splits follow KALM's Meta-World levels, cut down
to tasks whose success can be read off an observation:

    train / rephrase: reach, push, pick-place (rephrase: new sentence frames)
    easy: reach-wall, push-wall, pick-place-wall (KALM's easy level has these)
    hard: push-back, soccer (new tasks)

The goal vector is the task's one-hot over ``TASKS`` (8 numbers); the episode's goal position is part of the
observation, drawn by Meta-World at reset from a per-episode seed. A real episode ends at ``info['success']`` or
after ``env.horizon`` steps. Imagined states are judged by the rule in ``TASKS``: the hand (reach tasks) or the
object within the task's radius of the goal position, the rule Meta-World itself applies to its positions (it
agrees with ``info['success']`` on every step of the scripted pushes and pick-places; for reach Meta-World
measures from the gripper's centre, not the hand position the observation holds, so the rule can differ by a
few millimetres).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from archer.kalm.errors import GoalSplitError, MissingExtraError
from archer.kalm.language import bag_of_words

STATE_DIM = 39
ACTION_DIM = 4
HAND, OBJECT, GOAL = slice(0, 3), slice(4, 7), slice(36, 39)

#: name -> (Meta-World env name, scripted policy class, entity that must reach the goal, success radius, phrase).
TASKS = {
    "reach": ("reach-v3", "SawyerReachV3Policy", "hand", 0.05, "reach the goal position"),
    "push": ("push-v3", "SawyerPushV3Policy", "object", 0.05, "push the puck to the goal"),
    "pick-place": (
        "pick-place-v3",
        "SawyerPickPlaceV3Policy",
        "object",
        0.07,
        "pick up the puck and place it at the goal",
    ),
    "reach-wall": ("reach-wall-v3", "SawyerReachWallV3Policy", "hand", 0.05, "reach the goal behind the wall"),
    "push-wall": (
        "push-wall-v3",
        "SawyerPushWallV3Policy",
        "object",
        0.07,
        "push the puck to the goal behind the wall",
    ),
    "pick-place-wall": (
        "pick-place-wall-v3",
        "SawyerPickPlaceWallV3Policy",
        "object",
        0.07,
        "pick up the puck and place it at the goal behind the wall",
    ),
    "push-back": ("push-back-v3", "SawyerPushBackV3Policy", "object", 0.07, "push the puck back to the goal"),
    "soccer": ("soccer-v3", "SawyerSoccerV3Policy", "object", 0.07, "kick the ball into the goal"),
}
TASK_NAMES = tuple(TASKS)
SPLIT_TASKS = {
    "train": ("reach", "push", "pick-place"),
    "rephrase": ("reach", "push", "pick-place"),
    "easy": ("reach-wall", "push-wall", "pick-place-wall"),
    "hard": ("push-back", "soccer"),
}
TRAIN_TEMPLATES = ("{p}", "please {p}", "can you {p}", "i want you to {p}", "your task is to {p}")
REPHRASE_TEMPLATES = ("go ahead and {p} now", "the robot should {p}", "try to {p} with the gripper")
GOAL_ENCODINGS = ("relations", "words")
#: Meta-World stops an episode at 500 steps.
MAX_HORIZON = 500


def require_metaworld():
    try:
        import metaworld  # noqa: F401
        from metaworld.env_dict import ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE
    except ImportError as error:
        raise MissingExtraError(
            "env.name=metaworld needs the metaworld extra: pip install -e '.[metaworld]' "
            "(metaworld==3.1.1 with mujoco==3.3.0; a newer mujoco breaks it)"
        ) from error
    return ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE


def task_vector(tasks: list[str]) -> np.ndarray:
    vectors = np.zeros((len(tasks), len(TASK_NAMES)), dtype=np.float32)
    for row, task in enumerate(tasks):
        if task not in TASKS:
            raise GoalSplitError(f"unknown Meta-World task {task!r}; this adapter has {', '.join(TASK_NAMES)}")
        vectors[row, TASK_NAMES.index(task)] = 1.0
    return vectors


def task_of(goal: np.ndarray) -> str:
    goal = np.asarray(goal).reshape(-1)
    if goal.shape != (len(TASK_NAMES),) or goal.max() != 1 or goal.sum() != 1:
        raise GoalSplitError(f"a Meta-World goal is a one-hot over {len(TASK_NAMES)} tasks, got {goal.tolist()}")
    return TASK_NAMES[int(goal.argmax())]


def rule_success(states: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """Whether the hand (reach tasks) or the object is within the task's radius of the goal position."""
    states, goals = np.atleast_2d(states), np.atleast_2d(goals)
    if states.shape[-1] != STATE_DIM:
        raise GoalSplitError(f"states have {states.shape[-1]} numbers, Meta-World's have {STATE_DIM}")
    result = np.zeros(len(states), dtype=bool)
    for row, (state, goal) in enumerate(zip(states, goals, strict=True)):
        _, _, entity, radius, _ = TASKS[task_of(goal)]
        position = state[HAND] if entity == "hand" else state[OBJECT]
        result[row] = float(np.linalg.norm(position - state[GOAL])) <= radius
    return result


def vocabulary() -> list[str]:
    words = set()
    for *_, phrase in TASKS.values():
        words.update(phrase.split())
    for template in TRAIN_TEMPLATES + REPHRASE_TEMPLATES:
        words.update(w for w in template.split() if not w.startswith("{"))
    return sorted(words)


@dataclass
class MetaWorldEnv:
    """The KALM pipeline's view of a few Meta-World tasks (module docstring); one MuJoCo env per task, reused."""

    horizon: int = 100
    action_type = "continuous"
    action_size = ACTION_DIM
    state_dim = STATE_DIM
    _envs: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        require_metaworld()
        if not 0 < self.horizon <= MAX_HORIZON:
            raise GoalSplitError(f"env.horizon={self.horizon}: Meta-World episodes last 1..{MAX_HORIZON} steps")

    def _env(self, task: str):
        if task not in self._envs:
            envs = require_metaworld()
            env = envs[f"{TASKS[task][0]}-goal-observable"](seed=0)
            # Draw a new object/goal placement at every reset, from the generator env.seed() sets.
            env._freeze_rand_vec, env.seeded_rand_vec = False, True
            self._envs[task] = env
        return self._envs[task]

    def reset(self, task: str, seed: int) -> np.ndarray:
        env = self._env(task)
        env.seed(int(seed))
        observation, _ = env.reset()
        return observation.astype(np.float32)

    # -- the interface the pipeline uses (same as archer.kalm.env.BallPushEnv) -----------------------------------
    def sample_episodes(self, split: str, num_episodes: int, rng: np.random.Generator):
        """(task one-hots ``[N, 8]``, instructions, reset seeds ``[N]``) for ``split``."""
        if split not in SPLIT_TASKS:
            raise GoalSplitError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_TASKS)}")
        tasks = [SPLIT_TASKS[split][i] for i in rng.integers(len(SPLIT_TASKS[split]), size=num_episodes)]
        templates = REPHRASE_TEMPLATES if split == "rephrase" else TRAIN_TEMPLATES
        instructions = [templates[rng.integers(len(templates))].format(p=TASKS[task][4]) for task in tasks]
        seeds = rng.integers(2**31 - 1, size=num_episodes)
        return task_vector(tasks), instructions, seeds

    def initial_observations(self, goals: np.ndarray, starts) -> np.ndarray:
        """The first observation of each episode: its task's env reset from its seed ``[N, 39]``."""
        return np.stack([self.reset(task_of(goal), seed) for goal, seed in zip(goals, starts, strict=True)])

    def play(self, policy, goals: np.ndarray, instructions: list[str], starts, rng: np.random.Generator):
        """One episode per goal, one after another (``policy`` sees a batch of one), ended by Meta-World's
        ``info['success']`` (reward 1, terminal) or after ``horizon`` steps."""
        from archer.kalm.data import TrajectorySet

        n, horizon = len(goals), self.horizon
        observations = np.zeros((n, horizon + 1, STATE_DIM), dtype=np.float32)
        actions = np.zeros((n, horizon, ACTION_DIM), dtype=np.float32)
        terminals = np.zeros((n, horizon), dtype=bool)
        masks = np.zeros((n, horizon), dtype=bool)
        for row, (goal, seed) in enumerate(zip(goals, starts, strict=True)):
            task = task_of(goal)
            env = self._env(task)
            observations[row, :] = self.reset(task, seed)
            for t in range(horizon):
                action = np.asarray(policy(observations[row, t][None], goal[None], np.array([row])), np.float32)
                action = np.clip(action.reshape(ACTION_DIM), -1.0, 1.0)
                next_observation, _, _, _, info = env.step(action)
                observations[row, t + 1 :] = next_observation.astype(np.float32)
                actions[row, t], masks[row, t] = action, True
                if info["success"]:
                    terminals[row, t] = True
                    break
        return TrajectorySet.rewarded_on_success(observations, actions, terminals, masks, goals, instructions)

    def noisy_expert(self, epsilon: float, rng: np.random.Generator):
        """Meta-World's scripted policy of each episode's task, replaced by a uniform random action with
        probability ``epsilon``; actions are clipped to [-1, 1] (the scripted gains can exceed it)."""
        import metaworld.policies

        policies = {}

        def act(states: np.ndarray, goals: np.ndarray, rows=None) -> np.ndarray:
            actions = np.zeros((len(states), ACTION_DIM), dtype=np.float32)
            for row, (state, goal) in enumerate(zip(states, goals, strict=True)):
                task = task_of(goal)
                if task not in policies:
                    policies[task] = getattr(metaworld.policies, TASKS[task][1])()
                if rng.random() < epsilon:
                    actions[row] = rng.uniform(-1.0, 1.0, size=ACTION_DIM)
                else:
                    actions[row] = np.clip(policies[task].get_action(state.astype(np.float64)), -1.0, 1.0)
            return actions

        return act

    def success(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        return rule_success(states, goals)

    def goal_features(self, goals: np.ndarray, instructions: list[str], encoding: str) -> np.ndarray:
        """``relations``: the task one-hot (the structured goal, as for ball pushing); ``words``: a bag of words
        of the instruction over ``vocabulary()``."""
        if encoding == "relations":
            return np.asarray(goals, np.float32).reshape(len(goals), len(TASK_NAMES))
        if encoding == "words":
            return bag_of_words(instructions, vocabulary())
        raise GoalSplitError(f"unknown goal encoding {encoding!r}; choose one of {', '.join(GOAL_ENCODINGS)}")

    def vocabulary(self) -> list[str]:
        return vocabulary()
