"""The root schema of a run (``RunConfig``) and its data, evaluation and logging parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from archer.config.algorithm import AlgorithmConfig, ArcherConfig, BCConfig, GiGPOConfig
from archer.config.checks import check, check_choice, check_finite, check_path
from archer.config.env import EnvConfig
from archer.config.model import ModelConfig


@dataclass
class OfflineDataConfig:
    """The offline dataset used by offline algorithms.

    Attributes:
        path: a dataset file in the environment's offline format (Twenty Questions: LMRL-Gym JSON). ``null``
            generates one with scripted players against the environment's built-in oracle.
        generate_episodes: episodes generated when ``path`` is null.
        generate_seed: seed of the generated dataset (independent of the run's seed, so every run sees the same
            data).
    """

    path: str | None = None
    generate_episodes: int = 2000
    generate_seed: int = 1234

    def validate(self) -> None:
        check_path(self.path, "data.path", "give a dataset file, or null to generate one")
        check(self.generate_episodes > 0, "data.generate_episodes", "must be positive")


@dataclass
class EvalConfig:
    """Greedy evaluation on a fixed, seeded set of games, identical across iterations and runs.

    Attributes:
        every_iters: evaluate after every this many iterations (and after the last); 0 disables it.
        num_episodes: games per evaluation; ``null`` plays every game of the environment once (every word). Set, the
            games are drawn with ``seed`` and spread evenly: each is played ``num_episodes // games`` times or once
            more, all different when there are enough games.
        seed: seed that picks the games when ``num_episodes`` is set, the order of the sampled games, and the
            sampled evaluation's random draws.
        before_training: also evaluate the starting policy (iteration 0).
        sampled_episodes: each evaluation also plays this many games by sampling, as the training games are played
            (the policy's ``temperature``, ``top_k`` and ``top_p``; CHAI's reranked samples), and logs
            ``eval/sampled_return_mean``, ``eval/sampled_return_std``, ``eval/sampled_success_rate``,
            ``eval/sampled_length_mean`` and ``eval/sampled_episodes``. The games are fixed: the evaluation games
            in an order shuffled with ``seed``, repeated until there are enough, so every game is played equally
            often (to within one). Every evaluation samples with the same seed (per process), and the generators
            training uses are restored afterwards, so switching it on does not change training; the games never
            enter the replay buffer. 0 (default) plays none.
    """

    every_iters: int = 5
    num_episodes: int | None = None
    seed: int = 2024
    before_training: bool = True
    sampled_episodes: int = 0

    def validate(self) -> None:
        check(self.every_iters >= 0, "eval.every_iters", "must be >= 0 (0 disables evaluation)")
        check(self.num_episodes is None or self.num_episodes > 0, "eval.num_episodes", "must be > 0 or null")
        check(self.sampled_episodes >= 0, "eval.sampled_episodes", "must be >= 0 (0 plays no sampled games)")


@dataclass
class LoggingConfig:
    """Where metrics go. The run folder always gets ``metrics.jsonl``.

    Attributes:
        use_wandb: also log to Weights & Biases (reads its own login; works offline with ``wandb_mode=offline``).
        wandb_project: W&B project.
        wandb_entity: W&B entity (team or user); null uses the default.
        wandb_mode: ``online``, ``offline`` or ``disabled``.
        progress_bars: show tqdm progress bars.
        curve_metric: what ``learning_curve.png`` draws against games played: ``return`` (the mean return) or
            ``success_rate``, greedy play and, with ``eval.sampled_episodes``, sampled play; its start and best
            lines are the same metric's.
    """

    use_wandb: bool = False
    wandb_project: str = "archer"
    wandb_entity: str | None = None
    wandb_mode: str = "online"
    progress_bars: bool = True
    curve_metric: str = "return"

    def validate(self) -> None:
        check_choice(self.wandb_mode, "logging.wandb_mode", ("online", "offline", "disabled"))
        check_choice(self.curve_metric, "logging.curve_metric", ("return", "success_rate"))


@dataclass
class RunConfig:
    """The root configuration of one run (``scripts/config/*.yaml`` compose it).

    Attributes:
        algorithm: the algorithm and its schedule (config group ``algorithm``).
        env: the environment (config group ``env``).
        mode: ``train``, or ``evaluate``: play the evaluation games greedily with ``model.policy`` (e.g. a saved
            ``policy/`` folder) and write ``eval_results.json`` to the run folder; the algorithm is not used.
        model: policy and critic (config group ``model``).
        data: the offline dataset (offline algorithms).
        eval: evaluation schedule.
        logging: metric sinks.
        seed: seeds torch, numpy, Python and the environments; between 0 and 2**32 - 1.
        run_dir: the run folder (metrics, checkpoints, saved policy); ``null`` uses Hydra's run directory.
        cache_dir: where built-in models and generated datasets are cached; ``null`` uses ``$ARCHER_CACHE_DIR``
            or ``~/.cache/archer``.
        torch_threads: CPU threads for torch; ``null`` leaves torch's default.
        tf32: on a CUDA GPU with TensorFloat-32 tensor cores (Ampere and later), float32 matrix products take their
            inputs at TF32's 10-bit mantissa and accumulate in float32 (``torch.set_float32_matmul_precision
            ("high")``): several times faster for float32 networks (the shipped critics and the GPT-2 policy), at
            about 1e-3 relative error per product. ``false`` (PyTorch's default, and the reference's) keeps exact
            float32. Ignored on a CPU.
        pretrain: behaviour cloning that builds the starting policy before an RL run (on ``data``, with the same
            env and model). It runs once and is cached under ``cache_dir`` (keyed by everything it depends on), so
            every seed of an RL run starts from the same policy; ``null`` starts from ``model.policy`` as is.
        init_from: the run folder of an earlier run (e.g. ``offline_archer_20q``) whose final policy and, when both
            runs have one, critic and target critic start this run: offline to online in one command. The model
            sizes must match. Ignored when this run resumes from its own checkpoint.
        prefill_buffer_from_data: online algorithms start with the offline dataset (``data``) in the replay buffer.
        resume: continue from the checkpoint in ``run_dir`` when there is one (it must come from the same config;
            a refusal lists the keys that differ). ``false``, or no checkpoint, starts over: files an earlier run
            left in ``run_dir`` (checkpoint, metrics, config, policy) first move to ``run_dir/previous-<time>/``.
        save_every_iters: write the checkpoint (and the policy folder) after every this many iterations.
        process_group_timeout_s: how long a process waits for the others at a collective before failing (long
            rollouts on one process hold the others at the exchange; the reference meant to set 300 minutes and
            set nothing).
    """

    algorithm: AlgorithmConfig = MISSING
    env: EnvConfig = MISSING
    mode: str = "train"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: OfflineDataConfig = field(default_factory=OfflineDataConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    seed: int = 0
    run_dir: str | None = None
    cache_dir: str | None = None
    torch_threads: int | None = None
    tf32: bool = False
    pretrain: BCConfig | None = None
    init_from: str | None = None
    prefill_buffer_from_data: bool = False
    resume: bool = True
    save_every_iters: int = 1
    process_group_timeout_s: int = 18_000

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        check_finite(self)
        check_choice(self.mode, "mode", ("train", "evaluate"))
        check(0 <= self.seed < 2**32, "seed", f"got {self.seed}; give a whole number between 0 and 2**32 - 1")
        check_path(self.run_dir, "run_dir", "give a folder, or null for Hydra's run directory")
        check_path(self.cache_dir, "cache_dir", "give a folder, or null for $ARCHER_CACHE_DIR or ~/.cache/archer")
        check_path(self.init_from, "init_from", "give the folder of a finished run, or null to start from scratch")
        self.algorithm.validate()
        self.env.validate()
        self.model.validate()
        self.data.validate()
        self.eval.validate()
        self.logging.validate()
        if self.algorithm.online and self.algorithm.uses_critic:
            self._check_replay_capacity()
        if self.prefill_buffer_from_data:
            check(
                self.algorithm.online,
                "prefill_buffer_from_data",
                "is for online algorithms (offline ones train on data)",
            )
        if isinstance(self.algorithm, GiGPOConfig) and self.algorithm.anchor == "state":
            check(
                self.env.defines_state_key,
                "algorithm.anchor",
                f"=state groups turns by the game's board state, and {self.env.name} has none (its state is the "
                "conversation); use algorithm.anchor=observation",
            )
        if isinstance(self.algorithm, ArcherConfig) and self.algorithm.kl_coeff > 0:
            # Its reference policy is a deep copy of the policy, which has not been made to work on a sharded one.
            check(self.model.policy.shard == "none", "algorithm.kl_coeff", "> 0 is not supported with shard=fsdp")
        if self.pretrain is not None:
            check(self.algorithm.online, "pretrain", "is for online algorithms; offline runs train from data already")
            self.pretrain.validate()
        check(self.torch_threads is None or self.torch_threads > 0, "torch_threads", "must be positive or null")
        check(self.save_every_iters > 0, "save_every_iters", "must be positive")
        check(self.process_group_timeout_s > 0, "process_group_timeout_s", "must be positive (seconds)")

    def _check_replay_capacity(self) -> None:
        """The replay buffer holds every batch the critic and actor sample from it, and one iteration's games.

        A smaller buffer draws each batch from fewer transitions than it has rows, and drops part of every
        iteration's games as they arrive.
        """
        capacity = self.algorithm.rollout.replay_capacity
        needs = {
            f"algorithm.{key}={getattr(self.algorithm, key)}": getattr(self.algorithm, key)
            for key in ("critic_batch_size", "actor_batch_size")
            if isinstance(getattr(self.algorithm, key, None), int)
        }
        games = self.algorithm.rollout.episodes_per_iter
        turns = self.env.max_turns
        needs[f"one iteration's games ({games} games x env.max_turns={turns})"] = games * turns
        short = [what for what, size in needs.items() if size > capacity]
        check(
            not short,
            "algorithm.rollout.replay_capacity",
            f"{capacity} transitions hold less than {' and '.join(short)}; raise it to at least {max(needs.values())}",
        )
