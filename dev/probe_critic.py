"""Probe a run's final target critic: does it rank moves as the game does? (Twenty Questions, Sokoban, FrozenLake)

Usage (from the folder the run was started in, ``scripts/`` for ``run.py``'s default run folders; the same config
name and overrides as the run, so the same run folder is found; the run's environment picks the task)::

    python ../dev/probe_critic.py --config-name archer_20q seed=1
    python ../dev/probe_critic.py --config-name archer_sokoban seed=1 --states-from policy
    python ../dev/probe_critic.py --config-name archer_frozenlake --untrained    # the critic before any training

The run's checkpoint is loaded as a resumed run would load it, and its target critic scores the candidate moves at
``--states`` states, played by a script (``--states-from script``, the default) or by the run's own sampling policy
(``--states-from policy``: the states its games meet), against each move's exact value under the run's discount:

- Twenty Questions (a word list of at most 16 words, such as the 10-word subset): states just after a wrong guess
  was refuted (``archer.envs.twenty_questions.probe``; the script asks zero to two splitting property questions,
  then a wrong guess), moves the repeated guess, a guess of every other word still possible and the splitting
  questions, valued by dynamic programming over the words still possible
  (``archer.envs.twenty_questions.optimal``);
- Sokoban: every position met (the script is the noisy BFS solver the run's cloning data comes from), the four
  moves valued by dynamic programming over the (player, boxes) positions reachable in the turns left
  (``archer.envs.grid_games.sokoban.move_values``): a push that leaves the room unsolvable in time is worth least;
- FrozenLake: likewise, each move's chance of reaching the goal in the turns left (discounted by the turns it
  takes), by finite-horizon value iteration over the game's slips (``archer.envs.grid_games.frozen_lake``).

Printed and, with ``--json``, written (``critic_probe.optimal_ranking``): ``optimal/pair_agreement``, the mean
over states of the fraction of move pairs with different true values that the critic orders the same way (0.5 is
chance); ``optimal/best_move``, the fraction of states where the critic's best move is a truly best one, beside
``optimal/best_by_chance`` (a move picked at random); ``optimal/regret_mean``, the true value lost per state by the
critic's best move. Twenty Questions adds its own figures: the fraction of states where repeating the refuted
guess scores below every other guess of a word still possible (``probe/repeat_below_all_wrong``), the fraction
where the most even splitting question scores above the repeat (``probe/split_above_repeat``), the same over every
splitting question, and the mean gaps.

``--score-policy`` (every task) ranks the same moves by the run's policy as well, its ``log pi(move | state)``
under the distribution it samples from, and writes the same figures as ``policy_optimal/*`` and
``policy_probe/*``: when the critic puts a wasted move last and the policy does not, the waste is the actor's.

The options below are Twenty Questions' only.

``--policy-returns N`` also plays every probe move (the three most even splitting questions standing for all of
them) N times for each word the history still allows as the hidden word (the critic sees the history, not the
word, so its values average over them) and lets the run's sampling policy finish each game: the mean discounted
returns are the policy's own move values (Monte Carlo ``Q^pi``), what a perfect critic of that policy would
score. The same figures computed on those returns (``truth/*``) say how much of the game's ordering the policy's
values carry at all, ``truth_optimal/*`` rank the moves by those returns against their exact optimal values (the
order ArCHer's target, the policy's own values, could teach at best), and ``probe/pair_agreement`` is the fraction
of move pairs (whose returns differ by more than ``--margin``) that the critic orders as the returns do.

``--fit-optimal N`` asks a different question: can the configured critic's architecture rank the moves at all? It
builds the critic untrained (no run needed), regresses its Q heads on the game's exact optimal move values
(``archer.envs.twenty_questions.optimal``; the 10-word subset) at N states none of which is a probe state (played
as ``--states-from`` says: by the script, or by the run's starting policy), each with the repeat, a guess of every
word and some questions (``--fit-moves M``: M of them drawn per state, as a buffer holds few moves per state),
for ``--fit-steps`` steps of the run's
critic batch size and learning rate, and probes it every ``--fit-every`` steps. Other ``--fit-targets`` keep the
examples and change only the target: ``sampled`` is one played move's ``r + gamma V*(s')`` (the noise of a single
transition, as TD sees it); ``bootstrapped`` is ``r + gamma max_a' Qbar(s', a')`` from the critic's own Polyak
target (TD's bootstrapping, towards optimal play); ``policy`` scores the next state at a sample of the run's
starting policy instead of its best move (ArCHer's target: the values of that policy; with ``--fit-policy-samples
K``, at the best of K samples by the critic's target copy: CHAI's approximate max backup). ``--fit-double-q``
takes either max across the target's two heads, each picking the move the other values (double Q-learning),
instead of over their minimum. A critic that passes here and fails after a run is limited by what its training
gives it, not by what it can represent.

On Sokoban and FrozenLake ``--fit-optimal N`` fits the exact values (``--fit-targets exact`` only) of the four moves
at N positions played as ``--states-from`` says (seed ``--seed`` + 1, none of them a probe position), and adds two
comparisons: ``fit/train_pair_agreement``, the ranking at the fitted positions themselves (does the critic fit
what it was shown? ``fit/value_mean`` and ``fit/value_variance`` are those values': a critic that learnt only their
mean ends at a ``fit/loss`` of twice that variance), and ``readout/*``, the ranking at the probe positions by one
ridge regression per move (``--readout-penalty``) on the untrained critic's own observation vectors
(``linear_readout.py``): what those vectors carry linearly, whatever the heads' optimisation makes of it.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import torch
from critic_probe import (
    MoveScorer,
    ValuedState,
    fit_to_move_values,
    head_values,
    move_values,
    optimal_ranking,
    pairwise_agreement,
    policy_figures,
    policy_scorer,
    probe_critic,
    probe_scores,
    twenty_questions_valued,
)
from devkit import parse_run, run_parser, write_records
from grid_probe import grid_probe_states
from linear_readout import observation_vectors, per_move_readout
from tqdm.auto import tqdm

from archer.checkpointing import CHECKPOINT_FILE
from archer.config import RunConfig
from archer.data.rollout import collect_trajectories
from archer.envs.grid_games.config import GridEnvConfig
from archer.envs.grid_games.grid import GridGameEnv
from archer.envs.registry import make_env, make_oracle
from archer.envs.twenty_questions.env import TwentyQuestionsEnv
from archer.envs.twenty_questions.facts import PROPERTY_PHRASINGS
from archer.envs.twenty_questions.optimal import MAX_WORDS, OptimalValues
from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle, names_word
from archer.envs.twenty_questions.probe import (
    ProbeState,
    history_turns,
    policy_move_returns,
    possible_words,
    probe_states,
    probe_states_from_games,
    splitting_questions,
)
from archer.envs.twenty_questions.questioners import guess_phrasings, make_questioner
from archer.models.critic import DoubleCritic, soft_update
from archer.trainer import Trainer, build_trainer

log = logging.getLogger("probe_critic")

Drawn = TypeVar("Drawn")
"""What ``drawn_once`` keeps per observation: one move, or a list of them."""

ALL_QUESTIONS = [phrasings[0].text for phrasings in PROPERTY_PHRASINGS.values()]


def build_parser() -> argparse.ArgumentParser:
    """The script's options (``--config-name`` and ``--json`` from ``devkit.run_parser``)."""
    parser = run_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=100, help="probe states (100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the probe states (0)")
    parser.add_argument(
        "--states-from",
        choices=("script", "policy"),
        default="script",
        help="who plays the probe states: a script (Twenty Questions: 0-2 splitting questions, then a wrong guess; "
        "grid games: the noisy solver of the cloning data) or the run's sampling policy",
    )
    parser.add_argument("--max-games", type=int, default=2000, help="games played at most to find the states (2000)")
    parser.add_argument("--untrained", action="store_true", help="probe the freshly built critic, no checkpoint")
    parser.add_argument("--online", action="store_true", help="probe the online critic instead of the target")
    parser.add_argument("--show", type=int, default=0, help="print every move's score at the first N states")
    parser.add_argument(
        "--score-policy",
        action="store_true",
        help="also rank the same moves by the run's policy, log pi(move | state) as it samples (policy_probe/*, "
        "policy_optimal/*): is a wasted move the critic's or the actor's?",
    )
    parser.add_argument(
        "--policy-returns",
        type=int,
        default=0,
        help="also play each probe move this many times per word still possible, the run's sampling policy finishing "
        "the game (0: off)",
    )
    parser.add_argument(
        "--returns-skill",
        type=float,
        action="append",
        metavar="SKILL",
        help="with --policy-returns: scripted questioners of this skill (repeat the option for a mix, one drawn per "
        "turn) finish the games instead of the run's policy: the values of the cloning data's players",
    )
    parser.add_argument(
        "--margin", type=float, default=0.5, help="with --policy-returns: pairs closer than this are not ranked"
    )
    parser.add_argument(
        "--fit-optimal",
        type=int,
        default=0,
        metavar="N",
        help="fit the untrained critic to exact optimal move values at N states, then probe it (0: off)",
    )
    parser.add_argument("--fit-steps", type=int, default=1500, help="with --fit-optimal: gradient steps (1500)")
    parser.add_argument("--fit-every", type=int, default=500, help="with --fit-optimal: probe every this many steps")
    parser.add_argument(
        "--fit-moves",
        type=int,
        default=0,
        metavar="M",
        help="with --fit-optimal: keep M moves drawn at random per fitted state, as a replay buffer holds one or two "
        "moves per state (0: all of them)",
    )
    parser.add_argument(
        "--readout-penalty",
        type=float,
        default=10.0,
        help="with --fit-optimal on a grid game: ridge penalty of the linear read-out (10)",
    )
    parser.add_argument(
        "--fit-targets",
        choices=("exact", "sampled", "bootstrapped", "policy"),
        default="exact",
        help="with --fit-optimal: Q* itself; one transition's r + gamma V*(s') drawn afresh each time; or "
        "r + gamma max_a' Qbar(s', a') from the critic's own Polyak target (fitted Q-iteration); or "
        "r + gamma Qbar(s', a~) at a sample a~ of the run's starting policy (ArCHer's target)",
    )
    parser.add_argument(
        "--fit-sample-once",
        action="store_true",
        help="with --fit-targets policy: draw the policy's move at each next state once and keep it (as the "
        "trainer's algorithm.v_target_pool draws its samples once per critic phase), not afresh at every use",
    )
    parser.add_argument(
        "--fit-policy-samples",
        type=int,
        default=1,
        metavar="K",
        help="with --fit-targets policy: score the next state at the best by Qbar of K policy samples (CHAI's "
        "approximate max backup; 1: ArCHer's single sample)",
    )
    parser.add_argument(
        "--fit-double-q",
        action="store_true",
        help="with --fit-targets bootstrapped, or policy with --fit-policy-samples above 1: take the max across the "
        "target's two heads (each picks, the other values: double Q-learning) instead of over min(Qbar1, Qbar2)",
    )
    return parser


def parse_args(
    argv: Sequence[str] | None,
) -> tuple[argparse.Namespace, RunConfig, TwentyQuestionsEnv | GridGameEnv]:
    """The options, the run's config and its environment; impossible options are refused."""
    parser = build_parser()
    args, cfg = parse_run(parser, argv)
    if args.states <= 0:
        parser.error(f"--states must be positive, got {args.states}")
    if args.policy_returns < 0:
        parser.error(f"--policy-returns must be >= 0, got {args.policy_returns}")
    if args.returns_skill and not args.policy_returns:
        parser.error("--returns-skill names who finishes --policy-returns' games: give --policy-returns N")
    if args.fit_optimal < 0 or args.fit_steps <= 0 or args.fit_every < 0 or args.fit_moves < 0:
        parser.error("--fit-optimal, --fit-every and --fit-moves must be >= 0, --fit-steps positive")
    if args.fit_optimal and (args.policy_returns or args.online):
        parser.error("--fit-optimal probes a freshly fitted critic: no --policy-returns, --online")
    if (args.fit_moves or args.fit_sample_once or args.fit_double_q) and not args.fit_optimal:
        parser.error("--fit-moves, --fit-sample-once and --fit-double-q shape a fit: give --fit-optimal N")
    if args.fit_sample_once and args.fit_targets != "policy":
        parser.error("--fit-sample-once keeps the policy's samples: only with --fit-targets policy")
    if args.fit_policy_samples < 1 or (args.fit_policy_samples > 1 and args.fit_targets != "policy"):
        parser.error("--fit-policy-samples must be >= 1, and above 1 only with --fit-targets policy")
    if args.fit_double_q and not (args.fit_targets == "bootstrapped" or args.fit_policy_samples > 1):
        parser.error("--fit-double-q changes a max: only with --fit-targets bootstrapped or --fit-policy-samples > 1")
    env = probe_env(parser, cfg, args.config_name, args.seed)
    if isinstance(env, GridGameEnv) and args.policy_returns:
        parser.error(f"--policy-returns probes Twenty Questions; {args.config_name} plays {cfg.env.name}")
    if isinstance(env, GridGameEnv) and args.fit_optimal and args.fit_targets != "exact":
        parser.error(f"--fit-targets {args.fit_targets} plays Twenty Questions; on {cfg.env.name} only 'exact'")
    if args.readout_penalty < 0:
        parser.error(f"--readout-penalty must be >= 0, got {args.readout_penalty}")
    return args, cfg, env


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    args, cfg, env = parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        if args.fit_optimal:
            trainer = build_trainer(replace(cfg, resume=False, eval=replace(cfg.eval, every_iters=0)), Path(folder))
            if isinstance(env, GridGameEnv):
                figures = fit_optimal_grid(trainer, env, args)
            else:
                figures = fit_optimal(trainer, env, args)
            log.info("%s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
            write_records(args.json, figures)
            return figures
        if args.untrained:
            trainer = build_trainer(replace(cfg, resume=False, eval=replace(cfg.eval, every_iters=0)), Path(folder))
        else:
            run_dir = Path(cfg.run_dir).expanduser().resolve()
            if not (run_dir / CHECKPOINT_FILE).exists():
                raise SystemExit(f"no {CHECKPOINT_FILE} in {run_dir}: run the config first (or pass --untrained)")
            trainer = build_trainer(replace(cfg, resume=True), run_dir)
        if isinstance(env, GridGameEnv):
            figures = _probe_grid(trainer, env, args)
        else:
            figures = _probe_twenty_questions(trainer, env, args)
    log.info("%s", " ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    write_records(args.json, figures)
    return figures


def probe_env(
    parser: argparse.ArgumentParser, cfg: RunConfig, config_name: str, seed: int
) -> TwentyQuestionsEnv | GridGameEnv:
    """The run's environment, refused (``parser.error``) unless the algorithm has an utterance critic and the
    environment is one the probe knows exact values of: Twenty Questions, Sokoban or FrozenLake."""
    if not cfg.algorithm.uses_critic:
        parser.error(f"--config-name {config_name}: its algorithm has no utterance critic to probe")
    if cfg.env.name not in ("twenty_questions", "sokoban", "frozenlake"):
        parser.error(f"the probe plays Twenty Questions, Sokoban or FrozenLake; {config_name} plays {cfg.env.name}")
    env = make_env(cfg.env, seed=seed, oracle=make_oracle(cfg.env))
    assert isinstance(env, TwentyQuestionsEnv | GridGameEnv)
    return env


def _probe_twenty_questions(trainer: Trainer, env: TwentyQuestionsEnv, args: argparse.Namespace) -> dict[str, float]:
    """Twenty Questions' own figures (``critic_probe.probe_scores``) and ``optimal_ranking``'s at its probe states,
    with ``--policy-returns``' figures when asked."""
    if args.states_from == "script":
        states = probe_states(env, args.states, args.seed)
    else:
        states = policy_probe_states(trainer, env, args.states, args.seed, args.max_games)
    figures = _probe(trainer, states, args.online, args.show)
    figures.update(_optimal_twenty_questions(trainer, env, states, args.online))
    if args.score_policy:
        score = policy_scorer(trainer.algorithm.policy)
        policy = probe_scores(score, states) | _optimal_twenty_questions(trainer, env, states, args.online, score)
        figures.update(policy_figures(policy))
    if args.policy_returns:
        # Every splitting question is dozens of moves; the most even splits stand for them.
        states = [replace(state, splitting_questions=state.splitting_questions[:3]) for state in states]
        act = scripted_act(env, args.returns_skill, args.seed) if args.returns_skill else None
        figures.update(_policy_returns(trainer, env, states, args.policy_returns, args.online, args.margin, act))
    return figures


def _target_or_online(trainer: Trainer, online: bool) -> DoubleCritic:
    return trainer.algorithm.critic if online else trainer.algorithm.target_critic


def _probe_grid(trainer: Trainer, env: GridGameEnv, args: argparse.Namespace) -> dict[str, float]:
    """``optimal_ranking``'s figures at grid-game positions (``grid_probe.grid_probe_states``) played by the noisy
    solver or the run's sampling policy, with the games it took (``optimal/games``)."""
    env_cfg = trainer.cfg.env
    assert isinstance(env_cfg, GridEnvConfig)
    act = None
    if args.states_from == "policy":
        torch.manual_seed(args.seed)
        act = trainer.algorithm.rollout_actor(greedy=False)
    gamma = trainer.cfg.algorithm.critic.gamma
    try:
        states, games = grid_probe_states(
            env, act, args.states, args.seed, args.max_games, gamma, env_cfg.data_epsilons
        )
    except ValueError as error:
        raise SystemExit(f"{error}; raise --max-games") from error
    log.info(
        "%d probe states from %d games (%s), true values discounted by %g", len(states), games, args.states_from, gamma
    )
    critic = _target_or_online(trainer, args.online)
    _show_valued(critic, states[: args.show])
    figures = optimal_ranking(lambda observation, moves: move_values(critic, observation, moves), states)
    if args.score_policy:
        figures.update(policy_figures(optimal_ranking(policy_scorer(trainer.algorithm.policy), states)))
    return figures | {"optimal/games": float(games)}


def _optimal_twenty_questions(
    trainer: Trainer,
    env: TwentyQuestionsEnv,
    states: list[ProbeState],
    online: bool,
    score: MoveScorer | None = None,
) -> dict[str, float]:
    """``optimal_ranking``'s figures at Twenty Questions' probe states, when the word list is small enough for exact
    values (none otherwise); the moves are scored by the critic, or by ``score`` when given."""
    if len(env.words) > MAX_WORDS:
        log.info("exact values need at most %d words (%d here): no optimal/* figures", MAX_WORDS, len(env.words))
        return {}
    values = OptimalValues(env.words, trainer.cfg.algorithm.critic.gamma)
    critic = _target_or_online(trainer, online)
    scorer = score or (lambda observation, moves: move_values(critic, observation, moves))
    return optimal_ranking(scorer, twenty_questions_valued(states, values))


def _show_valued(critic: DoubleCritic, states: Sequence[ValuedState]) -> None:
    """Log every move's critic score beside its true value at ``states``."""
    for state in states:
        shown = state.observation[max(state.observation.find("Turns left:"), 0) :]  # past a grid game's rules
        log.info("state: %s", shown.replace("\n", " | "))
        scores = move_values(critic, state.observation, state.moves)
        for move, score, truth in zip(state.moves, scores, state.values, strict=True):
            log.info("  critic %8.3f  true %8.3f  %s", score, truth, move)


def fit_optimal(trainer: Trainer, env: TwentyQuestionsEnv, args: argparse.Namespace) -> dict[str, float]:
    """Fit the untrained critic to exact optimal move values at ``args.fit_optimal`` states, probing as it goes.

    One function: the four ``--fit-targets`` are closures over the same examples, critic and target copy, chosen
    here and used by one fitting loop.
    """
    algorithm = trainer.algorithm
    try:
        values = OptimalValues(env.words, trainer.cfg.algorithm.critic.gamma)
    except ValueError as error:
        raise SystemExit(f"--fit-optimal: {error} (play env=twenty_questions_subset)") from error
    if args.states_from == "script":
        probe = probe_states(env, args.states, args.seed)
        drawn = probe_states(env, 4 * args.fit_optimal, args.seed + 1)
    else:
        probe = policy_probe_states(trainer, env, args.states, args.seed, args.max_games)
        drawn = policy_probe_states(trainer, env, 4 * args.fit_optimal, args.seed + 1, 4 * args.max_games)
    held_out = {state.observation for state in probe}
    rng = random.Random(args.seed)
    examples = []
    # Probe states repeat (few words, few questions): draw more and keep those the probe does not score.
    pool = [s for s in drawn if s.observation not in held_out]
    if args.fit_moves:
        # Few moves per state stand for a buffer's many distinct states: no state twice.
        pool = list({state.observation: state for state in pool}.values())
    if not pool:
        raise SystemExit(
            "--fit-optimal: no state to fit that the probe does not score; lower --states "
            "(or, with --states-from policy, raise --max-games)"
        )
    for state in pool[: args.fit_optimal]:
        questions = list(state.splitting_questions[:4]) + rng.sample(ALL_QUESTIONS, 3)
        moves = list(dict.fromkeys([state.repeat, *(guess_phrasings(word)[0] for word in env.words), *questions]))
        if args.fit_moves:
            moves = rng.sample(moves, min(args.fit_moves, len(moves)))
        examples.extend((state.observation, move) for move in moves)
    masks = {observation: values.possible(history_turns(observation)) for observation, _ in examples}
    critic = algorithm.critic
    after_step = None
    if args.fit_targets == "exact":

        def targets(batch: list[tuple[str, str]]) -> list[float]:
            return [values.move_value(masks[observation], move) for observation, move in batch]

    elif args.fit_targets == "sampled":

        def targets(batch: list[tuple[str, str]]) -> list[float]:
            return [values.sampled_move_value(masks[observation], move, rng) for observation, move in batch]

    else:
        target_critic = algorithm.target_critic
        tau = trainer.cfg.algorithm.critic.tau
        sample_moves = None
        if args.fit_targets == "policy":

            def sample_moves(observations: list[str]) -> list[list[str]]:
                draws = [algorithm.act(observations, greedy=False) for _ in range(args.fit_policy_samples)]
                return [list(moves) for moves in zip(*draws, strict=True)]

            if args.fit_sample_once:
                sample_moves = drawn_once(sample_moves)

        gamma = trainer.cfg.algorithm.critic.gamma
        targets = bootstrapped_targets(env, target_critic, gamma, rng, sample_moves, args.fit_double_q)

        def after_step() -> None:
            soft_update(target_critic, critic, tau)

    figures: dict[str, float] = {}

    def report(step: int, loss: float) -> None:
        figures.update(probe_critic(critic, probe))
        log.info("step %d loss %.4f %s", step, loss, " ".join(f"{k}={v:.3f}" for k, v in figures.items()))

    states = min(len(pool), args.fit_optimal)
    log.info("fitting to %s targets: %d examples at %d states", args.fit_targets, len(examples), states)
    loss = fit_with_run_settings(trainer, args, examples, targets, rng, report, after_step)
    figures.update(probe_critic(critic, probe))
    figures.update(
        optimal_ranking(lambda o, moves: move_values(critic, o, moves), twenty_questions_valued(probe, values))
    )
    return figures | {"fit/loss": loss, "fit/states": float(states), "fit/examples": float(len(examples))}


def fit_with_run_settings(
    trainer: Trainer,
    args: argparse.Namespace,
    examples: list[tuple[str, str]],
    targets: Callable[[list[tuple[str, str]]], Sequence[float]],
    rng: random.Random,
    report: Callable[[int, float], None],
    after_step: Callable[[], None] | None = None,
) -> float:
    """``fit_to_move_values`` on the run's critic, at its critic batch size and lr, for ``--fit-steps`` steps,
    reporting every ``--fit-every``; returns the last step's loss."""
    cfg = trainer.cfg.algorithm
    return fit_to_move_values(
        trainer.algorithm.critic,
        examples,
        targets,
        args.fit_steps,
        cfg.critic_batch_size,
        cfg.critic.lr,
        rng,
        args.fit_every,
        report,
        after_step,
    )


def fit_optimal_grid(trainer: Trainer, env: GridGameEnv, args: argparse.Namespace) -> dict[str, float]:
    """``--fit-optimal`` on a grid game (module docstring): fit the untrained critic to the exact values of the
    moves at ``args.fit_optimal`` positions, probe it at ``args.states`` others, and read the same positions out
    linearly from the untrained critic's observation vectors."""
    env_cfg = trainer.cfg.env
    assert isinstance(env_cfg, GridEnvConfig)
    gamma = trainer.cfg.algorithm.critic.gamma
    act = None
    if args.states_from == "policy":
        torch.manual_seed(args.seed)
        act = trainer.algorithm.rollout_actor(greedy=False)
    try:
        probe, _ = grid_probe_states(env, act, args.states, args.seed, args.max_games, gamma, env_cfg.data_epsilons)
        drawn, _ = grid_probe_states(
            env, act, args.fit_optimal + len(probe), args.seed + 1, args.max_games, gamma, env_cfg.data_epsilons
        )
    except ValueError as error:
        raise SystemExit(f"--fit-optimal: {error}; raise --max-games") from error
    held_out = {state.observation for state in probe}
    fitted = [state for state in drawn if state.observation not in held_out][: args.fit_optimal]
    if not fitted:
        raise SystemExit("--fit-optimal: every position played is a probe position; raise --max-games")
    rng = random.Random(args.seed)
    value = {}
    for state in fitted:
        moves = list(zip(state.moves, state.values, strict=True))
        if args.fit_moves:
            moves = rng.sample(moves, min(args.fit_moves, len(moves)))
        value.update(((state.observation, move), move_value) for move, move_value in moves)
    critic = trainer.algorithm.critic
    vectors = observation_vectors(critic, [state.observation for state in [*fitted, *probe]])
    readout, _ = per_move_readout(vectors, fitted, args.readout_penalty)
    figures = {f"readout/{key.split('/', 1)[1]}": v for key, v in optimal_ranking(readout, probe).items()}

    def critic_ranking(states: list[ValuedState]) -> dict[str, float]:
        critic.eval()
        ranking = optimal_ranking(lambda observation, moves: move_values(critic, observation, moves), states)
        critic.train()
        return ranking

    def report(step: int, loss: float) -> None:
        log.info(
            "step %d loss %.4f %s", step, loss, " ".join(f"{k}={v:.3f}" for k, v in critic_ranking(probe).items())
        )

    log.info("fitting to exact values: %d examples at %d positions; probing %d", len(value), len(fitted), len(probe))
    loss = fit_with_run_settings(
        trainer, args, list(value), lambda batch: [value[example] for example in batch], rng, report
    )
    figures.update(critic_ranking(probe))
    figures["fit/train_pair_agreement"] = critic_ranking(fitted)["optimal/pair_agreement"]
    targets = list(value.values())
    # The loss (two heads) of a critic that learnt only the values' mean is twice their variance.
    figures["fit/value_mean"] = statistics.fmean(targets)
    figures["fit/value_variance"] = statistics.pvariance(targets)
    return figures | {"fit/loss": loss, "fit/states": float(len(fitted)), "fit/examples": float(len(value))}


def drawn_once(sample_moves: Callable[[list[str]], list[Drawn]]) -> Callable[[list[str]], list[Drawn]]:
    """``sample_moves`` (observations in, one draw each out) drawing once per distinct observation: later calls
    reuse what was first drawn there."""
    drawn: dict[str, Drawn] = {}

    def once(observations: list[str]) -> list[Drawn]:
        new = list(dict.fromkeys(o for o in observations if o not in drawn))
        if new:
            drawn.update(zip(new, sample_moves(new), strict=True))
        return [drawn[observation] for observation in observations]

    return once


def bootstrapped_targets(
    env: TwentyQuestionsEnv,
    target_critic: DoubleCritic,
    gamma: float,
    rng: random.Random,
    sample_moves: Callable[[list[str]], list[list[str]]] | None = None,
    double_q: bool = False,
) -> Callable[[list[tuple[str, str]]], list[float]]:
    """TD targets with the critic's own values: each move is played once against a hidden word drawn among those
    the history allows, and scored ``r + gamma * max_a' min(Qbar1, Qbar2)(s', a')`` over the next state's guesses
    of every word and its four most even splitting questions (0 when the guess wins): fitted Q-iteration towards
    optimal play, on the same examples as the exact fit, so only the bootstrapping differs. With ``sample_moves``
    (next observations in, a policy's samples at each out), ``a'`` is the best of those samples instead: with one,
    ArCHer's ``r + gamma Vbar(s')`` with ``Vbar(s') = Qbar(s', a~)``, the values of that policy; with k, CHAI's
    approximate max backup. With ``double_q`` the max is taken across the target's two heads instead of over their
    minimum (``cross_head_max``: double Q-learning's decoupled choice and valuation)."""
    oracle = KnowledgeBaseOracle()
    words = env.words

    def targets(batch: list[tuple[str, str]]) -> list[float]:
        rewards, nexts, moves_at = [], [], []
        for observation, move in batch:
            history = history_turns(observation)
            possible = possible_words(observation, words)
            secret = rng.choice(possible)
            if names_word(move, secret):
                rewards.append(0.0)
                nexts.append(None)
                moves_at.append([])
                continue
            answer = oracle.answer([secret], [move])[0]
            rewards.append(-1.0)
            nexts.append(f"{observation}{move} {answer}\n")
            after = [*history, (move, answer)]
            if sample_moves is None:
                moves_at.append([guess_phrasings(word)[0] for word in words] + splitting_questions(after, words)[:4])
            else:
                moves_at.append([])  # filled below with the samples at each next state
        if sample_moves is not None:
            live = [i for i, n in enumerate(nexts) if n is not None]
            for i, sampled in zip(live, sample_moves([nexts[i] for i in live]) if live else [], strict=True):
                moves_at[i] = list(sampled)
        rows = [(n, m) for n, moves in zip(nexts, moves_at, strict=True) if n is not None for m in moves]
        heads = head_values(target_critic, [n for n, _ in rows], [m for _, m in rows]) if rows else ([], [])
        out, k = [], 0
        for reward, moves in zip(rewards, moves_at, strict=True):
            if not moves:
                out.append(reward)
                continue
            q1, q2 = (head[k : k + len(moves)] for head in heads)
            k += len(moves)
            out.append(reward + gamma * (cross_head_max(q1, q2) if double_q else max(map(min, q1, q2))))
        return out

    return targets


def cross_head_max(q1: Sequence[float], q2: Sequence[float]) -> float:
    """Double Q-learning's max over one state's moves (van Hasselt, NeurIPS 2010): each head picks the move it
    values most and the other head values that pick; the two valuations are averaged. A move one head overrates by
    its own noise is not also overrated by the head that scores it; an error both heads share still passes through,
    as it does through ``max min(Q1, Q2)``."""
    pick1 = max(range(len(q1)), key=q1.__getitem__)
    pick2 = max(range(len(q2)), key=q2.__getitem__)
    return (q2[pick1] + q1[pick2]) / 2


def policy_probe_states(
    trainer: Trainer, env: TwentyQuestionsEnv, num_states: int, seed: int, max_games: int
) -> list[ProbeState]:
    """Probe states met in games of the run's sampling policy, each word hidden in turn (at most ``max_games``)."""
    torch.manual_seed(seed)
    act = trainer.algorithm.rollout_actor(greedy=False)
    states: list[ProbeState] = []
    played = 0
    with tqdm(total=num_states, desc="probe states", unit="state", disable=not trainer.progress) as bar:
        while len(states) < num_states and played < max_games:
            game_ids = [(played + i) % env.num_games for i in range(env.batch_size)]
            games = collect_trajectories(env, act, game_ids=game_ids)
            found = probe_states_from_games(games, [env.words[i] for i in game_ids], env.words)
            states.extend(found[: num_states - len(states)])
            bar.update(min(len(found), bar.total - bar.n))
            played += len(game_ids)
    if not states:
        raise ValueError(f"the policy refuted no guess in {played} games: no probe state to score")
    log.info("%d probe states from %d games of the policy", len(states), played)
    return states


def _probe(trainer: Trainer, states: list[ProbeState], online: bool, show: int) -> dict[str, float]:
    critic = _target_or_online(trainer, online)
    for state in states[:show]:
        moves = [state.repeat, *state.other_wrong_guesses, *state.splitting_questions]
        kinds = ["repeat"] + ["guess"] * len(state.other_wrong_guesses) + ["split"] * len(state.splitting_questions)
        log.info("state (hidden: %s): %s", state.secret, state.observation.replace("\n", " | "))
        for kind, move, value in zip(kinds, moves, move_values(critic, state.observation, moves), strict=True):
            log.info("  %7.3f  %-6s %s", value, kind, move)
    return probe_critic(critic, states)


def scripted_act(env: TwentyQuestionsEnv, skills: Sequence[float], seed: int) -> Callable[[list[str]], list[str]]:
    """An act function of scripted questioners (``make_questioner``) of ``skills``, one drawn at random per turn,
    reading each observation's history as the questioners read their own games."""
    players = [make_questioner(skill, env.words) for skill in skills]
    rng = random.Random(seed)

    def act(observations: list[str]) -> list[str]:
        return [rng.choice(players).ask(history_turns(observation), rng) for observation in observations]

    return act


def _policy_returns(
    trainer: Trainer,
    env: TwentyQuestionsEnv,
    states: list[ProbeState],
    games: int,
    online: bool,
    margin: float,
    act: Callable[[list[str]], list[str]] | None = None,
) -> dict[str, float]:
    """The probe figures on Monte Carlo move values of the sampling policy (or of ``act``, when given), and the
    critic's agreement with them."""
    log.info("playing every probe move %d times with %s", games, "scripted players" if act else "the sampling policy")
    algorithm = trainer.algorithm
    returns = policy_move_returns(
        env,
        act or (lambda observations: algorithm.act(observations, greedy=False)),
        states,
        games,
        trainer.cfg.algorithm.critic.gamma,
    )

    def truth(observation: str, moves: Sequence[str]) -> list[float]:
        return [returns[(observation, move)] for move in moves]

    critic = _target_or_online(trainer, online)
    figures = {key.replace("probe/", "truth/"): value for key, value in probe_scores(truth, states).items()}
    optimal = _optimal_twenty_questions(trainer, env, states, online, truth)
    figures.update({key.replace("optimal/", "truth_optimal/"): value for key, value in optimal.items()})
    try:
        figures["probe/pair_agreement"] = pairwise_agreement(
            lambda observation, moves: move_values(critic, observation, moves), truth, states, margin
        )
    except ValueError as error:  # every move led to the same return: nothing to agree with
        log.warning("%s; probe/pair_agreement is nan", error)
        figures["probe/pair_agreement"] = math.nan
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
