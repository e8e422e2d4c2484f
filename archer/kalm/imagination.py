"""Imagined rollouts: the grounded model plays the goal->rollout pattern greedily for goals without real data.

From the pattern-0 prompt (instruction, then the initial state), each step takes the action head's argmax at the
last state (for continuous actions: the regressed action vector, clipped to [-1, 1]), writes that action, and
reads the next state from the state head at the action's position. The environment's success rule, applied to
each imagined state, ends an episode; imagined rewards are the same rule (1.0 on the step that reaches the goal).
Generation re-runs the whole prompt each step (no KV cache): prompts are at most ``2 * horizon + ~20`` positions.
"""

from __future__ import annotations

import numpy as np
import torch

from archer.kalm import env as ball_env
from archer.kalm.data import TrajectorySet
from archer.kalm.grounding import ACTION, STATE, TEXT, GroundedLM, collate, normalise_text


@torch.no_grad()
def imagine(
    model: GroundedLM,
    instructions: list[str],
    initial_states: np.ndarray,
    goals: np.ndarray,
    horizon: int,
    success_fn=ball_env.success,
) -> TrajectorySet:
    """One greedy imagined episode per instruction (one batch; split large sets with ``imagine_in_batches``)."""
    model.eval()
    n = len(instructions)
    builder = model.prompt_builder()
    head = "translate the textual instruction to state action trajectory instruction"
    examples = [
        builder.build(
            [(TEXT, head, False), (TEXT, normalise_text(text), False), (TEXT, "trajectory", False), (STATE, s0, False)]
        )
        for text, s0 in zip(instructions, initial_states, strict=True)
    ]
    batch = collate(examples, model.tokenizer.pad_token_id)
    observations = np.repeat(np.asarray(initial_states, np.float32)[:, None], horizon + 1, axis=1)
    if model.continuous:
        actions = np.zeros((n, horizon, model.num_actions), dtype=np.float32)
    else:
        actions = np.zeros((n, horizon), dtype=np.int64)
    terminals = np.zeros((n, horizon), dtype=bool)
    masks = np.zeros((n, horizon), dtype=bool)
    active = np.ones(n, dtype=bool)
    for t in range(horizon):
        hidden, _ = model.hidden_states(batch)
        action = model.predict_actions(hidden[:, -1])
        batch = append_position(batch, ACTION, action=action, placeholder=model.placeholder_ids[ACTION])
        hidden, _ = model.hidden_states(batch)
        state = model.predict_states(hidden, batch)[:, -1]
        batch = append_position(batch, STATE, state=state, placeholder=model.placeholder_ids[STATE])
        rows = np.flatnonzero(active)
        next_states = state.numpy()[rows]
        observations[rows, t + 1 :] = next_states[:, None]
        actions[rows, t], masks[rows, t] = action.numpy()[rows], True
        reached = success_fn(next_states, goals[rows])
        terminals[rows, t] = reached
        active[rows[reached]] = False
        if not active.any():
            break
    return TrajectorySet.rewarded_on_success(observations, actions, terminals, masks, goals, instructions)


def append_position(batch: dict, kind: int, placeholder: int, state=None, action=None) -> dict:
    """Append one vector position (a state or an action) to every row of a left-padded batch."""
    n = batch["input_ids"].shape[0]
    state_dim = batch["states"].shape[-1]
    no_action = torch.zeros(n, *batch["actions"].shape[2:], dtype=batch["actions"].dtype)

    def extend(key, value):
        return torch.cat([batch[key], value.reshape(n, 1, *batch[key].shape[2:]).to(batch[key].dtype)], dim=1)

    zeros_bool = torch.zeros(n, dtype=torch.bool)
    return {
        "input_ids": extend("input_ids", torch.full((n,), placeholder)),
        "kinds": extend("kinds", torch.full((n,), kind)),
        "states": extend("states", state if state is not None else torch.zeros(n, state_dim)),
        "actions": extend("actions", action if action is not None else no_action),
        "state_targets": extend("state_targets", zeros_bool),
        "action_targets": extend("action_targets", zeros_bool),
        "token_targets": extend("token_targets", zeros_bool),
        "attention_mask": extend("attention_mask", torch.ones(n, dtype=torch.long)),
        "position_ids": extend("position_ids", batch["position_ids"][:, -1] + 1),
    }


def imagine_level(
    model: GroundedLM, env: ball_env.BallPushEnv, level: str, num_episodes: int, batch_size: int, rng
) -> TrajectorySet:
    """Imagined episodes for random goals and wordings of ``level``, from random starts drawn by the env."""
    from archer.kalm.data import concatenate, suite

    env = suite(env)
    vectors, instructions, starts = env.sample_episodes(level, num_episodes, rng)
    initial = env.initial_observations(vectors, starts)
    parts = [
        imagine(
            model,
            instructions[i : i + batch_size],
            initial[i : i + batch_size],
            vectors[i : i + batch_size],
            env.horizon,
            success_fn=env.success,
        )
        for i in range(0, num_episodes, batch_size)
    ]
    return concatenate(parts)
