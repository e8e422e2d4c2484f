"""Every configuration dataclass of the project, and their registration with Hydra's ConfigStore.

The schema lives here, the values in ``scripts/config/*.yaml``. Hydra checks keys and types while composing
(a misspelt key or a wrong type fails before anything is built); ``OmegaConf.to_object`` then builds these
dataclasses, whose ``__post_init__`` checks the rules that span several fields. Library code only ever receives
these typed objects, never a ``DictConfig``.

Defaults follow the ArCHer paper where the paper and the reference code differ (ARCHER_SPEC.md section 6); the
reference's value is named in the field's documentation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

DTYPES = ("float32", "bfloat16", "float16")
POOLINGS = ("cls", "mean", "pooler")


class ConfigError(ValueError):
    """A configuration value or combination that cannot work; the message names the key and the fix."""


def _check(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"{key}: {message}")


def _check_choice(value: str, key: str, choices: tuple[str, ...]) -> None:
    _check(value in choices, key, f"got {value!r}; choose one of {', '.join(choices)}")


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class EmbeddedModelConfig:
    """Size of a model built from a config when ``name_or_path`` is ``"embedded"`` (no hub needed).

    Attributes:
        n_layer: transformer layers.
        n_embd: hidden width.
        n_head: attention heads (must divide ``n_embd``).
        vocab_size: size of the byte-level BPE vocabulary trained on the environment's own text.
        max_positions: longest sequence the model accepts (prompt plus generated tokens).
    """

    n_layer: int = 4
    n_embd: int = 256
    n_head: int = 4
    vocab_size: int = 1024
    max_positions: int = 1024

    def validate(self, prefix: str) -> None:
        for name in ("n_layer", "n_embd", "n_head", "vocab_size", "max_positions"):
            _check(getattr(self, name) > 0, f"{prefix}.{name}", "must be positive")
        _check(self.n_embd % self.n_head == 0, f"{prefix}.n_head", f"must divide n_embd={self.n_embd}")
        _check(self.vocab_size >= 300, f"{prefix}.vocab_size", "must be at least 300 (256 bytes plus merges)")


@dataclass
class PolicyConfig:
    """The policy: a causal language model that writes one utterance per turn.

    Attributes:
        name_or_path: ``"embedded"`` builds a small GPT-2-architecture model from ``embedded`` with a tokenizer
            trained on the environment's text; anything else is a Hugging Face hub name (``gpt2``,
            ``mistralai/Mistral-7B-Instruct-v0.2``) or a local folder written by ``save_pretrained`` (for example
            the ``policy/`` folder a BC run writes).
        embedded: model size used when ``name_or_path == "embedded"``.
        reference_checkpoint: optional ``.pt`` file in the reference's format (``{"model_state_dict": ...}``, as
            ``twenty_questions_gpt2_model0_full.pt``) loaded into the model after it is built.
        dtype: parameter dtype: ``float32``, ``bfloat16`` or ``float16``.
        use_lora: wrap the model with LoRA adapters (peft); only the adapters train.
        lora_r, lora_alpha, lora_dropout, lora_target_modules: LoRA settings (reference: 16, 32, 0.05, q/k/v/o).
        template: prompt template applied to the observation before generation (``plain`` = the observation as is).
        max_prompt_tokens: prompts are truncated on the left to this many tokens (reference: 512).
        max_new_tokens: longest utterance in tokens (reference: 32; 64 for Mistral).
        stop_string: the turn terminator; generation stops at it, it is part of the scored action, and it is cut
            from the text the environment receives. Must encode to a single token. ``null`` stops at EOS only.
        temperature: sampling temperature (reference: 1.0).
        top_k: top-k filter when sampling; 0 disables it (reference: 50, the Hugging Face default it relied on).
        top_p: nucleus filter when sampling; 1.0 disables it.
    """

    name_or_path: str = "embedded"
    embedded: EmbeddedModelConfig = field(default_factory=EmbeddedModelConfig)
    reference_checkpoint: str | None = None
    dtype: str = "float32"
    use_lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    template: str = "plain"
    max_prompt_tokens: int = 512
    max_new_tokens: int = 32
    stop_string: str | None = "\n"
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0

    def validate(self, prefix: str = "model.policy") -> None:
        _check(bool(self.name_or_path), f"{prefix}.name_or_path", "must be 'embedded', a hub name or a folder")
        self.embedded.validate(f"{prefix}.embedded")
        _check_choice(self.dtype, f"{prefix}.dtype", DTYPES)
        _check(self.max_prompt_tokens > 0, f"{prefix}.max_prompt_tokens", "must be positive")
        _check(self.max_new_tokens > 0, f"{prefix}.max_new_tokens", "must be positive")
        _check(self.temperature > 0, f"{prefix}.temperature", "must be positive (greedy decoding is chosen per call)")
        _check(self.top_k >= 0, f"{prefix}.top_k", "must be >= 0 (0 disables top-k)")
        _check(0 < self.top_p <= 1, f"{prefix}.top_p", "must be in (0, 1]")
        _check(self.stop_string is None or len(self.stop_string) > 0, f"{prefix}.stop_string", "use null, not ''")
        if self.use_lora:
            _check(self.lora_r > 0, f"{prefix}.lora_r", "must be positive when use_lora is true")
            _check(len(self.lora_target_modules) > 0, f"{prefix}.lora_target_modules", "name at least one module")
        if self.name_or_path == "embedded":
            _check(
                self.max_prompt_tokens + self.max_new_tokens <= self.embedded.max_positions,
                f"{prefix}.max_prompt_tokens",
                f"max_prompt_tokens + max_new_tokens must fit in embedded.max_positions={self.embedded.max_positions}",
            )


@dataclass
class CriticConfig:
    """The utterance-level critic: a text encoder with twin Q heads and twin V heads, plus a target copy.

    Attributes:
        name_or_path: ``"embedded"`` builds a small RoBERTa-architecture encoder (tokenizer trained locally);
            anything else is a hub name (``roberta-base``) or a local folder.
        embedded: encoder size used when ``name_or_path == "embedded"``.
        pooling: how a text becomes one vector: ``cls`` (first token's last hidden state, as OfflineArcher),
            ``mean`` (masked mean), or ``pooler`` (the encoder's pooler output, as the online reference).
        head_hidden_dim: width of the Q/V MLP heads; ``null`` uses the encoder's hidden size (reference: 768).
        max_tokens: texts are truncated on the left to this many tokens (reference: 512).
        dtype: parameter dtype.
    """

    name_or_path: str = "embedded"
    embedded: EmbeddedModelConfig = field(default_factory=lambda: EmbeddedModelConfig(max_positions=514))
    pooling: str = "cls"
    head_hidden_dim: int | None = None
    max_tokens: int = 512
    dtype: str = "float32"

    def validate(self, prefix: str = "model.critic") -> None:
        _check(bool(self.name_or_path), f"{prefix}.name_or_path", "must be 'embedded', a hub name or a folder")
        self.embedded.validate(f"{prefix}.embedded")
        _check_choice(self.pooling, f"{prefix}.pooling", POOLINGS)
        _check_choice(self.dtype, f"{prefix}.dtype", DTYPES)
        _check(self.head_hidden_dim is None or self.head_hidden_dim > 0, f"{prefix}.head_hidden_dim", "> 0 or null")
        _check(self.max_tokens > 0, f"{prefix}.max_tokens", "must be positive")
        if self.name_or_path == "embedded":
            # RoBERTa reserves two positions for its padding offset.
            _check(
                self.max_tokens + 2 <= self.embedded.max_positions,
                f"{prefix}.max_tokens",
                f"must be at most embedded.max_positions - 2 = {self.embedded.max_positions - 2}",
            )


@dataclass
class ModelConfig:
    """Policy and critic models (config group ``model``)."""

    policy: PolicyConfig = field(default_factory=PolicyConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)

    def validate(self) -> None:
        self.policy.validate()
        self.critic.validate()


# ---------------------------------------------------------------------------------------------------------------
# Environments (config group ``env``): a base schema with a ``name`` discriminator and one subclass per env
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class EnvConfig:
    """Fields every environment has.

    Attributes:
        name: which environment (``twenty_questions``, ...); selects the builder.
        batch_size: games played at once by one environment object (reference ``bsize``: 32).
        max_turns: turns before the game is cut (reference ``max_conversation_length``: 20).
    """

    name: str = MISSING
    batch_size: int = 32
    max_turns: int = 20

    def validate(self) -> None:
        _check(self.batch_size > 0, "env.batch_size", "must be positive")
        _check(self.max_turns > 0, "env.max_turns", "must be positive")


@dataclass
class TwentyQuestionsEnvConfig(EnvConfig):
    """Twenty Questions (ARCHER_SPEC.md 3.1).

    Attributes:
        oracle: ``knowledge_base`` (built in, no download) or ``t5`` (the reference's fine-tuned flan-t5-small).
        oracle_path: the ``t5`` oracle's state dict (the reference's ``20q_t5_oracle.pt``).
        oracle_base_model: hub name or folder of the seq2seq model the state dict is loaded into.
        answer_normalisation: how the ``t5`` oracle's text becomes Yes/No: ``reference`` (substring test, as the
            reference) or ``word`` (whole words).
        words: ``full`` (157 words) or ``subset10`` (the reference's 10-word subset, "Twenty Questions Subset").
        success_check: ``last_word`` (the reference: the question's last word must be an alias, so 7 multi-word
            words can never be won) or ``last_phrase`` (fixed: the question must end with an alias, multi-word
            names such as "soccer ball" included).
    """

    name: str = "twenty_questions"
    oracle: str = "knowledge_base"
    oracle_path: str | None = None
    oracle_base_model: str = "google/flan-t5-small"
    answer_normalisation: str = "reference"
    words: str = "full"
    success_check: str = "last_word"

    def validate(self) -> None:
        super().validate()
        _check_choice(self.oracle, "env.oracle", ("knowledge_base", "t5"))
        _check_choice(self.answer_normalisation, "env.answer_normalisation", ("reference", "word"))
        _check_choice(self.words, "env.words", ("full", "subset10"))
        _check_choice(self.success_check, "env.success_check", ("last_word", "last_phrase"))
        if self.oracle == "t5":
            _check(self.oracle_path is not None, "env.oracle_path", "the t5 oracle needs its checkpoint file")


# (new environment configs go above this line)


# ---------------------------------------------------------------------------------------------------------------
# Algorithms (config group ``algorithm``)
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class AlgorithmConfig:
    """Fields every algorithm has.

    Attributes:
        name: which algorithm (``bc``, ...); selects the implementation.
        num_iterations: training iterations (reference ``iterations``).
        actor_lr: policy learning rate (reference ``lm_lr``).
        max_grad_norm: each network's gradient is clipped to this norm before its own optimiser steps.
        actor_micro_batch_size: rows per forward/backward of the policy; the step's batch is accumulated from
            micro-batches whose gradients are averaged (the reference summed them).
    """

    name: str = MISSING
    num_iterations: int = 100
    actor_lr: float = 1e-4
    max_grad_norm: float = 1.0
    actor_micro_batch_size: int = 8

    @property
    def online(self) -> bool:
        """Whether the algorithm collects its own data in the environment."""
        return False

    @property
    def uses_critic(self) -> bool:
        """Whether the algorithm needs the utterance-level critic."""
        return False

    def validate(self) -> None:
        _check(self.num_iterations > 0, "algorithm.num_iterations", "must be positive")
        _check(self.actor_lr > 0, "algorithm.actor_lr", "must be positive")
        _check(self.max_grad_norm > 0, "algorithm.max_grad_norm", "must be positive")
        _check(self.actor_micro_batch_size > 0, "algorithm.actor_micro_batch_size", "must be positive")


@dataclass
class BCConfig(AlgorithmConfig):
    """Behaviour cloning (supervised fine-tuning) of the policy on an offline dataset.

    Attributes:
        steps_per_iter: gradient steps per iteration (evaluation and checkpoints happen between iterations).
        batch_size: transitions per gradient step, drawn uniformly from the dataset.
        per_token_mean: average the negative log-likelihood over tokens instead of summing it per action (the
            reference sums).
    """

    name: str = "bc"
    num_iterations: int = 10
    steps_per_iter: int = 50
    batch_size: int = 32
    per_token_mean: bool = False

    def validate(self) -> None:
        super().validate()
        _check(self.steps_per_iter > 0, "algorithm.steps_per_iter", "must be positive")
        _check(self.batch_size > 0, "algorithm.batch_size", "must be positive")
        _check(
            self.batch_size % self.actor_micro_batch_size == 0,
            "algorithm.batch_size",
            f"must be a multiple of algorithm.actor_micro_batch_size={self.actor_micro_batch_size}",
        )


@dataclass
class ArcherConfig(AlgorithmConfig):
    """Online ArCHer (ARCHER_SPEC.md 1.1): an utterance-level off-policy critic and a token-level policy gradient.

    Defaults are the paper's values where the paper and the reference code differ (the reference's value in
    brackets); the shipped ``archer_20q`` config scales the schedule down to fit a CPU.

    Attributes:
        num_iterations: iterations of collect, critic phase, actor phase (reference ``iterations``: 2000).
        rollout_episodes_per_iter: games played per iteration with the sampling policy (``rollout_size``: 128).
        replay_capacity: transitions kept in the replay buffer, oldest evicted first (paper 10,000 [100,000]).
        critic_steps_per_iter: critic gradient steps per iteration (``epochs``: 50).
        actor_steps_per_iter: policy gradient steps per iteration (``actor_epochs``: 3).
        warmup_iters: iterations that train the critic only (``warmup_iter``: 20 for Twenty Questions).
        critic_batch_size: transitions per critic step (256 = 32 micro-batches of 8 in the reference).
        critic_micro_batch_size: rows per critic forward/backward; gradients are averaged over micro-batches.
        actor_batch_size: replay states per actor step (256).
        critic_lr: critic Adam learning rate (2e-5 for Twenty Questions).
        actor_lr: policy Adam learning rate (``lm_lr``: 1e-6 for Twenty Questions with GPT-2).
        gamma: discount (paper: 0.95 for Twenty Questions, 0.98 Detective, 0.9 WebShop [0.95 everywhere]).
        tau: Polyak rate of the target critic after every critic step (0.1).
        bootstrap_on_truncation: bootstrap through episodes cut by the turn limit (the paper and the reference
            treat them as terminal: false).
        generation_batch_size: prompts per ``generate`` call when sampling the critic phase's V-target actions
            and the actor's actions (large batches instead of the reference's one call per micro-batch).
    """

    name: str = "archer"
    num_iterations: int = 2000
    rollout_episodes_per_iter: int = 128
    replay_capacity: int = 10_000
    critic_steps_per_iter: int = 50
    actor_steps_per_iter: int = 3
    warmup_iters: int = 20
    critic_batch_size: int = 256
    critic_micro_batch_size: int = 8
    actor_batch_size: int = 256
    actor_micro_batch_size: int = 8
    critic_lr: float = 2e-5
    actor_lr: float = 1e-6
    gamma: float = 0.95
    tau: float = 0.1
    bootstrap_on_truncation: bool = False
    generation_batch_size: int = 256

    @property
    def online(self) -> bool:
        return True

    @property
    def uses_critic(self) -> bool:
        return True

    def validate(self) -> None:
        super().validate()
        for key in (
            "rollout_episodes_per_iter",
            "replay_capacity",
            "critic_steps_per_iter",
            "critic_batch_size",
            "critic_micro_batch_size",
            "actor_batch_size",
            "generation_batch_size",
        ):
            _check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")
        _check(self.actor_steps_per_iter >= 0, "algorithm.actor_steps_per_iter", "must be >= 0")
        _check(self.warmup_iters >= 0, "algorithm.warmup_iters", "must be >= 0")
        _check(
            self.warmup_iters < self.num_iterations or self.actor_steps_per_iter == 0,
            "algorithm.warmup_iters",
            f"must be below num_iterations={self.num_iterations}, or the policy is never trained",
        )
        _check(self.critic_lr > 0, "algorithm.critic_lr", "must be positive")
        _check(0 < self.gamma <= 1, "algorithm.gamma", "must be in (0, 1]")
        _check(0 < self.tau <= 1, "algorithm.tau", "must be in (0, 1]")


@dataclass
class OfflineFilteredBCConfig(BCConfig):
    """Offline filtered behaviour cloning (ARCHER_SPEC.md 1.6): BC on the dataset's best episodes by return.

    Defaults follow OfflineArcher's ``FilteredBehaviouralCloning`` script: Adam at 1e-4 on batches of 32 with 4
    accumulated (128 per step), ``filter=0.1``.

    Attributes:
        filter_fraction: share of the dataset's episodes kept, ranked by undiscounted return: exactly
            ``max(1, int(filter_fraction * N))`` of the N episodes (ties keep dataset order), so ties at the
            cutoff never admit extra episodes.
    """

    name: str = "offline_filtered_bc"
    batch_size: int = 128
    actor_micro_batch_size: int = 32
    actor_lr: float = 1e-4
    filter_fraction: float = 0.1

    def validate(self) -> None:
        super().validate()
        _check(0 < self.filter_fraction <= 1, "algorithm.filter_fraction", "must be in (0, 1]")


@dataclass
class OfflineCriticConfig(AlgorithmConfig):
    """Fields shared by the offline algorithms that train the utterance critic with IQL (ARCHER_SPEC.md 1.5, 1.7).

    Every gradient step draws one batch from the dataset and does one critic step then one actor step on it.
    Defaults are OfflineArcher's (its value in brackets where ours differs).

    Attributes:
        num_iterations: iterations; evaluation (``eval.every_iters``) and checkpoints happen between them.
        steps_per_iter: gradient steps per iteration (the reference validated every 250 batches of 32, about 63
            steps of 128).
        batch_size: transitions per gradient step, drawn uniformly with replacement (the reference: 4 accumulated
            batches of 32 from a shuffled pass over the transitions).
        critic_micro_batch_size: rows per critic forward/backward; gradients are averaged over micro-batches.
        actor_micro_batch_size: rows per policy forward/backward.
        critic_lr: critic Adam learning rate (1e-5).
        actor_lr: policy Adam learning rate (1e-4).
        max_grad_norm: each network clips its own gradient to this norm (the reference did not clip).
        gamma: discount (0.99).
        tau: Polyak rate of the target critic after every critic step (0.05).
        critic_expectile: expectile of the V regression toward the target Q at the dataset action (0.9).
        critic_warmup_steps: gradient steps, counted over the whole run, that train the critic only (0).
        bootstrap_on_truncation: bootstrap through episodes cut by the turn limit (the references treat them as
            terminal: false).
    """

    num_iterations: int = 1000
    steps_per_iter: int = 100
    batch_size: int = 128
    critic_micro_batch_size: int = 32
    actor_micro_batch_size: int = 32
    critic_lr: float = 1e-5
    actor_lr: float = 1e-4
    gamma: float = 0.99
    tau: float = 0.05
    critic_expectile: float = 0.9
    critic_warmup_steps: int = 0
    bootstrap_on_truncation: bool = False

    @property
    def uses_critic(self) -> bool:
        return True

    def validate(self) -> None:
        super().validate()
        for key in ("steps_per_iter", "batch_size", "critic_micro_batch_size"):
            _check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")
        _check(self.critic_lr > 0, "algorithm.critic_lr", "must be positive")
        _check(0 < self.gamma <= 1, "algorithm.gamma", "must be in (0, 1]")
        _check(0 < self.tau <= 1, "algorithm.tau", "must be in (0, 1]")
        _check(0 < self.critic_expectile < 1, "algorithm.critic_expectile", "must be in (0, 1); 0.5 is plain MSE / 2")
        _check(self.critic_warmup_steps >= 0, "algorithm.critic_warmup_steps", "must be >= 0")
        total = self.num_iterations * self.steps_per_iter
        _check(
            self.critic_warmup_steps < total,
            "algorithm.critic_warmup_steps",
            f"must be below num_iterations * steps_per_iter = {total}, or the policy is never trained",
        )


@dataclass
class OfflineArcherConfig(OfflineCriticConfig):
    """Offline ArCHer (ARCHER_SPEC.md 1.5): IQL critic and an advantage-weighted (AWR) actor on dataset actions.

    Attributes:
        inv_temp: beta of the AWR weight ``exp(beta * A)`` (1.0).
        max_weight: the AWR weight is clipped to this value, as in IQL; ``null`` leaves it unclipped as
            OfflineArcher did (a few large advantages then dominate the batch).
    """

    name: str = "offline_archer"
    inv_temp: float = 1.0
    max_weight: float | None = 100.0

    def validate(self) -> None:
        super().validate()
        _check(self.inv_temp >= 0, "algorithm.inv_temp", "must be >= 0 (0 gives plain BC weights)")
        _check(self.max_weight is None or self.max_weight > 0, "algorithm.max_weight", "must be > 0 or null")


@dataclass
class IQLReinforceConfig(OfflineCriticConfig):
    """IQL + REINFORCE with an optional KL to a reference policy (ARCHER_SPEC.md 1.7, OfflineArcher ``IQLKL``).

    Attributes:
        kl_coeff: c in ``(1 - c) * REINFORCE + c * KL(pi || pi_ref)``; 0 is the paper's plain IQL + REINFORCE and
            builds no reference policy. The reference policy is a frozen copy of the starting policy
            (``model.policy``, e.g. a BC run's ``policy/`` folder).
        generation_batch_size: prompts per ``generate`` call when sampling the actor's actions.
    """

    name: str = "iql_reinforce"
    kl_coeff: float = 0.0
    generation_batch_size: int = 128

    def validate(self) -> None:
        super().validate()
        _check(0 <= self.kl_coeff <= 1, "algorithm.kl_coeff", "must be in [0, 1] (0 = no KL term)")
        _check(self.generation_batch_size > 0, "algorithm.generation_batch_size", "must be positive")


# (new algorithm configs go above this line)


# ---------------------------------------------------------------------------------------------------------------
# Data, evaluation, logging and the run
# ---------------------------------------------------------------------------------------------------------------


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
        _check(self.generate_episodes > 0, "data.generate_episodes", "must be positive")


@dataclass
class EvalConfig:
    """Greedy evaluation on a fixed, seeded set of games, identical across iterations and runs.

    Attributes:
        every_iters: evaluate after every this many iterations (and after the last); 0 disables it.
        num_episodes: games per evaluation; ``null`` plays every game of the environment once (every word).
        seed: seed that picks the games when ``num_episodes`` is set.
        before_training: also evaluate the starting policy (iteration 0).
    """

    every_iters: int = 5
    num_episodes: int | None = None
    seed: int = 2024
    before_training: bool = True

    def validate(self) -> None:
        _check(self.every_iters >= 0, "eval.every_iters", "must be >= 0 (0 disables evaluation)")
        _check(self.num_episodes is None or self.num_episodes > 0, "eval.num_episodes", "must be > 0 or null")


@dataclass
class LoggingConfig:
    """Where metrics go. The run folder always gets ``metrics.jsonl``.

    Attributes:
        use_wandb: also log to Weights & Biases (reads its own login; works offline with ``wandb_mode=offline``).
        wandb_project: W&B project.
        wandb_entity: W&B entity (team or user); null uses the default.
        wandb_mode: ``online``, ``offline`` or ``disabled``.
        progress_bars: show tqdm progress bars.
    """

    use_wandb: bool = False
    wandb_project: str = "archer"
    wandb_entity: str | None = None
    wandb_mode: str = "online"
    progress_bars: bool = True

    def validate(self) -> None:
        _check_choice(self.wandb_mode, "logging.wandb_mode", ("online", "offline", "disabled"))


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
        seed: seeds torch, numpy, Python and the environments.
        run_dir: the run folder (metrics, checkpoints, saved policy); ``null`` uses Hydra's run directory.
        cache_dir: where built-in models and generated datasets are cached; ``null`` uses ``$ARCHER_CACHE_DIR``
            or ``~/.cache/archer``.
        torch_threads: CPU threads for torch; ``null`` leaves torch's default.
        pretrain: behaviour cloning that builds the starting policy before an RL run (on ``data``, with the same
            env and model). It runs once and is cached under ``cache_dir`` (keyed by everything it depends on), so
            every seed of an RL run starts from the same policy; ``null`` starts from ``model.policy`` as is.
        resume: continue from the checkpoint in ``run_dir`` when there is one (it must come from the same config).
        save_every_iters: write the checkpoint (and the policy folder) after every this many iterations.
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
    pretrain: BCConfig | None = None
    resume: bool = True
    save_every_iters: int = 1

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _check_choice(self.mode, "mode", ("train", "evaluate"))
        self.algorithm.validate()
        self.env.validate()
        self.model.validate()
        self.data.validate()
        self.eval.validate()
        self.logging.validate()
        if self.pretrain is not None:
            _check(self.algorithm.online, "pretrain", "is for online algorithms; offline runs train from data already")
            self.pretrain.validate()
        _check(self.torch_threads is None or self.torch_threads > 0, "torch_threads", "must be positive or null")
        _check(self.save_every_iters > 0, "save_every_iters", "must be positive")


def register_configs() -> None:
    """Register every schema with Hydra's ConfigStore (tutorial 5.1 pattern: YAML files extend a base schema)."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    store.store(name="base_run", node=RunConfig)
    store.store(group="algorithm", name="base_bc", node=BCConfig)
    store.store(group="algorithm", name="base_archer", node=ArcherConfig)
    store.store(group="env", name="base_twenty_questions", node=TwentyQuestionsEnvConfig)
    store.store(group="model", name="base_model", node=ModelConfig)
    store.store(group="algorithm", name="base_offline_archer", node=OfflineArcherConfig)
    store.store(group="algorithm", name="base_offline_filtered_bc", node=OfflineFilteredBCConfig)
    store.store(group="algorithm", name="base_iql_reinforce", node=IQLReinforceConfig)
    # (new schemas are registered above this line)
