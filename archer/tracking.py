"""Metric sinks: a JSONL file in the run folder, optionally Weights & Biases, and a learning-curve plot.

Only the main process writes; on other processes every method is a no-op, so the training loop has no logging
conditionals.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from archer.config import LoggingConfig
from archer.errors import MissingExtraError

log = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"
CURVE_FILE = "learning_curve.png"


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

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / METRICS_FILE

    def log(self, metrics: dict[str, float], iteration: int) -> None:
        """Append one record; non-finite values are written as null."""
        if not self.enabled:
            return
        record = {"iteration": iteration}
        record.update({k: (float(v) if math.isfinite(float(v)) else None) for k, v in metrics.items()})
        with open(self.metrics_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if self._wandb is not None:
            self._wandb.log(metrics, step=iteration)

    def truncate_after(self, iteration: int) -> None:
        """Drop records after ``iteration`` (a resumed run repeats the iterations its checkpoint did not hold)."""
        if not self.enabled or not self.metrics_path.exists():
            return
        kept = [line for line in read_metrics(self.metrics_path) if line["iteration"] <= iteration]
        tmp = self.metrics_path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
        os.replace(tmp, self.metrics_path)

    def plot(self, x_key: str = "iteration", y_keys: tuple[str, ...] = ("eval/return_mean",)) -> Path | None:
        """Redraw ``learning_curve.png`` from the metrics file."""
        if not self.enabled or not self.metrics_path.exists():
            return None
        return plot_learning_curve(self.metrics_path, self.run_dir / CURVE_FILE, x_key, y_keys)

    def finish(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics file; a torn last line (a killed process) is skipped."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            log.warning("skipping a malformed line in %s", path)
    return records


def plot_learning_curve(metrics_path: Path, png_path: Path, x_key: str, y_keys: tuple[str, ...]) -> Path | None:
    """Plot each of ``y_keys`` against ``x_key`` from a metrics file into ``png_path`` (written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    fig, ax = plt.subplots(figsize=(6, 4))
    plotted = False
    for key in y_keys:
        points = [(r[x_key], r[key]) for r in records if r.get(key) is not None and r.get(x_key) is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", label=key)
            plotted = True
    if not plotted:
        plt.close(fig)
        return None
    ax.set_xlabel(x_key)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tmp = png_path.with_name(f".{png_path.stem}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, png_path)
    return png_path
