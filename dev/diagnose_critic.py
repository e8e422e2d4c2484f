"""Check a critic configuration offline: can it rank the starting policy's moves on games it has not seen?

Usage (from the repository root; Hydra overrides of the run config go after the options)::

    python dev/diagnose_critic.py --config-name archer_20q --games 400 --steps 1000 model.policy.temperature=0.7 \\
        model.critic.name_or_path=policy model.critic.pooling=last model.critic.q_input=joint \\
        model.critic.freeze_encoder=true algorithm.critic.lr=1e-3

The run config is composed as ``run.py`` composes it and a ``Trainer`` is built (its starting policy and its
configured critic). The sampling policy plays ``--games`` games; the critic is then fitted on the moves of all but
the last ``--holdout`` of them, its twin Q heads to each move's discounted return and its twin V heads to the same
return at the move's state, with Adam at ``algorithm.critic.lr`` on batches of ``algorithm.critic_batch_size``,
its gradient clipped to ``algorithm.max_grad_norm``. Every ``--eval-every`` steps the held-out games are scored as an
online run scores each iteration's new games (``critic/advantage_return_corr``, ``critic/value_return_corr``), with
the fitting throughput.

Regressing on observed returns leaves out bootstrapping, so the check measures what the critic's inputs and encoder
let it learn from this much play: a critic whose held-out advantages do not correlate with the observed ones here
gives an online actor noise (see ``dev/diagnose_actor.py`` for the actor's side).

On Sokoban and FrozenLake, ``--probe-states N`` also ranks the moves of N positions of the noisy solver's games
(``grid_probe.grid_probe_states``, seed ``--probe-seed``) against their exact values (``critic_probe.optimal_ranking``)
and adds to the last record: the fitted critic's ranking (``optimal/*``), the starting policy's (``policy_optimal/*``)
and ``readout/*``, one ridge regression per move (``linear_readout.examples_readout``) from the untrained critic's
observation vectors to the same returns the heads were fitted on. The read-out owes nothing to the heads'
optimisation, so it says how much a run's worth of play tells any critic on those vectors about which move is
better; ``probe_critic.py --fit-optimal`` gives the same read-out fitted on exact values instead.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from critic_probe import ValuedState, move_values, optimal_ranking, policy_figures, policy_scorer
from devkit import parse_run, run_parser, write_records
from grid_probe import grid_probe_states
from linear_readout import examples_readout, observation_vectors
from tqdm.auto import tqdm

from archer.algorithms.accumulation import accumulate, clip_and_step
from archer.config import ArcherConfig
from archer.data.rollout import collect_trajectories
from archer.data.trajectory import Trajectory, discounted_returns
from archer.envs.grid_games.config import GridEnvConfig
from archer.envs.grid_games.grid import GridGameEnv, parse_direction
from archer.models.critic import CriticOutput, DoubleCritic

log = logging.getLogger("diagnose_critic")


def moves_with_returns(games: Sequence[Trajectory], gamma: float) -> list[tuple[str, str, float]]:
    """Every move of ``games`` as ``(observation, action, G_t)``, G_t the discounted return that followed it."""
    return [
        (game.observations[turn], game.actions[turn], ret)
        for game in games
        for turn, ret in enumerate(discounted_returns(game.rewards, gamma))
    ]


def monte_carlo_critic_loss(out: CriticOutput, returns: torch.Tensor) -> torch.Tensor:
    """Sum over the four heads (q1, q2, v1, v2) of the mean squared error to the observed returns."""
    return sum(((head - returns) ** 2).mean() for head in (out.q1, out.q2, out.v1, out.v2))


def fit_critic_on_returns(
    trainer: Any, games: Sequence[Trajectory], holdout: int, steps: int, eval_every: int
) -> list[dict[str, float]]:
    """Fit ``trainer``'s critic on all but the last ``holdout`` of ``games`` and score it on those (module docstring).

    Returns one record per evaluation, step 0 being the untrained critic's.
    """
    if not 0 < holdout < len(games):
        raise ValueError(f"--holdout must be between 1 and the number of games - 1 ({len(games) - 1}), got {holdout}")
    algo = trainer.cfg.algorithm
    critic = trainer.algorithm.critic
    fit_games, held_out = games[:-holdout], games[-holdout:]
    moves = moves_with_returns(fit_games, algo.critic.gamma)
    optimizer = torch.optim.Adam([p for p in critic.parameters() if p.requires_grad], lr=algo.critic.lr)
    rng = np.random.default_rng(trainer.cfg.seed)

    def evaluate(step: int, fitted: int, seconds: float) -> dict[str, float]:
        critic.eval()
        record = {"step": step, **trainer.algorithm.advantage_check(held_out)}
        critic.train()
        if step:
            record["samples_per_s"] = fitted / seconds
        log.info("step %d: %s", step, " ".join(f"{k}={v:.3f}" for k, v in record.items() if k != "step"))
        return record

    records = [evaluate(0, 0, 0.0)]
    fitted, seconds = 0, 0.0
    critic.train()
    for step in tqdm(range(1, steps + 1), desc="critic fit", unit="step"):
        start = time.perf_counter()
        picked = [moves[i] for i in rng.choice(len(moves), algo.critic_batch_size)]
        for first in range(0, len(picked), algo.critic.micro_batch_size):
            chunk = picked[first : first + algo.critic.micro_batch_size]
            out = critic([m[0] for m in chunk], [m[1] for m in chunk])
            returns = torch.tensor([m[2] for m in chunk], dtype=out.q1.dtype, device=out.q1.device)
            accumulate(trainer.accelerator, monte_carlo_critic_loss(out, returns), len(chunk), len(picked))
        clip_and_step(trainer.accelerator, optimizer, critic.parameters(), algo.max_grad_norm)
        fitted, seconds = fitted + len(picked), seconds + time.perf_counter() - start
        if step % eval_every == 0 or step == steps:
            records.append(evaluate(step, fitted, seconds))
    return records


def returns_readout(
    critic: DoubleCritic, games: Sequence[Trajectory], gamma: float, probe: Sequence[ValuedState], penalty: float
) -> dict[str, float]:
    """``readout/*``: the ranking at ``probe`` of one ridge fit per move from ``critic``'s observation vectors to the
    discounted returns that followed the moves of ``games`` (a move naming no direction is left out), with the
    number of moves fitted (``readout/examples``) and of distinct observations among them (``readout/positions``)."""
    examples = []
    for observation, action, ret in moves_with_returns(games, gamma):
        direction = parse_direction(action)
        if direction is not None:
            examples.append((observation, direction, ret))
    if not examples:
        raise ValueError("no move of the fitted games names a direction")
    vectors = observation_vectors(critic, [*(e[0] for e in examples), *(state.observation for state in probe)])
    score, _ = examples_readout(vectors, examples, penalty)
    figures = {f"readout/{key.split('/', 1)[1]}": value for key, value in optimal_ranking(score, probe).items()}
    positions = len({observation for observation, _, _ in examples})
    return figures | {"readout/examples": float(len(examples)), "readout/positions": float(positions)}


def main(argv: Sequence[str] | None = None) -> list[dict[str, float]]:
    parser = run_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=400, help="games the sampling policy plays (400)")
    parser.add_argument("--holdout", type=int, default=100, help="of those, the last N are only scored (100)")
    parser.add_argument("--steps", type=int, default=1000, help="critic steps on the other games' moves (1000)")
    parser.add_argument("--eval-every", type=int, default=100, help="score the held-out games every N steps (100)")
    parser.add_argument(
        "--probe-states",
        type=int,
        default=0,
        help="Sokoban, FrozenLake: also rank the moves of N noisy-solver positions against their exact values, by "
        "the fitted critic, the policy and a linear read-out of the returns (0: off)",
    )
    parser.add_argument("--probe-seed", type=int, default=0, help="with --probe-states: seed of its games (0)")
    parser.add_argument(
        "--max-games", type=int, default=5000, help="with --probe-states: games played at most to find them (5000)"
    )
    parser.add_argument(
        "--readout-penalty", type=float, default=10.0, help="with --probe-states: the read-out's ridge penalty (10)"
    )
    args, cfg = parse_run(parser, argv)
    if not 0 < args.holdout < args.games:
        parser.error(f"--holdout must be between 1 and --games - 1 ({args.games - 1}), got {args.holdout}")
    if args.probe_states < 0 or args.readout_penalty < 0:
        parser.error("--probe-states and --readout-penalty must be >= 0")
    if args.probe_states and not isinstance(cfg.env, GridEnvConfig):
        parser.error(f"--probe-states: exact move values exist for Sokoban and FrozenLake only, not {cfg.env.name}")
    from archer.trainer import build_trainer

    if not isinstance(cfg.algorithm, ArcherConfig):
        parser.error(f"--config-name {args.config_name}: needs an online utterance-level critic (archer_*, chai_*)")
    trainer = build_trainer(cfg)
    games = collect_trajectories(trainer.env, trainer.algorithm.rollout_actor(greedy=False), args.games)
    figures: dict[str, float] = {}
    if args.probe_states:
        env = trainer.env
        assert isinstance(env, GridGameEnv) and isinstance(cfg.env, GridEnvConfig)
        gamma = cfg.algorithm.critic.gamma
        try:
            probe, _ = grid_probe_states(
                env, None, args.probe_states, args.probe_seed, args.max_games, gamma, cfg.env.data_epsilons
            )
        except ValueError as error:
            raise SystemExit(f"--probe-states: {error}; raise --max-games") from error
        figures = returns_readout(trainer.algorithm.critic, games[: -args.holdout], gamma, probe, args.readout_penalty)
        figures |= policy_figures(optimal_ranking(policy_scorer(trainer.algorithm.policy), probe))
    records = fit_critic_on_returns(trainer, games, args.holdout, args.steps, args.eval_every)
    if args.probe_states:
        critic = trainer.algorithm.critic
        figures |= optimal_ranking(lambda observation, moves: move_values(critic, observation, moves), probe)
        records[-1].update(figures)
        log.info("probe: %s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    write_records(args.json, records)
    return records


if __name__ == "__main__":
    main(sys.argv[1:])
