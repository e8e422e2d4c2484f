"""Seconds per phase of a training iteration on any schedule, against the floor of each phase.

Usage (from the repository root; Hydra overrides of the run config go after the options and win over the schedule)::

    python dev/benchmark_iteration.py --iterations 3 torch_threads=1          # the CPU schedule, below
    python dev/benchmark_iteration.py --iterations 3 torch_threads=1 model.policy.reuse_kv_cache=false
    python dev/benchmark_iteration.py --no-schedule --config-name archer_20q --iterations 2 torch_threads=1

The default schedule (``CPU_SCHEDULE``, prepended to the overrides; ``--no-schedule`` drops it) is the reference
ArCHer's own, scaled to a 2-core CPU (docs/speed.md): ``archer_20q_paper_cpu`` with no pretraining (the untrained
policy never wins, so 32 games of 20 turns give 640 transitions), the full 157-word game, 16 new tokens per
utterance sampled at temperature 1, a 4 x 256 RoBERTa-architecture critic, 5 critic steps of 32 in micro-batches of 8
with V targets at fresh policy samples, 1 actor step of 32 in micro-batches of 8, no warm-up. The oracle is the ``t5``
path of the config (``env.oracle=t5``) with a tiny T5 (2 + 2 layers, width 64, random weights, so its answers are
noise; what is timed is the oracle's work) built once in the cache folder, as docs/speed.md used; ``--oracle
knowledge_base`` plays the built-in oracle instead.

Each iteration runs the phases of ``Trainer.fit`` in order and times them, and the floors are measured after the
last one on its states, with the same torch threads (``archer.phase_timing``, whose docstring lists the phases and
floors). Evaluation runs when ``eval.every_iters`` says so, the checkpoint when ``save_every_iters`` does.
``--warmup-iterations`` run first and are not counted (default 0: docs/speed.md's numbers include the first
iteration).

The ratio of each phase to its floor is printed, with the reference's per-iteration yardstick (docs/speed.md: 72-100 s,
57-85 s without its 15 s sleep) and the speed-up against it. The exact overrides used are printed first.

With the floors comes an arithmetic bound that no implementation on this machine can beat, whatever its code: the
floating-point operations (``torch.utils.flop_counter``: matrix products and attention) of the critic's and the
policy's forward+backward on the same (s, a) rows, counted one row per call so that no padding is counted, divided by
the machine's best measured fp32 matrix-multiply rate (a square ``torch.mm`` at the run's threads, the most efficient
kernel it has). The target critic's forwards, generation and the oracle are left out, so the true bound is higher.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from devkit import user_script
from torch.utils.flop_counter import FlopCounterMode

from archer.models.policy import LanguagePolicy
from archer.phase_timing import (
    OPTIONAL_PHASES,
    PHASES,
    measure_floors,
    ratios_to_floors,
    time_iterations,
    timed,
)

# The run's config comes from the user tool (scripts/benchmark_speed.py), so both time the same runs.
fresh_run_config = user_script("benchmark_speed").fresh_run_config

log = logging.getLogger("benchmark_iteration")

CPU_SCHEDULE = (
    "pretrain=null",
    "env.words=full",
    "env.batch_size=32",
    "env.max_turns=20",
    "algorithm.rollout.episodes_per_iter=32",
    "model.policy.max_new_tokens=16",
    "model.policy.temperature=1.0",
    "model.critic.embedded.n_layer=4",
    "model.critic.embedded.n_embd=256",
    "model.critic.embedded.n_head=4",
    "algorithm.critic_steps_per_iter=5",
    "algorithm.critic_batch_size=32",
    "algorithm.critic.micro_batch_size=8",
    "algorithm.actor_steps_per_iter=1",
    "algorithm.actor_batch_size=32",
    "algorithm.actor_micro_batch_size=8",
    "algorithm.warmup_iters=0",
    "eval.every_iters=1",
    "eval.num_episodes=32",
    "save_every_iters=1",
    "logging.progress_bars=false",
)
#: The yardstick: the public ArCHer code on this schedule, seconds per iteration (with and without its sleep).
REFERENCE_S = (72.0, 100.0)
REFERENCE_NO_SLEEP_S = (57.0, 85.0)


# ---- the tiny T5 oracle --------------------------------------------------------------------------------------------


def tiny_t5_oracle(folder: Path) -> Path:
    """Build (once) a tiny random T5 and its reference-format state dict in ``folder``; returns the state dict path.

    The tokenizer is a byte-level BPE trained on a few Twenty Questions prompts; the model has 2 encoder and 2 decoder
    layers of width 64. Its answers are noise: only the oracle's cost per turn is of interest here.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    checkpoint = folder / "20q_t5_oracle.pt"
    if checkpoint.is_file():
        return checkpoint
    folder.mkdir(parents=True, exist_ok=True)
    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    text = ["The object is dog.Is it alive?", "The object is chair.Is it made of wood?", "Yes. No. yes no"] * 10
    raw.train_from_iterator(
        text,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<pad>", "</s>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    raw.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    config = T5Config(
        vocab_size=len(tokenizer), d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
    )  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    model = T5ForConditionalGeneration(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.05)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    torch.save({"model_state_dict": model.state_dict()}, checkpoint)
    return checkpoint


# ---- the arithmetic bound ----------------------------------------------------------------------------------------


def peak_matmul_flops(device: torch.device, size: int = 2048, repeats: int = 5) -> float:
    """The fp32 matrix-multiply rate in FLOP/s on ``device`` (torch's threads on a CPU), best of ``repeats``."""
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    torch.mm(a, b)
    best = min(timed(lambda: torch.mm(a, b))[1] for _ in range(repeats))
    return 2 * size**3 / best


def counted_flops(step: Callable[[], Any]) -> int:
    """The floating-point operations ``torch.utils.flop_counter`` counts while ``step()`` runs (its backward too)."""
    with FlopCounterMode(display=False) as counter:
        step()
    return int(counter.get_total_flops())


def critic_update_flops(algorithm: Any, states: list[str], actions: list[str]) -> int:
    """Operations of the online critic's forward on each (s, a) and a backward, one pair per call (no padding)."""
    critic = algorithm.critic

    def step(obs: str, act: str) -> None:
        out = critic([obs], [act])
        (out.q1.sum() + out.q2.sum() + out.v1.sum() + out.v2.sum()).backward()

    total = sum(counted_flops(lambda o=o, a=a: step(o, a)) for o, a in zip(states, actions, strict=True))
    critic.zero_grad(set_to_none=True)
    return total


def policy_update_flops(policy: LanguagePolicy, states: list[str], action_ids: list[list[int]]) -> int:
    """Operations of the policy's forward on each prompt + action and a backward, one row per call (no padding)."""
    model = policy.model

    def step(ids: list[int]) -> None:
        input_ids = torch.tensor([ids], device=model.device)
        logits = model(input_ids=input_ids).logits
        torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, input_ids[:, 1:, None]).sum().backward()

    rows = [p + a for p, a in zip(policy.encode_prompts(states), action_ids, strict=True)]
    total = sum(counted_flops(lambda r=r: step(r)) for r in rows)
    model.zero_grad(set_to_none=True)
    return total


def compute_bound(floor_rows: dict[str, Any], trainer: Any) -> dict[str, float]:
    """The arithmetic bound of the module docstring on the rows the floors used: operations and seconds at peak."""
    peak = peak_matmul_flops(trainer.policy.model.device)
    bound: dict[str, float] = {"peak_matmul_flops_per_s": peak}
    if "critic" in floor_rows:
        bound["critic_update_flops"] = float(critic_update_flops(trainer.algorithm, *floor_rows["critic"]))
    if "actor" in floor_rows:
        bound["actor_update_flops"] = float(policy_update_flops(trainer.policy, *floor_rows["actor"]))
    for phase in ("critic_update", "actor_update"):
        if f"{phase}_flops" in bound:
            bound[f"{phase}_s_at_peak"] = bound[f"{phase}_flops"] / peak
    bound["total_s_at_peak"] = sum(v for k, v in bound.items() if k.endswith("_s_at_peak"))
    return bound


# ---- the benchmark -------------------------------------------------------------------------------------------------


def run(cfg: Any, run_dir: Path, iterations: int, warmup_iterations: int, floors: bool) -> dict[str, Any]:
    """Build a trainer for ``cfg`` and time ``iterations`` iterations phase by phase (module docstring)."""
    from archer.trainer import build_trainer

    trainer, setup_s = timed(lambda: build_trainer(cfg, run_dir))
    if not hasattr(trainer.algorithm, "critic_phase"):
        raise SystemExit(
            f"benchmark_iteration times ArCHer's phases; {type(trainer.algorithm).__name__} has no critic phase"
        )

    def report(iteration: int, measured: bool, seconds: dict[str, float]) -> None:
        each = " ".join(f"{k}={v:.2f}s" for k, v in seconds.items())
        log.info("%s iteration %d: %s", "measured" if measured else "warm-up", iteration, each)

    times = time_iterations(trainer, iterations, warmup_iterations, on_iteration=report)
    trainer.tracker.finish()
    mean = times.mean_seconds()
    result: dict[str, Any] = {
        "torch_threads": torch.get_num_threads(),
        "setup_s": setup_s,
        "oracle": getattr(cfg.env, "oracle", "none (no oracle in this game)"),
        "transitions_per_iteration": sum(game.length for game in times.games),
        "phases_s": mean,
        "phases_s_per_iteration": times.seconds,
        "reference_s": list(REFERENCE_S),
        "speedup_vs_reference": [REFERENCE_S[0] / mean["iteration"], REFERENCE_S[1] / mean["iteration"]],
        "speedup_vs_reference_without_sleep": [
            REFERENCE_NO_SLEEP_S[0] / mean["iteration"],
            REFERENCE_NO_SLEEP_S[1] / mean["iteration"],
        ],
    }
    if floors:
        floor, floor_rows = measure_floors(trainer, times.games, times.critic_states, times.actor_states)
        result["floors_s"] = floor
        result["compute_bound"] = compute_bound(floor_rows, trainer)
        result["ratio_to_floor"] = ratios_to_floors(mean, floor)
    return result


def format_report(figures: dict[str, Any]) -> str:
    """The figures as a table."""
    training = figures["training"]
    lines = [
        f"benchmark_iteration: --config-name {figures['config_name']}",
        f"overrides: {' '.join(figures['overrides'])}",
        f"oracle: {training['oracle']}{' (tiny random T5, built locally)' if training['oracle'] == 't5' else ''}; "
        f"torch threads {training['torch_threads']}; {len(training['phases_s_per_iteration']['iteration'])} measured "
        f"iteration(s); {training['transitions_per_iteration']} transitions in the last rollout",
        "",
        f"{'phase':<20}{'s/iteration':>12}{'floor s':>10}{'ratio':>8}   each iteration",
    ]
    floors, ratios = training.get("floors_s", {}), training.get("ratio_to_floor", {})
    for phase in (*PHASES, *OPTIONAL_PHASES, "iteration"):
        if phase not in training["phases_s"]:
            continue
        floor = floors.get("rollout_kept_cache" if phase == "rollout" else phase)
        ratio = ratios.get(phase)
        each = " ".join(f"{v:.2f}" for v in training["phases_s_per_iteration"][phase])
        lines.append(
            f"{phase:<20}{training['phases_s'][phase]:>12.2f}{'' if floor is None else f'{floor:.2f}':>10}"
            f"{'' if ratio is None else f'{ratio:.2f}':>8}   {each}"
        )
    if floors:
        lines += [
            "",
            f"rollout floor without a kept cache: {floors['rollout_no_cache']:.2f} s "
            f"(rollout / it: {ratios['rollout_vs_no_cache_floor']:.2f}); with a kept cache: "
            f"{floors['rollout_kept_cache']:.2f} s",
            f"training phases (no evaluation, checkpoint) / their floors: {ratios['training_phases']:.2f}",
        ]
    bound = training.get("compute_bound")
    if bound:
        peak = bound["peak_matmul_flops_per_s"]
        parts = [
            f"{phase.replace('_', ' ')} {bound[f'{phase}_flops'] / 1e12:.3f} TFLOP = "
            f"{bound[f'{phase}_s_at_peak']:.2f} s"
            for phase in ("critic_update", "actor_update")
            if f"{phase}_flops" in bound
        ]
        lines.append(
            f"arithmetic bound at this machine's best fp32 matmul rate ({peak / 1e9:.1f} GFLOP/s): "
            f"{'; '.join(parts)}; together {bound['total_s_at_peak']:.2f} s per iteration "
            f"(10x the reference asks for {REFERENCE_S[0] / 10:.1f}-{REFERENCE_S[1] / 10:.1f} s in all)"
        )
    low, high = training["speedup_vs_reference"]
    low_ns, high_ns = training["speedup_vs_reference_without_sleep"]
    lines.append(
        f"against the reference's {REFERENCE_S[0]:.0f}-{REFERENCE_S[1]:.0f} s/iteration (docs/speed.md): "
        f"{low:.2f}-{high:.2f}x; without its sleep ({REFERENCE_NO_SLEEP_S[0]:.0f}-{REFERENCE_NO_SLEEP_S[1]:.0f} s): "
        f"{low_ns:.2f}-{high_ns:.2f}x"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Seconds per phase against floors (see the module docstring).")
    parser.add_argument("--config-name", default="archer_20q_paper_cpu", help="top-level file of scripts/config")
    parser.add_argument("--iterations", type=int, default=3, help="measured iterations (default 3)")
    parser.add_argument("--warmup-iterations", type=int, default=0, help="iterations run first, not counted (0)")
    parser.add_argument("--no-schedule", action="store_true", help="do not prepend the CPU schedule")
    parser.add_argument(
        "--oracle",
        choices=("t5", "knowledge_base"),
        default="t5",
        help="Twenty Questions oracle (no other game has one)",
    )
    parser.add_argument("--no-floors", action="store_true", help="skip the floors")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this file")
    parser.add_argument("--run-dir", type=Path, default=None, help="keep the run folder here (default: temporary)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. model.policy.reuse_kv_cache=true")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.warmup_iterations < 0:
        parser.error("--iterations must be >= 1 and --warmup-iterations >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the figures (also written to ``--json``)."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides = [*(() if args.no_schedule else CPU_SCHEDULE), *args.overrides]
    with tempfile.TemporaryDirectory(prefix="benchmark_iteration_") as scratch:
        run_dir = args.run_dir if args.run_dir is not None else Path(scratch) / "run"
        probe = fresh_run_config(args.config_name, overrides, run_dir)
        # Only Twenty Questions has an oracle to choose; the other games time their own environment.
        has_oracle = hasattr(probe.env, "oracle")
        if has_oracle and args.oracle == "t5" and not any(o.startswith("env.oracle=") for o in args.overrides):
            from archer.utils import resolve_cache_dir

            checkpoint = tiny_t5_oracle(resolve_cache_dir(probe.cache_dir) / "benchmark_tiny_t5_oracle")
            oracle = ["env.oracle=t5", f"env.oracle_path={checkpoint}", f"env.oracle_base_model={checkpoint.parent}"]
            overrides = [*overrides[: len(overrides) - len(args.overrides)], *oracle, *args.overrides]
        cfg = fresh_run_config(args.config_name, overrides, run_dir)
        start = time.perf_counter()
        training = run(cfg, run_dir, args.iterations, args.warmup_iterations, floors=not args.no_floors)
        training["wall_s"] = time.perf_counter() - start
    figures = {"config_name": args.config_name, "overrides": overrides, "training": training}
    print(format_report(figures))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
