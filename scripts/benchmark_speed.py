"""Speed and memory benchmark of a training run, phase by phase.

Usage (from ``scripts/``; any Hydra override of the run config goes after the options)::

    python benchmark_speed.py --config-name archer_20q --iterations 2 --json speed.json torch_threads=2
    python benchmark_speed.py --config-name archer_20q model.policy.embedded.n_layer=12 \\
        model.policy.embedded.n_embd=768 model.policy.embedded.n_head=12
    python benchmark_speed.py --replay-buffer --no-training      # the replay buffer's memory only

The run config is composed with Hydra's compose API from ``scripts/config`` exactly as ``run.py`` composes it
(``--config-name`` picks the top-level file, positional ``key=value`` arguments are Hydra overrides), then
``build_trainer`` builds a ``Trainer`` in a temporary run folder (``--run-dir`` keeps it) and its phases are timed
directly, in the order of ``Trainer.fit``: rollout (``Trainer.collect``), the advantage check (``check_new_games``,
when ``log_advantage_check`` is on), critic and actor (the algorithm's ``critic_phase`` and ``actor_phase``; algorithms
without them are timed as one ``update`` phase), evaluation (``Trainer.evaluate``) and
checkpoint (``Trainer.save``). One warm-up iteration runs first and is not counted. The actor phase is timed in
every iteration, also during the algorithm's critic-only warm-up, and evaluation and checkpoint every iteration,
whatever ``eval.every_iters`` and ``save_every_iters`` say: the figures are the cost of each phase when it runs.

Reported:

- seconds per phase per iteration (mean over the measured iterations, and each iteration's value);
- rollout throughput: generated action tokens (terminator included; ``Trajectory.action_token_ids`` when the
  rollout records them, else the actions re-tokenised with ``LanguagePolicy.encode_actions``) per second of the
  rollout phase, beside the throughput of the bare batched Hugging Face ``generate`` call of the same model,
  sampling at the same batch size (``env.batch_size``) from the states the games just played visited, grouped by
  turn as the rollout groups them. Their ratio is the rollout efficiency: 1 means the environment, the oracle
  and the bookkeeping cost nothing beside generation. ``LanguagePolicy.generate`` (prompt encoding and decoding
  included) is reported too, and so is the time the rollout spent inside ``generate`` and its share of the
  rollout (measured in the same calls, so unlike the efficiency it is not skewed when the load of a shared
  machine changes between the rollout and the bare call);
- critic and actor samples per second (replay transitions per second of each phase; the critic phase includes
  sampling its V-target actions, the actor phase its fresh actions);
- peak memory: the process's maximum resident set size, and ``torch.cuda.max_memory_allocated`` on a GPU;
- with ``--replay-buffer``: the memory a ``ReplayBuffer`` holds at ``--buffer-transitions`` (the reference's
  capacity, 100,000) Twenty Questions transitions played by the scripted questioners against the knowledge-base
  oracle (157 words), measured with ``tracemalloc`` as everything the buffer keeps alive (an upper bound: it also
  counts what the data generator caches). The target is under 1 GiB.

The figures are printed as a table and, with ``--json PATH``, written as JSON. A built-in starting policy
(``pretrain``) is built once and cached in ``cache_dir`` before timing starts (``pretrain=null`` skips it).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from hydra.errors import ConfigCompositionException
from tool_refusals import OneLineParser, composition_message, refuse_unwritable

from archer.cli import compose_run_config, describe_error
from archer.config import RunConfig
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory
from archer.errors import ArcherError
from archer.models.policy import LanguagePolicy
from archer.phase_timing import count_action_tokens, generator_of, synchronize, timed
from archer.utils import atomic_write_text

CONFIG_DIR = Path(__file__).resolve().parent / "config"
GIB = 1024**3
PHASES = ("rollout", "advantage_check", "critic", "actor", "update", "evaluation", "checkpoint")

log = logging.getLogger("benchmark_speed")


# ---- configuration --------------------------------------------------------------------------------------------


def fresh_run_config(config_name: str, overrides: Sequence[str], run_dir: Path) -> RunConfig:
    """Compose ``scripts/config/<config_name>.yaml`` with ``overrides`` into a validated ``RunConfig``.

    The run folder is set to ``run_dir`` and ``resume`` to false (after ``overrides``, so they win), so the
    benchmark always starts afresh.
    """
    return compose_run_config(CONFIG_DIR, config_name, [*overrides, f"run_dir={run_dir}", "resume=false"])


# ---- timing helpers -------------------------------------------------------------------------------------------


class GenerateCallTimer:
    """Accumulates the wall time and number of calls of a model's ``generate`` while installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    @contextmanager
    def installed(self, model: torch.nn.Module) -> Iterator[GenerateCallTimer]:
        """Time every ``model.generate`` call made inside the ``with`` block."""
        original = model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            output, seconds = timed(lambda: original(*args, **kwargs))
            self.seconds += seconds
            self.calls += 1
            return output

        # An instance attribute shadows the class's method for this model only, and deleting it restores it.
        model.generate = generate
        try:
            yield self
        finally:
            del model.generate


class ArithmeticMeter:
    """Accumulates the time a phase spends in model arithmetic: ``generate``, forward passes, backward passes and
    optimiser steps.

    Forward passes are timed at the outermost of the watched modules (the policy model, each critic's encoder and
    heads) and not while inside ``generate`` (which is timed whole); backward passes are the accelerator's
    ``backward`` calls, optimiser steps every ``Optimizer.step``. What is left of a phase's time is overhead:
    tokenisation, padding, sampling the replay buffer, the environment and oracle, Python bookkeeping.
    """

    def __init__(self) -> None:
        self.seconds = {"generate": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0}
        self._depth = 0
        self._started = 0.0

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def _add(self, kind: str, fn: Callable[[], Any]) -> Any:
        self._depth += 1
        try:
            output, seconds = timed(fn)
        finally:
            self._depth -= 1
        self.seconds[kind] += seconds
        return output

    @contextmanager
    def installed(self, trainer: Any) -> Iterator[ArithmeticMeter]:
        """Measure inside the ``with`` block, on ``trainer``'s policy, critics and accelerator."""
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        generator = generator_of(trainer.policy)
        accelerator = trainer.accelerator
        original_generate, original_backward = generator.generate, accelerator.backward
        modules = [trainer.policy.model]
        for name in ("critic", "target_critic"):
            critic = getattr(trainer.algorithm, name, None)
            if critic is not None:
                modules += [critic.encoder, critic.q1, critic.q2, critic.v1, critic.v2]

        def pre_forward(module: torch.nn.Module, args: Any) -> None:
            if self._depth == 0:
                synchronize()
                self._started = time.perf_counter()
            self._depth += 1

        def post_forward(module: torch.nn.Module, args: Any, output: Any) -> None:
            self._depth -= 1
            if self._depth == 0:
                synchronize()
                self.seconds["forward"] += time.perf_counter() - self._started

        def pre_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            synchronize()
            self._started = time.perf_counter()

        def post_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            synchronize()
            self.seconds["optimizer"] += time.perf_counter() - self._started

        handles = [module.register_forward_pre_hook(pre_forward) for module in modules]
        handles += [module.register_forward_hook(post_forward) for module in modules]
        handles += [register_optimizer_step_pre_hook(pre_step), register_optimizer_step_post_hook(post_step)]
        shadowed = {"generate": "generate" in vars(generator), "backward": "backward" in vars(accelerator)}
        generator.generate = lambda *a, **k: self._add("generate", lambda: original_generate(*a, **k))
        accelerator.backward = lambda *a, **k: self._add("backward", lambda: original_backward(*a, **k))
        try:
            yield self
        finally:
            for handle in handles:
                handle.remove()
            for owner, name, original in (
                (generator, "generate", original_generate),
                (accelerator, "backward", original_backward),
            ):
                # Put back what was there: another timer's instance attribute, or the class's method.
                if shadowed[name]:
                    setattr(owner, name, original)
                else:
                    delattr(owner, name)


# ---- generation throughput --------------------------------------------------------------------------------------


def acting_states(trajectories: Sequence[Trajectory]) -> list[str]:
    """Every observation an action was taken at, grouped by turn (turn 0 of every game first), as the rollout
    batches them."""
    longest = max((t.length for t in trajectories), default=0)
    return [t.observations[turn] for turn in range(longest) for t in trajectories if turn < t.length]


def bare_generation(policy: LanguagePolicy, observations: Sequence[str], batch_size: int) -> dict[str, float]:
    """Sample one action for each of ``observations`` with ``LanguagePolicy.generate``, ``batch_size`` at a time.

    Returns:
        ``tokens`` (generated, terminators included), ``generate_s`` (time inside the model's ``generate``) and
        ``policy_generate_s`` (the whole ``LanguagePolicy.generate`` calls: prompt encoding and decoding too).
    """
    calls = GenerateCallTimer()
    tokens = 0
    total = 0.0
    with calls.installed(generator_of(policy)):
        for start in range(0, len(observations), batch_size):
            chunk = list(observations[start : start + batch_size])
            generation, seconds = timed(lambda chunk=chunk: policy.generate(chunk, greedy=False))
            total += seconds
            tokens += sum(len(ids) for ids in generation.token_ids)
    return {"tokens": float(tokens), "generate_s": calls.seconds, "policy_generate_s": total}


# ---- the training benchmark ------------------------------------------------------------------------------------


def _recording_observe(algorithm: Any, sink: list[Trajectory]) -> None:
    """Make ``algorithm.observe`` (called by ``Trainer.collect`` with the iteration's games) also keep the games."""
    original = algorithm.observe

    def observe(trajectories: list[Trajectory], iteration: int) -> None:
        sink.extend(trajectories)
        original(trajectories, iteration)

    algorithm.observe = observe


def _per_second(count: float, seconds: float) -> float | None:
    return count / seconds if seconds > 0 else None


def benchmark_training(cfg: RunConfig, run_dir: Path, iterations: int, warmup_iterations: int) -> dict[str, Any]:
    """Build a ``Trainer`` for ``cfg`` in ``run_dir`` and time its phases (see the module docstring).

    One function: its phases must run in ``Trainer.fit``'s order with the same meters installed around each, so the
    loop that times them and the figures it gathers read together.

    Returns:
        The figures, as written to the JSON file.
    """
    from archer.trainer import build_trainer  # after logging is configured, and not needed by --no-training

    trainer, setup_s = timed(lambda: build_trainer(cfg, run_dir))
    algorithm = trainer.algorithm
    algo_cfg = cfg.algorithm
    played: list[Trajectory] = []
    _recording_observe(algorithm, played)
    has_critic = hasattr(algorithm, "critic_phase") and getattr(algo_cfg, "critic_steps_per_iter", 0) > 0
    has_actor = hasattr(algorithm, "actor_phase") and getattr(algo_cfg, "actor_steps_per_iter", 0) > 0
    separate_phases = hasattr(algorithm, "critic_phase") or hasattr(algorithm, "actor_phase")

    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    rollout = {"tokens": 0.0, "actions": 0.0, "games": 0.0, "generate_s": 0.0, "generate_calls": 0.0}
    bare = {"tokens": 0.0, "generate_s": 0.0, "policy_generate_s": 0.0, "prompts": 0.0}
    token_source = None
    # Seconds of model arithmetic (generate, forward, backward, optimiser step) inside each phase.
    arithmetic = {"rollout": 0.0, "critic": 0.0, "actor": 0.0}
    arithmetic_parts = {phase: dict.fromkeys(ArithmeticMeter().seconds, 0.0) for phase in ("critic", "actor")}
    for iteration in range(1, warmup_iterations + iterations + 1):
        measured = iteration > warmup_iterations
        seconds: dict[str, float] = {}
        if algo_cfg.online:
            played.clear()
            calls, meter = GenerateCallTimer(), ArithmeticMeter()
            with calls.installed(generator_of(trainer.policy)), meter.installed(trainer):
                _, seconds["rollout"] = timed(lambda iteration=iteration: trainer.collect(iteration))
            if measured:
                arithmetic["rollout"] += meter.total
            if measured:
                tokens, token_source = count_action_tokens(played, trainer.policy)
                rollout["tokens"] += tokens
                rollout["actions"] += sum(t.length for t in played)
                rollout["games"] += len(played)
                rollout["generate_s"] += calls.seconds
                rollout["generate_calls"] += calls.calls
                # The bare call runs between the phases, with the policy that just played, and is not timed as
                # part of the iteration.
                states = acting_states(played)
                figures = bare_generation(trainer.policy, states, cfg.env.batch_size)
                for key in ("tokens", "generate_s", "policy_generate_s"):
                    bare[key] += figures[key]
                bare["prompts"] += len(states)
        if separate_phases and getattr(algo_cfg, "log_advantage_check", False):
            # update() scores the new games with the critic before its critic phase: timed as a phase of its own.
            _, seconds["advantage_check"] = timed(algorithm.check_new_games)
        if separate_phases:
            for phase, run_phase, wanted in (
                ("critic", getattr(algorithm, "critic_phase", None), has_critic),
                ("actor", getattr(algorithm, "actor_phase", None), has_actor),
            ):
                if not wanted:
                    continue
                meter = ArithmeticMeter()
                with meter.installed(trainer):
                    _, seconds[phase] = timed(
                        lambda run_phase=run_phase, iteration=iteration: run_phase(
                            trainer.buffer, iteration, trainer.rng
                        )
                    )
                if measured:
                    arithmetic[phase] += meter.total
                    for kind, value in meter.seconds.items():
                        arithmetic_parts[phase][kind] += value
        else:
            _, seconds["update"] = timed(
                lambda iteration=iteration: algorithm.update(trainer.buffer, iteration, trainer.rng)
            )
        _, seconds["evaluation"] = timed(trainer.evaluate)
        _, seconds["checkpoint"] = timed(lambda iteration=iteration: trainer.save(iteration))
        log.info(
            "%s iteration %d: %s",
            "measured" if measured else "warm-up",
            iteration,
            " ".join(f"{k}={v:.2f}s" for k, v in seconds.items()),
        )
        if measured:
            for phase, value in seconds.items():
                times[phase].append(value)
    trainer.tracker.finish()

    per_iteration = {phase: values for phase, values in times.items() if values}
    phases_s = {phase: float(np.mean(values)) for phase, values in per_iteration.items()}
    phases_s["iteration"] = float(sum(phases_s.values()))
    result: dict[str, Any] = {
        "device": str(trainer.accelerator.device),
        "torch_threads": torch.get_num_threads(),
        "iterations": iterations,
        "warmup_iterations": warmup_iterations,
        "setup_s": setup_s,
        "policy_parameters": sum(p.numel() for p in trainer.policy.model.parameters()),
        "critic_parameters": (
            sum(p.numel() for p in algorithm.critic.parameters()) if getattr(algorithm, "critic", None) else None
        ),
        "eval_games": len(trainer.eval_game_ids),
        "phases_s": phases_s,
        "phases_s_per_iteration": per_iteration,
    }
    if algo_cfg.online:
        rollout_s = sum(per_iteration["rollout"])
        bare_tok_s = _per_second(bare["tokens"], bare["generate_s"])
        rollout_tok_s = _per_second(rollout["tokens"], rollout_s)
        result["rollout"] = {
            "games_per_iteration": rollout["games"] / iterations,
            "actions": int(rollout["actions"]),
            "generated_tokens": int(rollout["tokens"]),
            "token_count_source": token_source,
            "seconds": rollout_s,
            "tokens_per_s": rollout_tok_s,
            "generate_calls": int(rollout["generate_calls"]),
            "generate_s": rollout["generate_s"] if rollout["generate_calls"] else None,
            # Measured in the same calls as the rollout time, so unlike the efficiency it does not depend on the
            # machine's load staying the same between the rollout and the bare call.
            "generate_share": rollout["generate_s"] / rollout_s if rollout["generate_calls"] else None,
        }
        result["bare_generate"] = {
            "batch_size": cfg.env.batch_size,
            "prompts": int(bare["prompts"]),
            "generated_tokens": int(bare["tokens"]),
            "seconds": bare["generate_s"],
            "tokens_per_s": bare_tok_s,
            "policy_generate_s": bare["policy_generate_s"],
            "policy_generate_tokens_per_s": _per_second(bare["tokens"], bare["policy_generate_s"]),
        }
        result["rollout_efficiency"] = rollout_tok_s / bare_tok_s if rollout_tok_s is not None and bare_tok_s else None
    for phase, wanted, steps_key, batch_key in (
        ("critic", has_critic, "critic_steps_per_iter", "critic_batch_size"),
        ("actor", has_actor, "actor_steps_per_iter", "actor_batch_size"),
    ):
        if wanted and separate_phases:
            samples = getattr(algo_cfg, steps_key) * getattr(algo_cfg, batch_key)
            phase_s = sum(per_iteration[phase])
            result[phase] = {
                "samples_per_iteration": samples,
                "samples_per_s": _per_second(samples * iterations, phase_s),
                "arithmetic_s": arithmetic[phase],
                "arithmetic_parts_s": arithmetic_parts[phase],
                "arithmetic_share": arithmetic[phase] / phase_s if phase_s > 0 else None,
            }
    if algo_cfg.online:
        result["rollout"]["arithmetic_s"] = arithmetic["rollout"]
        result["rollout"]["arithmetic_share"] = arithmetic["rollout"] / rollout_s if rollout_s > 0 else None
    timed_phases = [phase for phase in ("rollout", "critic", "actor") if phase in result]
    phase_total = sum(sum(per_iteration[phase]) for phase in timed_phases)
    result["arithmetic_share_of_training"] = (
        sum(arithmetic[phase] for phase in timed_phases) / phase_total if phase_total > 0 else None
    )
    return result


# ---- memory ----------------------------------------------------------------------------------------------------


def peak_memory() -> dict[str, float | None]:
    """The process's peak resident set size so far, and the peak CUDA memory allocated (None without a GPU)."""
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    cuda = torch.cuda.max_memory_allocated() / GIB if torch.cuda.is_available() else None
    return {"max_rss_gib": rss / GIB, "cuda_max_allocated_gib": cuda}


def benchmark_replay_buffer(transitions: int, seed: int = 0, games_per_chunk: int = 500) -> dict[str, Any]:
    """Fill a ``ReplayBuffer`` of capacity ``transitions`` with scripted Twenty Questions games; measure its memory.

    Games are generated, added and dropped chunk by chunk while ``tracemalloc`` traces allocations, so the memory
    still traced at the end is what the buffer keeps alive (plus whatever the generator caches).
    """
    from archer.envs.twenty_questions.dataset import conversation_to_trajectory, generate_twenty_questions_dataset
    from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle

    oracle = KnowledgeBaseOracle()
    # A few games first, so the questioners' and the oracle's caches are filled before tracing starts.
    generate_twenty_questions_dataset(50, seed=seed + 1, oracle=oracle, progress=False)
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    baseline = tracemalloc.get_traced_memory()[0]
    buffer = ReplayBuffer(capacity=transitions, gamma_mc=0.95)
    rng = random.Random(seed)
    games = 0
    added = 0
    text_chars = 0
    while len(buffer) < transitions:
        conversations = generate_twenty_questions_dataset(
            games_per_chunk, seed=rng.getrandbits(32), oracle=oracle, progress=False
        )
        for conversation in conversations:
            trajectory = conversation_to_trajectory(conversation)
            text_chars += sum(len(obs) for obs in trajectory.observations[:-1])
            added += trajectory.length
            buffer.add_trajectory(trajectory)
            games += 1
            if len(buffer) >= transitions:
                break
        del conversations
    fill_s = time.perf_counter() - start
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    sample_rng = np.random.default_rng(seed)
    _, sample_s = timed(lambda: [buffer.sample(256, sample_rng) for _ in range(10)])
    return {
        "transitions": len(buffer),
        "games": games,
        "distinct_texts": buffer.num_texts,
        "mean_observation_chars": text_chars / max(added, 1),
        "tracemalloc_bytes": traced,
        "tracemalloc_gib": traced / GIB,
        "bytes_per_transition": traced / max(len(buffer), 1),
        "estimated_bytes": buffer.memory_bytes(),
        "fill_s": fill_s,
        "sample_256_ms": sample_s / 10 * 1000,
        "under_1_gib": traced < GIB,
    }


# ---- report ----------------------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str = ".3g") -> str:
    return "n/a" if value is None else format(value, spec)


def format_report(figures: dict[str, Any]) -> str:
    """The figures as a readable table (one function, as long as the table: one line per figure, in print order)."""
    lines = [f"speed benchmark: --config-name {figures['config_name']} {' '.join(figures['overrides'])}".rstrip()]
    training = figures.get("training")
    if training is not None:
        lines.append(
            f"device {training['device']}, torch threads {training['torch_threads']}, {training['iterations']} "
            f"measured iteration(s) after {training['warmup_iterations']} warm-up; policy "
            f"{training['policy_parameters'] / 1e6:.1f}M parameters"
            + (
                f", critic {training['critic_parameters'] / 1e6:.1f}M"
                if training["critic_parameters"] is not None
                else ""
            )
        )
        lines += ["", f"{'phase':<16}{'s/iteration':>12}   each iteration"]
        for phase, values in training["phases_s_per_iteration"].items():
            each = " ".join(f"{v:.2f}" for v in values)
            lines.append(f"{phase:<16}{training['phases_s'][phase]:>12.2f}   {each}")
        lines.append(f"{'total':<16}{training['phases_s']['iteration']:>12.2f}")
        lines += ["", f"{'throughput':<34}value"]
        if "rollout" in training:
            roll, bare = training["rollout"], training["bare_generate"]
            lines += [
                f"{'rollout tokens/s':<34}{_fmt(roll['tokens_per_s'], '.1f')}  ({roll['generated_tokens']} tokens "
                f"({roll['token_count_source']}), {roll['actions']} actions, "
                f"{roll['games_per_iteration']:.0f} games/iteration)",
                f"{'  of which inside generate (s)':<34}{_fmt(roll['generate_s'], '.2f')} of {roll['seconds']:.2f} "
                f"({roll['generate_calls']} calls; share {_fmt(roll['generate_share'], '.3f')})",
                f"{'bare generate tokens/s':<34}{_fmt(bare['tokens_per_s'], '.1f')}  (batch {bare['batch_size']}, "
                f"{bare['prompts']} prompts, {bare['generated_tokens']} tokens)",
                f"{'LanguagePolicy.generate tokens/s':<34}{_fmt(bare['policy_generate_tokens_per_s'], '.1f')}",
                f"{'rollout efficiency':<34}{_fmt(training['rollout_efficiency'], '.3f')}",
            ]
        for phase in ("critic", "actor"):
            if phase in training:
                lines.append(
                    f"{phase + ' samples/s':<34}{_fmt(training[phase]['samples_per_s'], '.1f')}  "
                    f"({training[phase]['samples_per_iteration']} samples/iteration)"
                )
        lines += ["", f"{'model arithmetic share':<34}value  (generate, forward, backward, optimiser step)"]
        for phase in ("rollout", "critic", "actor"):
            if phase in training:
                parts = training[phase].get("arithmetic_parts_s")
                detail = ", ".join(f"{k} {v:.2f}s" for k, v in parts.items()) if parts else ""
                lines.append(f"{'  ' + phase:<34}{_fmt(training[phase]['arithmetic_share'], '.3f')}  {detail}")
        lines.append(f"{'  rollout + critic + actor':<34}{_fmt(training['arithmetic_share_of_training'], '.3f')}")
    memory = figures["memory"]
    lines += [
        "",
        f"{'peak RSS (GiB)':<34}{memory['max_rss_gib']:.2f}",
        f"{'peak CUDA allocated (GiB)':<34}{_fmt(memory['cuda_max_allocated_gib'], '.2f')}",
    ]
    buffer = figures.get("replay_buffer")
    if buffer is not None:
        lines += [
            "",
            f"replay buffer: {buffer['transitions']} Twenty Questions transitions ({buffer['games']} games, "
            f"{buffer['distinct_texts']} distinct observations)",
            f"{'  memory (tracemalloc, GiB)':<34}{buffer['tracemalloc_gib']:.3f}  "
            f"({buffer['bytes_per_transition']:.0f} bytes/transition; target < 1 GiB: "
            f"{'met' if buffer['under_1_gib'] else 'NOT met'})",
            f"{'  memory (buffer estimate, GiB)':<34}{buffer['estimated_bytes'] / GIB:.3f}",
            f"{'  sample(256) (ms)':<34}{buffer['sample_256_ms']:.2f}",
        ]
    return "\n".join(lines)


# ---- command line ----------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        description="Time the phases of a training run and measure its memory (see the module docstring).",
        epilog="Example: python benchmark_speed.py --config-name archer_20q --json speed.json torch_threads=2 "
        "model.policy.embedded.n_layer=12",
    )
    parser.add_argument("--config-name", default="archer_20q", help="top-level file of scripts/config (archer_20q)")
    parser.add_argument("--iterations", type=int, default=2, help="measured iterations (default 2)")
    parser.add_argument("--warmup-iterations", type=int, default=1, help="iterations run first, not counted (1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this file")
    parser.add_argument("--run-dir", type=Path, default=None, help="keep the run folder here (default: temporary)")
    parser.add_argument(
        "--replay-buffer", action="store_true", help="also measure the replay buffer's memory at --buffer-transitions"
    )
    parser.add_argument(
        "--buffer-transitions", type=int, default=100_000, help="replay buffer size (default 100000, the reference's)"
    )
    parser.add_argument("--no-training", action="store_true", help="skip the training benchmark")
    parser.add_argument(
        "overrides", nargs="*", help="Hydra overrides of the run config, e.g. algorithm.critic_steps_per_iter=5"
    )
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.warmup_iterations < 0:
        parser.error("--iterations must be >= 1 and --warmup-iterations >= 0")
    if args.no_training and not args.replay_buffer:
        parser.error("--no-training leaves nothing to do without --replay-buffer")
    if args.buffer_transitions < 1:
        parser.error("--buffer-transitions must be positive")
    return args


def write_figures(path: Path, figures: dict[str, Any]) -> None:
    """Write the figures as JSON, atomically (a kill or a full disk leaves the previous file whole)."""
    atomic_write_text(path, json.dumps(figures, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the figures written to ``--json``.

    A user's mistake is one line, as ``run.py`` prints it: a ``--json`` or ``--run-dir`` that cannot be written
    (before anything is measured), an override that does not compose, and the project's own errors (a model that
    cannot be loaded, a configuration error).
    """
    args = parse_args(argv)
    refuse_unwritable("--json", args.json, folder=False)
    refuse_unwritable("--run-dir", args.run_dir, folder=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return measure(args)
    except ConfigCompositionException as error:
        raise SystemExit(f"configuration error: {composition_message(error)}") from None
    except ArcherError as error:
        raise SystemExit(describe_error(error)) from None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The training benchmark and the replay buffer's, as the options ask; prints the table, writes ``--json``."""
    figures: dict[str, Any] = {"config_name": args.config_name, "overrides": list(args.overrides)}
    if not args.no_training:
        with tempfile.TemporaryDirectory(prefix="benchmark_speed_") as scratch:
            run_dir = args.run_dir if args.run_dir is not None else Path(scratch) / "run"
            cfg = fresh_run_config(args.config_name, args.overrides, run_dir)
            figures["training"] = benchmark_training(cfg, run_dir, args.iterations, args.warmup_iterations)
    # Before the buffer section, so the peak is the training run's.
    figures["memory"] = peak_memory()
    if args.replay_buffer:
        figures["replay_buffer"] = benchmark_replay_buffer(args.buffer_transitions)
    report = format_report(figures)
    print(report)
    if args.json is not None:
        write_figures(args.json, figures)
    return figures


if __name__ == "__main__":
    main()
