"""dev/actor_advantages.py: its figures by hand, and the four ways' advantages at a tiny finished run's samples."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.conftest import compose_run, load_dev_script, tiny_online_run


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_dev_script("actor_advantages")


def test_figures_by_hand(script: ModuleType) -> None:
    assert script.relative([1.0, 0.0], [[0.0, 1.0], [-1.0, -3.0]]) == [0.5, 2.0]
    figures = script.agreement([1.0, 2.0, -3.0], [0.5, 1.0, -1.5], margin=0.6)
    # Proportional: correlation 1; samples beyond the margin (1.0, -1.5) both signed right; std of (1, 2, -3).
    assert figures["corr"] == pytest.approx(1.0)
    assert figures["sign_agreement"] == 1.0
    assert figures["std"] == pytest.approx(math.sqrt(((1 - 0) ** 2 + (2 - 0) ** 2 + (-3 - 0) ** 2) / 3))
    flipped = script.agreement([-1.0, 2.0, 3.0], [0.5, 1.0, -1.5], margin=0.6)
    assert flipped["sign_agreement"] == 0.5 and flipped["corr"] < 0
    with pytest.raises(ValueError, match="spread"):
        script.agreement([1.0, 1.0], [0.0, 1.0], margin=0.0)


def test_a_tiny_run_gets_all_four_ways(script: ModuleType, tmp_path: Path) -> None:
    from archer.trainer import build_trainer

    overrides = [
        *tiny_online_run(tmp_path, tmp_path / "run"),
        "env=twenty_questions_subset",
        "algorithm.critic_steps_per_iter=2",
        "algorithm.critic_batch_size=4",
    ]
    build_trainer(compose_run("archer_20q_paper_cpu", overrides)).fit()
    advantages = script.sample_advantages(
        build_trainer(compose_run("archer_20q_paper_cpu", [*overrides, "resume=true"])),
        6,
        2,
        0.5,
        np.random.default_rng(0),
    )
    assert set(advantages) == {"critic", "critic_q", "exact", "noisy"}
    assert all(len(values) == 6 for values in advantages.values())
    # The untrained policy writes no readable move: every sample and baseline is worth the same, a wasted turn.
    assert all(abs(value) < 1e-9 for value in advantages["exact"])
    assert any(abs(value) > 1e-6 for value in advantages["noisy"])  # the errors differ per utterance
    with pytest.raises(SystemExit):
        script.main(["--config-name", "archer_20q_paper_cpu", *overrides, "--states", "1"])
