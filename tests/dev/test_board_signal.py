"""dev/board_signal.py: a linear classifier of the move from the board's one-hot cells, against the moves'
frequencies, on boards whose move is known."""

from __future__ import annotations

import math
import random

import pytest
import torch
from board_signal import board_signal, grid_cells, transitions

from archer.data.trajectory import Trajectory
from archer.envs.grid_games.frozen_lake import FrozenLakeEnv


def test_grid_cells_are_read_from_the_observation() -> None:
    env = FrozenLakeEnv(batch_size=1, max_turns=10, seed=0)
    observation = env.reset(game_ids=[0])[0]
    cells = grid_cells(observation)
    assert len(cells) == 16 and cells.count("P") == 1 and cells.count("G") == 1
    assert grid_cells("Legend: P player\nGrid:\nP _\n_ G\n") == ["P", "_", "_", "G"]


def boards(move_of, count: int = 400, seed: int = 0) -> list[tuple[list[str], str]]:
    """3x3 boards with the player on a random cell; the move ``move_of(player cell)``."""
    rng = random.Random(seed)
    examples = []
    for _ in range(count):
        cell = rng.randrange(9)
        examples.append((["P" if i == cell else "_" for i in range(9)], move_of(cell, rng)))
    return examples


def test_a_move_the_board_decides_is_read_and_a_random_one_is_not() -> None:
    # The player's column decides the move: left column "right", right column "left", middle "down".
    decided = board_signal(boards(lambda cell, rng: ["right", "down", "left"][cell % 3]))
    assert decided["held_out_accuracy"] == 1.0 and decided["held_out_cross_entropy"] < 0.2
    assert decided["frequency_accuracy"] < 0.5  # three moves about equally often
    # Moves drawn at random: the board says nothing, and the classifier does no better than the frequencies.
    noise = board_signal(boards(lambda cell, rng: rng.choice(["left", "right", "up", "down"])))
    assert noise["held_out_accuracy"] < 0.4
    assert noise["frequency_cross_entropy"] == pytest.approx(math.log(4), abs=0.05)
    assert noise["held_out_cross_entropy"] > noise["frequency_cross_entropy"] - 0.05
    assert decided["train_transitions"] == 320 and decided["held_out_transitions"] == 80


def test_transitions_pair_each_board_with_its_move_and_refuse_mixed_sizes() -> None:
    game = Trajectory(["Grid:\nP _\n", "Grid:\n_ P\n", "Grid:\n_ P\n"], ["right\n", " left"], [0.0, 0.0], True)
    assert transitions([game]) == [(["P", "_"], "right"), (["_", "P"], "left")]
    with pytest.raises(ValueError, match="grids of different sizes"):
        board_signal([(["P", "_"], "left"), (["P"], "right")] * 5)


def test_the_policy_fit_learns_a_move_its_prompt_decides_and_keeps_the_grid_alone_when_asked() -> None:
    from board_signal import policy_signal, prompts_and_moves
    from transformers import GPT2Config, GPT2LMHeadModel

    from archer.models.tokenizer import train_bpe_tokenizer

    game = Trajectory(["Go.\nGrid:\nP _\n", "Go.\nGrid:\n_ P\n"], ["right\n"], [0.0], True)
    assert prompts_and_moves([game], "grid") == [("Grid:\nP _\n", "right")]
    assert prompts_and_moves([game]) == [("Go.\nGrid:\nP _\n", "right")]
    with pytest.raises(ValueError, match="unknown prompt"):
        prompts_and_moves([game], "board")

    # The player's column decides the move, as in the linear test above: a small causal model learns it.
    rng = random.Random(0)
    examples = []
    for _ in range(300):
        cell = rng.randrange(3)
        row = " ".join("P" if i == cell else "_" for i in range(3))
        examples.append((f"Grid:\n{row}\n", ["right", "down", "left"][cell]))
    tokenizer = train_bpe_tokenizer([p + m for p, m in examples] + ["up"], vocab_size=300, kind="causal")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is fastest, and a busy neighbour cannot slow it tenfold
    try:
        records = policy_signal(model, tokenizer, examples, steps=150, lr=3e-3, batch_size=16, every=50)
    finally:
        torch.set_num_threads(threads)
    assert [r["step"] for r in records] == [0.0, 50.0, 100.0, 150.0]
    assert records[0]["held_out_cross_entropy"] > math.log(len(tokenizer)) - 1.5  # untrained: near uniform
    assert records[-1]["held_out_accuracy"] == 1.0 and records[-1]["held_out_cross_entropy"] < 0.3
