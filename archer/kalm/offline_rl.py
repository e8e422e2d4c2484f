"""Offline RL on real (and imagined) trajectories with d3rlpy (optional extra ``kalm``).

Discrete actions (``env.name=ball_push``): DiscreteBC / DiscreteCQL (``offline.algorithm`` ``bc`` / ``cql``, or
``discrete_bc`` / ``discrete_cql``). Continuous actions (``ball_push_continuous``): BC / CQL / AWAC / TD3+BC
(``bc``, ``cql``, ``awac``, ``td3_plus_bc``); their policies are tanh-squashed, so action vectors live in [-1, 1].

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
from archer.kalm.data import TrajectorySet, suite
from archer.kalm.errors import KalmConfigError, KalmDataError, require_d3rlpy


def policy_observations(states: np.ndarray, goals: np.ndarray, instructions, encoding: str, env=None) -> np.ndarray:
    """``[B, state_dim]`` states and per-row goals -> ``[B, state_dim + goal features]``; the features come from
    ``env.goal_features`` (the ball-push encodings of ``archer.kalm.language`` when ``env`` is ``None``)."""
    encode = language.encode_goals if env is None else suite(env).goal_features
    features = encode(np.asarray(goals), list(instructions), encoding)
    return np.concatenate([np.asarray(states, np.float32), features], axis=1)


@dataclass
class FlatTransitions:
    """d3rlpy's flat layout: episodes one after another, ended by a terminal or a timeout."""

    observations: np.ndarray  # [M, obs]
    actions: np.ndarray  # [M] indices, or [M, action_dim] vectors (continuous)
    rewards: np.ndarray  # [M]
    terminals: np.ndarray  # [M]
    timeouts: np.ndarray  # [M]


def flatten(data: TrajectorySet, encoding: str, env=None) -> FlatTransitions:
    observations, actions, rewards, terminals, timeouts = [], [], [], [], []
    for row in range(len(data)):
        length = int(data.lengths[row])
        if length == 0:
            continue
        reached = bool(data.terminals[row, length - 1])
        steps = length if reached else length + 1
        states = data.observations[row, :steps]
        goals = np.repeat(data.goals[row][None], steps, axis=0)
        observations.append(policy_observations(states, goals, [data.instructions[row]] * steps, encoding, env))
        episode_actions = np.zeros((steps, *data.actions.shape[2:]), dtype=data.actions.dtype)
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


def to_d3rlpy(data: TrajectorySet, encoding: str, env=None):
    """A d3rlpy ``MDPDataset`` of ``data``: discrete actions (``NUM_ACTIONS`` of them, stored ``[M, 1]``), or
    continuous float32 action vectors ``[M, action_dim]`` when ``data.continuous``."""
    d3rlpy = require_d3rlpy()
    flat = flatten(data, encoding, env)
    if data.continuous:
        actions = flat.actions.astype(np.float32)
        space, size = d3rlpy.constants.ActionSpace.CONTINUOUS, actions.shape[-1]
    else:
        actions = flat.actions.reshape(-1, 1)
        space, size = d3rlpy.constants.ActionSpace.DISCRETE, ball_env.NUM_ACTIONS
    return d3rlpy.dataset.MDPDataset(
        observations=flat.observations,
        actions=actions,
        rewards=flat.rewards.reshape(-1, 1),
        terminals=flat.terminals,
        timeouts=flat.timeouts,
        action_space=space,
        action_size=size,
    )


def from_d3rlpy(dataset) -> list[dict[str, np.ndarray]]:
    """Per episode: policy observations, actions, rewards and whether it ended at the goal (for checking)."""
    episodes = []
    for episode in dataset.episodes:
        actions = np.asarray(episode.actions)
        episodes.append(
            {
                "observations": np.asarray(episode.observations),
                "actions": actions.reshape(-1) if actions.shape[-1] == 1 else actions,  # [L] indices or [L, A]
                "rewards": np.asarray(episode.rewards).reshape(-1),
                "terminated": bool(episode.terminated),
            }
        )
    return episodes


#: ``offline.algorithm`` -> the d3rlpy config class, per action type (``None``: that pairing is refused).
D3RLPY_ALGORITHMS = {
    "bc": {"discrete": "DiscreteBCConfig", "continuous": "BCConfig"},
    "cql": {"discrete": "DiscreteCQLConfig", "continuous": "CQLConfig"},
    "discrete_bc": {"discrete": "DiscreteBCConfig", "continuous": None},
    "discrete_cql": {"discrete": "DiscreteCQLConfig", "continuous": None},
    "awac": {"discrete": None, "continuous": "AWACConfig"},
    "td3_plus_bc": {"discrete": None, "continuous": "TD3PlusBCConfig"},
}


def algorithm_class_name(algorithm: str, action_type: str) -> str:
    """The d3rlpy config class of ``algorithm`` for ``action_type``; a clear error when they do not fit."""
    if algorithm not in D3RLPY_ALGORITHMS:
        raise KalmConfigError(f"offline.algorithm: got {algorithm!r}; choose one of {', '.join(D3RLPY_ALGORITHMS)}")
    name = D3RLPY_ALGORITHMS[algorithm].get(action_type)
    if name is None:
        fitting = [a for a, names in D3RLPY_ALGORITHMS.items() if names.get(action_type)]
        raise KalmConfigError(
            f"offline.algorithm: {algorithm} does not work with {action_type} actions; choose one of "
            f"{', '.join(fitting)}"
        )
    return name


def build_algorithm(cfg, seed: int, action_type: str = "discrete"):
    """The d3rlpy algorithm of a ``KalmOfflineConfig`` for ``action_type``, with KALM's MLP encoder sizes.

    Discrete: DiscreteBC, DiscreteCQL. Continuous: BC (deterministic policy), CQL (``conservative_weight`` =
    ``cql_alpha``), AWAC (``lam`` = ``awac_lambda``), TD3+BC (``alpha`` = ``td3_plus_bc_alpha``); actor and
    critic share ``learning_rate`` and the encoder sizes.
    """
    d3rlpy = require_d3rlpy()
    name = algorithm_class_name(cfg.algorithm, action_type)
    d3rlpy.seed(seed)
    encoder = d3rlpy.models.encoders.VectorEncoderFactory(hidden_units=list(cfg.hidden_units))
    config_class = getattr(d3rlpy.algos, name)
    if name in ("DiscreteBCConfig", "BCConfig"):
        config = config_class(batch_size=cfg.batch_size, learning_rate=cfg.learning_rate, encoder_factory=encoder)
    elif name == "DiscreteCQLConfig":
        config = config_class(
            batch_size=cfg.batch_size,
            learning_rate=cfg.learning_rate,
            encoder_factory=encoder,
            gamma=cfg.gamma,
            alpha=cfg.cql_alpha,
            target_update_interval=max(1, min(8000, cfg.steps // 10)),
        )
    else:
        actor_critic = {
            "batch_size": cfg.batch_size,
            "gamma": cfg.gamma,
            "actor_learning_rate": cfg.learning_rate,
            "critic_learning_rate": cfg.learning_rate,
            "actor_encoder_factory": encoder,
            "critic_encoder_factory": encoder,
        }
        extra = {
            "CQLConfig": {"conservative_weight": cfg.cql_alpha},
            "AWACConfig": {"lam": cfg.awac_lambda},
            "TD3PlusBCConfig": {"alpha": cfg.td3_plus_bc_alpha},
        }[name]
        config = config_class(**actor_critic, **extra)
    return config.create(device="cpu:0")


def train_offline(cfg, data: TrajectorySet, seed: int, env=None):
    """Fit ``cfg.algorithm`` for ``cfg.steps`` gradient steps; returns the fitted algorithm and its last metrics."""
    d3rlpy = require_d3rlpy()
    algorithm = build_algorithm(cfg, seed, "continuous" if data.continuous else "discrete")
    dataset = to_d3rlpy(data, cfg.goal_encoding, env)
    history = algorithm.fit(
        dataset,
        n_steps=cfg.steps,
        n_steps_per_epoch=cfg.steps,
        show_progress=False,
        logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
        save_interval=cfg.steps + 1,
    )
    return algorithm, (history[-1][1] if history else {})


def evaluation_episodes(level: str, num_episodes: int, seed: int, env):
    """The fixed evaluation set of ``level``: goals, wordings and starts drawn with ``seed`` alone."""
    rng = np.random.default_rng([seed, language.SPLITS.index(level)])
    return suite(env).sample_episodes(level, num_episodes, rng)


def success_rate(algorithm, env, level: str, num_episodes: int, seed: int, encoding: str):
    """Greedy success rate of a fitted policy on ``level``'s evaluation episodes."""
    env = suite(env)
    goals, instructions, starts = evaluation_episodes(level, num_episodes, seed, env)

    def act(states, goal_rows, rows):
        texts = [instructions[row] for row in rows]
        return algorithm.predict(policy_observations(states, goal_rows, texts, encoding, env))

    rng = np.random.default_rng([seed, 99, language.SPLITS.index(level)])
    played = env.play(act, goals, instructions, starts, rng)
    return float(played.successes.mean())
