"""dev/critic_lines.py: which grid rows are compared, the cosine figures by hand, and the script end to end on a tiny
critic."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from critic_lines import cosine_figures, grid_rows, one_cell_pairs, same_cells_pairs

from tests.conftest import TINY_RUN_OVERRIDES, load_dev_script

ROWS = ["# P _ #", "# _ P #", "# _ _ #", "# X _ #"]


def test_rows_are_paired_by_one_changed_cell_or_by_the_same_cells_moved() -> None:
    # P moved along the row changes two cells; P or X replaced by floor changes one; P and X are not the same cells.
    assert one_cell_pairs(ROWS) == [(0, 2), (0, 3), (1, 2), (2, 3)]
    assert same_cells_pairs(ROWS) == [(0, 1)]
    assert grid_rows("Rules.\nGrid:\n# P #\n# _ #\n") == ["# P #", "# _ #"]
    assert grid_rows("no grid") == []


def test_cosine_figures_by_hand() -> None:
    vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    figures = cosine_figures(vectors, ROWS)
    half = 1 / math.sqrt(2)
    # Pairs: (0,1) 0, (0,2) half, (0,3) half, (1,2) half, (1,3) -half, (2,3) 0.
    assert figures["rows/cosine_mean"] == pytest.approx(2 * half / 6)
    assert figures["rows/cosine_min"] == pytest.approx(-half)
    assert figures["rows/cosine_one_cell"] == pytest.approx((half + half + half + 0) / 4)
    assert figures["rows/cosine_same_cells"] == pytest.approx(0.0)
    assert figures["rows/distinct"] == 4
    # A single row has no pair: only its count.
    assert cosine_figures(vectors[:1], ROWS[:1]) == {"rows/distinct": 1.0}


def test_the_script_encodes_a_grid_games_rows_with_the_runs_critic(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    script = load_dev_script("critic_lines")
    out = tmp_path / "lines.json"
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}", "model.critic.history=turns"]
    figures = script.main(["--config-name", "archer_sokoban", "--games", "8", "--json", str(out), *overrides])
    assert figures["observations/distinct"] == 8 and figures["rows/distinct"] > 1
    for key in ("rows/cosine_mean", "rows/cosine_min", "observations/cosine_mean"):
        assert -1.0 <= figures[key] <= 1.0 + 1e-9
    assert json.loads(out.read_text()) == figures
    with pytest.raises(SystemExit):
        script.main(["--config-name", "archer_20q", *overrides])
    with pytest.raises(SystemExit):
        script.main(["--config-name", "archer_sokoban", "--games", "0", *overrides])
