"""Gradient accumulation (``archer.algorithms.accumulation``) on a linear model small enough to work out by hand.

The model is ``f(x) = w . x`` with ``w = (1, 1)``, fitted by squared error to targets 0 on three rows
``x = (1, 0), (0, 2), (3, 0)``. The residuals are 1, 2, 3, so the row losses are 1, 4, 9 (batch mean 14/3), and
the row gradients ``2 r x`` are (2, 0), (0, 8), (18, 0): the batch-mean gradient is (20/3, 8/3), of norm
sqrt(464) / 3.
"""

from __future__ import annotations

import math

import pytest
import torch
from accelerate import Accelerator

from archer.algorithms.accumulation import accumulate, clip_and_step

ROWS = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
MEAN_GRADIENT = (20 / 3, 8 / 3)
NORM = math.sqrt(464) / 3


def linear() -> torch.nn.Linear:
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    return model


def mean_loss(model: torch.nn.Linear, rows: torch.Tensor) -> torch.Tensor:
    return model(rows).squeeze(-1).pow(2).mean()


def accumulated(model: torch.nn.Linear) -> torch.Tensor:
    """Accumulate the batch in two micro-batches of unequal size (2 rows, then 1); return the summed weighted loss."""
    backend = Accelerator(cpu=True)
    first = accumulate(backend, mean_loss(model, ROWS[:2]), 2, 3)
    second = accumulate(backend, mean_loss(model, ROWS[2:]), 1, 3)
    return first + second


def test_micro_batches_weighted_by_their_share_give_the_batch_mean_gradient() -> None:
    model = linear()
    total = accumulated(model)
    # Micro-batch means 5/2 and 9, weighted by 2/3 and 1/3: the batch mean 14/3 (their plain mean would be 23/4).
    assert total.item() == pytest.approx(14 / 3)
    assert not total.requires_grad
    # Micro-batch gradients (1, 4) and (18, 0), weighted the same way: (20/3, 8/3).
    assert model.weight.grad.squeeze(0).tolist() == pytest.approx(MEAN_GRADIENT)


def test_a_share_given_as_a_fraction_is_the_same_weight() -> None:
    model = linear()
    backend = Accelerator(cpu=True)
    accumulate(backend, mean_loss(model, ROWS[:2]), 2 / 3)
    accumulate(backend, mean_loss(model, ROWS[2:]), 1 / 3)
    assert model.weight.grad.squeeze(0).tolist() == pytest.approx(MEAN_GRADIENT)


def test_clip_and_step_returns_the_norm_before_clipping_and_steps_with_the_clipped_gradient() -> None:
    model = linear()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    accumulated(model)
    norm = clip_and_step(Accelerator(cpu=True), optimizer, model.parameters(), max_grad_norm=1.0)
    assert norm == pytest.approx(NORM)
    # Clipped to norm 1, the gradient is (20, 8) / sqrt(464); one SGD step of rate 1 subtracts it from (1, 1).
    expected = (1 - 20 / math.sqrt(464), 1 - 8 / math.sqrt(464))
    assert model.weight.detach().squeeze(0).tolist() == pytest.approx(expected, rel=1e-5)
    # Cleared after the step, so nothing reaches the next step or another network's norm.
    assert model.weight.grad is None


def test_a_gradient_within_the_limit_is_stepped_unchanged() -> None:
    model = linear()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    accumulated(model)
    norm = clip_and_step(Accelerator(cpu=True), optimizer, model.parameters(), max_grad_norm=10.0)
    assert norm == pytest.approx(NORM)
    expected = (1 - MEAN_GRADIENT[0], 1 - MEAN_GRADIENT[1])
    assert model.weight.detach().squeeze(0).tolist() == pytest.approx(expected)


def test_a_non_finite_norm_is_reported_as_infinite() -> None:
    model = linear()
    model.weight.grad = torch.tensor([[float("nan"), 1.0]])
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    assert clip_and_step(Accelerator(cpu=True), optimizer, model.parameters(), max_grad_norm=1.0) == math.inf
