"""The language policy: samples one utterance per observation and scores utterances token by token.

Generation and scoring build the same prompt ids (template, a long history cut to its newest turns, left padding,
positions counted from the attention mask), so the policy gradient scores each sampled token under the distribution
it was sampled from. This fixes the reference's log-probabilities (its ``get_log_prob``): no padding between prompt and
action, no shifted positions, the sampled ids are scored rather than a re-tokenised string, the turn terminator
is part of the scored action, and ``log_softmax`` replaces ``log(softmax)``.

Every scoring call says which distribution it wants (``as_sampled``). A loss on the policy's own samples
(REINFORCE, PPO ratios, KL penalties) scores them under the distribution sampling drew them from: the logits
divided by the temperature, then top-k, then top-p filtered, as Hugging Face's sampling does
(``sampling_log_softmax``). A loss on dataset actions (behaviour cloning, AWR) scores the plain softmax: a dataset
token may lie outside the top-k, where the sampling distribution gives it probability zero.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Cache, GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase

from archer.config import ConfigError, PolicyConfig
from archer.models.kv_cache import cache_argument, returned_cache
from archer.models.templates import get_action_parser, get_template, split_history
from archer.models.vllm_engine import VLLMEngine

log = logging.getLogger(__name__)

# The tokenizers whose policy has cut a history: the note that says so is logged once per run (a run's policies,
# frozen copies included, share one tokenizer).
_NOTED_CUTS: weakref.WeakSet[PreTrainedTokenizerBase] = weakref.WeakSet()


def sampling_log_softmax(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Log-probabilities of the distribution ``model.generate(do_sample=True)`` draws the next token from.

    The steps and their order are those of transformers' ``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and
    ``TopPLogitsWarper`` with ``min_tokens_to_keep=1`` (what ``generate`` uses with one beam): divide by the
    temperature; keep every token whose score is at least the k-th largest (ties at the k-th score are all kept);
    then sort ascending, drop the tokens whose cumulative probability (of the top-k-filtered, tempered scores) is at
    most ``1 - top_p``, always keeping the most likely token; finally ``log_softmax``. Filtered tokens get -inf.

    Args:
        logits: (..., V) raw next-token logits.
        temperature: > 0; 1.0 leaves the logits unchanged.
        top_k: tokens kept by top-k; 0 disables it.
        top_p: nucleus mass in (0, 1]; 1.0 disables it.

    Returns:
        (..., V) log-probabilities, -inf on filtered tokens; differentiable with respect to the kept logits.
    """
    scores = logits / temperature
    # The filters choose which tokens survive; choosing is not differentiated, so the masks are built without a graph.
    with torch.no_grad():
        remove = torch.zeros_like(scores, dtype=torch.bool)
        if top_k > 0:
            kth_best = torch.topk(scores, min(top_k, scores.shape[-1]), dim=-1).values[..., -1:]
            remove = scores < kth_best
        if top_p < 1.0:
            sorted_scores, order = torch.sort(scores.masked_fill(remove, float("-inf")), descending=False, dim=-1)
            cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
            sorted_remove = cumulative <= 1 - top_p
            sorted_remove[..., -1:] = False  # the most likely token always stays
            remove = remove | sorted_remove.scatter(-1, order, sorted_remove)
    return F.log_softmax(scores.masked_fill(remove, float("-inf")), dim=-1)


@dataclass
class Generation:
    """One sampled action per observation.

    Attributes:
        texts: the actions as the environment receives them: special tokens skipped, leading newlines stripped,
            cut at the first stop string (which is removed), then passed through the configured action parser.
        token_ids: exactly the sampled ids, up to and including the first terminator (the stop token, a token
            containing the stop string, or EOS); nothing after it. An action that hit ``max_new_tokens`` has no
            terminator. These are what ``LanguagePolicy.token_logprobs`` scores.
    """

    texts: list[str]
    token_ids: list[list[int]]


@dataclass
class TurnPacking:
    """Turns scored inside longer turns' token rows (``LanguagePolicy.pack_turns``).

    Attributes:
        rows: the packed token rows (a prompt's ids followed by its action's ids without the terminator).
        members: ``(turn, row, prompt length)`` of every packed turn.
        alone: the turns to score on their own.
    """

    rows: list[list[int]]
    members: list[tuple[int, int, int]]
    alone: list[int]

    def positions(self, action_ids: list[list[int]], padded_width: int) -> list[tuple[int, int, int, int]]:
        """``(turn, row, first column, number of ids)`` of each packed turn in the rows left-padded to
        ``padded_width``: a turn with prompt length p and n action ids (body then terminator) is predicted from the
        row's columns p-1 .. p+n-2 (its body tokens are the row's own; its terminator is predicted after them)."""
        return [(i, r, padded_width - len(self.rows[r]) + p - 1, len(action_ids[i])) for i, r, p in self.members]


def place_rows(
    values: torch.Tensor, mask: torch.Tensor, scored: list[tuple[int, torch.Tensor]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``values`` and ``mask`` (B, T) with row i set to each ``(i, v)`` of ``scored`` (v of length <= T)."""
    width = values.shape[1]
    index = torch.tensor([i for i, _ in scored], device=values.device)
    padded = torch.nn.utils.rnn.pad_sequence([v for _, v in scored], batch_first=True)
    lengths = torch.tensor([len(v) for _, v in scored], device=values.device)
    row_mask = (torch.arange(padded.shape[1], device=values.device).unsqueeze(0) < lengths.unsqueeze(1)).float()
    pad = (0, width - padded.shape[1])
    return (
        values.index_put((index,), torch.nn.functional.pad(padded, pad)),
        mask.index_put((index,), torch.nn.functional.pad(row_mask, pad)),
    )


def left_padded_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, L) position ids of left-padded rows: each row's first real token is at position 0, as it would be
    unpadded (padding columns get 0; the mask hides them)."""
    return (attention_mask.cumsum(-1) - 1).clamp(min=0)


def left_align_actions(right_aligned: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token scores of left-padded actions moved so that token j of every action is in column j.

    Args:
        right_aligned: (B, T) scores of the last T columns of left-padded rows (T the longest action), so action i's
            tokens are its last ``lengths[i]`` columns.
        lengths: (B,) action lengths in tokens.

    Returns:
        ``(scores, mask)``, both (B, T); columns past an action's end hold 0 in both; the mask is float.
    """
    width = right_aligned.shape[1]
    columns = torch.arange(width, device=right_aligned.device)
    source = (columns + (width - lengths).unsqueeze(1)).clamp(max=width - 1)
    mask = columns.unsqueeze(0) < lengths.unsqueeze(1)
    scores = right_aligned.gather(1, source).masked_fill(~mask, 0.0)
    return scores, mask.to(scores.dtype)


class LanguagePolicy:
    """A causal language model used as a policy over utterances.

    Algorithms call ``generate``, ``encode_actions`` and ``token_logprobs``; they reach the Hugging Face model
    only through ``.model``, to give its parameters to an optimiser (or to wrap it for distributed training).

    Args:
        model: a causal LM (plain, ``peft.PeftModel`` or DDP-wrapped).
        tokenizer: its tokenizer; the policy sets left padding and left truncation on it.
        cfg: the policy config (template, action parser, prompt and action lengths, stop string, sampling).

    Raises:
        ValueError: ``cfg.stop_string`` does not encode to exactly one token, or the template or action parser is
            unknown.
        ConfigError: the template's fixed parts alone fill ``cfg.max_prompt_tokens`` (``check_prompt_room``).
    """

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, cfg: PolicyConfig) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.cfg = cfg
        self.template = get_template(cfg.template, tokenizer)
        # The parser only changes what the environment receives; token_ids (what is scored) stay as sampled.
        self.action_parser = get_action_parser(cfg.action_parser)
        tokenizer.padding_side = "left"
        tokenizer.truncation_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.check_prompt_room()
        self.stop_token_id = self._find_stop_token_id()
        self.terminator_ids = self._find_terminator_ids()
        base = self._generator()
        base = base.get_base_model() if hasattr(base, "get_base_model") else base
        self._accepts_logits_to_keep = "logits_to_keep" in inspect.signature(base.forward).parameters
        self._compiled: tuple[nn.Module, nn.Module] | None = None  # (model it was compiled from, compiled model)
        self._engine: VLLMEngine | None = None  # built at the first sampling with cfg.engine == "vllm"

    def _scoring_model(self) -> nn.Module:
        """``self.model``, or its ``torch.compile`` wrapper with ``cfg.compile``.

        The wrapper shares the parameters; it is rebuilt whenever ``self.model`` is replaced (wrapped for
        distributed training, say), so scoring always goes through the current model.
        """
        if not self.cfg.compile:
            return self.model
        if self._compiled is None or self._compiled[0] is not self.model:
            self._compiled = (self.model, torch.compile(self.model, dynamic=True))
        return self._compiled[1]

    def check_prompt_room(self) -> None:
        """Refuse a ``max_prompt_tokens`` that the template's fixed parts fill alone.

        A long prompt is cut inside its history only (``encode_prompts``); what the template puts around the history
        (a chat header, the game's instruction and answer format, the generation prompt: the template of an empty
        observation) must fit with room to spare, or every prompt would lose more than its oldest turns. Checked when
        the policy is built, before any model trains.

        Raises:
            ConfigError: the message names ``model.policy.max_prompt_tokens`` and the fixed parts' size.
        """
        fixed = len(self.tokenizer(self.template(""))["input_ids"])
        if fixed >= self.cfg.max_prompt_tokens:
            raise ConfigError(
                f"model.policy.max_prompt_tokens: the {self.cfg.template!r} template's fixed parts (header, "
                f"instruction, answer format, generation prompt) take {fixed} tokens with this tokenizer, which "
                f"leaves no room for the history within {self.cfg.max_prompt_tokens}; set it to more than {fixed} "
                "(the fixed parts plus the longest history a prompt should keep whole)"
            )

    def _find_stop_token_id(self) -> int | None:
        stop = self.cfg.stop_string
        if stop is None:
            return None
        ids = self.tokenizer.encode(stop, add_special_tokens=False)
        if len(ids) != 1:
            raise ValueError(
                f"model.policy.stop_string: {stop!r} encodes to {len(ids)} tokens {ids} with this tokenizer; it "
                "must be exactly one token (for example '\\n' with GPT-2-style tokenizers), or null to stop at EOS"
            )
        return ids[0]

    def _find_terminator_ids(self) -> list[int]:
        """Ids that end an action: EOS, the stop token, and every token whose text contains the stop string.

        A hub vocabulary can merge the stop string with its neighbours (GPT-2 has ``"\\n\\n"``, Llama 3 has
        ``"?\\n"``); such a token ends the utterance as surely as the stop token itself does.
        """
        terminators = {self.tokenizer.eos_token_id}
        if self.cfg.stop_string is not None:
            terminators.add(self.stop_token_id)
            vocab = range(len(self.tokenizer))
            pieces = self.tokenizer.batch_decode([[i] for i in vocab], clean_up_tokenization_spaces=False)
            terminators.update(i for i, piece in zip(vocab, pieces, strict=True) if self.cfg.stop_string in piece)
        return sorted(terminators - {None})

    def _generator(self) -> nn.Module:
        """The model without a DDP wrapper, which has no ``generate``."""
        if isinstance(self.model, nn.parallel.DistributedDataParallel):
            return self.model.module
        return self.model

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def encode_prompts(self, observations: list[str]) -> list[list[int]]:
        """Prompt ids, unpadded: the template applied to each observation, cut to ``max_prompt_tokens``.

        A prompt within the limit is its tokenised template. A longer one drops the oldest whole turns of the
        history (``cut_history``): the template's parts before and after the history (a chat header, the game's
        instruction and answer format, the generation prompt) stay, as does the history's title, so it is exactly
        the prompt of the same history without its oldest turns. The first cut of a run is noted in the log.
        """
        prompts = [self.template(observation) for observation in observations]
        # Encoding one token past the limit tells which prompts are over it; a prompt within it is encoded exactly as
        # it always was (the tokenizer truncates nothing it need not).
        rows = [list(row) for row in self._encode(prompts)]
        for i, row in enumerate(rows):
            if len(row) > self.cfg.max_prompt_tokens:
                rows[i], dropped = self.cut_history(observations[i])
                self._note_cut(prompts[i], dropped)
        # An empty prompt gives the model nothing to predict the first action token from; start it with BOS.
        start = self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
        return [row if len(row) > 0 else [start] for row in rows]

    def _encode(self, prompts: list[str]) -> list[list[int]]:
        """Each prompt's ids, cut on the left to one token past ``max_prompt_tokens``."""
        return self.tokenizer(prompts, truncation=True, max_length=self.cfg.max_prompt_tokens + 1)["input_ids"]

    def cut_history(self, observation: str) -> tuple[list[int], int]:
        """The ids of the longest prompt within ``max_prompt_tokens`` that keeps the newest turns of ``observation``.

        The observation is split into its title and turns (``split_history``: a question game's ``Questions:`` and
        one line per turn); the prompt is the template of the title and the newest turns, tokenised as any prompt,
        so generation, scoring and the kept KV cache (which reuses the ids a cut prompt shares with the last turn's,
        its head) all see the prompt a game with only those turns would have. The number of turns is found from the
        turns' own token counts and checked on the whole prompt (tokens can merge across a join). When even the
        newest turn does not fit beside the fixed parts, the start of that turn is cut too (``_cut_turn``); when the
        fixed parts and the title alone do not fit (``check_prompt_room`` refuses the fixed parts alone at start-up),
        the prompt is cut on the left as it comes.

        Returns:
            The prompt ids and the number of turns dropped (the newest counted as dropped when only its end is kept).
        """
        limit = self.cfg.max_prompt_tokens
        title, turns = split_history(observation)

        def encoded(kept: list[str]) -> list[int]:
            return list(self._encode([self.template(title + "".join(kept))])[0])

        fixed = len(encoded([]))
        if fixed >= limit or not turns:
            ids = self.tokenizer(self.template(observation), truncation=True, max_length=limit)["input_ids"]
            return list(ids), len(turns)
        counts = [len(ids) for ids in self.tokenizer(turns, add_special_tokens=False)["input_ids"]]
        first, room = len(turns), limit - fixed
        while first > 0 and counts[first - 1] <= room:
            first, room = first - 1, room - counts[first - 1]
        first = min(first, len(turns) - 1)  # the newest turn is kept, if only its end
        ids = encoded(turns[first:])
        while len(ids) > limit and first < len(turns) - 1:
            first += 1
            ids = encoded(turns[first:])
        if len(ids) > limit:
            return self._cut_turn(title, turns[-1], limit - fixed), len(turns)
        while first > 0 and len(wider := encoded(turns[first - 1 :])) <= limit:
            first, ids = first - 1, wider
        return ids, first

    def _cut_turn(self, title: str, turn: str, room: int) -> list[int]:
        """The prompt of ``title`` and the end of ``turn``: as many of the turn's last tokens as fit in ``room``."""
        turn_ids = self.tokenizer(turn, add_special_tokens=False)["input_ids"]
        keep = min(room, len(turn_ids))
        while keep > 0:
            tail = self.tokenizer.decode(turn_ids[-keep:], clean_up_tokenization_spaces=False)
            ids = list(self._encode([self.template(title + tail)])[0])
            if len(ids) <= self.cfg.max_prompt_tokens:
                return ids
            keep -= len(ids) - self.cfg.max_prompt_tokens
        return list(self._encode([self.template(title)])[0])

    def _note_cut(self, prompt: str, dropped: int) -> None:
        """Log the run's first cut history, once: a shipped config says in its YAML comment whether it cuts."""
        if self.tokenizer in _NOTED_CUTS:
            return
        _NOTED_CUTS.add(self.tokenizer)
        length = len(self.tokenizer(prompt, verbose=False)["input_ids"])
        log.info(
            "model.policy.max_prompt_tokens=%d: a %d-token prompt dropped the %d oldest turns of its history (the "
            "template's instruction and answer format are kept); later cuts are not logged",
            self.cfg.max_prompt_tokens,
            length,
            dropped,
        )

    def left_pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-pad rows into ``input_ids`` and ``attention_mask``, both (B, L) long tensors."""
        length = max(len(row) for row in rows)
        input_ids = torch.full((len(rows), length), self.tokenizer.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
        for i, row in enumerate(rows):
            if row:
                input_ids[i, length - len(row) :] = torch.tensor(row, dtype=torch.long)
                attention_mask[i, length - len(row) :] = 1
        return input_ids.to(self.device), attention_mask.to(self.device)

    def _generation_config(self, greedy: bool) -> GenerationConfig:
        # Every distribution-changing option is set explicitly, so a hub model's own generation_config (a
        # repetition penalty, say) cannot make sampling differ from the distribution token_logprobs scores.
        return GenerationConfig(
            max_new_tokens=self.cfg.max_new_tokens,
            do_sample=not greedy,
            temperature=1.0 if greedy else self.cfg.temperature,
            # Greedy decoding ignores the sampling filters; transformers (5.24) warns of any it is given.
            top_k=None if greedy else self.cfg.top_k,
            top_p=1.0 if greedy else self.cfg.top_p,
            typical_p=1.0,
            epsilon_cutoff=0.0,
            eta_cutoff=0.0,
            repetition_penalty=1.0,
            encoder_repetition_penalty=1.0,
            no_repeat_ngram_size=0,
            min_new_tokens=0,
            num_beams=1,
            num_return_sequences=1,
            eos_token_id=self.terminator_ids,
            pad_token_id=self.tokenizer.pad_token_id,
            use_cache=True,
            return_dict_in_generate=True,
        )

    def action_text(self, token_ids: list[int]) -> str:
        """The action the environment receives for sampled ``token_ids`` (see ``Generation.texts``)."""
        text = self.tokenizer.decode(token_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        text = text.lstrip("\n")
        if self.cfg.stop_string is not None:
            text = text.split(self.cfg.stop_string, 1)[0]
        return self.action_parser(text)

    def decode_batch(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        greedy: bool,
        past_key_values: Cache | None = None,
    ) -> tuple[list[list[int]], Cache | None]:
        """One ``model.generate`` call on left-padded rows, without gradients and in eval mode.

        The model's previous train/eval mode is restored. Sampling draws from torch's global generator.

        Args:
            input_ids: (B, L) ids; with ``past_key_values``, only the ids the cache does not hold yet.
            attention_mask: (B, L) mask; with ``past_key_values``, (B, C + L) covering the C cached columns too.
                Positions are counted from it, so masked columns anywhere in a row are skipped.
            greedy: argmax decoding instead of sampling.
            past_key_values: keys and values of the first C columns, extended in place by the call.

        Returns:
            Each row's sampled ids up to and including its first terminator (see ``Generation.token_ids``), and
            the cache after the call (it holds every fed column: the inputs and all sampled columns but the last).
        """
        generator = self._generator()
        terminators = set(self.terminator_ids)
        was_training = generator.training
        generator.eval()
        try:
            with torch.no_grad():
                output = generator.generate(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    generation_config=self._generation_config(greedy),
                    **cache_argument(generator, past_key_values),
                )
        finally:
            generator.train(was_training)
        token_ids = []
        for row in output.sequences[:, input_ids.shape[1] :].tolist():
            end = next((i + 1 for i, token in enumerate(row) if token in terminators), len(row))
            token_ids.append(row[:end])
        return token_ids, returned_cache(output)

    def generate(self, observations: list[str], greedy: bool, batch_size: int | None = None) -> Generation:
        """Sample (or greedily decode) one action per observation.

        Runs without gradients and in eval mode (dropout off), restoring the model's previous mode. Sampling
        draws from torch's global generator, which the trainer seeds.

        Args:
            observations: B observation strings.
            greedy: argmax decoding instead of sampling with the configured temperature, top-k and top-p.
            batch_size: observations per ``model.generate`` call; ``None`` does all B at once.

        Returns:
            The action texts and the sampled token ids.
        """
        if not observations:
            return Generation(texts=[], token_ids=[])
        if self.cfg.engine == "vllm":
            return self._engine_generate(observations, greedy)
        step = batch_size or len(observations)
        token_ids: list[list[int]] = []
        for start in range(0, len(observations), step):
            input_ids, attention_mask = self.left_pad(self.encode_prompts(observations[start : start + step]))
            token_ids.extend(self.decode_batch(input_ids, attention_mask, greedy)[0])
        return Generation(texts=[self.action_text(ids) for ids in token_ids], token_ids=token_ids)

    def engine(self) -> VLLMEngine:
        """The vLLM engine that samples with ``cfg.engine == "vllm"`` (``archer.models.vllm_engine``), built on first
        use and bound to the current ``self.model`` (which a distributed wrapper may have replaced)."""
        if self._engine is None:
            self._engine = VLLMEngine(self.model, self.cfg, self.terminator_ids)
        self._engine.model = self.model
        return self._engine

    def _engine_generate(self, observations: list[str], greedy: bool) -> Generation:
        """``generate`` through the engine: the same prompt ids in, the sampled ids out; a few sampled rows are
        rescored by the trainer and compared with the engine's log-probabilities (``check_engine``)."""
        sampled = self.engine().sample(self.encode_prompts(observations), greedy)
        if not greedy:
            rows = min(self.cfg.engine_check_rows, len(observations))
            self.check_engine(observations[:rows], sampled.token_ids[:rows], sampled.logprobs[:rows])
        return Generation(texts=[self.action_text(ids) for ids in sampled.token_ids], token_ids=sampled.token_ids)

    def check_engine(self, observations: list[str], action_ids: list[list[int]], logprobs: list[list[float]]) -> None:
        """Score sampled ids with the trainer (as sampled, eval mode, no gradient) and hand the per-token absolute
        differences from the engine's ``logprobs`` to the engine's check. Skipped without ``score_as_sampled``: the
        losses then score another distribution than the one sampled, by design."""
        if not observations or not self.cfg.score_as_sampled or not any(action_ids):
            return
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                trainer, mask = self.token_logprobs(observations, action_ids, as_sampled=True)
        finally:
            self.model.train(was_training)
        engine = torch.zeros_like(trainer)
        for i, row in enumerate(logprobs):
            engine[i, : len(row)] = torch.tensor(row, dtype=trainer.dtype)
        self.engine().record_check((trainer - engine).abs()[mask.bool()])

    def engine_metrics(self) -> dict[str, float]:
        """The engine's metrics since the last call (``VLLMEngine.metrics``); none with ``cfg.engine == "hf"``."""
        return self._engine.metrics() if self._engine is not None else {}

    def encode_actions(self, actions: list[str]) -> list[list[int]]:
        """Token ids of text actions (from a dataset), terminated as generated ones are.

        Each action is tokenised as ``action + stop_string`` without special tokens; with no stop string, EOS is
        appended instead, since generation would end there. Actions are cut to ``max_new_tokens`` tokens. The
        action parser is not inverted: a dataset action is encoded as the text itself.

        Args:
            actions: B action strings, without their terminator.

        Returns:
            B lists of token ids, ready for ``token_logprobs``.
        """
        if self.cfg.stop_string is not None:
            texts = [action + self.cfg.stop_string for action in actions]
            rows = [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]
        else:
            encoded = self.tokenizer(list(actions), add_special_tokens=False)["input_ids"]
            rows = [list(ids) + [self.tokenizer.eos_token_id] for ids in encoded]
        # The policy can never generate more than max_new_tokens, so a longer dataset action is cut there, as
        # generation would cut it (and the prompt plus action then always fits the model's positions).
        return [ids[: self.cfg.max_new_tokens] for ids in rows]

    def _score(self, logits: torch.Tensor, targets: torch.Tensor, as_sampled: bool) -> torch.Tensor:
        """Log-probability of ``targets`` (B, T) under next-token ``logits`` (B, T, V); see ``token_logprobs``."""
        cfg = self.cfg
        if not (as_sampled and cfg.score_as_sampled):
            return F.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        processed = sampling_log_softmax(logits, cfg.temperature, cfg.top_k, cfg.top_p)
        scores = processed.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        filtered = torch.isneginf(scores)
        if not filtered.any():
            return scores
        tempered = F.log_softmax(logits / cfg.temperature, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return torch.where(filtered, tempered, scores)

    def token_logprobs(
        self, observations: list[str], action_ids: list[list[int]], *, as_sampled: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability of every action token given the prompt and the action tokens before it.

        Each row is ``[prompt ids | action ids]`` with the prompt encoded exactly as ``generate`` encodes it;
        rows are left-padded together and positions count only real tokens, as in generation. One forward pass;
        differentiable. The model's current train/eval mode is used as is.

        With ``as_sampled`` (and ``cfg.score_as_sampled``, the default) the tokens are scored under the sampling
        distribution (``sampling_log_softmax`` with the config's temperature, top-k and top-p). A token that
        distribution filters out has probability zero there; such a token is scored by the tempered, unfiltered
        softmax instead, so the result stays finite. The policy's own samples are never filtered out of the
        distribution they were drawn from (up to float rounding between the generation and scoring passes); the
        fallback serves samples scored by another policy (the reference of a KL penalty: a large, finite penalty
        where the exact one is infinite) or by the policy after it has moved (later PPO epochs).

        Args:
            observations: B observation strings.
            action_ids: B lists of action token ids (from ``Generation.token_ids`` or ``encode_actions``).
            as_sampled: True for the policy's own samples (policy-gradient, PPO and KL terms); False for dataset
                actions (behaviour cloning, AWR), scored under the plain softmax.

        Returns:
            ``(token_logprobs, token_mask)``, both (B, T) with T the longest action. Token j of action i is at
            ``[i, j]``; positions past an action's end hold 0 in both. The mask is float (1.0 for real tokens).
        """
        lengths = torch.tensor([len(ids) for ids in action_ids], device=self.device)
        width = int(lengths.max().item()) if len(action_ids) else 0
        if width == 0:
            empty = torch.zeros((len(action_ids), 0), device=self.device)
            return empty, empty.clone()
        prompts = self.encode_prompts(observations)
        input_ids, attention_mask = self.left_pad([p + list(a) for p, a in zip(prompts, action_ids, strict=True)])
        position_ids = left_padded_positions(attention_mask)
        extra = {"logits_to_keep": width + 1} if self._accepts_logits_to_keep else {}
        logits = self._scoring_model()(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False, **extra
        ).logits
        # Left padding right-aligns every action: its tokens are the last len(action) columns, each predicted
        # from the column before it.
        logits = logits[:, -(width + 1) : -1].float()  # (B, T, V)
        targets = input_ids[:, -width:]  # (B, T)
        return left_align_actions(self._score(logits, targets, as_sampled), lengths)

    def pack_turns(self, observations: list[str], actions: list[str], action_ids: list[list[int]]) -> TurnPacking:
        """Which turns can be scored inside a longer turn's row, and the rows (``packed_token_logprobs``).

        Longest text first, each turn joins the first row whose text (observation + action) starts with its own,
        and only when its prompt ids and action body (its ids without the terminator) are exactly that row's
        first tokens; a turn whose action does not end with the stop token, whose prompt fills
        ``max_prompt_tokens``, or any turn under a non-plain template is left to be scored alone. (A prompt whose
        history was cut is packed only where its ids are exactly the row's first tokens, as any other.)
        """
        packing = TurnPacking(rows=[], members=[], alone=[])
        if self.cfg.template != "plain" or self.stop_token_id is None:
            packing.alone = list(range(len(observations)))
            return packing
        prompts = self.encode_prompts(observations)
        texts = [obs + act for obs, act in zip(observations, actions, strict=True)]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        row_texts: list[str] = []
        for i in order:
            ids = action_ids[i]
            body = list(ids[:-1]) if ids and ids[-1] == self.stop_token_id else None
            fits = body is not None and len(prompts[i]) <= self.cfg.max_prompt_tokens - 1
            row = next((r for r, text in enumerate(row_texts) if text.startswith(texts[i])), None) if fits else None
            if row is None and fits:
                row_texts.append(texts[i])
                packing.rows.append(prompts[i] + body)
                row = len(packing.rows) - 1
            if row is None or packing.rows[row][: len(prompts[i]) + len(body)] != prompts[i] + body:
                packing.alone.append(i)
                continue
            packing.members.append((i, row, len(prompts[i])))
        return packing

    def packed_token_logprobs(
        self,
        observations: list[str],
        actions: list[str],
        action_ids: list[list[int]] | None = None,
        *,
        as_sampled: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``token_logprobs(observations, action_ids, as_sampled=as_sampled)``, with far fewer tokens.

        In history-based environments a later turn's observation starts with an earlier turn's observation and
        action, so one forward pass over the longest text scores every turn it contains: the action's tokens
        from their own positions, and its terminator from the logits after the action's last token (causal
        attention makes both exactly what the per-turn computation gives). A turn is packed only when the
        packed tokens are provably the per-turn ones (``pack_turns``); any other turn is scored on its own.

        Args:
            observations: B observation strings.
            actions: B action texts (without terminator), the text the next observation continues with.
            action_ids: the B actions' token ids, ending with the stop token when the action ended by it; ``None``
                encodes ``actions`` (dataset actions: behaviour cloning).
            as_sampled: as in ``token_logprobs`` (False for dataset actions, True for the policy's own samples).

        Returns:
            ``(token_logprobs, token_mask)`` as ``token_logprobs`` returns them.
        """
        action_ids = self.encode_actions(actions) if action_ids is None else action_ids
        width = max((len(ids) for ids in action_ids), default=0)
        packing = self.pack_turns(observations, actions, action_ids)
        logprobs = torch.zeros((len(observations), width), device=self.device)
        mask = torch.zeros((len(observations), width), device=self.device)
        if packing.rows:
            input_ids, attention_mask = self.left_pad(packing.rows)
            position_ids = left_padded_positions(attention_mask)
            logits = self._scoring_model()(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
            ).logits
            scored = []
            for i, r, start, n in packing.positions(action_ids, input_ids.shape[1]):
                ids = torch.tensor(list(action_ids[i]), device=self.device)
                step_logits = logits[r : r + 1, start : start + n].float()  # (1, n, V)
                scored.append((i, self._score(step_logits, ids.unsqueeze(0), as_sampled).squeeze(0)))
            logprobs, mask = place_rows(logprobs, mask, scored)
        if packing.alone:
            single, _ = self.token_logprobs(
                [observations[i] for i in packing.alone], [action_ids[i] for i in packing.alone], as_sampled=as_sampled
            )
            alone = [(i, single[k, : len(action_ids[i])]) for k, i in enumerate(packing.alone)]
            logprobs, mask = place_rows(logprobs, mask, alone)
        return logprobs, mask

    def sequence_logprobs(
        self, observations: list[str], action_ids: list[list[int]], *, as_sampled: bool
    ) -> torch.Tensor:
        """Sum of ``token_logprobs`` over each action's tokens: log pi(action | observation), shape (B,)."""
        logprobs, mask = self.token_logprobs(observations, action_ids, as_sampled=as_sampled)
        return (logprobs * mask).sum(dim=-1)
