"""A run's ``learning_curve.png``: its title, axis labels, and the start and the best drawn as lines, read from the
figure (``archer.tracking.draw_learning_curve``), not from pixels."""

from __future__ import annotations

from pathlib import Path

import pytest

from archer.cli import hydra_names
from archer.config import ConfigError, LoggingConfig
from archer.tracking import CURVE_FILE, Tracker, draw_learning_curve, read_metrics
from archer.trainer import run_title
from tests.conftest import compose_run

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")

TITLE = "archer_20q: archer on twenty_questions_subset (seed 0)"
RETURNS = ("eval/return_mean", "eval/sampled_return_mean")


def write_run(folder: Path) -> Tracker:
    """A run of three iterations of 32 games: evaluations at iterations 0 and 2, the best in the first record."""
    tracker = Tracker(folder, LoggingConfig(), run_name="run")
    start = {"eval/return_mean": -6.0, "eval/success_rate": 0.5, "eval/episodes": 10.0, "env/trajectories": 0.0}
    tracker.log(start | {"eval/best_return_mean": -2.8, "eval/best_success_rate": 1.0}, iteration=0)
    tracker.log({"rollout/return_mean": -7.0, "env/trajectories": 32.0}, iteration=1)
    late = {"eval/return_mean": -4.5, "eval/success_rate": 0.8, "eval/episodes": 10.0, "env/trajectories": 64.0}
    tracker.log(late, iteration=2)
    return tracker


def lines_by_label(fig) -> dict[str, tuple[list[float], list[float]]]:
    (ax,) = fig.axes
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}


def test_the_curve_names_the_run_its_axes_and_draws_the_start_and_the_best(tmp_path: Path) -> None:
    tracker = write_run(tmp_path)
    assert tracker.plot("env/trajectories", RETURNS, title=TITLE) == tmp_path / CURVE_FILE
    assert (tmp_path / CURVE_FILE).read_bytes().startswith(b"\x89PNG")

    fig = draw_learning_curve(read_metrics(tracker.metrics_path), "env/trajectories", RETURNS, TITLE)
    try:
        (ax,) = fig.axes
        assert ax.get_title() == TITLE
        assert ax.get_xlabel() == "games played"
        assert ax.get_ylabel() == "greedy return (mean over 10 evaluation games)"
        lines = lines_by_label(fig)
        # The two evaluations (the record of iteration 1 has none); no sampled play was logged, so no sampled line.
        assert lines["greedy play (10 games)"] == ([0.0, 64.0], [-6.0, -4.5])
        # Horizontal lines span the axes (x from 0 to 1 in axes units) at the start's and the best's value.
        assert lines["start -6.00"][1] == [-6.0, -6.0]
        assert lines["best -2.80"][1] == [-2.8, -2.8]
        assert set(lines) == {"greedy play (10 games)", "start -6.00", "best -2.80"}
        styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
        assert styles["start -6.00"] == "--" and styles["best -2.80"] == "-"
        assert [t.get_text() for t in ax.get_legend().get_texts()] == list(lines)
    finally:
        plt.close(fig)


def test_a_success_rate_curve_takes_the_best_success_rate(tmp_path: Path) -> None:
    tracker = write_run(tmp_path)
    keys = ("eval/success_rate", "eval/sampled_success_rate")
    fig = draw_learning_curve(read_metrics(tracker.metrics_path), "env/trajectories", keys, TITLE)
    try:
        assert fig.axes[0].get_ylabel() == "greedy success rate (share won over 10 evaluation games)"
        lines = lines_by_label(fig)
        assert lines["greedy play (10 games)"][1] == [0.5, 0.8]
        assert lines["start 0.50"][1] == [0.5, 0.5]
        assert lines["best 1.00"][1] == [1.0, 1.0]  # the best success rate, not the best return (-2.8)
    finally:
        plt.close(fig)


def test_without_games_played_a_start_or_a_best_the_curve_says_less() -> None:
    # Records of an offline run resumed from a file of an older version: no games count, no iteration-0 evaluation,
    # no best; greedy and sampled play both drawn.
    records = [
        {"iteration": 5, "eval/return_mean": -5.0, "eval/sampled_return_mean": -6.0, "eval/sampled_episodes": 32.0},
        {"iteration": 10, "eval/return_mean": -4.0, "eval/sampled_return_mean": -5.5, "eval/sampled_episodes": 32.0},
    ]
    fig = draw_learning_curve(records, "env/trajectories", RETURNS)
    try:
        (ax,) = fig.axes
        assert ax.get_title() == ""
        assert ax.get_xlabel() == "iterations"
        assert ax.get_ylabel() == "return (mean over the evaluation games)"
        assert lines_by_label(fig) == {
            "greedy play": ([5, 10], [-5.0, -4.0]),
            "sampled play (32 games)": ([5, 10], [-6.0, -5.5]),
        }
    finally:
        plt.close(fig)
    assert draw_learning_curve([{"iteration": 1, "rollout/return_mean": -7.0}], "iteration", RETURNS) is None


def test_the_title_names_the_config_the_algorithm_the_env_option_and_the_seed() -> None:
    cfg = compose_run("archer_20q", ["seed=3"])
    assert run_title(cfg) == "archer on twenty_questions (seed 3)"
    # The names the command line's run gets from Hydra (compose_run sets Hydra's config as @hydra.main does).
    assert hydra_names() == ("archer_20q", "twenty_questions_subset")
    assert run_title(cfg, *hydra_names()) == "archer_20q: archer on twenty_questions_subset (seed 3)"


def test_an_unknown_curve_metric_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="logging.curve_metric: got 'wins'; choose one of return, success_rate"):
        compose_run("bc_20q", ["logging.curve_metric=wins"])
