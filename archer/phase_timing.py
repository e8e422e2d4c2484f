"""Seconds of a trainer's phases, and the floors they are held against: bare library calls at the same shapes.

Shared by the measuring scripts (``scripts/benchmark_iteration.py``, ``scripts/benchmark_speed.py``,
``scripts/gpu_check.py``). ``time_iterations`` runs the phases of ``Trainer.fit`` in order on a built trainer of an
ArCHer-family algorithm and times each: rollout (``Trainer.collect``), the advantage check (``check_new_games``, when
``algorithm.log_advantage_check`` is on), the critic phase split into V-target generation (every
``generate_at_states`` call it makes) and the rest (forward/backward, optimiser steps, target updates), the actor
phase split the same way, evaluation and checkpoint. ``measure_floors`` then times, outside the phases and on the
states the last measured iteration used:

- rollout, no cache: the model's ``generate`` on each turn's live games, their whole histories left-padded, with
  the policy's generation settings (what a rollout that re-encodes every turn cannot beat);
- rollout, kept cache: the same calls continuing from a KV cache of each game's previous-turn prompt (built
  untimed), so only the new text (last action and answer) and the sampled tokens are run;
- V-target generation: ``generate`` at the critic phase's states in batches of ``algorithm.generation_batch_size``;
- critic forward/backward: per micro-batch, the online critic's forward on (s, a) pairs and a backward of its
  outputs, for as many micro-batches as the phase has; the target critic's forwards are not in the floor;
- actor: ``generate`` at the actor's states plus the policy's forward/backward on prompt + action, per micro-batch.

Every time is wall time with the GPU synchronised before and after (``timed``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from archer.data.trajectory import Trajectory
from archer.models.incremental import common_prefix_length
from archer.models.kv_cache import cache_argument
from archer.models.policy import LanguagePolicy, left_padded_positions

#: The training phases of one ArCHer iteration, in order; evaluation and checkpoint follow when they run.
PHASES = ("rollout", "advantage_check", "critic_generation", "critic_update", "actor_generation", "actor_update")
OPTIONAL_PHASES = ("evaluation", "checkpoint")
#: Phases that sample from the policy, whose generated tokens are counted.
GENERATING_PHASES = ("rollout", "critic_generation", "actor_generation")


def synchronize() -> None:
    """Wait for the GPU's queued work, if there is a GPU."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall time in seconds (GPU work included)."""
    synchronize()
    start = time.perf_counter()
    result = fn()
    synchronize()
    return result, time.perf_counter() - start


def generator_of(policy: LanguagePolicy) -> torch.nn.Module:
    """The module whose ``generate`` the policy calls (the model without a DDP wrapper)."""
    return policy._generator()


def count_action_tokens(trajectories: Sequence[Trajectory], policy: LanguagePolicy) -> tuple[int, str]:
    """Generated action tokens of ``trajectories`` and where the count came from.

    Returns:
        The token count (terminators included) and ``"action_token_ids"`` when every trajectory recorded the
        sampled ids, else ``"encode_actions"`` (the action texts re-tokenised, terminated as generated ones are).
    """
    if all(t.action_token_ids is not None for t in trajectories):
        return sum(len(ids) for t in trajectories for ids in t.action_token_ids or []), "action_token_ids"
    actions = [action for t in trajectories for action in t.actions]
    return sum(len(ids) for ids in policy.encode_actions(actions)), "encode_actions"


# ---- phase timing --------------------------------------------------------------------------------------------------


class GenerationClock:
    """Wraps ``generate_at_states`` in the algorithm's module: seconds, states and generated tokens of every call."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.original = module.generate_at_states
        self.seconds = 0.0
        self.tokens = 0
        self.states: list[list[str]] = []

    def __enter__(self) -> GenerationClock:
        def wrapped(policy: LanguagePolicy, observations: list[str], *args: Any, **kwargs: Any) -> Any:
            result, seconds = timed(lambda: self.original(policy, observations, *args, **kwargs))
            self.seconds += seconds
            self.tokens += sum(len(ids) for ids in result.token_ids)
            self.states.append(list(observations))
            return result

        self.module.generate_at_states = wrapped
        return self

    def __exit__(self, *exc: object) -> None:
        self.module.generate_at_states = self.original


@dataclass
class IterationTimes:
    """What ``time_iterations`` measured.

    Attributes:
        seconds: per phase (``PHASES``, ``OPTIONAL_PHASES`` and ``iteration``, their sum), one value per measured
            iteration in which the phase ran.
        tokens: generated tokens per generating phase (``GENERATING_PHASES``), one value per measured iteration.
        games: the last iteration's games; ``critic_states``, ``actor_states``: the states its phases sampled at.
        stopped: why fewer iterations than asked were run (the deadline), or None.
    """

    seconds: dict[str, list[float]] = field(default_factory=dict)
    tokens: dict[str, list[int]] = field(default_factory=dict)
    games: list[Trajectory] = field(default_factory=list)
    critic_states: list[str] = field(default_factory=list)
    actor_states: list[str] = field(default_factory=list)
    stopped: str | None = None

    def mean_seconds(self) -> dict[str, float]:
        return {phase: float(np.mean(values)) for phase, values in self.seconds.items()}

    def tokens_per_second(self) -> dict[str, float]:
        """Generated tokens per second of each generating phase, over the measured iterations."""
        return {
            phase: sum(counts) / sum(self.seconds[phase])
            for phase, counts in self.tokens.items()
            if phase in self.seconds and sum(self.seconds[phase]) > 0
        }


def _time_iteration(
    trainer: Any, iteration: int, is_last: bool, checkpoint: bool, played: list[Trajectory], times: IterationTimes
) -> tuple[dict[str, float], dict[str, int]]:
    """One iteration of ``Trainer.fit``'s phases, timed: seconds per phase that ran and generated tokens per
    generating phase. ``played`` holds the iteration's games once the rollout has run; the states the critic and
    actor phases sampled at go to ``times``."""
    import archer.algorithms.archer as archer_module

    cfg, algorithm = trainer.cfg, trainer.algorithm
    seconds: dict[str, float] = {}
    tokens: dict[str, int] = {}
    _, seconds["rollout"] = timed(lambda: trainer.collect(iteration))
    tokens["rollout"] = count_action_tokens(played, trainer.policy)[0]
    if cfg.algorithm.log_advantage_check:
        _, seconds["advantage_check"] = timed(algorithm.check_new_games)
    seconds["critic_generation"], seconds["critic_update"], tokens["critic_generation"], times.critic_states = (
        _time_sampling_phase(archer_module, lambda: algorithm.critic_phase(trainer.buffer, iteration, trainer.rng))
    )
    if iteration > cfg.algorithm.warmup_iters and cfg.algorithm.actor_steps_per_iter > 0:
        seconds["actor_generation"], seconds["actor_update"], tokens["actor_generation"], times.actor_states = (
            _time_sampling_phase(archer_module, lambda: algorithm.actor_phase(trainer.buffer, iteration, trainer.rng))
        )
    if cfg.eval.every_iters > 0 and (iteration % cfg.eval.every_iters == 0 or is_last):
        _, seconds["evaluation"] = timed(trainer.evaluate)
    if checkpoint and (iteration % cfg.save_every_iters == 0 or is_last):
        _, seconds["checkpoint"] = timed(lambda: trainer.save(iteration))
    return seconds, tokens


def _time_sampling_phase(module: Any, phase: Callable[[], Any]) -> tuple[float, float, int, list[str]]:
    """``phase()`` timed and split: the seconds of its ``generate_at_states`` calls (``GenerationClock`` on
    ``module``), the seconds of the rest, the tokens those calls generated and the states they sampled at."""
    with GenerationClock(module) as clock:
        _, total = timed(phase)
    return clock.seconds, total - clock.seconds, clock.tokens, [state for call in clock.states for state in call]


def time_iterations(
    trainer: Any,
    iterations: int,
    warmup_iterations: int = 0,
    deadline: float | None = None,
    checkpoint: bool = True,
    on_iteration: Callable[[int, bool, dict[str, float]], None] | None = None,
) -> IterationTimes:
    """Run ``warmup_iterations`` + ``iterations`` iterations of ``trainer`` phase by phase and time them.

    Evaluation runs when ``eval.every_iters`` says so (and after the last iteration, as in ``Trainer.fit``); the
    checkpoint after the last iteration and every ``save_every_iters``, unless ``checkpoint`` is false.

    Args:
        trainer: a built ``archer.trainer.Trainer`` of an algorithm with ``critic_phase`` and ``actor_phase``.
        iterations: measured iterations.
        warmup_iterations: iterations run first and not counted.
        deadline: a ``time.monotonic()`` value: no iteration starts that would end after it, judged by the longest
            iteration so far (``IterationTimes.stopped`` then says so).
        checkpoint: write (and time) checkpoints.
        on_iteration: called after each iteration with its number, whether it was measured, and its seconds.

    Raises:
        ValueError: the algorithm has no critic phase.
    """
    algorithm = trainer.algorithm
    if not hasattr(algorithm, "critic_phase"):
        raise ValueError(f"time_iterations times ArCHer's phases; {type(algorithm).__name__} has no critic phase")
    played: list[Trajectory] = []
    original_observe = algorithm.observe

    def observe(trajectories: list[Trajectory], iteration: int) -> None:
        played[:] = trajectories
        original_observe(trajectories, iteration)

    algorithm.observe = observe
    times = IterationTimes()
    last = warmup_iterations + iterations
    longest = 0.0
    try:
        for iteration in range(1, last + 1):
            if deadline is not None and iteration > 1 and time.monotonic() + longest > deadline:
                times.stopped = f"stopped before iteration {iteration} of {last}: the deadline was near"
                break
            seconds, tokens = _time_iteration(trainer, iteration, iteration == last, checkpoint, played, times)
            measured = iteration > warmup_iterations
            total = sum(seconds.values())
            longest = max(longest, total)
            if on_iteration is not None:
                on_iteration(iteration, measured, seconds)
            if measured:
                for phase, value in seconds.items():
                    times.seconds.setdefault(phase, []).append(value)
                for phase, count in tokens.items():
                    times.tokens.setdefault(phase, []).append(count)
                times.seconds.setdefault("iteration", []).append(total)
    finally:
        algorithm.observe = original_observe
    times.games = list(played)
    return times


# ---- floors --------------------------------------------------------------------------------------------------------


def bare_generate(policy: LanguagePolicy, prompts: list[list[int]], batch_size: int) -> float:
    """Seconds of the model's ``generate`` at ``prompts`` (ids), ``batch_size`` rows per call, sampling."""
    generator = generator_of(policy)
    config = policy._generation_config(greedy=False)
    seconds = 0.0
    with torch.no_grad():
        for start in range(0, len(prompts), batch_size):
            input_ids, mask = policy.left_pad(prompts[start : start + batch_size])
            _, s = timed(
                lambda i=input_ids, m=mask: generator.generate(input_ids=i, attention_mask=m, generation_config=config)
            )
            seconds += s
    return seconds


def bare_generate_from_cache(policy: LanguagePolicy, prefixes: list[list[int]], blocks: list[list[int]]) -> float:
    """Seconds of ``generate`` continuing from a cache of ``prefixes`` (built untimed) with ``blocks`` fed."""
    from transformers import DynamicCache

    generator = generator_of(policy)
    config = policy._generation_config(greedy=False)
    with torch.no_grad():
        prefix_ids, prefix_mask = policy.left_pad(prefixes)
        cache = DynamicCache()
        positions = left_padded_positions(prefix_mask)
        generator(
            input_ids=prefix_ids,
            attention_mask=prefix_mask,
            position_ids=positions,
            use_cache=True,
            **cache_argument(generator, cache),
        )
        block_ids, block_mask = policy.left_pad(blocks)
        mask = torch.cat([prefix_mask, block_mask], dim=1)
        _, seconds = timed(
            lambda: generator.generate(
                input_ids=block_ids, attention_mask=mask, generation_config=config, **cache_argument(generator, cache)
            )
        )
    return seconds


def rollout_floors(policy: LanguagePolicy, games: Sequence[Trajectory], batch_size: int) -> dict[str, float]:
    """The two rollout floors (module docstring) on the states ``games`` visited, turn by turn."""
    longest = max(game.length for game in games)
    prompts = [policy.encode_prompts(game.observations[: game.length]) for game in games]
    no_cache = kept_cache = 0.0
    for turn in range(longest):
        live = [i for i, game in enumerate(games) if turn < game.length]
        for start in range(0, len(live), batch_size):
            rows = live[start : start + batch_size]
            current = [prompts[i][turn] for i in rows]
            no_cache += bare_generate(policy, current, len(current))
            if turn == 0:
                kept_cache += bare_generate(policy, current, len(current))
                continue
            shared = [
                min(common_prefix_length(prompts[i][turn], prompts[i][turn - 1]), len(prompts[i][turn]) - 1)
                for i in rows
            ]
            prefixes = [ids[:n] or ids[:1] for ids, n in zip(current, shared, strict=True)]
            blocks = [ids[max(n, 1) :] for ids, n in zip(current, shared, strict=True)]
            kept_cache += bare_generate_from_cache(policy, prefixes, blocks)
    return {"rollout_no_cache": no_cache, "rollout_kept_cache": kept_cache}


def critic_floor(algorithm: Any, states: list[str], actions: list[str], micro_batch: int) -> float:
    """Seconds of the online critic's forward on (s, a) and a backward, per micro-batch (module docstring)."""
    critic = algorithm.critic
    seconds = 0.0
    for start in range(0, len(states), micro_batch):
        obs, act = states[start : start + micro_batch], actions[start : start + micro_batch]

        def step(obs: list[str] = obs, act: list[str] = act) -> None:
            out = critic(obs, act)
            (out.q1.sum() + out.q2.sum() + out.v1.sum() + out.v2.sum()).backward()

        seconds += timed(step)[1]
    critic.zero_grad(set_to_none=True)
    return seconds


def policy_update_floor(
    policy: LanguagePolicy, states: list[str], action_ids: list[list[int]], micro_batch: int
) -> float:
    """Seconds of the policy's forward on prompt + action and a backward of the actions' log-probabilities."""
    model = policy.model
    prompts = policy.encode_prompts(states)
    seconds = 0.0
    for start in range(0, len(states), micro_batch):
        rows = [
            p + a
            for p, a in zip(prompts[start : start + micro_batch], action_ids[start : start + micro_batch], strict=True)
        ]
        input_ids, mask = policy.left_pad(rows)

        def step(input_ids: torch.Tensor = input_ids, mask: torch.Tensor = mask) -> None:
            logits = model(input_ids=input_ids, attention_mask=mask, position_ids=left_padded_positions(mask)).logits
            logprobs = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, input_ids[:, 1:, None])
            (logprobs.squeeze(-1) * mask[:, 1:]).sum().backward()

        seconds += timed(step)[1]
    model.zero_grad(set_to_none=True)
    return seconds


def measure_floors(
    trainer: Any, games: list[Trajectory], critic_states: list[str], actor_states: list[str], critic_share: float = 1.0
) -> tuple[dict[str, float], dict[str, Any]]:
    """Every floor of the module docstring, on the last measured iteration's states, and the rows the updates used
    (``critic``: states and actions; ``actor``: states and sampled ids).

    ``critic_share`` (0 < share <= 1) times the two critic floors on that share of their work (the first states of
    the V-target generation, that share of the micro-batches) and scales the seconds up by its inverse: their work
    is the same call repeated at like shapes, and at the paper's schedule they are most of the floors' time.
    """
    if not 0 < critic_share <= 1:
        raise ValueError(f"critic_share must be in (0, 1], got {critic_share}")
    cfg = trainer.cfg.algorithm
    policy = trainer.policy
    floors = rollout_floors(policy, games, trainer.cfg.env.batch_size)
    batch = getattr(cfg, "generation_batch_size", 32)
    if critic_states:
        shared = critic_states[: max(1, round(len(critic_states) * critic_share))]
        floors["critic_generation"] = bare_generate(policy, policy.encode_prompts(shared), batch) / critic_share
    rows: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    if getattr(trainer.algorithm, "critic", None) is not None:
        micro = cfg.critic.micro_batch_size
        samples = cfg.critic_steps_per_iter * cfg.critic_batch_size
        timed_samples = max(micro, round(samples * critic_share / micro) * micro)
        picked = trainer.buffer.get(rng.integers(0, len(trainer.buffer), size=timed_samples))
        seconds = critic_floor(trainer.algorithm, picked.observations, picked.actions, micro)
        floors["critic_update"] = seconds * samples / timed_samples
        rows["critic"] = (picked.observations, picked.actions)
    if actor_states:
        prompts = policy.encode_prompts(actor_states)
        floors["actor_generation"] = bare_generate(policy, prompts, batch)
        generation = policy.generate(actor_states, greedy=False, batch_size=batch)
        floors["actor_update"] = policy_update_floor(
            policy, actor_states, generation.token_ids, cfg.actor_micro_batch_size
        )
        rows["actor"] = (actor_states, generation.token_ids)
    return floors, rows


def ratios_to_floors(mean: dict[str, float], floors: dict[str, float]) -> dict[str, float]:
    """Each phase's mean seconds over its floor (the rollout against the kept-cache floor, and against the other),
    and the training phases together over their floors together."""
    ratios = {"rollout": mean["rollout"] / floors["rollout_kept_cache"]}
    ratios["rollout_vs_no_cache_floor"] = mean["rollout"] / floors["rollout_no_cache"]
    for phase in ("critic_generation", "critic_update", "actor_generation", "actor_update"):
        if phase in floors and phase in mean and floors[phase] > 0:
            ratios[phase] = mean[phase] / floors[phase]
    training = sum(mean.get(p, 0.0) for p in PHASES)
    floor_total = floors["rollout_kept_cache"] + sum(
        floors.get(p, 0.0) for p in ("critic_generation", "critic_update", "actor_generation", "actor_update")
    )
    ratios["training_phases"] = training / floor_total
    return ratios
