"""Does a grid game's board determine its cloning data's move? (Sokoban, FrozenLake)

A softmax classifier linear in the one-hot cells of each observation's grid is fitted on a share of the cloning
data's transitions (``--train-share``) and scored on the rest, beside the moves' frequencies (all a policy blind to
the board can learn). An accuracy well above the most frequent move's share says the board carries the move in a
form even a linear model reads: a clone that stays blind to it (``eval/move_state_dependence`` near 0) failed to
read it, the data did not fail to hold it.

Usage (the run's config and overrides pick the game and its data, generated and cached as the run would)::

    python dev/board_signal.py --config-name bc_sokoban
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

import torch
from devkit import parse_run, run_parser, write_records
from torch import nn

from archer.data.trajectory import Trajectory
from archer.utils import resolve_cache_dir

GRID_HEADER = "Grid:\n"


def grid_cells(observation: str) -> list[str]:
    """The cells of the grid an observation shows (``GridEnv.observation``: the lines after ``Grid:``, cells
    separated by spaces), row by row."""
    _, _, grid = observation.partition(GRID_HEADER)
    return [cell for row in grid.strip().splitlines() for cell in row.split(" ")]


def transitions(trajectories: Sequence[Trajectory]) -> list[tuple[list[str], str]]:
    """(grid cells, move) of every step of the games, the move stripped."""
    return [
        (grid_cells(observation), action.strip())
        for trajectory in trajectories
        for observation, action in zip(trajectory.observations, trajectory.actions, strict=False)
    ]


def board_signal(
    examples: Sequence[tuple[list[str], str]], train_share: float = 0.8, epochs: int = 200, seed: int = 0
) -> dict[str, float]:
    """Fit the linear classifier on ``train_share`` of ``examples`` (shuffled with ``seed``) and score the rest.

    Returns:
        ``held_out_accuracy`` and ``held_out_cross_entropy`` of the classifier; ``frequency_accuracy`` (the most
        frequent training move's share of the held-out moves) and ``frequency_cross_entropy`` (of the training
        moves' frequencies), what a blind policy reaches; ``train_accuracy``; the counts.
    """
    shapes = {len(cells) for cells, _ in examples}
    if len(shapes) != 1:
        raise ValueError(f"grids of different sizes ({sorted(shapes)} cells): one board size at a time")
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    cut = int(len(order) * train_share)
    if not 0 < cut < len(order):
        raise ValueError(f"train_share {train_share} leaves no training or no held-out transitions")
    symbols = sorted({cell for cells, _ in examples for cell in cells})
    moves = sorted({move for _, move in examples})
    cell_index = torch.tensor([[symbols.index(c) for c in cells] for cells, _ in examples])
    features = nn.functional.one_hot(cell_index, len(symbols)).flatten(1).float()
    labels = torch.tensor([moves.index(move) for _, move in examples])
    train, held = torch.tensor(order[:cut]), torch.tensor(order[cut:])

    torch.manual_seed(seed)
    model = nn.Linear(features.shape[1], len(moves))
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=epochs, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        # A little weight decay: a cell seen once must not decide its move alone.
        loss = nn.functional.cross_entropy(model(features[train]), labels[train]) + 1e-3 * model.weight.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        logits = model(features)
    counts = Counter(labels[train].tolist())
    frequencies = torch.tensor([counts.get(m, 0) / len(train) for m in range(len(moves))])
    held_labels = labels[held]
    return {
        "held_out_accuracy": (logits[held].argmax(1) == held_labels).float().mean().item(),
        "held_out_cross_entropy": nn.functional.cross_entropy(logits[held], held_labels).item(),
        "train_accuracy": (logits[train].argmax(1) == labels[train]).float().mean().item(),
        "frequency_accuracy": (held_labels == int(frequencies.argmax())).float().mean().item(),
        "frequency_cross_entropy": -sum(math.log(max(frequencies[m].item(), 1e-12)) for m in held_labels.tolist())
        / len(held_labels),
        "train_transitions": float(len(train)),
        "held_out_transitions": float(len(held)),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.splitlines()[0], default_config="bc_sokoban")
    parser.add_argument("--train-share", type=float, default=0.8, help="share of transitions fitted on (0.8)")
    parser.add_argument("--seed", type=int, default=0, help="the split's and the classifier's seed (0)")
    args, cfg = parse_run(parser, argv)
    from archer.envs.grid_games.players import offline_trajectories

    trajectories = offline_trajectories(cfg, resolve_cache_dir(cfg.cache_dir))
    figures = board_signal(transitions(trajectories), args.train_share, seed=args.seed)
    print(f"{cfg.env.name}: {len(trajectories)} games")
    print(" ".join(f"{key}={value:.3f}" for key, value in figures.items()))
    write_records(args.json, figures)
    return figures


if __name__ == "__main__":
    main()
