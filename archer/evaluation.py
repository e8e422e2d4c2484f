"""Evaluation on fixed, seeded sets of games, so curves are comparable across iterations and runs: greedy play, and
optionally sampled play (``eval.sampled_episodes``) with its own seeded random draws.

``evaluate`` is the one evaluation path: the trainer calls it every ``eval.every_iters`` iterations, and
``evaluate_saved_policy`` (the ``mode: evaluate`` configs) calls it on a saved policy.
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import transformers
from torch import nn

from archer.checkpointing import rng_state, set_rng_state
from archer.config import EnvConfig, EvalConfig, RunConfig
from archer.data.rollout import ActFn, BatchActor, collect_trajectories
from archer.data.trajectory import Trajectory
from archer.distributed import Placement
from archer.envs.base import BatchedTextEnv
from archer.envs.registry import GAMES, make_env, make_oracle
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy
from archer.move_dependence import MOVE_DEPENDENCE_STATES, first_observations, move_dependence_metrics
from archer.tracking import BEST_RETURN_KEY, BEST_SUCCESS_KEY
from archer.utils import atomic_write_json, process_seed, resolve_cache_dir, seed_everything

log = logging.getLogger(__name__)


@dataclass
class EvalResult:
    """Summary of one evaluation.

    Attributes:
        returns: undiscounted return of each game, in the order of the evaluation set.
        successes: whether each game was won.
        lengths: turns of each game.
        sample_games: a few finished games (final observation and info) to read.
        repeats: turns of each game whose utterance (stripped) an earlier turn of the same game already said; empty
            when not counted.
    """

    returns: list[float]
    successes: list[bool]
    lengths: list[int]
    sample_games: list[dict] = field(default_factory=list)
    repeats: list[int] = field(default_factory=list)

    @property
    def mean_return(self) -> float:
        return statistics.fmean(self.returns)

    @property
    def std_return(self) -> float:
        return statistics.pstdev(self.returns)

    @property
    def success_rate(self) -> float:
        return sum(self.successes) / len(self.successes)

    def metrics(self, prefix: str = "eval", kind: str = "") -> dict[str, float]:
        """Return, success and length statistics as ``{prefix}/{kind}return_mean`` and so on.

        Args:
            prefix: the metric section.
            kind: put before each quantity: ``"sampled_"`` gives ``eval/sampled_return_mean``.
        """
        return {
            f"{prefix}/{kind}return_mean": self.mean_return,
            f"{prefix}/{kind}return_std": self.std_return,
            f"{prefix}/{kind}success_rate": self.success_rate,
            f"{prefix}/{kind}length_mean": statistics.fmean(self.lengths),
            f"{prefix}/{kind}episodes": float(len(self.returns)),
        } | self.repeat_metrics(prefix, kind)

    def repeat_metrics(self, prefix: str = "eval", kind: str = "") -> dict[str, float]:
        """``{prefix}/{kind}repeated_action_fraction``: the share of all turns that repeat an utterance of their game.
        In a question game a question asked again can never pay, and a policy stuck on one is what this shows; in the
        grid games moves repeat by nature. Empty when ``repeats`` was not counted."""
        turns = sum(self.lengths)
        if not self.repeats or not turns:
            return {}
        return {f"{prefix}/{kind}repeated_action_fraction": sum(self.repeats) / turns}

    @classmethod
    def from_trajectories(cls, trajectories: list[Trajectory], num_samples: int = 5) -> EvalResult:
        return cls(
            returns=[t.episode_return for t in trajectories],
            successes=[t.success for t in trajectories],
            lengths=[t.length for t in trajectories],
            sample_games=[{"final_observation": t.observations[-1], **t.info} for t in trajectories[:num_samples]],
            repeats=[repeated_turns(t.actions) for t in trajectories],
        )


def repeated_turns(actions: Sequence[str]) -> int:
    """How many of ``actions`` repeat an earlier one (compared stripped)."""
    said = [action.strip() for action in actions]
    return len(said) - len(set(said))


def evaluation_game_ids(cfg: EvalConfig, pool: Sequence[int]) -> list[int]:
    """The fixed evaluation set: every game of ``pool`` once, or ``num_episodes`` games drawn with ``cfg.seed``.

    Drawn games are spread evenly: a draw is kept only if its game has been drawn no more often than every other
    game, so each game is played ``num_episodes // len(pool)`` or one more times, and never twice while another
    has not been played (when ``num_episodes <= len(pool)``, all different). Draws that repeat nothing are kept as
    they come, so a set drawn without a repeat is the same as plain draws with replacement give.
    """
    pool = list(pool)
    if cfg.num_episodes is None:
        return pool
    rng = random.Random(cfg.seed)
    counts: dict[int, int] = {}
    level, left_at_level = 0, len(pool)  # every game has been drawn ``level`` times or once more
    games: list[int] = []
    while len(games) < cfg.num_episodes:
        game = rng.choice(pool)
        if counts.get(game, 0) == level:
            counts[game] = level + 1
            games.append(game)
            left_at_level -= 1
            if left_at_level == 0:
                level, left_at_level = level + 1, len(pool)
    return games


def sampled_evaluation_game_ids(cfg: EvalConfig, pool: Sequence[int]) -> list[int]:
    """The fixed games of the sampled evaluation: the evaluation games in an order shuffled with ``cfg.seed``,
    repeated until there are ``cfg.sampled_episodes``, so every game is played equally often (to within one)."""
    order = list(evaluation_game_ids(cfg, pool))
    random.Random(cfg.seed).shuffle(order)
    return [order[i % len(order)] for i in range(cfg.sampled_episodes)]


@dataclass(frozen=True)
class EvalGames:
    """The fixed games every evaluation of a run plays.

    Attributes:
        greedy: the greedy evaluation's games (``evaluation_game_ids``).
        sampled: the sampled evaluation's games (``sampled_evaluation_game_ids``; empty: no sampled evaluation).
        seed: ``eval.seed``, from which the sampled play's random draws are seeded.
    """

    greedy: list[int]
    sampled: list[int]
    seed: int

    @classmethod
    def from_config(cls, cfg: EvalConfig, pool: Sequence[int]) -> EvalGames:
        return cls(evaluation_game_ids(cfg, pool), sampled_evaluation_game_ids(cfg, pool), cfg.seed)


@dataclass
class Evaluation:
    """The results of one evaluation: greedy play, sampled play (``None`` without sampled games), and their times."""

    greedy: EvalResult
    sampled: EvalResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def metrics(self, times: bool = False) -> dict[str, float]:
        """``eval/...`` and ``eval/sampled_...`` metrics, each followed by its ``time/...`` when ``times``."""
        metrics = self.greedy.metrics()
        if times:
            metrics["time/eval_s"] = self.seconds["eval"]
        if self.sampled is not None:
            metrics.update(self.sampled.metrics(kind="sampled_"))
            if times:
                metrics["time/sampled_eval_s"] = self.seconds["sampled_eval"]
        return metrics


def play(
    env: BatchedTextEnv,
    act: ActFn | BatchActor,
    game_ids: list[int],
    placement: Placement | None = None,
    model: nn.Module | None = None,
    progress: bool = False,
    description: str = "eval",
) -> EvalResult:
    """Play ``game_ids`` with ``act``, split over the processes of ``placement``, and summarise them in order.

    A sharded policy ``model`` is gathered once for the whole play: processes' games end after different turns.
    """
    placement = placement if placement is not None else Placement()
    with placement.gathered(model) if model is not None else nullcontext():
        local = collect_trajectories(
            env, act, game_ids=placement.shard(game_ids), progress=progress, description=description
        )
    return EvalResult.from_trajectories(placement.unshard(local, len(game_ids)))


def play_seeded(
    env: BatchedTextEnv,
    act: ActFn | BatchActor,
    game_ids: list[int],
    seed: int,
    placement: Placement | None = None,
    model: nn.Module | None = None,
    progress: bool = False,
    description: str = "sampled eval",
) -> EvalResult:
    """``play`` with Python's, numpy's and torch's generators and ``env``'s seeded from ``seed`` (per process) for the
    play and restored afterwards: every call draws the same random numbers, and the caller's random streams go on
    exactly as if the games had not been played."""
    placement = placement if placement is not None else Placement()
    seed = process_seed(seed, placement.process_index)
    saved, saved_env = rng_state(), env.get_rng_state()
    seed_everything(seed)
    env.seed(seed)
    try:
        return play(env, act, game_ids, placement, model, progress, description=description)
    finally:
        set_rng_state(saved)
        env.set_rng_state(saved_env)


def evaluate(
    env: BatchedTextEnv,
    games: EvalGames,
    greedy_act: ActFn | BatchActor,
    sampled_act: ActFn | BatchActor | None = None,
    placement: Placement | None = None,
    model: nn.Module | None = None,
    progress: bool = False,
) -> Evaluation:
    """Greedy play of ``games.greedy`` with ``greedy_act``, then, with sampled games, sampled play of
    ``games.sampled`` with ``sampled_act``, both seeded from ``games.seed`` (``play_seeded``); the games are never
    stored.

    Args:
        env: the evaluation environment (not the training one).
        games: the run's fixed evaluation games.
        greedy_act: decodes greedily.
        sampled_act: samples as training rollouts do; needed when ``games.sampled`` is not empty.
        placement: splits the games over processes (``None``: one process).
        model: the policy's network, gathered whole for the play when it is sharded.
        progress: show progress bars.
    """
    start = time.perf_counter()
    # Seeded too: where the game itself is random (FrozenLake's slips), every evaluation plays the same draws, so
    # curves compare across iterations and runs, and a resumed run evaluates as an uninterrupted one.
    greedy = play_seeded(env, greedy_act, games.greedy, games.seed, placement, model, progress, description="eval")
    evaluation = Evaluation(greedy, seconds={"eval": time.perf_counter() - start})
    if games.sampled:
        if sampled_act is None:
            raise ValueError("evaluate: sampled evaluation games need sampled_act")
        start = time.perf_counter()
        evaluation.sampled = play_seeded(env, sampled_act, games.sampled, games.seed, placement, model, progress)
        evaluation.seconds["sampled_eval"] = time.perf_counter() - start
    return evaluation


def best_metrics(cfg: EnvConfig, game_ids: Sequence[int]) -> dict[str, float]:
    """The best achievable mean return and success rate on ``game_ids`` (``GameSpec.best``: an optimal policy or an
    exact solver), as ``eval/best_return_mean`` and ``eval/best_success_rate``; empty for a game without them, or a
    setting its solver does not cover (the full Twenty Questions word list), with a log line saying why."""
    spec = GAMES.get(cfg.name)
    if spec is None or spec.best is None:
        log.info("no best figure for %s: the project has no exact solver of it", cfg.name)
        return {}
    try:
        best = spec.best(cfg, game_ids)
    except ValueError as error:  # GameSpec.best's refusal of a setting it cannot solve exactly
        log.info("no best figure for %s: %s", cfg.name, error)
        return {}
    log.info(
        "best achievable on the %d evaluation games, by %s: return %.4g, success rate %.4g",
        len(game_ids),
        best.solver,
        best.return_mean,
        best.success_rate,
    )
    return {BEST_RETURN_KEY: best.return_mean, BEST_SUCCESS_KEY: best.success_rate}


def evaluate_saved_policy(cfg: RunConfig, run_dir: Path) -> dict[str, float]:
    """Play the evaluation games greedily with ``cfg.model.policy`` and write ``eval_results.json``.

    With ``eval.sampled_episodes`` the policy also plays the sampled-evaluation games by sampling, seeded as a
    training run's sampled evaluation is (process 0). The results hold the summary metrics, every game's return and
    success, and the full transcripts of the first games, so a saved policy can be inspected without the project's
    training code.
    """
    run_dir = Path(run_dir).expanduser().resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.torch_threads is not None:
        torch.set_num_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    transformers.utils.logging.disable_progress_bar()
    placement = Placement()
    env = make_env(cfg.env, seed=cfg.eval.seed, oracle=make_oracle(cfg.env))
    model, tokenizer = load_policy_model(cfg.model.policy, str(resolve_cache_dir(cfg.cache_dir)), env.corpus)
    policy = LanguagePolicy(model.to(placement.device), tokenizer, cfg.model.policy)
    games = EvalGames.from_config(cfg.eval, env.evaluation_pool())
    evaluation = evaluate(
        env,
        games,
        greedy_act=lambda observations: policy.generate(observations, greedy=True).texts,
        sampled_act=lambda observations: policy.generate(observations, greedy=False).texts,
        placement=placement,
        progress=cfg.logging.progress_bars,
    )
    metrics = evaluation.metrics()
    moves = GAMES[cfg.env.name].moves
    if moves:  # does the policy read the board (archer.move_dependence)
        states = first_observations(env, games.greedy[:MOVE_DEPENDENCE_STATES])
        metrics |= move_dependence_metrics(policy, states, moves)
    result = evaluation.greedy
    results: dict[str, Any] = {
        "policy": cfg.model.policy.name_or_path,
        "env": cfg.env.name,
        "game_ids": games.greedy,
        "returns": result.returns,
        "successes": result.successes,
        "sample_games": result.sample_games,
    }
    if evaluation.sampled is not None:
        results |= {"sampled_game_ids": games.sampled, "sampled_returns": evaluation.sampled.returns}
        results["sampled_successes"] = evaluation.sampled.successes
    atomic_write_json(run_dir / "eval_results.json", {**results, "metrics": metrics})
    log.info("evaluation of %s | %s", cfg.model.policy.name_or_path, format_metrics(metrics))
    return metrics


def format_metrics(metrics: dict[str, float]) -> str:
    """``key=value`` pairs on one line, four significant digits."""
    return " ".join(f"{key}={value:.4g}" for key, value in metrics.items())
