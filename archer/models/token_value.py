"""A token-level value model: a causal language model of its own with a scalar head on its last hidden state.

Used as the token baseline of ArCHer's low level (the paper's optional baseline was a separate
GPT-2) and as the value function of token-level PPO. It is deliberately a separate network, not a head on the
policy's hidden states: a shared trunk would let the value regression move the policy (and the policy gradient
move the values) unless every shared gradient were cut by hand. Here the two networks share nothing, each has its
own optimiser and its own gradient clipping.

The model reads exactly the policy's inputs: the policy's prompt encoding (template, left truncation, left
padding, positions from the attention mask) followed by the action's token ids, so ``values[i, j]`` is the value of
the state "observation + the first j tokens of action i", aligned with ``LanguagePolicy.token_logprobs``'s
``[i, j]`` (the column that predicts token j).
"""

from __future__ import annotations

import inspect
from dataclasses import replace

import torch
from torch import nn
from transformers import PreTrainedModel

from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy, left_align_actions, left_padded_positions, place_rows


class TokenValueModel(nn.Module):
    """``V(observation, action tokens before j)`` for every action token j.

    Args:
        lm: a causal language model (plain or ``peft.PeftModel``), not shared with the policy.
        policy: the policy whose prompt encoding the value model reads (same tokenizer and vocabulary as ``lm``).
            It is not a submodule: none of its parameters enter this model's ``parameters()`` or ``state_dict()``.

    The head is a ``Linear(hidden, 1)`` initialised to zero, so the model starts by predicting 0 everywhere (with a
    zero baseline, ArCHer's first baselined steps are exactly its unbaselined ones).
    """

    def __init__(self, lm: PreTrainedModel, policy: LanguagePolicy) -> None:
        super().__init__()
        self.lm = lm
        self.head = nn.Linear(lm.config.hidden_size, 1).to(device=policy.device, dtype=lm.dtype)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        # A plain attribute (LanguagePolicy is not a module), so the policy stays outside this module's state.
        self._policy = policy
        base = lm.get_base_model() if hasattr(lm, "get_base_model") else lm
        self._accepts_logits_to_keep = "logits_to_keep" in inspect.signature(base.forward).parameters

    def forward(self, observations: list[str], action_ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Values of every action-token prefix, laid out as ``LanguagePolicy.token_logprobs``.

        Args:
            observations: B observation strings.
            action_ids: B lists of action token ids, each non-empty.

        Returns:
            ``(values, mask)``, both (B, T) with T the longest action; ``values[i, j]`` is the value before action
            i's token j. Positions past an action's end hold 0 in both; the mask is float.
        """
        policy: LanguagePolicy = self._policy
        lengths = torch.tensor([len(ids) for ids in action_ids], device=policy.device)
        width = int(lengths.max().item())
        rows = [p + list(a) for p, a in zip(policy.encode_prompts(observations), action_ids, strict=True)]
        hidden = self._last_hidden_states(rows)[:, -(width + 1) : -1]  # (B, T, H): the columns predicting actions
        right_aligned = self.head(hidden).squeeze(-1).float()  # (B, T)
        # Left padding right-aligns the actions; move token j of every action to column j, as token_logprobs does.
        return left_align_actions(right_aligned, lengths)

    def _last_hidden_states(self, rows: list[list[int]]) -> torch.Tensor:
        """(B, L, H): the language model's last hidden states over ``rows`` of token ids, left-padded to L."""
        input_ids, attention_mask = self._policy.left_pad(rows)
        # Only the hidden states are used; logits_to_keep=1 spares the vocabulary projection of every position.
        extra = {"logits_to_keep": 1} if self._accepts_logits_to_keep else {}
        outputs = self.lm(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=left_padded_positions(attention_mask),
            output_hidden_states=True,
            use_cache=False,
            **extra,
        )
        return outputs.hidden_states[-1]

    def packed(
        self, observations: list[str], actions: list[str], action_ids: list[list[int]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward``'s values with turns scored inside longer turns' rows (``LanguagePolicy.pack_turns``).

        Causal attention makes the hidden state before each action token in a longer turn's row exactly the one
        of the turn's own row, so the values are ``forward``'s with far fewer tokens.

        Args:
            observations: B observation strings.
            actions: B action texts, the text the next observation continues with.
            action_ids: B lists of action token ids, each non-empty.
        """
        policy: LanguagePolicy = self._policy
        width = max(len(ids) for ids in action_ids)
        packing = policy.pack_turns(observations, actions, action_ids)
        values = torch.zeros((len(observations), width), device=policy.device)
        mask = torch.zeros_like(values)
        if packing.rows:
            hidden = self._last_hidden_states(packing.rows)
            scored = [
                (i, self.head(hidden[r, start : start + n]).squeeze(-1).float())
                for i, r, start, n in packing.positions(action_ids, hidden.shape[1])
            ]
            values, mask = place_rows(values, mask, scored)
        if packing.alone:
            single, _ = self.forward([observations[i] for i in packing.alone], [action_ids[i] for i in packing.alone])
            alone = [(i, single[k, : len(action_ids[i])]) for k, i in enumerate(packing.alone)]
            values, mask = place_rows(values, mask, alone)
        return values, mask


def build_token_value_model(policy: LanguagePolicy, source: str | None = None) -> TokenValueModel:
    """A value model whose language model is loaded by ``load_policy_model`` with the policy's config.

    It starts from the weights the policy was loaded from (the policy folder or hub model, plus the config's
    ``reference_checkpoint`` and LoRA settings), not from the policy's current weights, and shares no tensor with
    it.

    Args:
        policy: the policy; its config is reused and its model tells where it was loaded from.
        source: the folder or hub name to load; ``None`` uses the one the policy's model was loaded from
            (``config._name_or_path``; for the embedded model that is its cache folder).

    Raises:
        ValueError: the policy's model was not loaded with ``from_pretrained`` and no ``source`` was given.
    """
    source = source or getattr(policy.model.config, "_name_or_path", "") or None
    if source is None:
        raise ValueError(
            "the token value model is loaded from where the policy was loaded, but this policy model was not "
            "loaded from a folder or hub name; pass source="
        )

    def no_corpus() -> list[str]:
        raise ValueError(f"the value model's source {source!r} must be a folder or hub name, not 'embedded'")

    lm, _ = load_policy_model(replace(policy.cfg, name_or_path=source), cache_dir="", corpus=no_corpus)
    return TokenValueModel(lm.to(policy.device).eval(), policy)
