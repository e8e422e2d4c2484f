"""dev/linear_readout.py: the ridge fit against hand-solved cases, and the per-move read-out's ranking."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import load_dev_script

readout = load_dev_script("linear_readout")
critic_probe = load_dev_script("critic_probe")


def test_ridge_on_one_standardised_column_by_hand() -> None:
    rows = np.array([[0.0], [1.0], [2.0]])
    targets = np.array([1.0, 3.0, 5.0])
    # Standardised column: (x - 1) / sqrt(2/3) = [-1.2247, 0, 1.2247]; its square sum is 3 and its product with the
    # centred targets [-2, 0, 2] is 4.899, so the weight is 4.899 / (3 + penalty) and the intercept the mean, 3.
    exact = readout.fit_ridge(rows, targets, 0.0)
    np.testing.assert_allclose(exact.predict(rows), targets, atol=1e-9)
    shrunk = readout.fit_ridge(rows, targets, 3.0)
    np.testing.assert_allclose(shrunk.weights, [np.sqrt(6.0) / 3.0], rtol=1e-9)  # 4.899 / 6 = 0.8165
    np.testing.assert_allclose(shrunk.predict(rows), [2.0, 3.0, 4.0], atol=1e-9)
    assert shrunk.intercept == pytest.approx(3.0)


def test_ridge_leaves_a_constant_column_out_and_refuses_bad_input() -> None:
    rows = np.array([[0.0, 7.0], [2.0, 7.0]])
    fit = readout.fit_ridge(rows, np.array([0.0, 4.0]), 0.0)
    np.testing.assert_allclose(fit.predict(rows), [0.0, 4.0], atol=1e-9)
    assert fit.weights[1] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="as many targets"):
        readout.fit_ridge(rows, np.array([1.0]), 1.0)
    with pytest.raises(ValueError, match="penalty"):
        readout.fit_ridge(rows, np.array([1.0, 2.0]), -1.0)


def test_per_move_readout_ranks_moves_whose_values_depend_on_the_state_in_opposite_ways() -> None:
    # "left" is worth x, "right" 1 - x: the best move flips with the state, which no move-independent score can say.
    xs = [0.0, 0.25, 0.75, 1.0]
    states = [critic_probe.ValuedState(f"s{x}", ("left", "right"), (x, 1.0 - x)) for x in xs]
    vectors = {f"s{x}": np.array([x, 1.0]) for x in [*xs, 0.1, 0.9]}
    score, moves = readout.per_move_readout(vectors, states, 0.0)
    assert moves == 2
    low, high = score("s0.1", ["left", "right"]), score("s0.9", ["left", "right"])
    np.testing.assert_allclose(low, [0.1, 0.9], atol=1e-9)
    np.testing.assert_allclose(high, [0.9, 0.1], atol=1e-9)
    # A move never fitted scores the lowest value seen, 0.
    assert score("s0.9", ["up"]) == [0.0]
    with pytest.raises(ValueError, match="at least one"):
        readout.per_move_readout(vectors, [], 1.0)


def test_examples_readout_averages_the_returns_seen_at_one_vector_and_floors_unseen_moves() -> None:
    # "left" at vector 0 returned 1 and 3 (mean 2), at vector 1 returned 5: with no penalty the fit passes through
    # both means. "right" returned 4 once and reads 4 everywhere; "up" was never taken and reads the lowest return.
    vectors = {"a": np.array([0.0]), "b": np.array([1.0])}
    examples = [("a", "left", 1.0), ("a", "left", 3.0), ("b", "left", 5.0), ("b", "right", 4.0)]
    score, moves = readout.examples_readout(vectors, examples, 0.0)
    assert moves == 2
    np.testing.assert_allclose(score("a", ["left", "right", "up"]), [2.0, 4.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(score("b", ["left", "right"]), [5.0, 4.0], atol=1e-9)
    with pytest.raises(ValueError, match="at least one"):
        readout.examples_readout(vectors, [], 1.0)
