"""Metric sinks: a JSONL file in the run folder, optionally Weights & Biases, and a learning-curve plot (titled with
the run's name, with the start and the best achievable figure as lines).

Only the main process writes; on other processes every method is a no-op, so the training loop has no logging
conditionals.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archer.config import LoggingConfig
from archer.errors import ArcherError, MissingExtraError, StorageError
from archer.locking import open_no_follow
from archer.utils import atomic_write_text, writing

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"
CURVE_FILE = "learning_curve.png"


class TrackerError(ArcherError, RuntimeError):
    """A metric sink that cannot start (Weights & Biases without a login, say); the message names the setting."""


class Tracker:
    """Writes metrics keyed by iteration to ``<run_dir>/metrics.jsonl`` (and W&B when enabled).

    Args:
        run_dir: the run folder.
        cfg: logging settings.
        run_name: the W&B run name.
        config: the resolved run config, stored with the W&B run.
        is_main_process: only the main process writes.
    """

    def __init__(
        self,
        run_dir: Path,
        cfg: LoggingConfig,
        run_name: str,
        config: dict[str, Any] | None = None,
        is_main_process: bool = True,
    ) -> None:
        self.run_dir = run_dir
        self.enabled = is_main_process
        self._wandb = None
        if self.enabled and cfg.use_wandb and cfg.wandb_mode != "disabled":
            try:
                import wandb
            except ImportError as error:
                raise MissingExtraError("logging.use_wandb=true needs wandb: pip install -e '.[wandb]'") from error
            try:
                self._wandb = wandb.init(
                    project=cfg.wandb_project,
                    entity=cfg.wandb_entity,
                    mode=cfg.wandb_mode,
                    name=run_name,
                    id=run_name,
                    resume="allow",
                    dir=str(run_dir),
                    config=config,
                )
            except wandb.Error as error:  # wandb's own refusals: no login, an unknown entity, ...
                raise TrackerError(
                    f"logging.use_wandb=true: wandb refused to start ({error}); run `wandb login`, set "
                    "logging.wandb_mode=offline, or logging.use_wandb=false"
                ) from None

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / METRICS_FILE

    def log(self, metrics: dict[str, float], iteration: int) -> None:
        """Append one record; non-finite values are written as null."""
        if not self.enabled:
            return
        record = {"iteration": iteration}
        record.update({k: (float(v) if math.isfinite(float(v)) else None) for k, v in metrics.items()})
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        with writing(self.metrics_path), open_no_follow(self.metrics_path, flags, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if self._wandb is not None:
            self._wandb.log(metrics, step=iteration)

    def truncate_after(self, iteration: int) -> None:
        """Drop records after ``iteration`` (a resumed run repeats the iterations its checkpoint did not hold) and an
        unfinished last line (a killed write). A line that is not a record stays as it is, with a warning naming it:
        the file loses nothing a resume does not redo."""
        if not self.enabled or not os.path.lexists(self.metrics_path):
            return
        if self.metrics_path.is_symlink():
            # Reading it would copy another file's lines into this run's records.
            raise StorageError(
                f"{self.metrics_path} is a symbolic link (to {os.readlink(self.metrics_path)}); archer never writes "
                "through links in its folders: remove the link"
            )
        lines, torn = _metrics_lines(self.metrics_path)
        _warn_malformed(self.metrics_path, lines, torn)
        kept = [text for _, text, record in lines if _keep(text, record, iteration)]
        atomic_write_text(self.metrics_path, "".join(text + "\n" for text in kept))

    def plot(
        self, x_key: str = "iteration", y_keys: tuple[str, ...] = ("eval/return_mean",), title: str | None = None
    ) -> Path | None:
        """Redraw ``learning_curve.png`` from the metrics file (``draw_learning_curve``)."""
        if not self.enabled or not self.metrics_path.exists():
            return None
        return plot_learning_curve(self.metrics_path, self.run_dir / CURVE_FILE, x_key, y_keys, title)

    def finish(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics file, in order.

    A line that is not a record (a JSON object with an integer ``iteration``) is skipped with a warning naming its
    number, once per file and line; an unfinished last line (a killed write) is skipped the same way.
    """
    lines, torn = _metrics_lines(Path(path))
    _warn_malformed(Path(path), lines, torn)
    return [record for _, _, record in lines if record is not None]


_warned: set[tuple[str, int]] = set()


def _warn_malformed(path: Path, lines: list[tuple[int, str, dict[str, Any] | None]], torn: str) -> None:
    """Warn, once per file and line number, about each line that is not a record and an unfinished last line."""
    problems = [
        (number, f"is not a metrics record ({text if len(text) <= 60 else text[:57] + '...'!r}); skipped")
        for number, text, record in lines
        if record is None and text.strip()
    ]
    if torn:
        problems.append((len(lines) + 1, "is unfinished (a killed write); skipped"))
    for number, problem in problems:
        if (str(path), number) not in _warned:
            _warned.add((str(path), number))
            log.warning("line %d of %s %s", number, path, problem)


def _metrics_lines(path: Path) -> tuple[list[tuple[int, str, dict[str, Any] | None]], str]:
    """``(number, text, record or None)`` for each whole line of a metrics file, and the unfinished text after the
    last line break ("" when the file ends with one)."""
    *whole, torn = path.read_text(encoding="utf-8", errors="replace").split("\n")
    return [(number, text, _record(text)) for number, text in enumerate(whole, start=1)], torn


def _keep(text: str, record: dict[str, Any] | None, iteration: int) -> bool:
    """Whether a resume at ``iteration`` keeps a line: a record up to it, or a line that is not a record (warned)."""
    return record["iteration"] <= iteration if record is not None else bool(text.strip())


def _record(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    is_record = isinstance(value, dict) and isinstance(value.get("iteration"), int)
    return value if is_record else None


# The metrics a learning curve can show: (play, quantity, the key of the number of games each value averages).
CURVE_METRICS = {
    "eval/return_mean": ("greedy", "return", "eval/episodes"),
    "eval/sampled_return_mean": ("sampled", "return", "eval/sampled_episodes"),
    "eval/success_rate": ("greedy", "success rate", "eval/episodes"),
    "eval/sampled_success_rate": ("sampled", "success rate", "eval/sampled_episodes"),
}
STATISTICS = {"return": "mean", "success rate": "share won"}
X_NAMES = {"iteration": "iterations", "env/trajectories": "games played"}
# The best achievable figures on a run's evaluation games, logged once, in its iteration-0 record.
BEST_RETURN_KEY = "eval/best_return_mean"
BEST_SUCCESS_KEY = "eval/best_success_rate"


def best_key(key: str) -> str | None:
    """The record key of the best achievable figure the metric ``key`` is measured against: the best return for a
    return, the best success rate for a success rate, None for any other metric."""
    if key.endswith("return_mean"):
        return BEST_RETURN_KEY
    if key.endswith("success_rate"):
        return BEST_SUCCESS_KEY
    return None


def plot_learning_curve(
    metrics_path: Path, png_path: Path, x_key: str, y_keys: tuple[str, ...], title: str | None = None
) -> Path | None:
    """Draw the learning curve of a metrics file (``draw_learning_curve``) into ``png_path``, written atomically;
    None, and no file, when no record has a value of ``y_keys``."""
    fig = draw_learning_curve(read_metrics(metrics_path), x_key, y_keys, title)
    if fig is None:
        return None
    import matplotlib.pyplot as plt

    tmp = png_path.with_name(f".{png_path.stem}.tmp.png")
    try:
        with writing(png_path):
            fig.savefig(tmp, dpi=100)
            os.replace(tmp, png_path)
    finally:
        plt.close(fig)
    return png_path


def draw_learning_curve(
    records: list[dict[str, Any]], x_key: str, y_keys: tuple[str, ...], title: str | None = None
) -> Figure | None:
    """The learning-curve figure of a run's metric records; None when no record has a value of ``y_keys``.

    Each of ``y_keys`` is drawn against ``x_key`` (against ``iteration`` when no record that has a ``y_keys`` value
    has ``x_key``). The first key's iteration-0 value is drawn as a dashed line labelled ``start``, and the best
    achievable figure (``best_key``; logged in the iteration-0 record) as a solid line labelled ``best``; either is
    left out when the records lack it. The y label names the metric and how many evaluation games each point
    averages (``eval/episodes``).

    Args:
        records: the metric records, in order (``read_metrics``).
        x_key: the x axis: ``env/trajectories`` (games played) or ``iteration``.
        y_keys: the metrics drawn; the start and the best are those of the first.
        title: the figure's title (the run's name); None draws none.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    curves = {key: [r for r in records if r.get(key) is not None] for key in y_keys}
    curves = {key: rows for key, rows in curves.items() if rows}
    if not curves:
        return None
    if not any(r.get(x_key) is not None for rows in curves.values() for r in rows):
        x_key = "iteration"
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, rows in curves.items():
        points = [(r[x_key], r[key]) for r in rows if r.get(x_key) is not None]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, marker="o", markersize=4, label=_legend_label(key, rows))
    first = y_keys[0]
    start = next((r[first] for r in curves.get(first, []) if r["iteration"] == 0), None)
    if start is not None:
        ax.axhline(start, color="grey", linestyle="--", linewidth=1.2, label=f"start {start:.2f}")
    best_name = best_key(first)
    best = next((r[best_name] for r in records if best_name is not None and r.get(best_name) is not None), None)
    if best is not None:
        ax.axhline(best, color="tab:green", linewidth=1.2, label=f"best {best:.2f}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # games and iterations are counts
    ax.set_xlabel(X_NAMES.get(x_key, x_key))
    ax.set_ylabel(_y_label(curves))
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _games(key: str, rows: list[dict[str, Any]]) -> int | None:
    """How many games each value of ``key`` averages (its last record's), when the records say."""
    count = rows[-1].get(CURVE_METRICS[key][2]) if key in CURVE_METRICS else None
    return int(count) if count else None


def _legend_label(key: str, rows: list[dict[str, Any]]) -> str:
    if key not in CURVE_METRICS:
        return key
    games = _games(key, rows)
    return f"{CURVE_METRICS[key][0]} play" + (f" ({games} games)" if games else "")


def _y_label(curves: dict[str, list[dict[str, Any]]]) -> str:
    """The metric in words, e.g. "greedy return (mean over 10 evaluation games)"; "return (mean over the evaluation
    games)" when greedy and sampled play are both drawn (the legend tells them apart)."""
    if not all(key in CURVE_METRICS for key in curves):
        return ", ".join(curves)
    quantities = {CURVE_METRICS[key][1] for key in curves}
    if len(quantities) > 1:
        return " and ".join(sorted(quantities))
    quantity = quantities.pop()
    statistic = STATISTICS[quantity]
    if len(curves) > 1:
        return f"{quantity} ({statistic} over the evaluation games)"
    ((key, rows),) = curves.items()
    games = _games(key, rows)
    over = f"{games} evaluation games" if games else "the evaluation games"
    return f"{CURVE_METRICS[key][0]} {quantity} ({statistic} over {over})"
