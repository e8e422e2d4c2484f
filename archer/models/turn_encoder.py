"""Reading a history turn by turn: each line encoded apart, then a small transformer over the line vectors.

The reference's critic encodes the whole history as one text, so whether an utterance repeats an earlier turn has to
be found by the token encoder inside one long sequence. Here the text encoder sees one line at a time (a frozen one
encodes each distinct line once, whatever history it appears in) and a transformer whose positions are turns relates
the lines: a question asked twice is two equal vectors in the history, and with a frozen line encoder a critic step
costs a pass over at most ``max_turns`` vectors instead of hundreds of tokens.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn


class LineEncoder(Protocol):
    """What reads the lines: strings in, one (N, ``hidden_size``) tensor out (``critic.TextEncoder`` is one)."""

    hidden_size: int

    def __call__(self, texts: list[str]) -> torch.Tensor: ...


class TurnEncoder(nn.Module):
    """Turns strings into one vector each by reading them as sequences of lines.

    A text is split on ``separator`` (empty and blank pieces dropped) and its last ``max_turns`` lines are kept.
    Each line becomes a vector from ``line_encoder``, projected to ``n_embd`` and given its turn's position; a
    learned summary vector is put in front, and after ``n_layer`` bidirectional transformer layers the summary
    position's output is the text's vector. A text with no lines is read as the summary vector alone.

    With ``reply_separator`` (``"? "`` in the question games), a line is read as an utterance and the reply that
    follows its last ``reply_separator``, encoded apart and projected apart: the history's ``"Is it a dog? No."``
    then holds exactly the vector of the utterance ``"Is it a dog?"``, so a repeated question is an exact match,
    and the reply ("No.") is not drowned in the question's words (a sentence encoder puts "Is it a dog? Yes." and
    "Is it a dog? No." at cosine 0.98). A line without the separator, and an action appended by ``forward``, is an
    utterance with a learned "no reply" vector.

    With ``action_similarity``, when an action is read after a history, each earlier turn's vector also carries
    how similar its utterance is to the action (the cosine of their line-encoder vectors, through a small learned
    map): the Q heads then see directly whether the action repeats an earlier turn and, in the same vector, what
    reply that turn got, instead of having to learn an equality test inside attention from TD targets alone.

    With ``repeat_similarity``, every turn (history lines and an appended action alike) also carries its utterance's
    highest cosine to any earlier turn's utterance, through its own small learned map: the V heads, which read the
    history without an action, then see that a line repeats an earlier question (and so ruled nothing out), which
    ``action_similarity`` shows only to Q. A next state's value reached after a repeat must be told from one
    reached after a new question for the bootstrapped Q target to rank the two moves.

    Args:
        line_encoder: encodes single lines into (N, H) vectors.
        separator: what ends a line in the environment's observations.
        max_turns: how many of a text's last lines are read.
        n_layer: transformer layers over the line vectors.
        n_embd: width of the line vectors inside the transformer, and of the output.
        n_head: attention heads (must divide ``n_embd``).
        reply_separator: what divides a line into utterance and reply; ``None`` reads each line whole.
        action_similarity: give each earlier turn its utterance's similarity to the action (see above).
        repeat_similarity: give each turn its utterance's highest similarity to an earlier turn's (see above).
    """

    def __init__(
        self,
        line_encoder: LineEncoder,
        separator: str = "\n",
        max_turns: int = 32,
        n_layer: int = 2,
        n_embd: int = 64,
        n_head: int = 4,
        reply_separator: str | None = None,
        action_similarity: bool = False,
        repeat_similarity: bool = False,
    ) -> None:
        super().__init__()
        if not separator:
            raise ValueError("model.critic.turns.separator: must not be empty")
        if reply_separator is not None and not reply_separator.strip():
            raise ValueError("model.critic.turns.reply_separator: must hold a visible character, or be null")
        self.line_encoder = line_encoder
        self.separator = separator
        self.max_turns = max_turns
        self.reply_separator = reply_separator
        self.project = nn.Linear(line_encoder.hidden_size, n_embd)
        if reply_separator is not None:
            self.project_reply = nn.Linear(line_encoder.hidden_size, n_embd)
            self.no_reply = nn.Parameter(torch.randn(n_embd) * 0.02)
        self.action_similarity = action_similarity
        if action_similarity:
            # A small non-linear map, so that "equal" (cosine 1) can be told from "much alike" (0.9).
            self.similarity = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, n_embd))
        self.repeat_similarity = repeat_similarity
        if repeat_similarity:
            self.repeat = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, n_embd))
        self.position = nn.Embedding(max_turns + 1, n_embd)  # position 0 is the summary's
        self.summary = nn.Parameter(torch.randn(n_embd) * 0.02)
        layer = nn.TransformerEncoderLayer(n_embd, n_head, 4 * n_embd, dropout=0.0, batch_first=True)
        # Nested tensors would make train and eval mode compute differently for the same input.
        self.transformer = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.n_embd = n_embd

    @property
    def hidden_size(self) -> int:
        return self.n_embd

    def lines(self, text: str) -> list[str]:
        """The lines of ``text`` that are read: non-blank pieces between separators, the last ``max_turns``."""
        pieces = [piece for piece in text.split(self.separator) if piece.strip()]
        return pieces[-self.max_turns :]

    def split_reply(self, line: str) -> tuple[str, str | None]:
        """``(utterance, reply)`` of a history line; the reply is ``None`` without a ``reply_separator`` in it."""
        if self.reply_separator is None or self.reply_separator not in line:
            return line, None
        cut = line.rindex(self.reply_separator)
        reply = line[cut + len(self.reply_separator) :].strip()
        if not reply:
            return line, None
        return line[:cut] + self.reply_separator.rstrip(), reply

    def forward(self, texts: list[str], actions: list[str] | None = None) -> torch.Tensor:
        """Encode B texts into a (B, n_embd) tensor.

        Args:
            texts: B histories.
            actions: if given, B utterances each read as one more turn after its history, with no reply (the
                critic's ``q_input: joint``); an action is never split at ``reply_separator``, and a blank one adds
                no turn.
        """
        per_text: list[list[tuple[str, str | None]]] = [
            [self.split_reply(line) for line in self.lines(text)] for text in texts
        ]
        with_action = [False] * len(texts)
        if actions is not None:
            # A blank action adds no turn, as a blank line adds none to a history.
            with_action = [bool(action.strip()) for action in actions]
            per_text = [
                (turns + [(action, None)] if has else turns)[-self.max_turns :]
                for turns, action, has in zip(per_text, actions, with_action, strict=True)
            ]
        utterances = list(dict.fromkeys(u for turns in per_text for u, _ in turns))
        replies = list(dict.fromkeys(r for turns in per_text for _, r in turns if r is not None))
        device = self.summary.device
        width = max((len(turns) for turns in per_text), default=0)
        tokens = self.summary.expand(len(texts), 1, -1)  # (B, 1, D)
        padding = torch.zeros(len(texts), 1 + width, dtype=torch.bool, device=device)
        if utterances:
            dtype = self.project.weight.dtype
            row_of = {u: row for row, u in enumerate(utterances)}
            encoded_utterances = self.line_encoder(utterances).to(dtype)  # (N, H)
            utterance_vectors = self.project(encoded_utterances)  # (N, D)
            index = torch.zeros(len(texts), width, dtype=torch.long, device=device)
            for i, turns in enumerate(per_text):
                index[i, : len(turns)] = torch.tensor([row_of[u] for u, _ in turns], device=device)
                padding[i, 1 + len(turns) :] = True
            turn_vectors = utterance_vectors[index]  # (B, T, D)
            if self.reply_separator is not None:
                # Row 0 is "no reply"; replies follow in order.
                reply_rows = {r: row + 1 for row, r in enumerate(replies)}
                reply_vectors = self.no_reply.unsqueeze(0)
                if replies:
                    encoded = self.project_reply(self.line_encoder(replies).to(dtype))
                    reply_vectors = torch.cat([reply_vectors, encoded])  # (1 + R, D)
                reply_index = torch.zeros(len(texts), width, dtype=torch.long, device=device)
                for i, turns in enumerate(per_text):
                    rows = [0 if r is None else reply_rows[r] for _, r in turns]
                    reply_index[i, : len(turns)] = torch.tensor(rows, dtype=torch.long, device=device)
                turn_vectors = turn_vectors + reply_vectors[reply_index]
            if self.action_similarity and any(with_action):
                turn_vectors = turn_vectors + self.similarity(
                    self._action_similarities(encoded_utterances, index, per_text, with_action).unsqueeze(-1)
                )
            if self.repeat_similarity:
                turn_vectors = turn_vectors + self.repeat(
                    self._repeat_similarities(encoded_utterances, index).unsqueeze(-1)
                )
            turns_in = turn_vectors + self.position.weight[1 : 1 + width]
            tokens = torch.cat([tokens, turns_in], dim=1)
        return self.transformer(tokens, src_key_padding_mask=padding)[:, 0]

    @staticmethod
    def _action_similarities(
        encoded: torch.Tensor,
        index: torch.Tensor,
        per_text: list[list[tuple[str, str | None]]],
        with_action: list[bool],
    ) -> torch.Tensor:
        """(B, T) cosine between each earlier turn's utterance and the action (the text's last turn); 0 elsewhere.

        Args:
            encoded: (N, H) line-encoder vectors of the distinct utterances.
            index: (B, T) row of ``encoded`` for each turn (padding rows are arbitrary).
            per_text: each text's turns; with_action: whether its last turn is an action.
        """
        unit = torch.nn.functional.normalize(encoded, dim=-1)
        turns = unit[index]  # (B, T, H)
        lengths = torch.tensor([len(t) for t in per_text], device=index.device)
        last = (lengths - 1).clamp(min=0)
        action = turns[torch.arange(len(per_text), device=index.device), last]  # (B, H)
        cosine = (turns * action.unsqueeze(1)).sum(-1)  # (B, T)
        columns = torch.arange(index.shape[1], device=index.device).unsqueeze(0)
        earlier = columns < last.unsqueeze(1)
        has_action = torch.tensor(with_action, device=index.device).unsqueeze(1)
        return cosine.masked_fill(~(earlier & has_action), 0.0)

    @staticmethod
    def _repeat_similarities(encoded: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """(B, T) each turn's highest cosine to an earlier turn's utterance in its text; 0 at the first turn.

        Padding turns come after a text's last turn, so they are never an earlier turn of a real one; their own
        values are read by no one (attention masks them).

        Args:
            encoded: (N, H) line-encoder vectors of the distinct utterances.
            index: (B, T) row of ``encoded`` for each turn.
        """
        unit = torch.nn.functional.normalize(encoded, dim=-1)
        turns = unit[index]  # (B, T, H)
        cosine = turns @ turns.transpose(1, 2)  # (B, T, T): [b, t, j] = cos(turn t, turn j)
        width = index.shape[1]
        earlier = torch.ones(width, width, dtype=torch.bool, device=index.device).tril(diagonal=-1)
        best = cosine.masked_fill(~earlier, float("-inf")).amax(dim=-1)
        return torch.where(torch.isinf(best), torch.zeros_like(best), best)
