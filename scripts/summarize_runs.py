"""Summarise finished runs of one config over seeds: greedy evaluations, their last-three mean, and the spread.

Usage (from ``scripts/``)::

    python summarize_runs.py outputs/archer_20q/seed=0 outputs/archer_20q/seed=1 outputs/archer_20q/seed=2 \\
        --baseline -3.45 --baseline-name "BC continued to 3,000-3,500 steps" --markdown --plot ../docs/archer_20q.png

Each run folder's ``metrics.jsonl`` gives its greedy evaluation returns (``eval/return_mean``) by iteration and
its training rollouts' mean return. Printed: one row per run (every evaluation, the mean of the last ``--last``
evaluations, the start), then the mean and sample standard deviation over runs of that last-evaluations mean and,
with ``--baseline``, its gain over the baseline against twice the standard deviation (issue 14's bar), whether
any run ends below its own start, and the best return possible on the evaluation games when the runs logged it
(``eval/best_return_mean``, the same in every run). ``--plot`` draws every run's greedy return against environment
games played, their mean, the baseline and the best.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from archer.tracking import BEST_RETURN_KEY, read_metrics


def evaluations(run_dir: Path, x_key: str = "iteration") -> list[tuple[int, float]]:
    """``(x, greedy return)`` of every evaluation recorded in ``run_dir/metrics.jsonl``, in order; x is the record's
    ``x_key`` (the iteration, or ``env/trajectories``)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        raise SystemExit(f"{run_dir}: no metrics.jsonl (not a run folder, or the run has not started)")
    return [(r.get(x_key, 0), r["eval/return_mean"]) for r in read_metrics(path) if "eval/return_mean" in r]


def best_return(run_dirs: Sequence[Path]) -> float | None:
    """The best return possible on the runs' evaluation games, as their first records hold it (``BEST_RETURN_KEY``);
    None when a run has none or the runs disagree (different evaluation games)."""
    bests = set()
    for run_dir in run_dirs:
        records = read_metrics(run_dir / "metrics.jsonl")
        bests.add(next((r[BEST_RETURN_KEY] for r in records if r.get(BEST_RETURN_KEY) is not None), None))
    return bests.pop() if len(bests) == 1 else None


def plot(
    runs: dict[str, list[tuple[int, float]]],
    baseline: float | None,
    out: Path,
    baseline_name: str = "baseline",
    best: float | None = None,
) -> None:
    """Each run's greedy return against games played (thin), their mean (thick), the baseline (dashed) and the best
    return possible (solid)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    for name, points in runs.items():
        axes.plot(
            *zip(*points, strict=True), marker="o", markersize=3, linewidth=0.8, alpha=0.6, label=Path(name).name
        )
    xs = sorted({x for points in runs.values() for x, _ in points})
    common = [x for x in xs if all(x in dict(points) for points in runs.values())]
    means = [statistics.fmean(dict(points)[x] for points in runs.values()) for x in common]
    axes.plot(common, means, color="black", linewidth=2.2, label=f"mean of {len(runs)}")
    if baseline is not None:
        axes.axhline(baseline, color="grey", linestyle="--", linewidth=1.2, label=f"{baseline_name} {baseline:g}")
    if best is not None:
        axes.axhline(best, color="tab:green", linewidth=1.2, label=f"best possible {best:g}")
    axes.set_xlabel("environment games played")
    axes.set_ylabel("greedy evaluation return")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)


def summarize(runs: dict[str, list[tuple[int, float]]], last: int, baseline: float | None) -> dict[str, float]:
    """The figures the module docstring lists; needs at least ``last + 1`` evaluations per run (the start too)."""
    tails = {}
    for name, points in runs.items():
        if len(points) < last + 1:
            raise SystemExit(f"{name}: {len(points)} evaluations, need the start and at least {last} more")
        tails[name] = statistics.fmean(value for _, value in points[-last:])
    values = list(tails.values())
    figures = {
        "runs": float(len(values)),
        "last_mean": statistics.fmean(values),
        "last_std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "runs_ending_below_start": float(sum(points[-1][1] < points[0][1] for points in runs.values())),
    }
    if baseline is not None:
        figures["gain_over_baseline"] = figures["last_mean"] - baseline
        figures["twice_std"] = 2 * figures["last_std"]
    return figures


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (one per seed)")
    parser.add_argument("--last", type=int, default=3, help="evaluations averaged at the end (3)")
    parser.add_argument("--baseline", type=float, default=None, help="return to compare the last-evaluations mean to")
    parser.add_argument("--baseline-name", default="baseline", help="the baseline's label on the plot")
    parser.add_argument("--markdown", action="store_true", help="print the per-run rows as a markdown table")
    parser.add_argument("--plot", type=Path, default=None, help="also draw the curves into this PNG file")
    args = parser.parse_args(argv)
    runs = {str(path): evaluations(path) for path in args.runs}
    figures = summarize(runs, args.last, args.baseline)
    best = best_return(args.runs)
    if best is not None:
        figures["best"] = best
    iterations = sorted({i for points in runs.values() for i, _ in points})
    if args.markdown:
        print("| run | " + " | ".join(str(i) for i in iterations) + f" | mean of last {args.last} |")
        print("| --- " * (len(iterations) + 2) + "|")
    for name, points in runs.items():
        by_iteration = dict(points)
        cells = [f"{by_iteration[i]:.1f}" if i in by_iteration else "" for i in iterations]
        tail = statistics.fmean(value for _, value in points[-args.last :])
        if args.markdown:
            print(f"| {name} | " + " | ".join(cells) + f" | {tail:.2f} |")
        else:
            row = " ".join(f"{i}:{c}" for i, c in zip(iterations, cells, strict=True))
            print(f"{name}: {row} | {tail:.2f}")
    print(" ".join(f"{key}={value:.2f}" for key, value in figures.items()))
    if args.plot is not None:
        plot(
            {str(path): evaluations(path, "env/trajectories") for path in args.runs},
            args.baseline,
            args.plot,
            args.baseline_name,
            best,
        )
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
