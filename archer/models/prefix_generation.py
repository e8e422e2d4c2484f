"""Sampling at many replay states at once, with the keys and values of shared prompt prefixes computed once
(``model.policy.share_prefixes``).

ArCHer samples a fresh policy action at every replay state it trains on (the critic's V targets, the actor's
samples). A state is a whole game history, and the states of one game are prefixes of each other, so re-encoding
every prompt from scratch (``LanguagePolicy.generate``) spends nearly all its time on prefill recomputing the same
keys and values. Here the prompts are encoded exactly as ``generate`` encodes them (``encode_prompts``: template,
long histories cut) and grouped into *chains*: longest first, a prompt whose ids are a prefix of a longer prompt's ids
joins the first such chain head, otherwise it heads a chain of its own. Only the heads are prefilled (left-padded
groups of similar lengths, no gradient, eval mode). Every row (one per observation; duplicates are separate rows,
each with its own sample) then takes the first ``p - 1`` keys and values of its head's cache row, p being the row's
prompt length, and feeds its prompt's last token; ``LanguagePolicy.decode_batch`` continues from there. Causal
attention makes a head's first ``p - 1`` keys and values exactly those of the row's own prompt, and Hugging Face
decoder models count positions from the attention mask, so left padding changes nothing (the mechanism
``archer.models.incremental`` uses across turns): each row samples from exactly the distribution ``generate``
samples from, up to floating-point summation order. Only the order in which torch's global generator is drawn from
differs, so a sampled run is not bit-identical to one without the switch. The rows' prefixes are gathered
right-aligned into a left-padded cache rather than selected as whole head rows with the unwanted columns masked:
equally exact, but decoding then attends over (and copies, at every step) only as many columns as the chunk's
longest prompt, not its head's.

A prompt whose history was cut to ``max_prompt_tokens`` (its oldest turns dropped) is rarely a prefix of another
past its head: such rows simply head their own chains. Models whose cache cannot be continued this way
(``supports_kv_reuse``) are sampled by plain ``LanguagePolicy.generate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from archer.models.incremental import supports_kv_reuse
from archer.models.kv_cache import cache_argument, returned_cache
from archer.models.policy import Generation, LanguagePolicy, left_padded_positions
from archer.models.sharding import gathered


@dataclass
class PrefixStats:
    """Token counts of prefix-sharing generation, accumulated over calls, for tests and benchmarks.

    Attributes:
        rows: observations sampled at (one action each).
        heads: chains, i.e. prompts prefilled.
        prompt_tokens: the rows' prompt tokens: what ``LanguagePolicy.generate`` would prefill.
        prefilled_tokens: the chain heads' prompt tokens: what was prefilled instead.
    """

    rows: int = 0
    heads: int = 0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0


def group_into_chains(prompts: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """Group prompts into chains whose members are prefixes of their head.

    Prompts are taken longest first (ties in input order); a prompt whose ids are a prefix of an earlier head's ids
    (an identical prompt included) joins the first such head, otherwise it becomes a head. A trie over the heads'
    ids, each node remembering the first head through it, makes this linear in the total number of ids.

    Args:
        prompts: N non-empty lists of token ids.

    Returns:
        ``(heads, chain)``: the indices into ``prompts`` of the H chain heads, longest first, and for each of the N
        prompts the position in ``heads`` of its chain's head.
    """
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    children: dict[tuple[int, int], int] = {}  # (node, token) -> child node; node 0 is the root
    owner = [-1]  # per trie node: position in heads of the first head through it
    heads: list[int] = []
    chain = [0] * len(prompts)
    for i in order:
        node = 0
        for token in prompts[i]:
            node = children.get((node, token), -1)
            if node < 0:
                break
        if node > 0:
            chain[i] = owner[node]
            continue
        chain[i] = len(heads)
        heads.append(i)
        node = 0
        for token in prompts[i]:
            child = children.get((node, token))
            if child is None:
                child = children[(node, token)] = len(owner)
                owner.append(chain[i])
            node = child
    return heads, chain


# Prompts are prefilled in groups whose shortest prompt has at least this fraction of the longest one's tokens, so
# left padding wastes at most a quarter of the prefill (one batch of heads of all lengths wasted about half).
MIN_PREFILL_FILL = 0.75


def _padded_like(tensor: torch.Tensor, rows: int, width: int) -> torch.Tensor:
    """Zeros shaped as a cache ``tensor`` (batch, heads, columns, head_dim) but of ``rows`` rows, ``width`` columns."""
    return tensor.new_zeros((rows, tensor.shape[1], width, tensor.shape[3]))


def prefill(policy: LanguagePolicy, prompts: list[list[int]]) -> DynamicCache:
    """Keys and values of ``prompts``, computed without gradients and in eval mode, as one left-padded cache.

    The prompts are run in groups of similar lengths (``MIN_PREFILL_FILL``), each left-padded as
    ``LanguagePolicy.left_pad`` pads them, with positions counted from the attention mask as in ``generate``'s own
    prefill; the groups' caches are then right-aligned into one. The model's previous train/eval mode is restored.

    Args:
        policy: the language policy.
        prompts: B non-empty lists of prompt ids.

    Returns:
        The cache: per layer, keys and values of shape (B, heads, W, head_dim), W the longest prompt; prompt i
        fills the last ``len(prompts[i])`` columns of row i (the columns before hold zeros).
    """
    generator = policy._generator()
    # Only the cache is wanted: skip the vocabulary projection of every position but the last.
    extra = {"logits_to_keep": 1} if policy._accepts_logits_to_keep else {}
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    groups: list[list[int]] = []
    for i in order:
        if not groups or len(prompts[i]) < MIN_PREFILL_FILL * len(prompts[groups[-1][0]]):
            groups.append([])
        groups[-1].append(i)
    width = len(prompts[order[0]])
    layers: list[tuple[torch.Tensor, torch.Tensor]] = []
    was_training = generator.training
    generator.eval()
    try:
        for group in groups:
            input_ids, attention_mask = policy.left_pad([prompts[i] for i in group])
            with torch.no_grad():
                output = generator(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    position_ids=left_padded_positions(attention_mask),
                    use_cache=True,
                    **cache_argument(generator, DynamicCache()),
                    **extra,
                )
            if not layers:
                layers = [
                    (_padded_like(keys, len(prompts), width), _padded_like(values, len(prompts), width))
                    for keys, values, *_ in returned_cache(output)
                ]
            rows = torch.tensor(group, device=input_ids.device)
            for (keys, values, *_), (all_keys, all_values) in zip(returned_cache(output), layers, strict=True):
                all_keys[rows, :, width - keys.shape[2] :] = keys
                all_values[rows, :, width - values.shape[2] :] = values
    finally:
        generator.train(was_training)
    return DynamicCache(ddp_cache_data=layers)


def continuation_inputs(
    policy: LanguagePolicy, cache: DynamicCache, head_lengths: list[int], rows: list[tuple[int, list[int]]]
) -> tuple[torch.Tensor, torch.Tensor, DynamicCache | None]:
    """Inputs that continue each row's prompt from its chain head's cache (module docstring).

    A row keeps the first ``len(prompt) - 1`` of its head's columns. They are gathered right-aligned, so the rows'
    cache is left-padded as a fresh batch of those prefixes would be, and only as wide as the longest one: a short
    prompt of a long head does not make every later decoding step attend over (and copy) the head's full width.

    Args:
        policy: the language policy.
        cache: the heads' cache from ``prefill``, of width W.
        head_lengths: the prompt length of each head in ``cache``.
        rows: B pairs ``(head, prompt)``: the row of ``cache`` holding the prompt's head, and the prompt's ids (a
            non-empty prefix of that head's ids).

    Returns:
        ``(input_ids, attention_mask, row_cache)``: the (B, 1) last prompt tokens, the (B, C + 1) mask over the
        cache's C columns and the input, and the rows' cache, of width C the longest kept prefix (``None`` when C is
        0: every prompt is one token).
    """
    device = policy.device
    kept = torch.tensor([len(prompt) - 1 for _, prompt in rows], device=device)
    columns = int(kept.max())
    input_ids = torch.tensor([[prompt[-1]] for _, prompt in rows], dtype=torch.long, device=device)
    offsets = torch.arange(columns, device=device).unsqueeze(0) - (columns - kept).unsqueeze(1)  # (B, C)
    cache_mask = (offsets >= 0).long()  # a negative offset is left padding
    attention_mask = torch.cat([cache_mask, torch.ones_like(input_ids)], dim=1)
    if columns == 0:
        return input_ids, attention_mask, None
    heads = torch.tensor([head for head, _ in rows], device=device)
    # A head's prompt fills the last head_length columns of its row; padding reads its first column (masked anyway).
    starts = cache.get_seq_length() - torch.tensor(head_lengths, device=device)[heads]
    source = (starts.unsqueeze(1) + offsets).clamp(min=0)  # (B, C)
    # keys[heads, :, source] is (B, C, heads, head_dim): advanced indices split by a slice come first.
    layers = [
        (keys[heads.unsqueeze(1), :, source].transpose(1, 2), values[heads.unsqueeze(1), :, source].transpose(1, 2))
        for keys, values, *_ in cache
    ]
    return input_ids, attention_mask, DynamicCache(ddp_cache_data=layers)


def generate_sharing_prefixes(
    policy: LanguagePolicy,
    observations: list[str],
    greedy: bool,
    batch_size: int | None = None,
    stats: PrefixStats | None = None,
) -> Generation:
    """``policy.generate(observations, greedy, batch_size)``, prefilling shared prompt prefixes once.

    Each observation gets its own action (duplicates included), drawn from exactly the distribution ``generate``
    draws from (module docstring). Runs without gradients and in eval mode, restoring the model's mode; sampling
    draws from torch's global generator. With a sharded policy the weights are gathered once for the whole call.

    Args:
        policy: the language policy; sampled by plain ``generate`` when ``supports_kv_reuse`` is false.
        observations: B observation strings.
        greedy: argmax decoding instead of sampling with the configured temperature, top-k and top-p.
        batch_size: chain heads per prefill and rows per ``decode_batch`` call; ``None`` does all at once.
        stats: if given, this call's token counts are added to it (not by the ``generate`` fallback).

    Returns:
        The action texts and the sampled token ids, as ``LanguagePolicy.generate`` returns them.
    """
    if not observations:
        return Generation(texts=[], token_ids=[])
    if not supports_kv_reuse(policy):
        return policy.generate(observations, greedy=greedy, batch_size=batch_size)
    prompts = policy.encode_prompts(observations)
    heads, chain = group_into_chains(prompts)
    if stats is not None:
        stats.rows += len(prompts)
        stats.heads += len(heads)
        stats.prompt_tokens += sum(len(prompt) for prompt in prompts)
        stats.prefilled_tokens += sum(len(prompts[head]) for head in heads)
    members: list[list[int]] = [[] for _ in heads]
    for row, position in enumerate(chain):
        members[position].append(row)
    step = batch_size or len(observations)
    token_ids: list[list[int]] = [[] for _ in observations]
    with gathered(policy.model):
        # A batch of heads' cache lives only while the rows of its chains are decoded, which bounds memory by one
        # batch of heads plus one batch of rows.
        for first in range(0, len(heads), step):
            batch = heads[first : first + step]
            head_prompts = [prompts[head] for head in batch]
            cache = prefill(policy, head_prompts)
            # Rows of similar prompt lengths decode together, so each chunk's cache is about as wide as its rows.
            rows = sorted(
                ((k, row) for k in range(len(batch)) for row in members[first + k]), key=lambda r: -len(prompts[r[1]])
            )
            for start in range(0, len(rows), step):
                chunk = rows[start : start + step]
                input_ids, attention_mask, row_cache = continuation_inputs(
                    policy, cache, [len(prompt) for prompt in head_prompts], [(k, prompts[row]) for k, row in chunk]
                )
                sampled, _ = policy.decode_batch(input_ids, attention_mask, greedy, past_key_values=row_cache)
                for (_, row), ids in zip(chunk, sampled, strict=True):
                    token_ids[row] = ids
    return Generation(texts=[policy.action_text(ids) for ids in token_ids], token_ids=token_ids)


def generate_at_states(
    policy: LanguagePolicy, observations: list[str], greedy: bool, batch_size: int | None = None
) -> Generation:
    """One action per replay state, for algorithms that sample at many states at once.

    ``generate_sharing_prefixes`` with ``model.policy.share_prefixes``, else ``policy.generate`` on the states
    longest first, so each batch of ``batch_size`` holds prompts of similar lengths (a batch is padded
    to its longest prompt, and random replay states range from a game's first turn to its last); the actions come
    back in the order of ``observations``. Both sample from the same distribution; only the order in which torch's
    generator is drawn from differs.

    Args:
        policy: the language policy.
        observations: B observation strings.
        greedy: argmax decoding instead of sampling.
        batch_size: prompts per model call; ``None`` does all B at once.

    Returns:
        The action texts and the sampled token ids.
    """
    if policy.cfg.engine == "vllm":  # the engine batches and shares prefixes itself
        return policy.generate(observations, greedy=greedy)
    if policy.cfg.share_prefixes:
        return generate_sharing_prefixes(policy, observations, greedy, batch_size)
    if batch_size is None or batch_size >= len(observations):
        return policy.generate(observations, greedy=greedy, batch_size=batch_size)
    # Text length stands in for token length: exact among the states of one game, close across games.
    order = sorted(range(len(observations)), key=lambda i: -len(observations[i]))
    generation = policy.generate([observations[i] for i in order], greedy=greedy, batch_size=batch_size)
    texts: list[str] = [""] * len(observations)
    token_ids: list[list[int]] = [[] for _ in observations]
    for position, i in enumerate(order):
        texts[i], token_ids[i] = generation.texts[position], generation.token_ids[position]
    return Generation(texts=texts, token_ids=token_ids)
