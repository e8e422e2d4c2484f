"""Can a run's critic encoder tell a grid game's boards apart? Cosine similarities of the vectors it gives them.

Usage (from the repository root; the run's config name and critic overrides, as the run was started)::

    python dev/critic_lines.py --config-name archer_sokoban model.critic.name_or_path=minilm \\
      model.critic.pooling=mean model.critic.history=turns

The run's grid game deals ``--games`` starting boards (``env.reset``, its own seed); every distinct grid row (a line
that a critic reading the history turn by turn, ``model.critic.history=turns``, encodes on its own) and every
distinct whole observation is encoded by the run's critic text encoder, built as the run builds it (encoder,
pooling, truncation; a frozen or untrained one, as at the run's start). Printed and, with ``--json``, written:

- ``rows/cosine_one_cell``: the mean cosine between rows that differ in exactly one cell (a floor cell where a
  box stood); ``rows/cosine_same_cells``: between rows with the same cells in another order (the player or a box
  elsewhere along the row): how far the encoder's vector moves when the board does;
- ``rows/cosine_mean``, ``rows/cosine_min``: over every pair of distinct rows; ``rows/distinct``;
- ``observations/cosine_mean``, ``observations/distinct``: the same over the whole observations.

Heads trained by TD on vectors at cosine 0.99 must learn from differences a hundredth the size of the vectors
themselves: a critic that cannot tell the player's column from the vector of its row cannot rank the moves.
"""

from __future__ import annotations

import itertools
import logging
import statistics
import sys
from collections.abc import Sequence

import torch
from devkit import parse_run, run_parser, write_records

from archer.envs.grid_games.grid import GridGameEnv
from archer.envs.registry import make_env, make_oracle
from archer.models.critic import build_critic

log = logging.getLogger("critic_lines")
GRID_MARK = "Grid:\n"


def grid_rows(observation: str) -> list[str]:
    """The grid's rows of a grid game's observation (the lines after ``Grid:``)."""
    _, _, grid = observation.partition(GRID_MARK)
    return [row for row in grid.split("\n") if row.strip()]


def one_cell_pairs(rows: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of ``rows`` with the same cells but one (cells are separated by spaces)."""
    cells = [row.split() for row in rows]
    return [
        (i, j)
        for i, j in itertools.combinations(range(len(rows)), 2)
        if len(cells[i]) == len(cells[j]) and sum(a != b for a, b in zip(cells[i], cells[j], strict=True)) == 1
    ]


def same_cells_pairs(rows: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of distinct ``rows`` holding the same cells in another order (the player or a box moved along
    the row)."""
    cells = [sorted(row.split()) for row in rows]
    return [(i, j) for i, j in itertools.combinations(range(len(rows)), 2) if cells[i] == cells[j]]


def cosine_matrix(vectors: torch.Tensor) -> torch.Tensor:
    """Pairwise cosines of the rows of ``vectors`` (N, H), as an (N, N) float64 tensor."""
    unit = torch.nn.functional.normalize(vectors.double(), dim=-1)
    return unit @ unit.T


def cosine_figures(vectors: torch.Tensor, rows: Sequence[str]) -> dict[str, float]:
    """``rows/*`` figures (module docstring) from the vectors of distinct ``rows``; a figure without a pair is
    left out."""
    cosines = cosine_matrix(vectors)
    pairs = list(itertools.combinations(range(len(rows)), 2))
    figures = {"rows/distinct": float(len(rows))}
    if pairs:
        every = [cosines[i, j].item() for i, j in pairs]
        figures |= {"rows/cosine_mean": statistics.fmean(every), "rows/cosine_min": min(every)}
    for name, chosen in (("one_cell", one_cell_pairs(rows)), ("same_cells", same_cells_pairs(rows))):
        if chosen:
            figures[f"rows/cosine_{name}"] = statistics.fmean(cosines[i, j].item() for i, j in chosen)
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.split("\n\n")[0], default_config="archer_sokoban")
    parser.add_argument("--games", type=int, default=256, help="starting boards dealt (256)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the boards (0)")
    args, cfg = parse_run(parser, argv)
    if args.games <= 0:
        parser.error(f"--games must be positive, got {args.games}")
    env = make_env(cfg.env, seed=args.seed, oracle=make_oracle(cfg.env))
    if not isinstance(env, GridGameEnv):
        parser.error(f"--config-name {args.config_name} plays {cfg.env.name}, not a grid game")
    torch.manual_seed(args.seed)
    observations: set[str] = set()
    while len(observations) < args.games:
        before = len(observations)
        observations.update(env.reset(count=min(env.batch_size, args.games - len(observations))))
        if len(observations) == before:
            break  # the game deals fewer distinct boards than asked
    texts = sorted(observations)
    rows = sorted({row for text in texts for row in grid_rows(text)})
    critic = build_critic(cfg.model.critic, cfg.cache_dir, lambda: texts)
    critic.eval()
    with torch.no_grad():
        figures = cosine_figures(critic.text_encoder(rows), rows)
        whole = cosine_matrix(critic.text_encoder(texts))
    pairs = list(itertools.combinations(range(len(texts)), 2))
    figures["observations/distinct"] = float(len(texts))
    if pairs:
        figures["observations/cosine_mean"] = statistics.fmean(whole[i, j].item() for i, j in pairs)
    log.info("%s", " ".join(f"{key}={value:.4f}" for key, value in figures.items()))
    write_records(args.json, figures)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
