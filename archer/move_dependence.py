"""How much a policy's move depends on the state, for games with a short fixed move list (``GameSpec.moves``).

A policy that ignores its observation plays the same move distribution in every state, however weak or strong that
distribution is; success rates cannot tell it from a weak policy that reads the board, this figure can. It is the
mean total-variation distance between each state's distribution over the moves and the mean distribution: 0 for a
policy blind to the state, up to 1 - 1/M for one that plays a different sure move in each of M-or-more states.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from archer.envs.base import BatchedTextEnv
from archer.models.policy import LanguagePolicy

#: The metric's key in a run's evaluation metrics.
MOVE_DEPENDENCE_KEY = "eval/move_state_dependence"
#: How many evaluation games' first states it is measured on.
MOVE_DEPENDENCE_STATES = 32


def state_dependence(distributions: torch.Tensor) -> float:
    """Mean total-variation distance of each row of ``distributions`` (S states x M moves, rows summing to 1) from
    their mean row."""
    if distributions.ndim != 2 or distributions.shape[0] == 0:
        raise ValueError(f"state_dependence needs an (S, M) tensor with S > 0, got shape {tuple(distributions.shape)}")
    mean = distributions.mean(dim=0, keepdim=True)
    return float(0.5 * (distributions - mean).abs().sum(dim=1).mean())


def move_distributions(policy: LanguagePolicy, observations: Sequence[str], moves: Sequence[str]) -> torch.Tensor:
    """(S, M) float32: at each observation, the policy's probabilities of the ``moves`` renormalised over them (each
    move scored whole, its tokens as generation ends them, under the plain softmax), without gradients and in eval
    mode (the model's mode is restored)."""
    actions = policy.encode_actions(list(moves))
    model = policy.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            rows = []
            for observation in observations:
                logprobs, mask = policy.token_logprobs([observation] * len(moves), actions, as_sampled=False)
                rows.append(torch.softmax((logprobs * mask).sum(dim=-1).float(), dim=0))
    finally:
        model.train(was_training)
    return torch.stack(rows).cpu()


def first_observations(env: BatchedTextEnv, game_ids: Sequence[int]) -> list[str]:
    """The first observation of each of ``game_ids``, reset ``env.batch_size`` games at a time (``env`` is left in
    the last batch's first state)."""
    observations: list[str] = []
    for start in range(0, len(game_ids), env.batch_size):
        observations.extend(env.reset(game_ids=list(game_ids[start : start + env.batch_size])))
    return observations


def move_dependence_metrics(
    policy: LanguagePolicy, observations: Sequence[str], moves: Sequence[str]
) -> dict[str, float]:
    """``{MOVE_DEPENDENCE_KEY: figure}`` of ``policy`` at ``observations`` over ``moves``."""
    return {MOVE_DEPENDENCE_KEY: state_dependence(move_distributions(policy, observations, moves))}
