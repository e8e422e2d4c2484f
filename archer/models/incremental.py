"""Generation across the turns of a batch of games that keeps each game's token ids and KV cache, so a turn costs
its new tokens rather than the whole history (``model.policy.reuse_kv_cache``).

A session holds one cache row per live game. Its columns hold, right-aligned, the keys and values of the game's
prompt ids followed by the body of its last action (the sampled ids without the terminator, which the environment
replaces by its answer). Each turn, every game gets the ids it is to be conditioned on (its *target*); the longest
prefix of the target that the cache already holds is reused, only the rest is fed, and ``generate`` continues from
the cache. Rows are left-padded and columns that are no longer wanted are masked rather than removed, which is
exact because Hugging Face decoder models count positions from the attention mask (checked for GPT-2, the embedded
policy's architecture, in tests/unit/test_incremental_generation.py): a token gets the same position, hence the
same keys and values, as in a fresh left-padded prompt. After the call the cache is compacted (finished games and
masked columns dropped). A game is re-encoded in full when its target shares no prefix with the cache: a new game,
or a template that does not extend the previous prompt. A history cut to ``max_prompt_tokens`` loses its oldest
turns (``LanguagePolicy.encode_prompts``), which moves every later token: the cache is then reused only for the ids
the cut prompt shares with the cached ones (the template's head and the history's title) and the rest is fed
afresh, never extended.

Two ways to build the target:

* **Re-tokenised** (default): the target is the prompt ``LanguagePolicy.generate`` would build, i.e. the whole
  observation tokenised again (a cheap CPU pass; only the model work is saved). Actions are then exactly those of
  the full re-encode path (up to floating-point summation order), and the learner, which re-tokenises the stored
  observation strings, scores actions under the very prompts they were sampled from. When the sampled ids are not
  the canonical tokenisation of their text (a model may write ``"I" "s"`` for ``"Is"``), or a BPE merge crosses the
  boundary between the action and the environment's answer, the cache is reused up to the first differing token.
* **Token in, token out** (``model.policy.append_token_ids``): when the new prompt text extends the text of the
  game's ids (checked on strings, after the template), the new text alone is tokenised and appended to the ids,
  which keep the sampled ids as sampled. Nothing is tokenised twice, but the ids the policy is conditioned on can
  differ from tokenising the whole observation: non-canonical sampled ids stay as they are, and no BPE merge
  crosses a boundary between an action and the environment's text. The trajectories still store observation
  strings, and the learner re-tokenises them, so the actions are scored under slightly different prompts than they
  were sampled from (a small off-policy gap that the importance ratio of PPO does not see). The prefix check failing,
  or the ids outgrowing ``max_prompt_tokens``, falls back to re-tokenising that game's observation (cut to its newest
  turns), which is then re-tokenised every turn.

Models whose cache cannot be reused this way (encoder-decoders, models without ``position_ids``, sliding-window
attention, which counts the window in cache columns) are played by plain ``LanguagePolicy.generate`` every turn.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from archer.models.kv_cache import base_model, cache_keyword
from archer.models.policy import Generation, LanguagePolicy


def supports_kv_reuse(policy: LanguagePolicy) -> bool:
    """Whether the policy's model can continue from a cache with masked holes (see the module docstring)."""
    base = base_model(policy.model)
    config = base.config
    text_config = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    parameters = inspect.signature(base.forward).parameters
    return (
        not getattr(config, "is_encoder_decoder", False)
        and cache_keyword(base) is not None
        and "position_ids" in parameters
        and getattr(text_config, "sliding_window", None) is None
    )


def common_prefix_length(first: list[int], second: list[int]) -> int:
    """How many leading ids the two lists share."""
    n = min(len(first), len(second))
    return next((i for i in range(n) if first[i] != second[i]), n)


@dataclass
class _Game:
    """One live game's state between turns.

    Attributes:
        ids: the last turn's prompt ids followed by the body of the sampled action.
        cached: ``ids[:cached]`` have keys and values in the cache, in the game's last ``cached`` columns.
        text: token-in mode: the text ``ids`` decode to, when the new text may be appended to it; else None.
    """

    ids: list[int]
    cached: int
    text: str | None = None


@dataclass
class SessionStats:
    """Token counts of a session, for tests and benchmarks.

    Attributes:
        fed_tokens: prompt tokens run through the model (new text, plus anything re-encoded).
        reused_tokens: prompt tokens whose keys and values came from the cache.
        full_encodes: game-turns whose prompt had no cached prefix to reuse (every game's first turn included).
    """

    fed_tokens: int = 0
    reused_tokens: int = 0
    full_encodes: int = 0


@dataclass
class IncrementalSession:
    """Acts in one batch of games, turn after turn; ``play_batch`` gets one from ``IncrementalActor.start_batch``.

    Args:
        policy: the language policy.
        greedy: argmax decoding instead of sampling.
        append_token_ids: token in, token out instead of re-tokenising the observations (module docstring).
    """

    policy: LanguagePolicy
    greedy: bool
    append_token_ids: bool = False
    stats: SessionStats = field(default_factory=SessionStats)
    _slots: list[int] = field(default_factory=list)
    _games: list[_Game] = field(default_factory=list)
    _cache: DynamicCache | None = None

    def __call__(self, observations: list[str], slots: list[int]) -> Generation:
        """One action per live game.

        Args:
            observations: the live games' observations.
            slots: each game's slot in the batch: the same game keeps its slot on every turn.

        Returns:
            The actions with exactly the sampled ids, as ``LanguagePolicy.generate`` returns them.
        """
        if not observations:
            return Generation(texts=[], token_ids=[])
        if not supports_kv_reuse(self.policy) or self.policy.cfg.engine == "vllm":
            return self.policy.generate(observations, greedy=self.greedy)
        row_of = {slot: row for row, slot in enumerate(self._slots)}
        previous = [self._games[row_of[slot]] if slot in row_of else None for slot in slots]
        targets, appendable = self._targets(observations, previous)
        # At least the last target token is fed: its logits give the first action token.
        reuse = [
            min(common_prefix_length(target, game.ids[: game.cached]), len(target) - 1) if game is not None else 0
            for target, game in zip(targets, previous, strict=True)
        ]
        blocks = [target[n:] for target, n in zip(targets, reuse, strict=True)]
        self.stats.fed_tokens += sum(len(block) for block in blocks)
        self.stats.reused_tokens += sum(reuse)
        self.stats.full_encodes += sum(n == 0 for n in reuse)

        cache, width, cache_mask = self._select_rows(slots, row_of, previous, reuse)
        # The live rows are copied out: drop the last turn's cache before decoding, so that at most two caches (the
        # rows' and the compacted one) are alive at once. At Mistral-7B's size 128 games' cache is about 17 GiB.
        self._cache = None
        block_ids, block_mask = self.policy.left_pad(blocks)
        token_ids, cache = self.policy.decode_batch(
            block_ids, torch.cat([cache_mask, block_mask], dim=1), self.greedy, past_key_values=cache
        )
        bodies = [ids[:-1] if ids and ids[-1] in self.policy.terminator_ids else ids for ids in token_ids]
        # The last sampled column is never fed, so the cache may miss a body's last token (an action that hit
        # max_new_tokens); it is fed with the next turn's new text.
        sampled_columns = cache.get_seq_length() - width - block_ids.shape[1]
        kept = [min(len(body), sampled_columns) for body in bodies]
        self._compact(cache, width, block_ids.shape[1], previous, reuse, blocks, kept)
        self._slots = list(slots)
        self._games = []
        for target, body, n, block, k, text_ok in zip(targets, bodies, reuse, blocks, kept, appendable, strict=True):
            ids = target + body
            text = self._decode(ids) if self.append_token_ids and text_ok else None
            self._games.append(_Game(ids=ids, cached=n + len(block) + k, text=text))
        return Generation(texts=[self.policy.action_text(ids) for ids in token_ids], token_ids=token_ids)

    def _decode(self, ids: list[int]) -> str:
        return self.policy.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def _targets(self, observations: list[str], previous: list[_Game | None]) -> tuple[list[list[int]], list[bool]]:
        """The ids each game is conditioned on this turn, and whether they encode its prompt text exactly."""
        policy = self.policy
        if not self.append_token_ids:
            return policy.encode_prompts(observations), [False] * len(observations)
        targets: list[list[int] | None] = [None] * len(observations)
        for i, (observation, game) in enumerate(zip(observations, previous, strict=True)):
            prompt = policy.template(observation)
            if game is None or game.text is None or not prompt.startswith(game.text) or prompt == game.text:
                continue
            suffix = policy.tokenizer(prompt[len(game.text) :], add_special_tokens=False)["input_ids"]
            if len(game.ids) + len(suffix) <= policy.cfg.max_prompt_tokens:
                targets[i] = game.ids + list(suffix)
        appendable = [target is not None for target in targets]
        full = [i for i, target in enumerate(targets) if target is None]
        encoded = policy.encode_prompts([observations[i] for i in full]) if full else []
        for i, ids in zip(full, encoded, strict=True):
            targets[i] = ids
            # A truncated or normalised prompt is not its text: that game is re-encoded every turn.
            appendable[i] = self._decode(ids) == policy.template(observations[i])
        return [target for target in targets if target is not None], appendable

    def _select_rows(
        self, slots: list[int], row_of: dict[int, int], previous: list[_Game | None], reuse: list[int]
    ) -> tuple[DynamicCache, int, torch.Tensor]:
        """The cache rows of the live games, in ``slots`` order, and the (B, W) mask of the columns reused."""
        device = self.policy.device
        if self._cache is None or not any(reuse):
            return DynamicCache(), 0, torch.zeros((len(slots), 0), dtype=torch.long, device=device)
        width = self._cache.get_seq_length()
        # A new game takes any row: its columns are all masked.
        index = torch.tensor([row_of.get(slot, 0) for slot in slots], device=device)
        cache = DynamicCache(ddp_cache_data=[(k[index], v[index]) for k, v, *_ in self._cache])
        cached = torch.tensor([game.cached if game is not None else 0 for game in previous], device=device)
        start = width - cached  # a game's columns are right-aligned
        columns = torch.arange(width, device=device).unsqueeze(0)
        mask = (columns >= start.unsqueeze(1)) & (columns < (start + torch.tensor(reuse, device=device)).unsqueeze(1))
        return cache, width, mask.long()

    def _compact(
        self,
        cache: DynamicCache,
        width: int,
        block_width: int,
        previous: list[_Game | None],
        reuse: list[int],
        blocks: list[list[int]],
        kept: list[int],
    ) -> None:
        """Keep, right-aligned in each row, the reused, newly fed and sampled-body columns; drop all others."""
        rows = []
        for game, n, block, k in zip(previous, reuse, blocks, kept, strict=True):
            start = width - (game.cached if game is not None else 0)
            rows.append(
                list(range(start, start + n))
                + list(range(width + block_width - len(block), width + block_width))
                + list(range(width + block_width, width + block_width + k))
            )
        new_width = max(len(row) for row in rows)
        index = torch.tensor([[0] * (new_width - len(row)) + row for row in rows], device=self.policy.device)
        layers = []
        for keys, values, *_ in cache:
            gather = index[:, None, :, None].expand(-1, keys.shape[1], -1, keys.shape[3])
            layers.append((keys.gather(2, gather), values.gather(2, gather)))
        self._cache = DynamicCache(ddp_cache_data=layers)


@dataclass
class IncrementalActor:
    """An acting function for ``collect_trajectories`` that reuses each game's KV cache across turns.

    ``play_batch`` calls ``start_batch`` for every batch of games and then the session once per turn with the live
    games' observations and slots. The session returns the sampled token ids, so trajectories record them.

    Args:
        policy: the language policy.
        greedy: argmax decoding instead of sampling.
        append_token_ids: token in, token out (module docstring); defaults to ``model.policy.append_token_ids``.
    """

    policy: LanguagePolicy
    greedy: bool
    append_token_ids: bool | None = None

    def start_batch(self) -> IncrementalSession:
        append = self.policy.cfg.append_token_ids if self.append_token_ids is None else self.append_token_ids
        return IncrementalSession(self.policy, self.greedy, append_token_ids=append)
