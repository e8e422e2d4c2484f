"""Does a critic rank moves as the game ranks them? Scores of probe moves under ``min(Q1, Q2)``.

Any task with exact move values (``ValuedState``: Twenty Questions' subset, Sokoban, FrozenLake) is scored by
``optimal_ranking``: at each state, does the critic order the moves as their true values do, and is its best move a
truly best one? Twenty Questions' probe states (``archer.envs.twenty_questions.probe``) also get ``probe_scores``:
at each state a wasted move (repeating a refuted guess) is compared with moves that rule something out (guessing a
word still possible, asking a question that splits the words still possible). A critic that does not rank the waste
lowest cannot teach the actor to stop making it, whatever its loss says.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from archer.envs.twenty_questions.optimal import OptimalValues
from archer.envs.twenty_questions.probe import ProbeState, history_turns
from archer.models.critic import DoubleCritic
from archer.models.policy import LanguagePolicy

TIE_TOLERANCE = 1e-9
"""True values closer than this are one value computed along different sums: the same."""


@dataclass(frozen=True)
class ValuedState:
    """A state, the moves to rank at it and each move's true value (``Q*`` under the run's discount).

    Attributes:
        observation: what the critic sees.
        moves: the candidate moves, as the policy writes them.
        values: the true value of each move, in the same order.
    """

    observation: str
    moves: tuple[str, ...]
    values: tuple[float, ...]


def move_values(critic: DoubleCritic, observation: str, moves: Sequence[str]) -> list[float]:
    """``min(Q1, Q2)(observation, move)`` for each of ``moves``, in eval mode and without gradient."""
    return pair_values(critic, [observation] * len(moves), moves)


@torch.no_grad()
def head_values(
    critic: DoubleCritic, observations: Sequence[str], moves: Sequence[str]
) -> tuple[list[float], list[float]]:
    """``(Q1, Q2)`` of each (observation, move) pair, in eval mode and without gradient."""
    was_training = critic.training
    critic.eval()
    try:
        q1, q2 = critic.q_values(list(observations), list(moves))
    finally:
        critic.train(was_training)
    return q1.float().cpu().tolist(), q2.float().cpu().tolist()


def pair_values(critic: DoubleCritic, observations: Sequence[str], moves: Sequence[str]) -> list[float]:
    """``min(Q1, Q2)`` of each (observation, move) pair, in eval mode and without gradient."""
    return list(map(min, *head_values(critic, observations, moves)))


# Scores of moves at one observation: ``score(observation, moves) -> one value per move``.
MoveScorer = Callable[[str, Sequence[str]], Sequence[float]]


def policy_scorer(policy: LanguagePolicy) -> MoveScorer:
    """Scores moves by the policy's ``log pi(move | observation)`` under the distribution it samples from, so the
    critic's figures can be read for the actor too: does the policy itself put the wasted move last?"""

    @torch.no_grad()
    def score(observation: str, moves: Sequence[str]) -> list[float]:
        was_training = policy.model.training
        policy.model.eval()
        try:
            action_ids = policy.encode_actions(list(moves))
            logprobs = policy.sequence_logprobs([observation] * len(moves), action_ids, as_sampled=True)
        finally:
            policy.model.train(was_training)
        return logprobs.float().cpu().tolist()

    return score


def policy_figures(figures: dict[str, float]) -> dict[str, float]:
    """``figures`` (``probe/*``, ``optimal/*``) renamed as the policy's: ``policy_probe/*``, ``policy_optimal/*``."""
    return {f"policy_{key}": value for key, value in figures.items()}


def probe_critic(critic: DoubleCritic, states: Sequence[ProbeState]) -> dict[str, float]:
    """Score ``critic`` (its ``min(Q1, Q2)``) on ``states``; the figures are ``probe_scores``'."""
    return probe_scores(lambda observation, moves: move_values(critic, observation, moves), states)


def probe_scores(score: MoveScorer, states: Sequence[ProbeState]) -> dict[str, float]:
    """Rank the probe moves of ``states`` by ``score`` (a critic's values, or the returns a policy obtained).

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
        raise ValueError("the probe needs at least one probe state")
    below_all, split_above, any_split = [], [], []
    repeat_gaps, split_gaps = [], []
    for state in states:
        moves = [state.repeat, *state.other_wrong_guesses, *state.splitting_questions]
        values = list(score(state.observation, moves))
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


def optimal_ranking(score: MoveScorer, states: Sequence[ValuedState]) -> dict[str, float]:
    """How well ``score`` (a critic's values) ranks the moves of ``states`` against their true values.

    A state counts when two of its moves have true values that differ (by more than ``TIE_TOLERANCE``); the others
    say nothing about ranking and are left out.

    Returns:
        ``optimal/pair_agreement``: mean over states of the fraction of move pairs with different true values that
        ``score`` orders the same way (a tie under ``score`` disagrees; a random order agrees on half);
        ``optimal/best_move``: fraction of states where every move ``score`` ranks highest is a truly best one;
        ``optimal/best_by_chance``: mean over states of the fraction of moves that are truly best (what a move
        picked at random scores on ``best_move``); ``optimal/regret_mean``: mean over states of the best true value
        less that of ``score``'s best move (the worst of them, when it ties); ``optimal/states``.

    Raises:
        ValueError: no state has two moves of different true values.
    """
    agreement, best_move, by_chance, regret = [], [], [], []
    for state in states:
        truth = state.values
        if max(truth) - min(truth) <= TIE_TOLERANCE:
            continue
        values = list(score(state.observation, state.moves))
        agree = [
            (values[i] - values[j]) * (truth[i] - truth[j]) > 0
            for i in range(len(truth))
            for j in range(i + 1, len(truth))
            if abs(truth[i] - truth[j]) > TIE_TOLERANCE
        ]
        agreement.append(statistics.fmean(agree))
        top = max(truth)
        chosen = [truth[i] for i, value in enumerate(values) if value == max(values)]
        best_move.append(all(top - value <= TIE_TOLERANCE for value in chosen))
        by_chance.append(sum(top - value <= TIE_TOLERANCE for value in truth) / len(truth))
        regret.append(top - min(chosen))
    if not agreement:
        raise ValueError("no state has two moves of different true values: nothing to rank")
    return {
        "optimal/pair_agreement": statistics.fmean(agreement),
        "optimal/best_move": statistics.fmean(best_move),
        "optimal/best_by_chance": statistics.fmean(by_chance),
        "optimal/regret_mean": statistics.fmean(regret),
        "optimal/states": float(len(agreement)),
    }


def twenty_questions_valued(states: Sequence[ProbeState], values: OptimalValues) -> list[ValuedState]:
    """``states`` with their probe moves (the repeat, the other wrong guesses, the splitting questions) valued by
    the exact optimal values ``values`` (``OptimalValues.move_value``: the hidden word uniform over those the
    history allows)."""
    valued = []
    for state in states:
        moves = (state.repeat, *state.other_wrong_guesses, *state.splitting_questions)
        mask = values.possible(history_turns(state.observation))
        valued.append(ValuedState(state.observation, moves, tuple(values.move_value(mask, move) for move in moves)))
    return valued


def pairwise_agreement(score: MoveScorer, reference: MoveScorer, states: Sequence[ProbeState], margin: float) -> float:
    """Fraction of move pairs at the same state that ``score`` orders as ``reference`` does.

    Only pairs whose ``reference`` values differ by more than ``margin`` count (Monte Carlo returns differing by
    less are within their noise). Ties under ``score`` count as disagreement.

    Raises:
        ValueError: no pair differs by more than ``margin`` under ``reference``.
    """
    agree = []
    for state in states:
        moves = [state.repeat, *state.other_wrong_guesses, *state.splitting_questions]
        values, truth = list(score(state.observation, moves)), list(reference(state.observation, moves))
        for i in range(len(moves)):
            for j in range(i + 1, len(moves)):
                if abs(truth[i] - truth[j]) > margin:
                    agree.append((values[i] - values[j]) * (truth[i] - truth[j]) > 0)
    if not agree:
        raise ValueError(f"no two moves at a state differ by more than {margin} under the reference")
    return statistics.fmean(agree)


def fit_to_move_values(
    critic: DoubleCritic,
    examples: Sequence[tuple[str, str]],
    targets: Callable[[list[tuple[str, str]]], Sequence[float]],
    steps: int,
    batch_size: int,
    lr: float,
    rng: random.Random,
    every: int = 0,
    report: Callable[[int, float], None] | None = None,
    after_step: Callable[[], None] | None = None,
) -> float:
    """Regress both Q heads of ``critic`` on known move values: can its architecture represent them at all?

    A supervised check beside the run's TD training: if the critic cannot fit (and generalise from) exact values,
    no amount of TD data will make it rank moves; if it can, what a run lacks is in its data or targets.

    Args:
        critic: trained in place (its trainable parameters, with Adam at ``lr``); left in train mode.
        examples: ``(observation, move)`` pairs, drawn uniformly with replacement, ``batch_size`` per step.
        targets: the values to regress on for a batch of pairs, one per pair, computed afresh for every batch (so
            they may be random samples, or read a target network that moves).
        steps: gradient steps.
        every: call ``report(step, loss)`` every ``every`` steps (0: never).
        after_step: called after every optimiser step (a Polyak update of a target network, say).

    Returns:
        The last step's mean squared error (of the two heads, summed).

    Raises:
        ValueError: no examples, or ``steps`` / ``batch_size`` not positive.
    """
    if not examples:
        raise ValueError("fitting needs at least one (observation, move) example")
    if steps <= 0 or batch_size <= 0:
        raise ValueError(f"steps and batch_size must be positive, got {steps} and {batch_size}")
    params = [param for param in critic.parameters() if param.requires_grad]
    optimizer = torch.optim.Adam(params, lr=lr)
    critic.train()
    loss_value = float("nan")
    for step in range(1, steps + 1):
        batch = [examples[rng.randrange(len(examples))] for _ in range(batch_size)]
        q1, q2 = critic.q_values([observation for observation, _ in batch], [move for _, move in batch])
        values = torch.as_tensor(list(targets(batch)), dtype=q1.dtype)
        loss = torch.nn.functional.mse_loss(q1, values) + torch.nn.functional.mse_loss(q2, values)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if after_step is not None:
            after_step()
        loss_value = loss.item()
        if report is not None and every and step % every == 0:
            report(step, loss_value)
    return loss_value
