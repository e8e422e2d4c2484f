"""Environment checks, as Stable-Baselines3's ``env_checker``.

- ``check_env``: a batched environment against the batched text-environment contract (envs/base.py); raises on the
  first broken rule. The test suite runs it on every environment.
- ``check_text_game``: a gymnasium-shaped single-game text environment (envs/gym_adapter.py), played a few games;
  returns an ``EnvReport`` of errors, warnings and notes. ``check_batched_env`` is ``check_env`` as a report.
  ``python -m archer.check_env`` prints them, and a run on an external environment makes them at start-up.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from archer.envs.base import BatchedTextEnv, StepResult
from archer.envs.gym_adapter import SUCCESS_RULE, TextGameError, check_reset_output, check_step_output
from archer.errors import ArcherError


class EnvContractError(AssertionError):
    """An environment broke the contract; the message says which rule."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise EnvContractError(message)


def check_env(
    env: BatchedTextEnv,
    act: Callable[[list[str]], list[str]] | None = None,
    max_steps: int = 1000,
    seed: int = 0,
) -> None:
    """Play one batch with ``act`` (default: a fixed junk action) and check every rule of the contract.

    Checks: reset returns one string per game; seeded resets repeat; step returns one result per game, ``None``
    exactly for finished games; results are well-typed ``StepResult`` with ``success`` in info; a game never
    ends both terminated and truncated; every game ends within ``max_steps``; stepping after the end keeps
    returning ``None``; a wrong number of actions raises ``ValueError``; rewards are finite.
    """
    act = act or (lambda observations: ["?"] * len(observations))
    first = env.reset(seed=seed)
    _require(isinstance(first, list) and len(first) == env.batch_size, "reset must return batch_size observations")
    _require(all(isinstance(obs, str) for obs in first), "observations must be strings")
    _require(env.reset(seed=seed) == first, "reset with the same seed must give the same observations")
    _require(env.num_games > 0, "num_games must be positive")
    one = env.reset(game_ids=[0])
    _require(len(one) == 1 and env.active == [True], "reset(game_ids=[0]) must start exactly one game")

    observations = env.reset(seed=seed)
    try:
        env.step(["?"] * (len(observations) + 1))
    except ValueError:
        pass
    else:
        raise EnvContractError("step must raise ValueError on a wrong number of actions")

    for _ in range(max_steps):
        active = env.active
        if not any(active):
            break
        actions = act(observations)
        results = env.step([a if alive else None for a, alive in zip(actions, active, strict=True)])
        _require(len(results) == len(active), "step must return one result per game")
        for alive, result in zip(active, results, strict=True):
            if not alive:
                _require(result is None, "a finished game must return None")
                continue
            _require(isinstance(result, StepResult), "an active game must return a StepResult")
            assert result is not None
            _require(isinstance(result.observation, str), "observation must be a string")
            _require(isinstance(result.reward, float), "reward must be a float")
            _require(math.isfinite(result.reward), f"reward must be a finite number, got {result.reward}")
            _require(not (result.terminated and result.truncated), "a game cannot be both terminated and truncated")
            _require(isinstance(result.info.get("success"), bool), "info must carry a bool 'success'")
        observations = [r.observation if r is not None else obs for r, obs in zip(results, observations, strict=True)]
    _require(not any(env.active), f"games did not end within {max_steps} steps")
    _require(all(r is None for r in env.step([None] * len(observations))), "finished games must keep returning None")


# ------------------------------------------------------------------------------------------- reports (check_env CLI)

#: The actions the checker plays a single game with when given none: short answers most text games parse or refuse.
PROBE_ACTIONS = ("1", "yes", "no", "?", "up", "look", "I think the answer is 42.")


@dataclass
class EnvReport:
    """What checking an environment found: errors (a training run would fail or learn from garbage), warnings (it
    would run, but something is probably not what the author meant) and notes.

    Attributes:
        errors: one line each; a run refuses an environment with any.
        warnings: one line each; a run logs them and goes on.
        notes: facts worth knowing (games cut by the turn limit, the success rule that applies).
        games: games played.
        steps: steps played.
        slowest_step_s: the slowest single step (or reset), in seconds.
    """

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    games: int = 0
    steps: int = 0
    slowest_step_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        """The report as text, one finding per line, errors first."""
        summary = f"played {self.games} games, {self.steps} steps, slowest step {self.slowest_step_s * 1000:.1f} ms"
        return [
            *(f"error: {line}" for line in self.errors),
            *(f"warning: {line}" for line in self.warnings),
            *(f"note: {line}" for line in self.notes),
            summary,
        ]


@dataclass
class _Game:
    """One played game: what the agent saw and got, per turn."""

    observations: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    ended: bool = False
    without_success: bool = False


class _Clock:
    def __init__(self, report: EnvReport) -> None:
        self.report = report

    def time(self, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = call()
        self.report.slowest_step_s = max(self.report.slowest_step_s, time.perf_counter() - start)
        return out


def _play_game(
    game: Any, seed: int, max_turns: int, actions: Callable[[str, int], str], clock: _Clock, label: str
) -> _Game:
    played = _Game()
    observation, _ = check_reset_output(clock.time(lambda: game.reset(seed=seed)), label)
    played.observations.append(observation)
    for turn in range(max_turns):
        action = actions(observation, turn)
        played.actions.append(action)
        observation, reward, terminated, truncated, info = check_step_output(
            clock.time(lambda action=action: game.step(action)), label
        )
        clock.report.steps += 1
        played.observations.append(observation)
        played.rewards.append(reward)
        played.without_success = "success" not in info  # what counts is the last step's
        if terminated or truncated:
            played.ended = True
            break
    clock.report.games += 1
    return played


def _first_difference(a: _Game, b: _Game) -> str | None:
    for turn, (x, y) in enumerate(zip(a.observations, b.observations, strict=False)):
        if x != y:
            return f"the observation after {turn} turns differs" if turn else "the first observation differs"
    for turn, (x, y) in enumerate(zip(a.rewards, b.rewards, strict=False)):
        if x != y:
            return f"the reward of turn {turn + 1} differs ({x} then {y})"
    if len(a.observations) != len(b.observations):
        return f"the game lasts {len(a.rewards)} turns, then {len(b.rewards)}"
    return None


def _add_findings(
    report: EnvReport,
    played: list[_Game],
    replay: _Game,
    reused: str,
    seed: int,
    max_turns: int,
    slow_step_s: float,
) -> None:
    """The warnings and notes of ``check_text_game``: ``played`` are its games, ``replay`` the first one replayed on a
    fresh instance, ``reused`` the first observation of ``reset(seed)`` on the instance that played them."""
    difference = _first_difference(played[0], replay)
    if difference is not None:
        report.warnings.append(
            f"not deterministic: replaying seed {seed} with the same actions on a fresh instance, {difference}; "
            "GRPO and GiGPO compare games of one seed, evaluation replays seeds"
        )
    elif reused != played[0].observations[0]:
        report.warnings.append(
            f"reset(seed={seed}) of an instance that has played other games gives another first observation than a "
            "fresh instance; the trainer reuses each instance for many games"
        )
    if any(g.without_success for g in played):
        report.warnings.append(f"info has no 'success': {SUCCESS_RULE}")
    if any(not text.strip() for g in played for text in g.observations):
        report.warnings.append("an observation is empty: the policy would see nothing")
    if report.slowest_step_s > slow_step_s:
        report.warnings.append(
            f"slow: a call took {report.slowest_step_s:.2f} s (more than {slow_step_s} s); a run plays "
            "env.batch_size games a step one after the other"
        )
    cut = sum(not g.ended for g in played)
    if cut:
        report.notes.append(
            f"{cut} of {len(played)} games did not end within max_turns={max_turns} probe actions: a run cuts them "
            "there (truncated)"
        )


def check_text_game(
    make_game: Callable[[], Any],
    num_games: int = 3,
    max_turns: int = 20,
    seed: int = 0,
    act: Callable[[str, int], str] | None = None,
    slow_step_s: float = 1.0,
    label: str = "the game",
) -> EnvReport:
    """Play ``num_games`` games of a gymnasium-shaped single-game text environment (``archer.envs.gym_adapter``)
    and report what a training run would trip on.

    Errors: making the game fails; ``reset`` or ``step`` return the wrong shape or types (a non-string observation, a
    reward that is not a finite real number, non-bool flags, a non-dict info); a call raises. Warnings: no
    ``success`` in a game's last step info (``SUCCESS_RULE`` applies); the same seed and actions replay differently on
    a fresh instance (grouped resets in GRPO and GiGPO need same-seed games to start alike); a reused instance starts
    differently from a fresh one (the trainer reuses each instance for many games); an empty observation; a step
    slower than ``slow_step_s``. Notes: games the turn limit would cut.

    Args:
        make_game: makes one fresh game.
        num_games: games played, with seeds ``seed, seed + 1, ...``.
        max_turns: steps before a game is cut (the run's ``env.max_turns``).
        seed: the first game's seed.
        act: the action for (observation, turn); default: ``PROBE_ACTIONS`` drawn with a generator seeded by the
            game's seed, so that replaying a game replays its actions.
        slow_step_s: steps (or resets) slower than this are reported.
        label: names the game in the report (``env.target=module:callable``).
    """
    report = EnvReport()
    clock = _Clock(report)
    played: list[_Game] = []
    try:
        game = make_game()
        for index in range(num_games):
            rng = random.Random(seed + index)
            actions = act or (lambda observation, turn, rng=rng: rng.choice(PROBE_ACTIONS))
            played.append(_play_game(game, seed + index, max_turns, actions, clock, label))
        replay = _Game()
        if played:
            again = played[0].actions
            # A replay that lasts longer than the first play (not deterministic) goes on with a probe action.
            replay_actions = lambda _, turn: again[turn] if turn < len(again) else PROBE_ACTIONS[0]  # noqa: E731
            replay = _play_game(make_game(), seed, max_turns, replay_actions, clock, label)
            reused, _ = check_reset_output(game.reset(seed=seed), label)
    except TextGameError as error:
        report.errors.append(str(error).removeprefix(f"{label}: "))
        return report
    except ArcherError as error:  # a refusal that says what is wrong itself (a game that cannot be played here)
        report.errors.append(str(error))
        return report
    except Exception as error:  # the user's game raised: what a run would meet at its first rollout
        report.errors.append(f"playing it raised {type(error).__name__}: {error}")
        return report
    if played:
        _add_findings(report, played, replay, reused, seed, max_turns, slow_step_s)
    return report


def check_batched_env(env: BatchedTextEnv, act: Callable[[list[str]], list[str]] | None = None) -> EnvReport:
    """``check_env`` on a batched environment, as a report: its first broken rule (or what the environment raised)
    is the report's error."""
    report = EnvReport()
    start = time.perf_counter()
    try:
        check_env(env, act=act)
    except EnvContractError as error:
        report.errors.append(str(error))
    except Exception as error:  # the user's environment raised
        report.errors.append(f"playing it raised {type(error).__name__}: {error}")
    report.games = env.batch_size
    report.notes.append(f"the check took {time.perf_counter() - start:.2f} s (steps are not timed one by one)")
    return report
