"""The training loop: builds everything from a ``RunConfig`` and runs iterations, in numbered steps.

Setup (``build_trainer``, then ``Trainer.__init__``):
0. pretraining: with ``cfg.pretrain``, the starting policy is trained by behaviour cloning once and cached
   (``archer.pretraining``);
1. environments: one for training, one for evaluation, and the fixed evaluation games;
2. models and the algorithm that trains them, placed on this process (``Placement``: device, optional sharding);
3. data: the offline dataset, or an empty replay buffer that rollouts fill;
4. records: the tracker; then resume from the run's checkpoint, or start fresh (optionally from ``init_from``).

A fresh run first records iteration 0: the starting policy's evaluation (``eval.before_training``) and the best
achievable figures on the evaluation games (``archer.evaluation.best_metrics``), the start and best lines of
``learning_curve.png``.

One iteration (``Trainer.fit``), in order:
1. collect: online algorithms play ``rollout.episodes_per_iter`` games and store them in the replay buffer;
2. update: the algorithm's gradient steps on the buffer (for offline algorithms, the buffer is the dataset);
3. evaluate: every ``eval.every_iters`` iterations, greedy play on the fixed evaluation games (and, with
   ``eval.sampled_episodes``, sampled play on a fixed list of games, outside training's random streams);
4. report: one log line, one ``metrics.jsonl`` record, and ``learning_curve.png`` redrawn;
5. checkpoint: every ``save_every_iters`` iterations, an atomic checkpoint and the algorithm's exports (the policy,
   and a critic's encoder) as HF folders.

The trainer never looks inside the algorithm's networks: ``Algorithm.networks`` names what a checkpoint holds and
what ``init_from`` can hand on, and ``Algorithm.exports`` what is written as plain Hugging Face folders.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from archer import locking
from archer.algorithms import make_algorithm
from archer.algorithms.base import CRITIC_ENCODER_EXPORT, POLICY_EXPORT, Algorithm
from archer.checkpointing import (
    CHECKPOINT_FILE,
    RESUMABLE_KEYS,
    CheckpointError,
    check_complete,
    config_fingerprint,
    fingerprint_settings,
    load_checkpoint,
    load_networks,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from archer.config import POLICY_BODY, ConfigError, RunConfig
from archer.data.exploration import ExploringActor
from archer.data.offline import load_offline_trajectories
from archer.data.replay_buffer import ReplayBuffer
from archer.data.rollout import ActFn, BatchActor, collect_trajectories
from archer.data.trajectory import Trajectory
from archer.distributed import Placement, make_accelerator
from archer.envs.registry import GAMES, make_env, make_oracle
from archer.errors import RunInterrupted, StorageError
from archer.evaluation import EvalGames, EvalResult, best_metrics, evaluate, format_metrics, play, play_seeded
from archer.locking import RUN_FOLDER_BUSY, FolderBusyError
from archer.models.critic import build_critic
from archer.models.loading import load_policy_model, policy_source, save_policy
from archer.models.policy import LanguagePolicy
from archer.move_dependence import MOVE_DEPENDENCE_STATES, first_observations, move_dependence_metrics
from archer.pretraining import pretrained_policy
from archer.tracking import CURVE_FILE, METRICS_FILE, Tracker
from archer.utils import atomic_write_json, make_folder, process_seed, resolve_cache_dir, seed_everything

log = logging.getLogger(__name__)


class _MainProcessFilter(logging.Filter):
    """Lets records through on the main process only, so a multi-process run prints each line once."""

    def filter(self, record: logging.LogRecord) -> bool:
        return int(os.environ.get("RANK", "0")) == 0


log.addFilter(_MainProcessFilter())

CONFIG_FILE = "config.json"
# What a training run writes into its folder, the checkpoint first: a fresh start moves them aside in this order, so
# a start killed half way leaves records without a checkpoint (the next start moves them too), never a checkpoint
# with another run's records.
RUN_RECORDS = (CHECKPOINT_FILE, METRICS_FILE, CONFIG_FILE, CURVE_FILE, POLICY_EXPORT, CRITIC_ENCODER_EXPORT)
PREVIOUS_PREFIX = "previous-"
# Each metrics record's CPU seconds of this process since the previous record (the other ``time/`` keys are wall
# seconds of one phase each, so this one is not added to them).
PROCESS_CPU_KEY = "time/process_cpu_s"
# The metrics ``learning_curve.png`` draws for each ``logging.curve_metric``: greedy play's, then sampled play's.
CURVE_KEYS = {
    "return": ("eval/return_mean", "eval/sampled_return_mean"),
    "success_rate": ("eval/success_rate", "eval/sampled_success_rate"),
}


def train(cfg: RunConfig, run_dir: Path | None = None, title: str | None = None) -> dict[str, float]:
    """Build the run's trainer (``build_trainer``: pretraining first, when configured) and run it; returns the last
    iteration's metrics.

    Under several processes the process group is shut down at the end (without it, runs can abort at exit).
    """
    trainer = build_trainer(cfg, run_dir, title)
    metrics = trainer.fit()
    trainer.accelerator.end_training()
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return metrics


def build_trainer(cfg: RunConfig, run_dir: Path | None = None, title: str | None = None) -> Trainer:
    """Step 0, pretraining: with ``cfg.pretrain``, build (once; cached) the starting policy by behaviour cloning;
    then the ``Trainer`` of ``cfg``, starting from that policy (``title``: its learning curve's, see ``Trainer``)."""
    # Refuse a run without a folder, or whose folder another process owns, before any pretraining.
    placement = claim_run_folder(cfg, run_dir)
    starting_policy = None
    if cfg.pretrain is not None:
        starting_policy = pretrained_policy(cfg, placement, lambda bc_cfg, folder: Trainer(bc_cfg, folder).fit())
    return Trainer(cfg, run_dir, starting_policy=starting_policy, title=title)


def set_float32_matmul(tf32: bool, device: torch.device) -> str:
    """Apply ``RunConfig.tf32`` for a run on ``device``; returns torch's float32 matmul precision afterwards.

    Only a CUDA device is changed: on a CPU the same setting may route float32 products through bfloat16 kernels,
    which the key does not promise. ``False`` restores exact float32, so a run never inherits an earlier run's choice
    in the same process.
    """
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
    return torch.get_float32_matmul_precision()


def run_title(cfg: RunConfig, config_name: str | None = None, env_option: str | None = None) -> str:
    """A run's name, the title of its learning curve: ``archer_20q: archer on twenty_questions_subset (seed 0)``, or
    without the names Hydra knows (a run built in code) ``archer on twenty_questions (seed 0)``.

    Args:
        cfg: the run config.
        config_name: the top-level config the run was composed from.
        env_option: the ``env`` group option it chose, which names the setting (``twenty_questions_subset``) where
            ``env.name`` names the game.
    """
    title = f"{cfg.algorithm.name} on {env_option or cfg.env.name} (seed {cfg.seed})"
    return f"{config_name}: {title}" if config_name else title


def run_folder(cfg: RunConfig, run_dir: Path | None) -> Path:
    """The run folder: ``run_dir``, else ``cfg.run_dir``, as an absolute path."""
    if run_dir is None and cfg.run_dir is None:
        raise ValueError("Trainer needs a run folder: set run_dir")
    return Path(run_dir if run_dir is not None else cfg.run_dir).expanduser().resolve()


def claim_run_folder(
    cfg: RunConfig, run_dir: Path | None = None, record: dict[str, object] | None = None
) -> Placement:
    """Make this run the owner of its folder for the rest of the process (``archer.locking``); returns the run's
    processes.

    Under several processes only the main process takes the lock, and its verdict reaches every process, so all of
    them stop together. A process that already owns the folder may claim it again.

    Args:
        cfg: the run config.
        run_dir: the run folder (defaults to ``cfg.run_dir``).
        record: facts to store in the lock file for a process that later finds the folder taken.

    Raises:
        FolderBusyError: another process owns the folder; the message names it.
    """
    folder = run_folder(cfg, run_dir)
    placement = Placement(make_accelerator(cfg.process_group_timeout_s))
    refusal = None
    if placement.is_main_process:
        try:
            locking.hold(folder, "run folder", RUN_FOLDER_BUSY, extra=record)
        except (FolderBusyError, StorageError) as error:  # StorageError: a lock file that is a link
            refusal = (isinstance(error, StorageError), str(error))
    refusal = placement.all_gather([refusal])[0]
    if refusal is not None:
        storage, message = refusal
        raise StorageError(message) if storage else FolderBusyError(message)
    return placement


class Trainer:
    """Builds the environment, models, algorithm and data of a run, and trains.

    Args:
        cfg: the validated run config.
        run_dir: the run folder (defaults to ``cfg.run_dir``).
        starting_policy: the pretrained policy's folder, which replaces ``cfg.model.policy.name_or_path``; required
            when ``cfg.pretrain`` is set (``build_trainer`` makes it).
        title: the run's name on its learning curve (``run_title``; None: ``run_title(cfg)``).
    """

    def __init__(
        self,
        cfg: RunConfig,
        run_dir: Path | None = None,
        starting_policy: Path | None = None,
        title: str | None = None,
    ) -> None:
        """Setup steps 1-4 of the module docstring, in one function: their order is also the order in which the
        random streams are seeded and the processes wait for each other, which reads best top to bottom."""
        self.cfg = cfg
        self.run_dir = run_folder(cfg, run_dir)
        self.title = title if title is not None else run_title(cfg)
        if cfg.pretrain is not None and starting_policy is None:
            raise ValueError(
                "Trainer: the run has a pretrain section; build it with archer.trainer.build_trainer (or train), "
                "which pretrains the starting policy first"
            )
        make_folder(self.run_dir, "the run folder (run_dir)", "choose another run_dir")
        if cfg.torch_threads is not None:
            torch.set_num_threads(cfg.torch_threads)
        self.accelerator = make_accelerator(cfg.process_group_timeout_s)
        self.placement = Placement(self.accelerator, shard_policy=cfg.model.policy.shard == "fsdp")
        set_float32_matmul(cfg.tf32, self.placement.device)
        transformers.utils.logging.disable_progress_bar()
        self.progress = cfg.logging.progress_bars and self.placement.is_main_process
        self.cache_dir = resolve_cache_dir(cfg.cache_dir)
        self.config_dict: dict[str, Any] = asdict(cfg)
        self.settings = fingerprint_settings(cfg, ignore=RESUMABLE_KEYS)
        self.fingerprint = config_fingerprint(cfg, ignore=RESUMABLE_KEYS)
        policy_cfg = cfg.model.policy
        if starting_policy is not None:
            policy_cfg = replace(policy_cfg, name_or_path=str(starting_policy))
        seed_everything(cfg.seed)

        # 1. Environments: one for training, one for evaluation, sharing the oracle; the fixed evaluation games.
        oracle = make_oracle(cfg.env)
        self.env = make_env(cfg.env, seed=process_seed(cfg.seed, self.placement.process_index), oracle=oracle)
        self.eval_env = make_env(cfg.env, seed=cfg.eval.seed, oracle=oracle)
        self.eval_games = EvalGames.from_config(cfg.eval, self.eval_env.evaluation_pool())
        self._dependence_states: list[str] | None = None  # move_dependence_metrics' states, read once

        # 2. Models and the algorithm that trains them. The main process goes first, so it alone builds and caches
        #    the embedded models; the others then load the cached folders.
        with self.placement.main_process_first():
            model, tokenizer = load_policy_model(policy_cfg, str(self.cache_dir), self.env.corpus)
            critic = None
            if cfg.algorithm.uses_critic:
                critic_cfg = cfg.model.critic
                if critic_cfg.name_or_path == POLICY_BODY:
                    # The starting policy's weights as loaded (before any LoRA adapters or reference checkpoint).
                    body = policy_source(policy_cfg, str(self.cache_dir), self.env.corpus)
                    critic_cfg = replace(critic_cfg, name_or_path=body)
                critic = build_critic(critic_cfg, str(self.cache_dir), self.env.corpus)
        # Before the optimisers are built: sharding replaces the parameters.
        self.policy = LanguagePolicy(self.placement.place_policy(model), tokenizer, policy_cfg)
        if critic is not None:
            critic = critic.to(self.placement.device)
        self.algorithm = make_algorithm(
            cfg.algorithm, self.policy, self.accelerator, critic=critic, progress=self.progress
        )
        if cfg.algorithm.online:
            check_groups(cfg.algorithm.rollout.episodes_per_iter, self.placement.num_processes, self.algorithm)
        self.env_trajectories = 0
        self._last_save_seconds = 0.0  # logged with the next iteration (the save follows the metrics record)
        # This process's CPU seconds since its previous metrics record (the first: since the process started), so
        # that a run's records sum to its CPU cost even when it was killed and resumed: the records a resumed run
        # keeps are exactly the iterations whose work it kept.
        self._cpu_at_last_record = 0.0
        # Networks were initialised identically on every process; sampling noise must differ between them.
        torch.manual_seed(process_seed(cfg.seed, self.placement.process_index))

        # 3. Data: the offline dataset (generated and cached by the main process first), or an empty replay buffer
        #    that rollouts fill.
        with self.placement.main_process_first():
            self.buffer = self._build_buffer()
            if self.algorithm.uses_demonstrations:
                self.algorithm.demonstrations = self._dataset_buffer()
        self.rng = np.random.default_rng([cfg.seed, self.placement.process_index])

        # 4. Records: resume from this folder's checkpoint, or start fresh (from an earlier run's networks with
        #    init_from).
        self.tracker = Tracker(
            self.run_dir,
            cfg.logging,
            run_name=f"{cfg.env.name}__{cfg.algorithm.name}__s{cfg.seed}",
            config=self.config_dict,
            is_main_process=self.placement.is_main_process,
        )
        self.start_iteration = 0
        #: The iteration of the run folder's latest checkpoint (0: none).
        self.saved_iteration = 0
        if cfg.resume and (self.run_dir / CHECKPOINT_FILE).exists():
            self._resume()
        else:
            if cfg.init_from is not None:
                self._initialise_from(Path(cfg.init_from).expanduser())
            # A fresh start in a folder that already holds records (resume=false, or a run killed before its first
            # checkpoint) keeps them: they move aside, so the folder never mixes two runs.
            if self.placement.is_main_process:
                previous = move_previous_run(self.run_dir)
                if previous is not None:
                    log.info("starting over: the earlier run's files are now in %s", previous)
                atomic_write_json(self.run_dir / CONFIG_FILE, self.config_dict)
            self.placement.wait()

    @property
    def eval_game_ids(self) -> list[int]:
        return self.eval_games.greedy

    @property
    def sampled_eval_game_ids(self) -> list[int]:
        return self.eval_games.sampled

    def _initialise_from(self, run_dir: Path) -> None:
        """Start from the networks of an earlier run's final checkpoint (offline to online): those of
        ``algorithm.init_from_networks`` that both runs have."""
        if not (run_dir / CHECKPOINT_FILE).exists():
            raise CheckpointError(f"init_from={run_dir}: no {CHECKPOINT_FILE} there; give a finished run's folder")
        state = load_checkpoint(run_dir / CHECKPOINT_FILE)["algorithm"]
        owned = self.algorithm.networks()
        networks = {name: owned[name] for name in self.algorithm.init_from_networks if name in owned and name in state}
        load_networks(networks, state, self.placement, source=f"init_from={run_dir}")
        log.info("initialised %s from %s", ", ".join(networks), run_dir)

    def _build_buffer(self) -> ReplayBuffer:
        settings = self.cfg.algorithm
        if settings.online:
            # The Monte-Carlo returns are read only by a critic's mixed targets, which discount as the critic does.
            gamma_mc = settings.critic.gamma if settings.uses_critic else 1.0
            buffer = ReplayBuffer(capacity=settings.rollout.replay_capacity, gamma_mc=gamma_mc)
            if self.cfg.prefill_buffer_from_data:
                buffer.add_trajectories(load_offline_trajectories(self.cfg, self.cache_dir, progress=self.progress))
                log.info("replay buffer prefilled with %d offline transitions", len(buffer))
            return buffer
        return self._dataset_buffer()

    def _dataset_buffer(self) -> ReplayBuffer:
        """The offline dataset (``data``) in a buffer of its own size."""
        trajectories = load_offline_trajectories(self.cfg, self.cache_dir, progress=self.progress)
        num_transitions = sum(t.length for t in trajectories)
        buffer = ReplayBuffer(capacity=max(num_transitions, 1), gamma_mc=1.0)
        buffer.add_trajectories(trajectories)
        log.info("offline dataset: %d episodes, %d transitions", len(trajectories), num_transitions)
        return buffer

    # ---- evaluation, checkpoints -------------------------------------------------------------------------

    def evaluate(self) -> EvalResult:
        """Greedy play of the fixed evaluation games with the current policy (split over processes)."""
        return play(
            self.eval_env,
            self._greedy_actor(),
            self.eval_games.greedy,
            self.placement,
            self.policy.model,
            self.progress,
        )

    def evaluate_sampled(self) -> EvalResult:
        """Sampled play of the fixed sampled-evaluation games (``eval.sampled_episodes``), split over processes,
        seeded from ``eval.seed`` and leaving training's random streams as they were (``evaluation.play_seeded``)."""
        return play_seeded(
            self.eval_env,
            self.algorithm.rollout_actor(greedy=False),
            self.eval_games.sampled,
            self.eval_games.seed,
            self.placement,
            self.policy.model,
            self.progress,
        )

    def _greedy_actor(self) -> ActFn | BatchActor:
        """Greedy play: the algorithm's ``act``, or with ``model.policy.reuse_kv_cache`` its incremental generation,
        which decodes the same greedy actions (tests/unit/test_incremental_generation.py) at a fraction of the cost."""
        return self.algorithm.rollout_actor(greedy=True)

    def evaluation_metrics(self) -> dict[str, float]:
        """Greedy evaluation metrics (``eval/...``), the sampled ones (``eval/sampled_...``) when configured, and
        their times (``archer.evaluation.evaluate``: sampled play is seeded from ``eval.seed`` and leaves training's
        random streams as they were)."""
        evaluation = evaluate(
            self.eval_env,
            self.eval_games,
            greedy_act=self._greedy_actor(),
            sampled_act=self.algorithm.rollout_actor(greedy=False) if self.eval_games.sampled else None,
            placement=self.placement,
            model=self.policy.model,
            progress=self.progress,
        )
        return evaluation.metrics(times=True) | self.move_dependence_metrics()

    def move_dependence_metrics(self) -> dict[str, float]:
        """``eval/move_state_dependence`` (``archer.move_dependence``) at the first states of the first
        ``MOVE_DEPENDENCE_STATES`` greedy evaluation games, for a game with a fixed move list; empty otherwise."""
        moves = GAMES[self.cfg.env.name].moves
        if not moves:
            return {}
        if self._dependence_states is None:
            ids = self.eval_games.greedy[:MOVE_DEPENDENCE_STATES]
            self._dependence_states = first_observations(self.eval_env, ids)
        with self.placement.gathered(self.policy.model):
            return move_dependence_metrics(self.policy, self._dependence_states, moves)

    def _process_state(self) -> dict[str, Any]:
        """This process's generators: each process has its own, and all of them go into the checkpoint."""
        return {
            "rng": rng_state(),
            "numpy_generator": self.rng.bit_generator.state,
            "env_rng": self.env.get_rng_state(),
        }

    def save(self, iteration: int) -> None:
        """Atomic checkpoint of everything needed to continue, plus the algorithm's exports as plain HF folders.

        A sharded policy's weights and optimiser state are gathered into full tensors by every process together
        (the main process alone keeps them), so the checkpoint is the one an unsharded run writes.
        """
        process_states = self.placement.all_gather([self._process_state()])
        algorithm_state = self.placement.on_main(self.algorithm.state_dict)
        exports = {
            folder: (model, tokenizer, self.placement.full_weights(model))
            for folder, (model, tokenizer) in self.algorithm.exports().items()
        }
        if self.placement.is_main_process:
            self._write_checkpoint(iteration, process_states, algorithm_state, exports)
        self.placement.wait()

    def _write_checkpoint(
        self,
        iteration: int,
        process_states: list[dict[str, Any]],
        algorithm_state: dict[str, Any],
        exports: dict[str, tuple[Any, Any, dict[str, torch.Tensor] | None]],
    ) -> None:
        state = {
            "config_fingerprint": self.fingerprint,
            # What the fingerprint hashes, so a refused resume can name the keys that changed.
            "config_settings": json.dumps(self.settings, sort_keys=True),
            "iteration": iteration,
            "algorithm": algorithm_state,
            "process_states": process_states,
            "env_trajectories": self.env_trajectories,
        }
        if self.cfg.algorithm.online:
            state["buffer"] = self.buffer.state_dict()
        save_checkpoint(self.run_dir, state)
        for folder, (model, tokenizer, weights) in exports.items():
            save_policy(model, tokenizer, self.run_dir / folder, weights=weights)

    def _resume(self) -> None:
        path = self.run_dir / CHECKPOINT_FILE
        state = load_checkpoint(path, expected_fingerprint=self.fingerprint, expected_settings=self.settings)
        check_complete(state, path, online=self.cfg.algorithm.online)
        process_states = state["process_states"]
        if len(process_states) != self.placement.num_processes:
            raise CheckpointError(
                f"checkpoint {self.run_dir / CHECKPOINT_FILE} was written by {len(process_states)} processes; resume "
                f"it with the same number (this run has {self.placement.num_processes})"
            )
        mine = process_states[self.placement.process_index]
        # A sharded policy: the checkpoint's full tensors, split like the live shards (optimiser states at their
        # first step).
        try:
            self.algorithm.load_state_dict(self.placement.split_like(state["algorithm"], self.algorithm.state_dict))
            set_rng_state(mine["rng"])
            self.rng.bit_generator.state = mine["numpy_generator"]
            self.env.set_rng_state(mine["env_rng"])
            if "buffer" in state:
                self.buffer.load_state_dict(state["buffer"])
        except KeyError as error:
            raise CheckpointError(
                f"checkpoint {path} has no {error.args[0]!r} where this run keeps one (its algorithm state, process "
                "state or replay buffer is not whole). Delete it to start over, or point run_dir elsewhere."
            ) from None
        self.start_iteration = self.saved_iteration = int(state["iteration"])
        self.env_trajectories = int(state["env_trajectories"])
        self.tracker.truncate_after(self.start_iteration)
        self._restore_exports()
        if self.placement.is_main_process:
            # A checkpoint write that was killed leaves its temporary file; the checkpoint itself is whole.
            for stray in self.run_dir.glob(".checkpoint.*.tmp"):
                stray.unlink(missing_ok=True)
        log.info("resumed from %s at iteration %d", self.run_dir / CHECKPOINT_FILE, self.start_iteration)

    def _restore_exports(self) -> None:
        """Rewrite the exports (``policy/``, ...) that are missing from the run folder from the loaded checkpoint,
        which holds the networks they were written from; a finished run would otherwise never write them again."""
        exports = self.algorithm.exports()
        missing = [folder for folder in exports if not (self.run_dir / folder / "config.json").exists()]
        missing = self.placement.all_gather([missing])[0]  # the main process's view, on every process
        weights = {folder: self.placement.full_weights(exports[folder][0]) for folder in missing}
        if self.placement.is_main_process:
            for folder in missing:
                model, tokenizer = exports[folder]
                save_policy(model, tokenizer, self.run_dir / folder, weights=weights[folder])
                log.warning(
                    "%s was missing: rewritten from %s (iteration %d)",
                    self.run_dir / folder,
                    CHECKPOINT_FILE,
                    self.start_iteration,
                )
        self.placement.wait()

    def plot(self) -> None:
        """Redraw ``learning_curve.png``: greedy (and sampled) play's ``logging.curve_metric`` against games played
        (iterations for offline algorithms), titled with the run's name, with the start and the best as lines."""
        self.tracker.plot(
            x_key="env/trajectories" if self.cfg.algorithm.online else "iteration",
            y_keys=CURVE_KEYS[self.cfg.logging.curve_metric],
            title=self.title,
        )

    # ---- the loop ----------------------------------------------------------------------------------------

    def collect(self, iteration: int) -> dict[str, float]:
        """Play this iteration's training games with the sampling policy and store them in the buffer.

        Each process plays its share; every process then adds all games, in process order, to its buffer.
        """
        rollout = self.cfg.algorithm.rollout
        actor = self.algorithm.rollout_actor(greedy=False)
        explored = {}
        if rollout.explore_fraction > 0:
            # Its own stream, seeded by the iteration: a resumed run replaces the same moves.
            seed = [self.cfg.seed, self.placement.process_index, iteration]
            past: list[tuple[str, list[int] | None]] = []
            if "past" in rollout.explore_sources:
                moves = self.buffer.distinct_actions()
                encoded = self.policy.encode_actions(moves) if moves else []
                # A move whose re-encoding is cut at max_new_tokens is one the policy cannot play whole: left out,
                # so that every replaced move's ids decode to its text, as a generated move's do.
                past = [
                    (move, ids)
                    for move, ids in zip(moves, encoded, strict=True)
                    if self.policy.action_text(ids) == move
                ]
            actor = ExploringActor(
                actor,
                rollout.explore_fraction,
                np.random.default_rng(seed),
                sources=tuple(rollout.explore_sources),
                past=past,
            )
        share = self.placement.share(rollout.episodes_per_iter)
        group_size = self.algorithm.rollout_group_size
        # Groups of identical starts, numbered apart over the processes (each plays share / G whole groups).
        grouping = (
            {"group_size": group_size, "first_group": self.placement.process_index * (share // group_size)}
            if group_size > 1
            else {}
        )
        with self.placement.gathered(self.policy.model):
            local = collect_trajectories(self.env, actor, num_episodes=share, progress=self.progress, **grouping)
        if isinstance(actor, ExploringActor):
            explored = {"rollout/replaced_move_fraction": actor.count.replaced / max(actor.count.moves, 1)}
        trajectories = self.placement.all_gather(local)
        self.buffer.add_trajectories(trajectories)
        self.algorithm.observe(trajectories, iteration)
        self.env_trajectories += len(trajectories)
        return rollout_metrics(trajectories) | explored | {"buffer/transitions": float(len(self.buffer))}

    def fit(self) -> dict[str, float]:
        """Run the remaining iterations; returns the last iteration's metrics.

        Raises:
            RunInterrupted: Ctrl-C (a ``KeyboardInterrupt``), saying which checkpoint the run resumes from.
        """
        try:
            return self._fit()
        except RunInterrupted:
            raise
        except KeyboardInterrupt:
            num_iterations = self.cfg.algorithm.num_iterations
            raise RunInterrupted(self.run_dir, self.saved_iteration, num_iterations, "the run") from None

    def _cpu_since_last_record(self) -> float:
        now = time.process_time()
        spent, self._cpu_at_last_record = now - self._cpu_at_last_record, now
        return spent

    def _fit(self) -> dict[str, float]:
        cfg = self.cfg
        last: dict[str, float] = {}
        if self.start_iteration == 0 and cfg.eval.every_iters > 0:
            # The start's evaluation and the best achievable figures on the same games, in the first record: the
            # learning curve draws both as lines, and summaries read them there. A resumed run keeps that record.
            record = best_metrics(cfg.env, self.eval_games.greedy) if self.placement.is_main_process else {}
            if cfg.eval.before_training:
                last = record = self.evaluation_metrics() | {"env/trajectories": 0.0} | record
                log.info("iteration 0 | %s", format_metrics(last))
            if record:
                record[PROCESS_CPU_KEY] = self._cpu_since_last_record()
                self.tracker.log(record, iteration=0)
                self.plot()
        for iteration in range(self.start_iteration + 1, cfg.algorithm.num_iterations + 1):
            metrics: dict[str, float] = {}
            # 1. Collect (online algorithms).
            if self.cfg.algorithm.online:
                start = time.perf_counter()
                metrics.update(self.collect(iteration))
                metrics["time/rollout_s"] = time.perf_counter() - start
            # 2. Update.
            start = time.perf_counter()
            metrics.update(self.algorithm.update(self.buffer, iteration, self.rng))
            metrics["time/update_s"] = time.perf_counter() - start
            metrics.update(self.policy.engine_metrics())  # model.policy.engine=vllm only
            metrics["env/trajectories"] = float(self.env_trajectories)

            # 3. Evaluate.
            is_last = iteration == cfg.algorithm.num_iterations
            if cfg.eval.every_iters > 0 and (iteration % cfg.eval.every_iters == 0 or is_last):
                metrics.update(self.evaluation_metrics())

            # 4. Report. Metrics first, checkpoint second: a run killed in between resumes from the previous
            #    checkpoint and drops this iteration's record (Tracker.truncate_after), so no iteration is ever
            #    recorded twice.
            metrics["time/checkpoint_s"] = self._last_save_seconds
            metrics[PROCESS_CPU_KEY] = self._cpu_since_last_record()
            self.tracker.log(metrics, iteration=iteration)
            self.plot()
            log.info("iteration %d/%d | %s", iteration, cfg.algorithm.num_iterations, format_metrics(metrics))
            # 5. Checkpoint.
            if iteration % cfg.save_every_iters == 0 or is_last:
                start = time.perf_counter()
                self.save(iteration)
                self.saved_iteration = iteration
                self._last_save_seconds = time.perf_counter() - start
            last = metrics
        self.tracker.finish()
        self.placement.wait()
        return last


def check_groups(games: int, processes: int, algorithm: Algorithm) -> None:
    """Refuse a process count that would split one of the algorithm's groups of identical starts over two processes
    (each process plays its share of an iteration's ``games`` as whole groups)."""
    group_size = algorithm.rollout_group_size
    if group_size > 1 and games % (processes * group_size):
        raise ConfigError(
            f"algorithm.rollout.episodes_per_iter: {games} games over {processes} processes is not a whole number of "
            f"groups of {group_size} per process; use a multiple of {processes * group_size}"
        )


def move_previous_run(run_dir: Path) -> Path | None:
    """Move the files an earlier run left in ``run_dir`` into ``run_dir/previous-<time>/``.

    Moved: ``RUN_RECORDS`` and the temporary files of a checkpoint write that was killed. Hydra's own files
    (``.hydra/``, ``run.log``) and earlier ``previous-*`` folders stay.

    Returns:
        The folder they went to, or None when there was nothing to move.
    """
    # ``lexists``: a link moves too (dangling or not), so nothing is ever written through it.
    found = [run_dir / name for name in RUN_RECORDS if os.path.lexists(run_dir / name)]
    found += sorted(run_dir.glob(".checkpoint.*.tmp"))
    if not found:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = run_dir / f"{PREVIOUS_PREFIX}{stamp}"
    suffix = 1
    while target.exists():
        target = run_dir / f"{PREVIOUS_PREFIX}{stamp}-{suffix}"
        suffix += 1
    target.mkdir()
    for path in found:
        os.replace(path, target / path.name)
    return target


def rollout_metrics(trajectories: list[Trajectory]) -> dict[str, float]:
    """Return, success and length statistics of training games."""
    returns = [t.episode_return for t in trajectories]
    return {
        "rollout/return_mean": statistics.fmean(returns),
        "rollout/return_min": min(returns),
        "rollout/return_max": max(returns),
        "rollout/success_rate": sum(t.success for t in trajectories) / len(trajectories),
        "rollout/length_mean": statistics.fmean(t.length for t in trajectories),
    }
