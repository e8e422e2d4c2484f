"""Reading a history turn by turn: each line encoded apart, then a small transformer over the line vectors.

The reference's critic encodes the whole history as one text, so whether an utterance repeats an earlier turn has to
be found by the token encoder inside one long sequence. Here the text encoder sees one line at a time (a frozen one
encodes each distinct line once, whatever history it appears in) and a transformer whose positions are turns relates
the lines: a question asked twice is two equal vectors in the history, and with a frozen line encoder a critic step
costs a pass over at most ``max_turns`` vectors instead of hundreds of tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from archer.models.critic import TextEncoder


class TurnEncoder(nn.Module):
    """Turns strings into one vector each by reading them as sequences of lines.

    A text is split on ``separator`` (empty and blank pieces dropped) and its last ``max_turns`` lines are kept.
    Each line becomes a vector from ``line_encoder``, projected to ``n_embd`` and given its turn's position; a
    learned summary vector is put in front, and after ``n_layer`` bidirectional transformer layers the summary
    position's output is the text's vector. A text with no lines is read as the summary vector alone.

    Args:
        line_encoder: encodes single lines into (N, H) vectors.
        separator: what ends a line in the environment's observations.
        max_turns: how many of a text's last lines are read.
        n_layer: transformer layers over the line vectors.
        n_embd: width of the line vectors inside the transformer, and of the output.
        n_head: attention heads (must divide ``n_embd``).
    """

    def __init__(
        self,
        line_encoder: TextEncoder,
        separator: str = "\n",
        max_turns: int = 32,
        n_layer: int = 2,
        n_embd: int = 64,
        n_head: int = 4,
    ) -> None:
        super().__init__()
        if not separator:
            raise ValueError("model.critic.turns.separator: must not be empty")
        self.line_encoder = line_encoder
        self.separator = separator
        self.max_turns = max_turns
        self.project = nn.Linear(line_encoder.hidden_size, n_embd)
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

    def forward(self, texts: list[str]) -> torch.Tensor:
        """Encode B texts into a (B, n_embd) tensor."""
        per_text = [self.lines(text) for text in texts]
        distinct = list(dict.fromkeys(line for lines in per_text for line in lines))
        device = self.summary.device
        width = max((len(lines) for lines in per_text), default=0)
        tokens = self.summary.expand(len(texts), 1, -1)  # (B, 1, D)
        padding = torch.zeros(len(texts), 1 + width, dtype=torch.bool, device=device)
        if distinct:
            row_of = {line: row for row, line in enumerate(distinct)}
            line_vectors = self.project(self.line_encoder(distinct).to(self.project.weight.dtype))  # (N, D)
            index = torch.zeros(len(texts), width, dtype=torch.long, device=device)
            for i, lines in enumerate(per_text):
                index[i, : len(lines)] = torch.tensor([row_of[line] for line in lines], device=device)
                padding[i, 1 + len(lines) :] = True
            turns = line_vectors[index] + self.position.weight[1 : 1 + width]  # (B, T, D)
            tokens = torch.cat([tokens, turns], dim=1)
        return self.transformer(tokens, src_key_padding_mask=padding)[:, 0]
