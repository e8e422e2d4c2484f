"""Does a grid game's board determine its cloning data's move? (Sokoban, FrozenLake)

A softmax classifier linear in the one-hot cells of each observation's grid is fitted on a share of the cloning
data's transitions (``--train-share``) and scored on the rest, beside the moves' frequencies (all a policy blind to
the board can learn). An accuracy well above the most frequent move's share says the board carries the move in a
form even a linear model reads: a clone that stays blind to it (``eval/move_state_dependence`` near 0) failed to
read it, the data did not fail to hold it.

``--policy-steps N`` asks the same of the run's own policy: it is built untrained as the run builds it (the
embedded model, or ``model.policy.name_or_path``) and fitted for N steps, at the run's ``algorithm.actor_lr`` and
``algorithm.batch_size``, to the first token of each training move after its prompt (the observation, as the
``plain`` template gives it; ``--prompt grid`` keeps only the grid); every ``--policy-every`` steps its held-out
cross-entropy over the vocabulary and its accuracy (the likeliest of the moves) are printed. A policy that reads a
grid-only prompt within N steps but not the whole observation is held back by the instructions' tokens around
the grid, not by the grid.

Usage (the run's config and overrides pick the game and its data, generated and cached as the run would)::

    python dev/board_signal.py --config-name bc_sokoban
    python dev/board_signal.py --config-name bc_sokoban --policy-steps 600 --prompt grid torch_threads=1
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

import torch
from devkit import parse_run, run_parser, write_records
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from archer.data.trajectory import Trajectory
from archer.envs.grid_games.grid import GRID_HEADER
from archer.utils import resolve_cache_dir


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


def split(count: int, train_share: float, seed: int) -> tuple[list[int], int]:
    """The example indices shuffled with ``seed`` and the cut: the first ``cut`` are fitted on, the rest held out.

    Raises:
        ValueError: ``train_share`` leaves no training or no held-out example.
    """
    order = list(range(count))
    random.Random(seed).shuffle(order)
    cut = int(count * train_share)
    if not 0 < cut < count:
        raise ValueError(f"train_share {train_share} leaves no training or no held-out transitions")
    return order, cut


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
    order, cut = split(len(examples), train_share, seed)
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


def prompts_and_moves(trajectories: Sequence[Trajectory], prompt: str = "full") -> list[tuple[str, str]]:
    """(prompt, move) of every step of the games: the whole observation (``full``) or its grid alone (``grid``:
    ``Grid:`` and the lines after it); the move stripped."""
    if prompt not in ("full", "grid"):
        raise ValueError(f"unknown prompt {prompt!r}; choose 'full' or 'grid'")
    return [
        (observation if prompt == "full" else GRID_HEADER + observation.partition(GRID_HEADER)[2], action.strip())
        for trajectory in trajectories
        for observation, action in zip(trajectory.observations, trajectory.actions, strict=False)
    ]


def policy_signal(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[tuple[str, str]],
    steps: int,
    lr: float,
    batch_size: int,
    every: int,
    train_share: float = 0.8,
    seed: int = 0,
) -> list[dict[str, float]]:
    """Fit ``model`` to the first token of each move after its prompt and score the held-out examples.

    The split is ``board_signal``'s (the same shuffle of ``examples`` with ``seed``). Adam at ``lr``, batches of
    ``batch_size`` drawn from the training share, gradients clipped to norm 1 (as the trainer's actor updates).

    Returns:
        One record at step 0 and every ``every`` steps up to ``steps``: ``step``, ``held_out_cross_entropy`` (over
        the whole vocabulary) and ``held_out_accuracy`` (the move whose first token is likeliest).

    Raises:
        ValueError: two moves share their first token (the fit could not tell them apart).
    """
    moves = sorted({move for _, move in examples})
    first_ids = [tokenizer(move, add_special_tokens=False)["input_ids"][0] for move in moves]
    if len(set(first_ids)) != len(moves):
        raise ValueError(f"the moves {moves} do not start with distinct tokens")
    order, cut = split(len(examples), train_share, seed)
    train = [examples[i] for i in order[:cut]]
    held = [examples[i] for i in order[cut:]]
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    candidates = torch.tensor(first_ids)

    def logits_and_labels(batch: Sequence[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor]:
        encoded = tokenizer([p for p, _ in batch], return_tensors="pt", padding=True, add_special_tokens=False)
        # Positions counted from each prompt's first token, as the policy's generation counts them.
        positions = (encoded["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        logits = model(**encoded, position_ids=positions).logits[:, -1, :]
        return logits, torch.tensor([first_ids[moves.index(m)] for _, m in batch])

    def score(step: int) -> dict[str, float]:
        model.eval()
        loss, correct = 0.0, 0
        with torch.no_grad():
            for start in range(0, len(held), 64):
                logits, labels = logits_and_labels(held[start : start + 64])
                loss += nn.functional.cross_entropy(logits, labels, reduction="sum").item()
                correct += int((candidates[logits[:, candidates].argmax(1)] == labels).sum())
        model.train()
        return {
            "step": float(step),
            "held_out_cross_entropy": loss / len(held),
            "held_out_accuracy": correct / len(held),
        }

    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    records = [score(0)]
    for step in range(1, steps + 1):
        logits, labels = logits_and_labels(rng.sample(train, min(batch_size, len(train))))
        loss = nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % every == 0 or step == steps:
            records.append(score(step))
    return records


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = run_parser(__doc__.splitlines()[0], default_config="bc_sokoban")
    parser.add_argument("--train-share", type=float, default=0.8, help="share of transitions fitted on (0.8)")
    parser.add_argument("--seed", type=int, default=0, help="the split's and the classifier's seed (0)")
    parser.add_argument("--policy-steps", type=int, default=0, help="also fit the run's policy this many steps (0)")
    parser.add_argument("--policy-every", type=int, default=100, help="score the policy every this many steps (100)")
    parser.add_argument("--prompt", choices=("full", "grid"), default="full", help="the policy's prompt (full)")
    args, cfg = parse_run(parser, argv)
    from archer.envs.grid_games.players import offline_trajectories
    from archer.envs.registry import make_env
    from archer.models.loading import load_policy_model

    trajectories = offline_trajectories(cfg, resolve_cache_dir(cfg.cache_dir))
    figures = board_signal(transitions(trajectories), args.train_share, seed=args.seed)
    print(f"{cfg.env.name}: {len(trajectories)} games")
    print(" ".join(f"{key}={value:.3f}" for key, value in figures.items()), flush=True)
    if args.policy_steps > 0:
        if cfg.torch_threads:
            torch.set_num_threads(cfg.torch_threads)
        env = make_env(cfg.env, seed=cfg.seed)
        model, tokenizer = load_policy_model(cfg.model.policy, str(resolve_cache_dir(cfg.cache_dir)), env.corpus)
        examples = prompts_and_moves(trajectories, args.prompt)
        records = policy_signal(
            model,
            tokenizer,
            examples,
            args.policy_steps,
            cfg.algorithm.actor_lr,
            cfg.algorithm.batch_size,
            args.policy_every,
            args.train_share,
            args.seed,
        )
        for record in records:
            print(f"policy ({args.prompt} prompt) " + " ".join(f"{k}={v:.3f}" for k, v in record.items()), flush=True)
        figures |= {f"policy_{key}": value for key, value in records[-1].items()}
    write_records(args.json, figures)
    return figures


if __name__ == "__main__":
    main()
