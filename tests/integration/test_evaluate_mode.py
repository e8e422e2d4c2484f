"""``mode=evaluate``: a saved (here: freshly built) policy plays the evaluation games and the results are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archer.evaluation import evaluate_saved_policy
from tests.conftest import TINY_RUN_OVERRIDES, compose_run

pytestmark = pytest.mark.integration


def test_a_grid_policy_is_evaluated_with_its_move_dependence(tmp_path: Path) -> None:
    overrides = [*TINY_RUN_OVERRIDES, "mode=evaluate", f"cache_dir={tmp_path / 'cache'}"]
    cfg = compose_run("bc_sokoban", overrides)
    metrics = evaluate_saved_policy(cfg, tmp_path / "eval")
    saved = json.loads((tmp_path / "eval" / "eval_results.json").read_text())
    assert saved["metrics"] == metrics
    assert metrics["eval/episodes"] == 4 and len(saved["returns"]) == 4
    # Sokoban's four moves: how much the untrained policy's choice among them depends on the board.
    assert 0 <= metrics["eval/move_state_dependence"] <= 0.75
