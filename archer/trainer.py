"""The training loop: builds everything from a ``RunConfig`` and runs iterations.

One iteration, in order:
1. collect: online algorithms play ``rollout_episodes_per_iter`` games and store them in the replay buffer;
2. update: the algorithm's gradient steps on the buffer (for offline algorithms, the buffer is the dataset);
3. evaluate: every ``eval.every_iters`` iterations, greedy play on the fixed evaluation games (and, with
   ``eval.sampled_episodes``, sampled play on a fixed list of games, outside training's random streams);
4. report: one log line and one ``metrics.jsonl`` record;
5. checkpoint: every ``save_every_iters`` iterations, an atomic checkpoint and the policy as a HF folder.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import time
from dataclasses import asdict, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from accelerate import Accelerator
from accelerate.utils import DistributedType, InitProcessGroupKwargs

from archer.algorithms import make_algorithm
from archer.checkpointing import (
    CHECKPOINT_FILE,
    CheckpointError,
    config_fingerprint,
    fingerprint_settings,
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from archer.config import POLICY_BODY, CriticConfig, LoggingConfig, PolicyConfig, RunConfig
from archer.data.offline import load_offline_trajectories
from archer.data.replay_buffer import ReplayBuffer
from archer.data.rollout import collect_trajectories
from archer.data.trajectory import Trajectory
from archer.distributed import all_gather, shard, share, unshard
from archer.envs.registry import make_env, make_oracle
from archer.evaluation import EvalResult, evaluate, evaluation_game_ids, sampled_evaluation_game_ids
from archer.models.critic import build_critic
from archer.models.loading import load_policy_model, policy_source, policy_weights, save_policy
from archer.models.policy import LanguagePolicy
from archer.models.sharding import full_state, gathered, is_sharded, shard_like, shard_policy
from archer.tracking import CURVE_FILE, METRICS_FILE, Tracker
from archer.utils import atomic_write_json, atomic_write_text, process_seed, resolve_cache_dir, seed_everything

log = logging.getLogger(__name__)


class _MainProcessFilter(logging.Filter):
    """Lets records through on the main process only, so a multi-process run prints each line once."""

    def filter(self, record: logging.LogRecord) -> bool:
        return int(os.environ.get("RANK", "0")) == 0


log.addFilter(_MainProcessFilter())

POLICY_FOLDER = "policy"
CRITIC_ENCODER_FOLDER = "critic_encoder"
CONFIG_FILE = "config.json"
PRETRAIN_DONE = "PRETRAINED"
# What a training run writes into its folder, the checkpoint first: a fresh start moves them aside in this order, so
# a start killed half way leaves records without a checkpoint (the next start moves them too), never a checkpoint
# with another run's records.
RUN_RECORDS = (CHECKPOINT_FILE, METRICS_FILE, CONFIG_FILE, CURVE_FILE, POLICY_FOLDER, CRITIC_ENCODER_FOLDER)
PREVIOUS_PREFIX = "previous-"
# Keys that may change between a run and its resumption without invalidating the checkpoint (a finished run can
# be extended by raising num_iterations; a checkpoint holds full tensors whether or not the policy was sharded;
# sampled evaluation games never touch training's state, so they can be switched on for the rest of a run).
# How rollouts encode prompts (archer.models.incremental) and whether samples at replay states share their prefixes'
# keys and values (archer.models.prefix_generation): no effect on a checkpoint or on the pretrained policy.
# Whether the scoring passes are compiled: the same numbers, so neither matters either.
SPEED_ONLY_KEYS = (
    "model.policy.reuse_kv_cache", "model.policy.append_token_ids", "model.policy.compile",
    "model.policy.share_prefixes",
)  # fmt: skip
# How the policy samples and scores its samples: behaviour cloning does neither (it scores dataset actions under
# the plain softmax), so these do not change the pretrained policy.
SAMPLING_KEYS = ("temperature", "top_k", "top_p", "score_as_sampled")
RESUMABLE_KEYS = (
    "run_dir", "resume", "logging", "torch_threads", "cache_dir", "algorithm.num_iterations", "model.policy.shard",
    "eval.sampled_episodes", *SPEED_ONLY_KEYS,
)  # fmt: skip


def pretraining_config(cfg: RunConfig) -> tuple[RunConfig, str]:
    """The behaviour-cloning run that builds ``cfg``'s starting policy, and the fingerprint naming its cache folder.

    Raises:
        ValueError: ``cfg.pretrain`` is not set.
    """
    if cfg.pretrain is None:
        raise ValueError("pretraining_config: the run has no pretrain section")
    pretrain_cfg = RunConfig(
        algorithm=cfg.pretrain,
        env=cfg.env,
        # Behaviour cloning never builds the critic and never samples (its evaluation is greedy): neither the
        # critic's settings nor the sampling settings may change which cached policy is used.
        model=replace(
            cfg.model,
            critic=CriticConfig(),
            policy=replace(cfg.model.policy, **{key: getattr(PolicyConfig, key) for key in SAMPLING_KEYS}),
        ),
        data=cfg.data,
        # Sampled evaluation games do not change the pretrained policy (they leave training's random streams alone).
        eval=replace(cfg.eval, every_iters=cfg.pretrain.num_iterations, sampled_episodes=0),
        logging=LoggingConfig(progress_bars=cfg.logging.progress_bars),
        seed=0,
        cache_dir=cfg.cache_dir,
        torch_threads=cfg.torch_threads,
        save_every_iters=cfg.pretrain.num_iterations,
    )
    fingerprint = config_fingerprint(
        pretrain_cfg,
        ignore=("run_dir", "logging", "torch_threads", "cache_dir", "model.policy.shard", *SPEED_ONLY_KEYS),
    )
    return pretrain_cfg, fingerprint


class Trainer:
    """Builds the environment, models, algorithm and data of a run, and trains.

    Args:
        cfg: the validated run config.
        run_dir: the run folder (defaults to ``cfg.run_dir``).
    """

    def __init__(self, cfg: RunConfig, run_dir: Path | None = None) -> None:
        if run_dir is None and cfg.run_dir is None:
            raise ValueError("Trainer needs a run folder: set run_dir")
        self.cfg = cfg
        self.run_dir = Path(run_dir if run_dir is not None else cfg.run_dir).expanduser().resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if cfg.torch_threads is not None:
            torch.set_num_threads(cfg.torch_threads)
        timeout = InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.process_group_timeout_s))
        self.accelerator = Accelerator(cpu=not torch.cuda.is_available(), kwargs_handlers=[timeout])
        check_launch(self.accelerator)
        transformers.utils.logging.disable_progress_bar()
        self.progress = cfg.logging.progress_bars and self.accelerator.is_main_process
        self.cache_dir = resolve_cache_dir(cfg.cache_dir)
        self.config_dict: dict[str, Any] = asdict(cfg)
        self.settings = fingerprint_settings(cfg, ignore=RESUMABLE_KEYS)
        self.fingerprint = config_fingerprint(cfg, ignore=RESUMABLE_KEYS)
        policy_cfg = cfg.model.policy
        if cfg.pretrain is not None:
            policy_cfg = replace(policy_cfg, name_or_path=str(self._pretrained_policy()))
        seed_everything(cfg.seed)

        # 1. Environments: one for training, one for evaluation, sharing the oracle.
        oracle = make_oracle(cfg.env)
        self.env = make_env(cfg.env, seed=process_seed(cfg.seed, self.accelerator.process_index), oracle=oracle)
        self.eval_env = make_env(cfg.env, seed=cfg.eval.seed, oracle=oracle)
        self.eval_game_ids = evaluation_game_ids(cfg.eval, self.eval_env.evaluation_pool())
        self.sampled_eval_game_ids = sampled_evaluation_game_ids(cfg.eval, self.eval_env.evaluation_pool())

        # 2. Models and the algorithm that trains them. The main process goes first, so it alone builds and caches
        #    the embedded models; the others then load the cached folders.
        with self.accelerator.main_process_first():
            model, tokenizer = load_policy_model(policy_cfg, str(self.cache_dir), self.env.corpus)
            critic = None
            if cfg.algorithm.uses_critic:
                critic_cfg = cfg.model.critic
                if critic_cfg.name_or_path == POLICY_BODY:
                    # The starting policy's weights as loaded (before any LoRA adapters or reference checkpoint).
                    body = policy_source(policy_cfg, str(self.cache_dir), self.env.corpus)
                    critic_cfg = replace(critic_cfg, name_or_path=body)
                critic = build_critic(critic_cfg, str(self.cache_dir), self.env.corpus)
        if policy_cfg.shard == "fsdp":
            # Before the optimisers are built: sharding replaces the parameters.
            model = shard_policy(model, self.accelerator)
        self.policy = LanguagePolicy(model.to(self.accelerator.device), tokenizer, policy_cfg)
        if critic is not None:
            critic = critic.to(self.accelerator.device)
        self.algorithm = make_algorithm(
            cfg.algorithm, self.policy, self.accelerator, critic=critic, progress=self.progress
        )
        self.env_trajectories = 0
        self._last_save_seconds = 0.0  # logged with the next iteration (the save follows the metrics record)
        # Networks were initialised identically on every process; sampling noise must differ between them.
        torch.manual_seed(process_seed(cfg.seed, self.accelerator.process_index))

        # 3. Data: the offline dataset (generated and cached by the main process first), or an empty replay buffer
        #    that rollouts fill.
        with self.accelerator.main_process_first():
            self.buffer = self._build_buffer()
        self.rng = np.random.default_rng([cfg.seed, self.accelerator.process_index])

        self.tracker = Tracker(
            self.run_dir,
            cfg.logging,
            run_name=f"{cfg.env.name}__{cfg.algorithm.name}__s{cfg.seed}",
            config=self.config_dict,
            is_main_process=self.accelerator.is_main_process,
        )
        self.start_iteration = 0
        if cfg.resume and (self.run_dir / CHECKPOINT_FILE).exists():
            self._resume()
        else:
            if cfg.init_from is not None:
                self._initialise_from(Path(cfg.init_from).expanduser())
            # A fresh start in a folder that already holds records (resume=false, or a run killed before its first
            # checkpoint) keeps them: they move aside, so the folder never mixes two runs.
            if self.accelerator.is_main_process:
                previous = move_previous_run(self.run_dir)
                if previous is not None:
                    log.info("starting over: the earlier run's files are now in %s", previous)
                atomic_write_json(self.run_dir / CONFIG_FILE, self.config_dict)
            self.accelerator.wait_for_everyone()

    def _pretrained_policy(self) -> Path:
        """Folder of the starting policy built by ``cfg.pretrain``: trained once, then reused from the cache."""
        pretrain_cfg, fingerprint = pretraining_config(self.cfg)
        folder = self.cache_dir / "pretrained" / f"{pretrain_cfg.env.name}-{fingerprint}"
        self.accelerator.wait_for_everyone()
        if not (folder / PRETRAIN_DONE).exists():
            # Every process takes part (the pretraining run is itself a distributed run); the marker is written
            # once all of them are done, so a killed pretraining resumes from its own checkpoint next time.
            log.info("building the starting policy by behaviour cloning in %s (once; cached)", folder)
            Trainer(pretrain_cfg, folder).fit()
            if self.accelerator.is_main_process:
                atomic_write_text(folder / PRETRAIN_DONE, "behaviour cloning finished\n")
            self.accelerator.wait_for_everyone()
        return folder / POLICY_FOLDER

    def _initialise_from(self, run_dir: Path) -> None:
        """Start from the networks of an earlier run's final checkpoint (offline to online)."""
        if not (run_dir / CHECKPOINT_FILE).exists():
            raise CheckpointError(f"init_from={run_dir}: no {CHECKPOINT_FILE} there; give a finished run's folder")
        state = load_checkpoint(run_dir / CHECKPOINT_FILE)["algorithm"]
        networks = {"policy": self.policy.model}
        critic = getattr(self.algorithm, "critic", None)
        if critic is not None and "critic" in state:
            networks.update(critic=critic, target_critic=self.algorithm.target_critic)
        for name, network in networks.items():
            weights = shard_like(state[name], network.state_dict()) if is_sharded(network) else state[name]
            try:
                network.load_state_dict(weights)
            except RuntimeError as error:
                raise CheckpointError(
                    f"init_from={run_dir}: its {name} does not fit this run's model config ({error}); use the same "
                    "model settings as that run"
                ) from error
        log.info("initialised %s from %s", ", ".join(networks), run_dir)

    def _build_buffer(self) -> ReplayBuffer:
        if self.algorithm.online:
            buffer = ReplayBuffer(capacity=self.cfg.algorithm.replay_capacity, gamma_mc=self.cfg.algorithm.gamma)
            if self.cfg.prefill_buffer_from_data:
                buffer.add_trajectories(load_offline_trajectories(self.cfg, self.cache_dir, progress=self.progress))
                log.info("replay buffer prefilled with %d offline transitions", len(buffer))
            return buffer
        trajectories = load_offline_trajectories(self.cfg, self.cache_dir, progress=self.progress)
        num_transitions = sum(t.length for t in trajectories)
        buffer = ReplayBuffer(capacity=max(num_transitions, 1), gamma_mc=1.0)
        buffer.add_trajectories(trajectories)
        log.info("offline dataset: %d episodes, %d transitions", len(trajectories), num_transitions)
        return buffer

    # ---- evaluation, checkpoints -------------------------------------------------------------------------

    def evaluate(self) -> EvalResult:
        """Greedy play of the fixed evaluation games with the current policy (split over processes)."""
        # A sharded policy is gathered once for the whole phase: processes' games end after different turns.
        with gathered(self.policy.model):
            local = collect_trajectories(
                self.eval_env,
                lambda observations: self.algorithm.act(observations, greedy=True),
                game_ids=shard(self.eval_game_ids, self.accelerator),
                progress=self.progress,
                description="eval",
            )
        return EvalResult.from_trajectories(unshard(local, len(self.eval_game_ids), self.accelerator))

    def evaluate_sampled(self) -> EvalResult:
        """Sampled play of the fixed sampled-evaluation games (``eval.sampled_episodes``), split over processes.

        The games are played as training games are (``rollout_actor(greedy=False)``) but never stored. Python's,
        numpy's and torch's generators and the evaluation environment's are seeded from ``eval.seed`` (per process)
        for the play and restored afterwards: every evaluation draws the same random numbers, and training goes on
        exactly as if the games had not been played.
        """
        seed = process_seed(self.cfg.eval.seed, self.accelerator.process_index)
        saved, saved_env = rng_state(), self.eval_env.get_rng_state()
        seed_everything(seed)
        self.eval_env.seed(seed)
        try:
            with gathered(self.policy.model):
                local = collect_trajectories(
                    self.eval_env,
                    self.algorithm.rollout_actor(greedy=False),
                    game_ids=shard(self.sampled_eval_game_ids, self.accelerator),
                    progress=self.progress,
                    description="sampled eval",
                )
        finally:
            set_rng_state(saved)
            self.eval_env.set_rng_state(saved_env)
        return EvalResult.from_trajectories(unshard(local, len(self.sampled_eval_game_ids), self.accelerator))

    def evaluation_metrics(self) -> dict[str, float]:
        """Greedy evaluation metrics (``eval/...``), the sampled ones (``eval/sampled_...``) when configured, and
        their times."""
        start = time.perf_counter()
        metrics = self.evaluate().metrics()
        metrics["time/eval_s"] = time.perf_counter() - start
        if self.sampled_eval_game_ids:
            start = time.perf_counter()
            metrics.update(self.evaluate_sampled().metrics(kind="sampled_"))
            metrics["time/sampled_eval_s"] = time.perf_counter() - start
        return metrics

    def _process_state(self) -> dict[str, Any]:
        """This process's generators: each process has its own, and all of them go into the checkpoint."""
        return {
            "rng": rng_state(),
            "numpy_generator": self.rng.bit_generator.state,
            "env_rng": self.env.get_rng_state(),
        }

    def save(self, iteration: int) -> None:
        """Atomic checkpoint of everything needed to continue, plus the policy as a plain HF folder.

        A sharded policy's weights and optimiser state are gathered into full tensors by every process together
        (the main process alone keeps them), so the checkpoint is the one an unsharded run writes.
        """
        process_states = all_gather([self._process_state()], self.accelerator)
        algorithm_state = weights = None
        if is_sharded(self.policy.model):
            keep = self.accelerator.is_main_process
            algorithm_state = full_state(self.algorithm.state_dict(), keep)
            weights = full_state(policy_weights(self.policy.model), keep)
        if self.accelerator.is_main_process:
            self._write_checkpoint(iteration, process_states, algorithm_state, weights)
        self.accelerator.wait_for_everyone()

    def _write_checkpoint(
        self,
        iteration: int,
        process_states: list[dict[str, Any]],
        algorithm_state: dict[str, Any] | None = None,
        weights: dict[str, torch.Tensor] | None = None,
    ) -> None:
        state = {
            "config_fingerprint": self.fingerprint,
            # What the fingerprint hashes, so a refused resume can name the keys that changed.
            "config_settings": json.dumps(self.settings, sort_keys=True),
            "iteration": iteration,
            "algorithm": algorithm_state if algorithm_state is not None else self.algorithm.state_dict(),
            "process_states": process_states,
            "env_trajectories": self.env_trajectories,
        }
        if self.algorithm.online:
            state["buffer"] = self.buffer.state_dict()
        save_checkpoint(self.run_dir, state)
        save_policy(self.policy.model, self.policy.tokenizer, self.run_dir / POLICY_FOLDER, weights=weights)
        critic = getattr(self.algorithm, "critic", None)
        if critic is not None:
            encoder = critic.text_encoder
            save_policy(encoder.encoder, encoder.tokenizer, self.run_dir / CRITIC_ENCODER_FOLDER)

    def _resume(self) -> None:
        state = load_checkpoint(
            self.run_dir / CHECKPOINT_FILE, expected_fingerprint=self.fingerprint, expected_settings=self.settings
        )
        process_states = state["process_states"]
        if len(process_states) != self.accelerator.num_processes:
            raise CheckpointError(
                f"checkpoint {self.run_dir / CHECKPOINT_FILE} was written by {len(process_states)} processes; resume "
                f"it with the same number (this run has {self.accelerator.num_processes})"
            )
        mine = process_states[self.accelerator.process_index]
        algorithm_state = state["algorithm"]
        if is_sharded(self.policy.model):
            # The checkpoint's full tensors, split like the live shards (optimiser states at their first step).
            algorithm_state = shard_like(algorithm_state, self.algorithm.state_dict())
        self.algorithm.load_state_dict(algorithm_state)
        set_rng_state(mine["rng"])
        self.rng.bit_generator.state = mine["numpy_generator"]
        self.env.set_rng_state(mine["env_rng"])
        if "buffer" in state:
            self.buffer.load_state_dict(state["buffer"])
        self.start_iteration = int(state["iteration"])
        self.env_trajectories = int(state["env_trajectories"])
        self.tracker.truncate_after(self.start_iteration)
        if self.accelerator.is_main_process:
            # A checkpoint write that was killed leaves its temporary file; the checkpoint itself is whole.
            for stray in self.run_dir.glob(".checkpoint.*.tmp"):
                stray.unlink(missing_ok=True)
        log.info("resumed from %s at iteration %d", self.run_dir / CHECKPOINT_FILE, self.start_iteration)

    # ---- the loop ----------------------------------------------------------------------------------------

    def collect(self, iteration: int) -> dict[str, float]:
        """Play this iteration's training games with the sampling policy and store them in the buffer.

        Each process plays its share; every process then adds all games, in process order, to its buffer.
        """
        with gathered(self.policy.model):
            local = collect_trajectories(
                self.env,
                self.algorithm.rollout_actor(greedy=False),
                num_episodes=share(self.cfg.algorithm.rollout_episodes_per_iter, self.accelerator),
                progress=self.progress,
            )
        trajectories = all_gather(local, self.accelerator)
        self.buffer.add_trajectories(trajectories)
        self.algorithm.observe(trajectories, iteration)
        self.env_trajectories += len(trajectories)
        return rollout_metrics(trajectories) | {"buffer/transitions": float(len(self.buffer))}

    def fit(self) -> dict[str, float]:
        """Run the remaining iterations; returns the last iteration's metrics."""
        cfg = self.cfg
        last: dict[str, float] = {}
        if self.start_iteration == 0 and cfg.eval.every_iters > 0 and cfg.eval.before_training:
            last = self.evaluation_metrics() | {"env/trajectories": 0.0}
            self.tracker.log(last, iteration=0)
            log.info("iteration 0 | %s", _format(last))
        for iteration in range(self.start_iteration + 1, cfg.algorithm.num_iterations + 1):
            metrics: dict[str, float] = {}
            if self.algorithm.online:
                start = time.perf_counter()
                metrics.update(self.collect(iteration))
                metrics["time/rollout_s"] = time.perf_counter() - start
            start = time.perf_counter()
            metrics.update(self.algorithm.update(self.buffer, iteration, self.rng))
            metrics["time/update_s"] = time.perf_counter() - start
            metrics["env/trajectories"] = float(self.env_trajectories)

            is_last = iteration == cfg.algorithm.num_iterations
            if cfg.eval.every_iters > 0 and (iteration % cfg.eval.every_iters == 0 or is_last):
                metrics.update(self.evaluation_metrics())

            # Metrics first, checkpoint second: a run killed in between resumes from the previous checkpoint and
            # drops this iteration's record (Tracker.truncate_after), so no iteration is ever recorded twice.
            metrics["time/checkpoint_s"] = self._last_save_seconds
            self.tracker.log(metrics, iteration=iteration)
            self.tracker.plot(
                x_key="env/trajectories" if self.algorithm.online else "iteration",
                y_keys=("eval/return_mean", "eval/sampled_return_mean"),
            )
            log.info("iteration %d/%d | %s", iteration, cfg.algorithm.num_iterations, _format(metrics))
            if iteration % cfg.save_every_iters == 0 or is_last:
                start = time.perf_counter()
                self.save(iteration)
                self._last_save_seconds = time.perf_counter() - start
            last = metrics
        self.tracker.finish()
        self.accelerator.wait_for_everyone()
        return last


def move_previous_run(run_dir: Path) -> Path | None:
    """Move the files an earlier run left in ``run_dir`` into ``run_dir/previous-<time>/``.

    Moved: ``RUN_RECORDS`` and the temporary files of a checkpoint write that was killed. Hydra's own files
    (``.hydra/``, ``run.log``) and earlier ``previous-*`` folders stay.

    Returns:
        The folder they went to, or None when there was nothing to move.
    """
    found = [run_dir / name for name in RUN_RECORDS if (run_dir / name).exists()]
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


def check_launch(accelerator: Accelerator) -> None:
    """Refuse Accelerate settings that would be silently ignored: archer never calls ``accelerator.prepare``.

    Raises:
        ValueError: an Accelerate FSDP or DeepSpeed launch, or Accelerate mixed precision.
    """
    if accelerator.distributed_type in (DistributedType.FSDP, DistributedType.DEEPSPEED):
        raise ValueError(
            f"launched with an Accelerate {accelerator.distributed_type.value} config, which archer does not use: "
            "launch with scripts/accelerate/multi_gpu.yaml or sharded_7b.yaml, and set model.policy.shard=fsdp to "
            "shard the policy"
        )
    if accelerator.mixed_precision != "no":
        raise ValueError(
            f"launched with Accelerate mixed_precision={accelerator.mixed_precision}, which archer does not use; set "
            "mixed_precision 'no' and choose each network's precision with model.policy.dtype and model.critic.dtype"
        )


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


def _format(metrics: dict[str, float]) -> str:
    return " ".join(f"{key}={value:.4g}" for key, value in metrics.items())


def train(cfg: RunConfig, run_dir: Path | None = None) -> dict[str, float]:
    """Build a ``Trainer`` for ``cfg`` and run it; returns the last iteration's metrics.

    Under several processes the process group is shut down at the end (without it, runs can abort at exit).
    """
    trainer = Trainer(cfg, run_dir)
    metrics = trainer.fit()
    trainer.accelerator.end_training()
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return metrics


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
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    env = make_env(cfg.env, seed=cfg.eval.seed, oracle=make_oracle(cfg.env))
    model, tokenizer = load_policy_model(cfg.model.policy, str(resolve_cache_dir(cfg.cache_dir)), env.corpus)
    policy = LanguagePolicy(model.to(device), tokenizer, cfg.model.policy)
    game_ids = evaluation_game_ids(cfg.eval, env.evaluation_pool())
    result = evaluate(
        env, lambda observations: policy.generate(observations, greedy=True).texts, game_ids, cfg.logging.progress_bars
    )
    metrics = result.metrics()
    results: dict[str, Any] = {
        "policy": cfg.model.policy.name_or_path,
        "env": cfg.env.name,
        "game_ids": game_ids,
        "returns": result.returns,
        "successes": result.successes,
        "sample_games": result.sample_games,
    }
    sampled_ids = sampled_evaluation_game_ids(cfg.eval, env.evaluation_pool())
    if sampled_ids:
        seed = process_seed(cfg.eval.seed, 0)
        seed_everything(seed)
        env.seed(seed)
        sampled = evaluate(
            env,
            lambda observations: policy.generate(observations, greedy=False).texts,
            sampled_ids,
            cfg.logging.progress_bars,
        )
        metrics |= sampled.metrics(kind="sampled_")
        results |= {"sampled_game_ids": sampled_ids, "sampled_returns": sampled.returns}
        results["sampled_successes"] = sampled.successes
    atomic_write_json(run_dir / "eval_results.json", {**results, "metrics": metrics})
    log.info("evaluation of %s | %s", cfg.model.policy.name_or_path, _format(metrics))
    return metrics
