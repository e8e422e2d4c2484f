"""Offline RL on real (and imagined) trajectories with d3rlpy (optional extra ``kalm``): DiscreteBC / DiscreteCQL.

The policy observation is the 10-d state followed by the goal encoding (``language.encode_goals``). Each valid
step becomes one d3rlpy transition. An episode that reached its goal ends with ``terminal = 1`` on its last step
(reward 1); one that did not ends with a timeout, and its last state is kept as a final observation with a dummy
action so the last real transition has its next state (d3rlpy drops the final row of a timed-out episode).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archer.kalm import env as ball_env
from archer.kalm import language
from archer.kalm.data import TrajectorySet, rollout
from archer.kalm.errors import KalmDataError, require_d3rlpy


def policy_observations(states: np.ndarray, goals: np.ndarray, instructions, encoding: str) -> np.ndarray:
    """``[B, 10]`` states and per-row goals -> ``[B, 10 + goal features]``."""
    features = language.encode_goals(np.asarray(goals), list(instructions), encoding)
    return np.concatenate([np.asarray(states, np.float32), features], axis=1)


@dataclass
class FlatTransitions:
    """d3rlpy's flat layout: episodes one after another, ended by a terminal or a timeout."""

    observations: np.ndarray  # [M, obs]
    actions: np.ndarray  # [M]
    rewards: np.ndarray  # [M]
    terminals: np.ndarray  # [M]
    timeouts: np.ndarray  # [M]


def flatten(data: TrajectorySet, encoding: str) -> FlatTransitions:
    observations, actions, rewards, terminals, timeouts = [], [], [], [], []
    for row in range(len(data)):
        length = int(data.lengths[row])
        if length == 0:
            continue
        reached = bool(data.terminals[row, length - 1])
        steps = length if reached else length + 1
        states = data.observations[row, :steps]
        goals = np.repeat(data.goals[row][None], steps, axis=0)
        observations.append(policy_observations(states, goals, [data.instructions[row]] * steps, encoding))
        episode_actions = np.zeros(steps, dtype=np.int64)
        episode_actions[:length] = data.actions[row, :length]
        actions.append(episode_actions)
        episode_rewards = np.zeros(steps, dtype=np.float32)
        episode_rewards[:length] = data.rewards[row, :length]
        rewards.append(episode_rewards)
        ends = np.zeros(steps, dtype=np.float32)
        ends[-1] = 1.0
        terminals.append(ends if reached else np.zeros(steps, np.float32))
        timeouts.append(np.zeros(steps, np.float32) if reached else ends)
    if not observations:
        raise KalmDataError("no episode with a valid step to train on")
    return FlatTransitions(*(np.concatenate(parts) for parts in (observations, actions, rewards, terminals, timeouts)))


def to_d3rlpy(data: TrajectorySet, encoding: str):
    """A d3rlpy ``MDPDataset`` of ``data`` (discrete actions, ``NUM_ACTIONS`` of them)."""
    d3rlpy = require_d3rlpy()
    flat = flatten(data, encoding)
    return d3rlpy.dataset.MDPDataset(
        observations=flat.observations,
        actions=flat.actions.reshape(-1, 1),
        rewards=flat.rewards.reshape(-1, 1),
        terminals=flat.terminals,
        timeouts=flat.timeouts,
        action_space=d3rlpy.constants.ActionSpace.DISCRETE,
        action_size=ball_env.NUM_ACTIONS,
    )


def from_d3rlpy(dataset) -> list[dict[str, np.ndarray]]:
    """Per episode: policy observations, actions, rewards and whether it ended at the goal (for checking)."""
    episodes = []
    for episode in dataset.episodes:
        episodes.append(
            {
                "observations": np.asarray(episode.observations),
                "actions": np.asarray(episode.actions).reshape(-1),
                "rewards": np.asarray(episode.rewards).reshape(-1),
                "terminated": bool(episode.terminated),
            }
        )
    return episodes


def build_algorithm(cfg, seed: int):
    """d3rlpy DiscreteBC or DiscreteCQL from a ``KalmOfflineConfig``, with KALM's MLP encoder sizes."""
    d3rlpy = require_d3rlpy()
    d3rlpy.seed(seed)
    encoder = d3rlpy.models.encoders.VectorEncoderFactory(hidden_units=list(cfg.hidden_units))
    common = {"batch_size": cfg.batch_size, "learning_rate": cfg.learning_rate, "encoder_factory": encoder}
    if cfg.algorithm == "bc":
        config = d3rlpy.algos.DiscreteBCConfig(**common)
    else:
        config = d3rlpy.algos.DiscreteCQLConfig(
            **common, gamma=cfg.gamma, alpha=cfg.cql_alpha, target_update_interval=max(1, min(8000, cfg.steps // 10))
        )
    return config.create(device="cpu:0")


def train_offline(cfg, data: TrajectorySet, seed: int):
    """Fit ``cfg.algorithm`` for ``cfg.steps`` gradient steps; returns the fitted algorithm and its last metrics."""
    d3rlpy = require_d3rlpy()
    algorithm = build_algorithm(cfg, seed)
    dataset = to_d3rlpy(data, cfg.goal_encoding)
    history = algorithm.fit(
        dataset,
        n_steps=cfg.steps,
        n_steps_per_epoch=cfg.steps,
        show_progress=False,
        logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
        save_interval=cfg.steps + 1,
    )
    return algorithm, (history[-1][1] if history else {})


def evaluation_episodes(level: str, num_episodes: int, seed: int, env: ball_env.BallPushEnv):
    """The fixed evaluation set of ``level``: goals, wordings and starts drawn with ``seed`` alone."""
    rng = np.random.default_rng([seed, language.SPLITS.index(level)])
    goals = language.split_goals(level)
    chosen = [goals[i] for i in rng.integers(len(goals), size=num_episodes)]
    instructions = [language.instruction(goal, level, rng) for goal in chosen]
    vectors = language.goal_vectors(chosen)
    return vectors, instructions, env.initial_states(vectors, rng)


def success_rate(algorithm, env: ball_env.BallPushEnv, level: str, num_episodes: int, seed: int, encoding: str):
    """Greedy success rate of a fitted policy on ``level``'s evaluation episodes."""
    goals, instructions, starts = evaluation_episodes(level, num_episodes, seed, env)

    def act(states, goal_rows, rows):
        texts = [instructions[row] for row in rows]
        return algorithm.predict(policy_observations(states, goal_rows, texts, encoding))

    rng = np.random.default_rng([seed, 99, language.SPLITS.index(level)])
    played = rollout(act, env, goals, instructions, rng, initial_states=starts)
    return float(played.successes.mean())
