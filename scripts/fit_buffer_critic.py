"""Fit a fresh critic on a finished Twenty Questions run's replay buffer with chosen targets, probing as it goes.

Usage (from ``scripts/``; Hydra overrides of the critic's config go after the options)::

    python fit_buffer_critic.py --config-name archer_20q --buffer-from /path/to/run --targets next-value
    python fit_buffer_critic.py --config-name archer_20q --buffer-from /path/to/run --targets state-value \\
        model.critic.turns.repeat_similarity=true

A run's TD critic is trained on its buffer's transitions with targets built from its own estimates. This script
keeps the transitions (the final buffer in ``<run>/checkpoint.pt``, every (s, a, r, s') in it) and the configured
critic architecture (freshly built; the config's overrides may change it), and replaces one estimate at a time by
the game's exact optimal values (``archer.envs.twenty_questions.optimal``; the 10-word subset), or keeps TD and
changes only what V regresses on:

- ``exact``: the Q heads regress on ``Q*(s, a)``: what the buffer's (s, a) pairs can teach at all;
- ``next-value``: the Q heads regress on the transition's own ``r + gamma (1 - done) V*(s')``, TD's target with the
  learned ``Vbar(s')`` replaced by the exact one (a single transition's noise kept);
- ``state-value``: TD as the run does it, ``Q <- r + gamma (1 - done) Vbar(s')`` through the critic's own V heads
  and Polyak target (``algorithm.critic.tau``), but the V heads regress on ``V*(s)`` instead of ``Qbar`` at the
  policy's samples: whether a learned next-state value, even one fitted to exact values, keeps the ranking;
- ``policy-value``: no exact values, the run's own TD on the final buffer: Q as in ``state-value``, V on
  ``Qbar(s, a~)`` at a sample a~ of the config's starting policy per buffer state, drawn once (the squared error,
  or the expectile of ``algorithm.v_expectile``): with a critic-only run's buffer (its policy is that start),
  whether a fresh critic trained on the final data learns what the run's critic, trained as the data grew, did not.
  ``--samples K`` draws K moves per state and takes the mean (a sharper estimate of the same value) or, with
  ``--reduce max``, the best of the K (the value of a best-of-K policy: a step of policy improvement);
- ``script-value``: the same TD, V on ``Qbar(s, a)`` at the move of a scripted player that keeps track of the
  words still possible and asks the question splitting them most evenly (``GreedyQuestioner``, drawn once per
  state): a bootstrapped target as long as the policy's, for a player that uses every answer;
- ``replay-value``: the same TD, V on ``Qbar(s, a)`` at the transition's own stored move (the trainer's
  ``algorithm.v_target_action=replay``): V's target read where Q itself was trained, valuing the buffer's play;
- ``return-value``: the same TD for Q, V on the discounted return the stored game went on to collect from s (the
  buffer's Monte Carlo return): the buffer's play valued without bootstrapping, its noise that of whole games.

Every ``--every`` steps the probe (``archer.critic_probe``) scores the critic (its Polyak target for the targets
that train V, ``state-value`` and after) on ``--states`` scripted states and as many states of the run config's
starting policy; for those also ``<kind>/next_repeat_below_all_wrong``: the fraction of states where the critic's V
after the repeat is below its V after every other (refuted) guess. Adam at ``algorithm.critic.lr``, batches of
``algorithm.critic_batch_size``, the gradient clipped to ``algorithm.max_grad_norm``, the target moved by
``algorithm.critic.tau`` after every ``algorithm.critic.target_update_period``-th step.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.nn.functional import mse_loss

from archer.algorithms.archer import archer_value_loss
from archer.checkpointing import CHECKPOINT_FILE
from archer.config import RunConfig
from archer.critic_probe import probe_critic
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import TransitionBatch
from archer.envs.twenty_questions.optimal import OptimalValues
from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle, names_word
from archer.envs.twenty_questions.probe import ProbeState, history_turns, possible_words, probe_states
from archer.envs.twenty_questions.questioners import GreedyQuestioner
from archer.envs.twenty_questions.words import Word
from archer.models.critic import DoubleCritic, make_target_critic, soft_update
from archer.models.prefix_generation import generate_at_states
from archer.trainer import build_trainer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_critic import policy_probe_states, twenty_questions_run  # noqa: E402  (the probe script beside this one)

log = logging.getLogger("fit_buffer_critic")
TARGETS = ("exact", "next-value", "state-value", "policy-value", "script-value", "replay-value", "return-value")
# The targets that train the V heads, Q bootstrapping from them through a Polyak target.
TD_TARGETS = ("state-value", "policy-value", "script-value", "replay-value", "return-value")


def exact_targets(values: OptimalValues, observations: Sequence[str], actions: Sequence[str]) -> torch.Tensor:
    """``Q*(s, a)`` of each pair."""
    return torch.tensor([values.move_value(mask_of(values, o), a) for o, a in zip(observations, actions, strict=True)])


def next_value_targets(values: OptimalValues, batch: TransitionBatch, gamma: float) -> torch.Tensor:
    """Each transition's ``r + gamma (1 - done) V*(s')``; a cut by the turn limit counts as done, as in the runs."""
    done = torch.clamp(batch.terminated + batch.truncated, max=1.0)
    next_values = torch.tensor(
        [
            0.0 if d else values.state_value(mask_of(values, o))
            for o, d in zip(batch.next_observations, done.tolist(), strict=True)
        ]
    )
    return batch.rewards + gamma * (1.0 - done) * next_values


def state_value_targets(values: OptimalValues, observations: Sequence[str]) -> torch.Tensor:
    """``V*(s)`` of each state."""
    return torch.tensor([values.state_value(mask_of(values, o)) for o in observations])


def sampled_value_targets(
    target: DoubleCritic,
    observations: Sequence[str],
    rows: np.ndarray,
    samples: dict[int, list[str]],
    reduce: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per head, the mean or max over each row's sampled moves of the target critic's Q at them: (B,) each."""
    moves = [samples[row] for row in rows.tolist()]
    count = len(moves[0])
    heads = [target.q_values(list(observations), [row_moves[k] for row_moves in moves]) for k in range(count)]
    q1, q2 = (torch.stack([head[i] for head in heads]) for i in (0, 1))  # (K, B)
    if reduce == "max":
        return q1.max(dim=0).values, q2.max(dim=0).values
    return q1.mean(dim=0), q2.mean(dim=0)


def script_moves(
    observations: Sequence[str], rows: np.ndarray, words: Sequence[Word], seed: int
) -> dict[int, list[str]]:
    """For each row (its state in ``observations``), the move of a player that asks the most even split of the
    words still possible, or guesses the last one."""
    player = GreedyQuestioner(consistency=1.0, words=words)
    rng = random.Random(seed)
    return {row: [player.ask(history_turns(obs), rng)] for row, obs in zip(rows.tolist(), observations, strict=True)}


def mask_of(values: OptimalValues, observation: str) -> int:
    """The words ``observation``'s answers allow, as ``OptimalValues``' bit mask."""
    return values.possible(history_turns(observation))


def usable_rows(buffer: ReplayBuffer, values: OptimalValues) -> np.ndarray:
    """Rows whose state and next state some word allows (a history the fact table contradicts has no value)."""
    batch = buffer.get(np.arange(len(buffer)))
    pairs = zip(batch.observations, batch.next_observations, strict=True)
    return np.array([i for i, (o, n) in enumerate(pairs) if mask_of(values, o) and mask_of(values, n)], dtype=np.int64)


@torch.no_grad()
def next_value_ranking(critic: DoubleCritic, states: Sequence[ProbeState], words: Sequence[Word]) -> float:
    """Fraction of ``states`` where ``min(V1, V2)`` after the repeat is below its value after every other guess
    (each refuted: the next state of a guess that does not win)."""
    oracle = KnowledgeBaseOracle()
    below = []
    for state in states:
        possible = possible_words(state.observation, words)
        nexts = []
        for move in [state.repeat, *state.other_wrong_guesses]:
            # A hidden word the move does not name: the move is refuted.
            secret = next((word for word in possible if not names_word(move, word)), possible[0])
            nexts.append(f"{state.observation}{move} {oracle.answer([secret], [move])[0]}\n")
        v1, v2 = critic.v_from_embeddings(critic.embed(nexts))
        v = torch.minimum(v1, v2)
        below.append(bool(v[0] < v[1:].min()))
    return sum(below) / len(below)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config-name", default="archer_20q", help="top-level file of scripts/config")
    parser.add_argument("--buffer-from", type=Path, required=True, help="a finished run's folder (its checkpoint)")
    parser.add_argument("--targets", choices=TARGETS, required=True, help="what replaces the run's own estimates")
    parser.add_argument("--steps", type=int, default=3000, help="gradient steps (3000)")
    parser.add_argument("--every", type=int, default=500, help="probe every this many steps (500)")
    parser.add_argument("--states", type=int, default=100, help="probe states of each kind (100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the probe states and the batches (0)")
    parser.add_argument("--max-games", type=int, default=2000, help="games at most for the policy's probe states")
    parser.add_argument("--json", type=Path, default=None, help="also write the last figures here")
    parser.add_argument("--samples", type=int, default=1, help="with policy-value: moves drawn per state (1)")
    parser.add_argument(
        "--reduce", choices=("mean", "max"), default="mean", help="with policy-value: V's target over the samples"
    )
    args, overrides = parser.parse_known_args(argv)
    if args.steps <= 0 or args.every <= 0 or args.states <= 0 or args.samples <= 0:
        parser.error("--steps, --every, --states and --samples must be positive")
    if (args.samples > 1 or args.reduce != "mean") and args.targets != "policy-value":
        parser.error("--samples and --reduce shape the policy's V target: only with --targets policy-value")
    checkpoint = args.buffer_from / CHECKPOINT_FILE
    if not checkpoint.exists():
        parser.error(f"no {CHECKPOINT_FILE} in {args.buffer_from}: give the folder of a finished run")
    cfg, env = twenty_questions_run(parser, args.config_name, overrides, args.seed)
    gamma = cfg.algorithm.critic.gamma
    try:
        values = OptimalValues(env.words, gamma)
    except ValueError as error:
        parser.error(f"{error} (play env=twenty_questions_subset)")
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    if "buffer" not in state:
        parser.error(f"{checkpoint} holds no replay buffer (an offline run's data is its dataset)")

    with tempfile.TemporaryDirectory() as folder:
        fresh = replace(cfg, resume=False, run_dir=folder, eval=replace(cfg.eval, every_iters=0))
        trainer = build_trainer(fresh, Path(folder))
        buffer = trainer.buffer
        buffer.load_state_dict(state["buffer"])
        rows = usable_rows(buffer, values)
        log.info("%d of %d buffer transitions have a possible word before and after", len(rows), len(buffer))
        if not len(rows):
            raise SystemExit(f"{checkpoint}: no transition of the buffer has a possible word")
        probes = {"script": probe_states(env, args.states, args.seed)}
        try:
            probes["policy"] = policy_probe_states(trainer, env, args.states, args.seed, args.max_games)
        except ValueError as error:  # a policy that never refutes a guess leaves the scripted states
            log.warning("%s: probing scripted states only", error)
        samples = None
        if args.targets == "policy-value":
            log.info("sampling the starting policy %d time(s) at each of %d buffer states", args.samples, len(rows))
            observations = buffer.get(rows).observations
            batch_size = getattr(cfg.algorithm, "generation_batch_size", None)
            draws = [
                generate_at_states(trainer.algorithm.policy, observations, greedy=False, batch_size=batch_size).texts
                for _ in range(args.samples)
            ]
            samples = {row: [draw[i] for draw in draws] for i, row in enumerate(rows.tolist())}
        elif args.targets == "script-value":
            samples = script_moves(buffer.get(rows).observations, rows, env.words, args.seed)
        elif args.targets == "replay-value":
            samples = {row: [action] for row, action in zip(rows.tolist(), buffer.get(rows).actions, strict=True)}
        figures = fit(trainer.algorithm.critic, buffer, rows, values, args, cfg, probes, env.words, samples)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1))
    return figures


def fit(
    critic: DoubleCritic,
    buffer: ReplayBuffer,
    rows: np.ndarray,
    values: OptimalValues,
    args: argparse.Namespace,
    cfg: RunConfig,
    probes: dict[str, list[ProbeState]],
    words: Sequence[Word],
    samples: dict[int, list[str]] | None = None,
) -> dict[str, float]:
    """``args.steps`` steps of the chosen regression on batches of ``rows``; the probe figures every ``args.every``.

    ``samples`` (for ``policy-value``) maps a buffer row to the policy's moves a~ at its state; V's target is the
    mean or (``args.reduce``) the max of ``Qbar`` over them, per head.
    """
    settings = cfg.algorithm
    gamma = settings.critic.gamma
    target = make_target_critic(critic) if args.targets in TD_TARGETS else None
    value_loss = archer_value_loss(getattr(settings, "v_expectile", None))
    optimizer = torch.optim.Adam([p for p in critic.parameters() if p.requires_grad], lr=settings.critic.lr)
    generator = np.random.default_rng(args.seed)
    figures: dict[str, float] = {}
    for step in range(1, args.steps + 1):
        picked = generator.choice(rows, size=settings.critic_batch_size)
        batch = buffer.get(picked)
        critic.train()
        embeddings = critic.embed(batch.observations)
        q1, q2 = critic.q_values(batch.observations, batch.actions, embeddings)
        if args.targets == "exact":
            y = exact_targets(values, batch.observations, batch.actions).to(q1.dtype)
            loss = mse_loss(q1, y) + mse_loss(q2, y)
        elif args.targets == "next-value":
            y = next_value_targets(values, batch, gamma).to(q1.dtype)
            loss = mse_loss(q1, y) + mse_loss(q2, y)
        else:
            with torch.no_grad():
                next_v1, next_v2 = target.v_from_embeddings(target.embed(batch.next_observations))
            done = torch.clamp(batch.terminated + batch.truncated, max=1.0)
            y1, y2 = (batch.rewards + gamma * (1.0 - done) * v for v in (next_v1, next_v2))
            v1, v2 = critic.v_from_embeddings(embeddings)
            if args.targets in ("state-value", "return-value"):
                if args.targets == "state-value":
                    yv = state_value_targets(values, batch.observations).to(v1.dtype)
                else:
                    yv = batch.mc_returns.to(v1.dtype)
                loss = mse_loss(q1, y1) + mse_loss(q2, y2) + mse_loss(v1, yv) + mse_loss(v2, yv)
            else:
                with torch.no_grad():
                    yv1, yv2 = sampled_value_targets(target, batch.observations, picked, samples, args.reduce)
                loss, _ = value_loss(q1, q2, v1, v2, y1, y2, yv1, yv2)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(critic.parameters(), settings.max_grad_norm)
        optimizer.step()
        critic.eval()
        if target is not None and step % settings.critic.target_update_period == 0:
            soft_update(target, critic, settings.critic.tau)
        if step % args.every == 0 or step == args.steps:
            probed = target if target is not None else critic
            figures = {"fit/step": float(step), "fit/loss": loss.item()}
            for kind, states in probes.items():
                scores = probe_critic(probed, states)
                figures[f"{kind}/repeat_below_all_wrong"] = scores["probe/repeat_below_all_wrong"]
                figures[f"{kind}/split_above_repeat"] = scores["probe/split_above_repeat"]
                if target is not None:  # only the TD targets train the V heads
                    figures[f"{kind}/next_repeat_below_all_wrong"] = next_value_ranking(probed, states, words)
            log.info("%s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    return figures


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    main()
