"""scripts/probe_critic.py end to end on a tiny archer_20q run: the critic's figures, the policy's Monte Carlo
move values and the critic's agreement with them, and the refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.conftest import TINY_RUN_OVERRIDES, load_script
from tests.integration.test_training import ARCHER_TINY, tiny_archer

pytestmark = pytest.mark.integration


def test_probe_script_scores_a_finished_run_and_its_policys_returns(tmp_path: Path) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    tiny_archer(run, cache, *ARCHER_TINY, "algorithm.v_target_pool=16").fit()
    probe = load_script("probe_critic.py")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={cache}",
        "algorithm.num_iterations=2",
        *ARCHER_TINY,
        "algorithm.v_target_pool=16",
        f"run_dir={run}",
    ]
    out = tmp_path / "probe.json"
    figures = probe.main(
        [
            "--config-name",
            "archer_20q",
            *overrides,
            "--states",
            "4",
            "--policy-returns",
            "1",
            "--margin",
            "0",
            "--json",
            str(out),
        ]
    )
    assert figures["probe/states"] == 4 and figures["truth/states"] == 4
    for key in ("probe/repeat_below_all_wrong", "probe/split_above_repeat", "truth/repeat_below_all_wrong"):
        assert 0.0 <= figures[key] <= 1.0
    # A barely trained policy may lose every 4-turn game whatever the move: then no pair is ranked (nan).
    pair = figures.pop("probe/pair_agreement")
    assert math.isnan(pair) or 0.0 <= pair <= 1.0
    written = json.loads(out.read_text())
    assert math.isnan(pair) == math.isnan(written.pop("probe/pair_agreement")) and written == figures
    with pytest.raises(SystemExit):
        probe.main(["--config-name", "archer_20q", *overrides, "--policy-returns", "-1"])
    with pytest.raises(SystemExit):
        probe.main(["--config-name", "archer_20q", *overrides[:-1], f"run_dir={tmp_path / 'none'}"])


def test_probe_script_fits_an_untrained_critic_to_optimal_values(tmp_path: Path) -> None:
    probe = load_script("probe_critic.py")
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}", *ARCHER_TINY, f"run_dir={tmp_path / 'run'}"]
    args = ["--config-name", "archer_20q", *overrides, "--states", "4", "--fit-optimal", "6", "--fit-steps", "4"]
    figures = probe.main([*args, "--fit-every", "2", "--fit-targets", "sampled"])
    assert figures["probe/states"] == 4 and figures["fit/states"] == 6
    # Each state: the repeat, a guess of each of the 10 words (one of them the repeat's word), questions.
    assert figures["fit/examples"] >= 6 * 10 and figures["fit/loss"] >= 0.0
    for key in ("probe/repeat_below_all_wrong", "probe/split_above_repeat"):
        assert 0.0 <= figures[key] <= 1.0
    assert not (tmp_path / "run").exists()  # no run is needed, and none is written
    with pytest.raises(SystemExit):
        probe.main([*args, "--states-from", "policy"])
    with pytest.raises(SystemExit, match="words"):
        probe.main([*args, "env=twenty_questions"])
