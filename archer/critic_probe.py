"""Does a critic rank moves as the game ranks them? Scores of probe moves under ``min(Q1, Q2)``.

The probe states come from the environment (for Twenty Questions, ``archer.data.twenty_questions_probe``): at each
state a wasted move (repeating a refuted guess) is compared with moves that rule something out (guessing a word
still possible, asking a question that splits the words still possible). A critic that does not rank the waste
lowest cannot teach the actor to stop making it, whatever its loss says.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import torch

from archer.data.twenty_questions_probe import ProbeState
from archer.models.critic import DoubleCritic


@torch.no_grad()
def move_values(critic: DoubleCritic, observation: str, moves: Sequence[str]) -> list[float]:
    """``min(Q1, Q2)(observation, move)`` for each of ``moves``, in eval mode and without gradient."""
    was_training = critic.training
    critic.eval()
    try:
        q1, q2 = critic.q_values([observation] * len(moves), list(moves))
    finally:
        critic.train(was_training)
    return torch.minimum(q1, q2).float().cpu().tolist()


def probe_critic(critic: DoubleCritic, states: Sequence[ProbeState]) -> dict[str, float]:
    """Score ``critic`` on ``states``.

    Returns:
        ``probe/repeat_below_all_wrong``: fraction of states where the repeat scores below every other possible
        guess; ``probe/split_above_repeat``: fraction where the most even splitting question scores above the
        repeat; ``probe/any_split_above_repeat``: the same over every (state, splitting question) pair;
        ``probe/repeat_gap_mean``: mean over states of (mean score of the other guesses - score of the repeat);
        ``probe/split_gap_mean``: mean of (best-split score - repeat score); ``probe/states``.

    Raises:
        ValueError: no states.
    """
    if not states:
        raise ValueError("probe_critic needs at least one probe state")
    below_all, split_above, any_split = [], [], []
    repeat_gaps, split_gaps = [], []
    for state in states:
        moves = [state.repeat, *state.other_wrong_guesses, *state.splitting_questions]
        values = move_values(critic, state.observation, moves)
        repeat = values[0]
        guesses = values[1 : 1 + len(state.other_wrong_guesses)]
        splits = values[1 + len(state.other_wrong_guesses) :]
        below_all.append(repeat < min(guesses))
        split_above.append(splits[0] > repeat)
        any_split.extend(split > repeat for split in splits)
        repeat_gaps.append(statistics.fmean(guesses) - repeat)
        split_gaps.append(splits[0] - repeat)
    return {
        "probe/repeat_below_all_wrong": statistics.fmean(below_all),
        "probe/split_above_repeat": statistics.fmean(split_above),
        "probe/any_split_above_repeat": statistics.fmean(any_split),
        "probe/repeat_gap_mean": statistics.fmean(repeat_gaps),
        "probe/split_gap_mean": statistics.fmean(split_gaps),
        "probe/states": float(len(states)),
    }
