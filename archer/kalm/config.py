"""Typed configuration of the KALM pipeline (``scripts/config/kalm_clevr.yaml`` sets the values).

Validated when built (``__post_init__``), so a bad value stops the run before any stage starts; each message
names the key. docs/kalm.md documents every key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archer.kalm.errors import KalmConfigError

STAGES = ("collect", "ground", "imagine", "offline", "evaluate")
MODES = ("all", *STAGES[:-1])
ENVS = ("ball_push", "ball_push_continuous", "clevr_mujoco", "metaworld")
#: The action space of each environment (decides which offline algorithms and grounding heads apply).
ENV_ACTION_TYPES = {
    "ball_push": "discrete",
    "ball_push_continuous": "continuous",
    "clevr_mujoco": "discrete",
    "metaworld": "continuous",
}
#: ``bc`` and ``cql`` follow the env's action space (DiscreteBC/DiscreteCQL or BC/CQL); the others fix it.
DISCRETE_ALGORITHMS = ("discrete_bc", "discrete_cql")
CONTINUOUS_ALGORITHMS = ("awac", "td3_plus_bc")
OFFLINE_ALGORITHMS = ("bc", "cql", *DISCRETE_ALGORITHMS, *CONTINUOUS_ALGORITHMS)
CONDITIONS = ("real", "real_imagined")
KEEP = ("all", "success")


def _check(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise KalmConfigError(f"{key}: {message}")


def _positive(obj, prefix: str, *names: str) -> None:
    for name in names:
        _check(getattr(obj, name) > 0, f"{prefix}.{name}", f"must be positive, got {getattr(obj, name)}")


@dataclass
class KalmEnvConfig:
    """The environment (``env.*``)."""

    name: str = "ball_push"
    horizon: int = 20
    step_size: float = 0.15
    motion_noise: float = 0.01
    start_range: float = 0.35
    min_gap: float = 0.15
    bound: float = 0.6

    @property
    def action_type(self) -> str:
        """``discrete`` or ``continuous`` (``ENV_ACTION_TYPES``)."""
        return ENV_ACTION_TYPES[self.name]

    def validate(self) -> None:
        _check(self.name in ENVS, "env.name", f"got {self.name!r}; choose one of {', '.join(ENVS)}")
        _positive(self, "env", "horizon", "step_size", "start_range", "bound")
        _check(self.motion_noise >= 0, "env.motion_noise", "must be >= 0")
        _check(self.start_range < self.bound, "env.start_range", f"must be below env.bound={self.bound}")


@dataclass
class KalmCollectConfig:
    """Real data (``collect.*``): expert episodes on training goals, or KALM's own trajectory file."""

    num_episodes: int = 2000
    expert_epsilon: float = 0.2
    validation_fraction: float = 0.1
    kalm_file: str | None = None

    def validate(self) -> None:
        _positive(self, "collect", "num_episodes")
        _check(0 <= self.expert_epsilon <= 1, "collect.expert_epsilon", "must be in [0, 1]")
        _check(0 < self.validation_fraction < 1, "collect.validation_fraction", "must be in (0, 1)")
        _check(self.kalm_file is None or bool(self.kalm_file.strip()), "collect.kalm_file", "is empty; give a path")


@dataclass
class KalmGroundingConfig:
    """The grounded LM (``grounding.*``)."""

    model: str = "embedded"
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    max_positions: int = 256
    lora_rank: int = 0
    residual_states: bool = True
    patterns: list[int] = field(default_factory=lambda: [0, 1, 2, 3])
    steps: int = 1500
    batch_size: int = 64
    learning_rate: float = 1e-3
    state_loss_weight: float = 0.5
    action_loss_weight: float = 0.5

    def validate(self) -> None:
        _check(bool(self.model.strip()), "grounding.model", "is empty; 'embedded', a hub name or a folder")
        _positive(self, "grounding", "n_layer", "n_embd", "n_head", "max_positions", "steps", "batch_size")
        _positive(self, "grounding", "learning_rate")
        _check(self.n_embd % self.n_head == 0, "grounding.n_head", f"must divide n_embd={self.n_embd}")
        _check(self.lora_rank >= 0, "grounding.lora_rank", "must be >= 0 (0: full fine-tuning)")
        _check(
            bool(self.patterns) and set(self.patterns) <= {0, 1, 2, 3},
            "grounding.patterns",
            f"got {self.patterns}; a non-empty subset of 0 (goal->rollout), 1 (dynamics), 2 (terminal), 3 (caption)",
        )
        _check(self.state_loss_weight >= 0 and self.action_loss_weight >= 0, "grounding", "loss weights >= 0")


@dataclass
class KalmImagineConfig:
    """Imagined rollouts (``imagine.*``) for the levels' goals, which have no real data."""

    levels: list[str] = field(default_factory=lambda: ["rephrase", "easy", "hard"])
    episodes_per_level: int = 300
    batch_size: int = 100
    keep: str = "all"
    prompt_file: str | None = None

    def validate(self) -> None:
        from archer.kalm.language import LEVELS

        _check(set(self.levels) <= set(LEVELS), "imagine.levels", f"got {self.levels}; a subset of {LEVELS}")
        _positive(self, "imagine", "episodes_per_level", "batch_size")
        _check(self.keep in KEEP, "imagine.keep", f"got {self.keep!r}; choose one of {', '.join(KEEP)}")


@dataclass
class KalmOfflineConfig:
    """Offline RL with d3rlpy (``offline.*``)."""

    algorithm: str = "bc"
    steps: int = 3000
    batch_size: int = 256
    learning_rate: float = 1e-3
    hidden_units: list[int] = field(default_factory=lambda: [256, 256])
    cql_alpha: float = 10.0
    awac_lambda: float = 1.0
    td3_plus_bc_alpha: float = 2.5
    gamma: float = 0.99
    goal_encoding: str = "relations"
    conditions: list[str] = field(default_factory=lambda: ["real", "real_imagined"])

    def validate(self) -> None:
        from archer.kalm.language import GOAL_ENCODINGS

        _check(
            self.algorithm in OFFLINE_ALGORITHMS,
            "offline.algorithm",
            f"got {self.algorithm!r}; choose one of {', '.join(OFFLINE_ALGORITHMS)}",
        )
        _positive(self, "offline", "steps", "batch_size", "learning_rate", "cql_alpha", "awac_lambda")
        _positive(self, "offline", "td3_plus_bc_alpha")
        _check(0 < self.gamma <= 1, "offline.gamma", "must be in (0, 1]")
        _check(bool(self.hidden_units) and min(self.hidden_units) > 0, "offline.hidden_units", "positive sizes")
        _check(self.goal_encoding in GOAL_ENCODINGS, "offline.goal_encoding", f"choose one of {GOAL_ENCODINGS}")
        _check(
            bool(self.conditions) and set(self.conditions) <= set(CONDITIONS),
            "offline.conditions",
            f"got {self.conditions}; a subset of {CONDITIONS}",
        )


@dataclass
class KalmEvalConfig:
    """Evaluation of the offline policies (``eval.*``): greedy episodes per level, same starts for every run."""

    levels: list[str] = field(default_factory=lambda: ["train", "rephrase", "easy", "hard"])
    episodes_per_level: int = 200
    seed: int = 12345

    def validate(self) -> None:
        from archer.kalm.language import SPLITS

        _check(bool(self.levels) and set(self.levels) <= set(SPLITS), "eval.levels", f"a subset of {SPLITS}")
        _positive(self, "eval", "episodes_per_level")


@dataclass
class KalmRunConfig:
    """The root of a KALM run (``--config-name kalm_clevr``).

    Attributes:
        pipeline: always ``kalm``; tells the command line which pipeline the config is for.
        mode: ``all`` runs every stage and the evaluation; ``collect``, ``ground``, ``imagine`` or ``offline``
            stop after that stage (earlier stages come from the cache or run first).
        seeds: one offline-RL run per seed and condition; data, grounding and imagination use ``data_seed``.
        data_seed: seeds collection, grounding and imagination (their outputs are shared by every seed).
        run_dir: the run folder (metrics, plot); ``null`` uses Hydra's run directory.
        cache_dir: stage outputs are cached under ``<cache_dir>/kalm/<stage>-<hash of its inputs>``; ``null`` uses
            ``$ARCHER_CACHE_DIR`` or ``~/.cache/archer``.
        torch_threads: CPU threads for torch; ``null`` leaves torch's default.
    """

    pipeline: str = "kalm"
    mode: str = "all"
    env: KalmEnvConfig = field(default_factory=KalmEnvConfig)
    collect: KalmCollectConfig = field(default_factory=KalmCollectConfig)
    grounding: KalmGroundingConfig = field(default_factory=KalmGroundingConfig)
    imagine: KalmImagineConfig = field(default_factory=KalmImagineConfig)
    offline: KalmOfflineConfig = field(default_factory=KalmOfflineConfig)
    eval: KalmEvalConfig = field(default_factory=KalmEvalConfig)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    data_seed: int = 0
    run_dir: str | None = None
    cache_dir: str | None = None
    torch_threads: int | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _check(self.pipeline == "kalm", "pipeline", "must be 'kalm' for a KALM run")
        _check(self.mode in MODES, "mode", f"got {self.mode!r}; choose one of {', '.join(MODES)}")
        for part in (self.env, self.collect, self.grounding, self.imagine, self.offline, self.eval):
            part.validate()
        check_algorithm_fits_env(self.offline.algorithm, self.env.name)
        _check(
            self.collect.kalm_file is None or self.env.action_type == "discrete",
            "collect.kalm_file",
            f"KALM's CLEVR trajectory files have discrete actions; env.name={self.env.name} has continuous ones",
        )
        _check(bool(self.seeds), "seeds", "give at least one seed")
        _check(len(set(self.seeds)) == len(self.seeds), "seeds", f"repeats a seed: {self.seeds}")
        _check(self.torch_threads is None or self.torch_threads > 0, "torch_threads", "must be positive or null")
        longest = 2 * self.env.horizon + 40
        _check(
            self.grounding.model != "embedded" or self.grounding.max_positions >= longest,
            "grounding.max_positions",
            f"must be at least {longest} for horizon {self.env.horizon} (a rollout prompt is 2 * horizon + text)",
        )


def check_algorithm_fits_env(algorithm: str, env_name: str) -> None:
    """A discrete-action algorithm needs a discrete env, a continuous one a continuous env."""
    action_type = ENV_ACTION_TYPES.get(env_name)
    if algorithm in DISCRETE_ALGORITHMS and action_type == "continuous":
        raise KalmConfigError(
            f"offline.algorithm: {algorithm} needs discrete actions, but env.name={env_name} has continuous actions; "
            f"choose one of bc, cql, {', '.join(CONTINUOUS_ALGORITHMS)}"
        )
    if algorithm in CONTINUOUS_ALGORITHMS and action_type == "discrete":
        raise KalmConfigError(
            f"offline.algorithm: {algorithm} needs continuous actions, but env.name={env_name} has discrete actions; "
            f"choose one of bc, cql, {', '.join(DISCRETE_ALGORITHMS)} (or env.name=ball_push_continuous)"
        )


def register_kalm_configs(store) -> None:
    """Register the KALM schema with Hydra's ConfigStore (``base_kalm_run``)."""
    store.store(name="base_kalm_run", node=KalmRunConfig)
