"""scripts/benchmark_threads.py: its grid, the environment each setting starts with, and one tiny setting run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import TINY_RUN_OVERRIDES, load_script

pytestmark = pytest.mark.integration

bench = load_script("benchmark_threads.py")


def test_the_grid_puts_idle_settings_first_and_sets_only_the_wait_policy() -> None:
    grid = bench.settings(["busy", "none"], [1, 2], ["default", "PASSIVE"])
    assert [(s.load, s.threads, s.wait_policy) for s in grid] == [
        ("none", 1, "default"), ("none", 1, "PASSIVE"), ("none", 2, "default"), ("none", 2, "PASSIVE"),
        ("busy", 1, "default"), ("busy", 1, "PASSIVE"), ("busy", 2, "default"), ("busy", 2, "PASSIVE"),
    ]  # fmt: skip
    base = {"PATH": "/bin", "OMP_WAIT_POLICY": "ACTIVE"}
    assert bench.run_environment("default", base) == {"PATH": "/bin"}
    assert bench.run_environment("PASSIVE", base) == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}


def test_the_table_gives_each_setting_its_slow_down_against_idle_at_the_same_threads_and_policy() -> None:
    def figures(iteration: float) -> dict:
        return {"phases_s": {"iteration": iteration, "rollout": iteration / 2, "critic_update": iteration / 4}}

    results = {
        bench.Setting("none", 1, "default"): figures(10.0),
        bench.Setting("none", 2, "default"): figures(8.0),
        bench.Setting("busy", 1, "default"): figures(15.0),
        bench.Setting("none", 2, "PASSIVE"): figures(10.0),
        bench.Setting("busy", 2, "PASSIVE"): figures(40.0),
        bench.Setting("busy", 2, "ACTIVE"): figures(50.0),
    }
    table = bench.format_table(results).splitlines()
    assert table[2] == "| none | 1 | default | 10.0 | 1.00x | 5.0 | - | 2.5 | - | - |"
    assert table[4] == "| busy | 1 | default | 15.0 | 1.50x | 7.5 | - | 3.8 | - | - |"
    assert table[6] == "| busy | 2 | PASSIVE | 40.0 | 4.00x | 20.0 | - | 10.0 | - | - |"
    assert table[7] == "| busy | 2 | ACTIVE | 50.0 |  | 25.0 | - | 12.5 | - | - |"  # no idle figure to compare


def test_one_tiny_setting_beside_a_busy_neighbour(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        "pretrain=null",
        "algorithm.rollout.episodes_per_iter=4",
        "algorithm.critic_steps_per_iter=1",
        "algorithm.critic_batch_size=4",
        "algorithm.critic.micro_batch_size=4",
        "algorithm.actor_batch_size=4",
        "algorithm.actor_micro_batch_size=4",
        "algorithm.v_target_pool=8",
    ]
    argv = ["--loads", "busy", "--threads", "1", "--wait-policies", "PASSIVE", "--neighbour-threads", "1"]
    results = bench.main([*argv, "--iterations", "1", "--warmup-iterations", "0", *overrides])
    ((setting, training),) = results.items()
    assert setting == bench.Setting("busy", 1, "PASSIVE")
    assert training["torch_threads"] == 1 and training["phases_s"]["iteration"] > 0
    out = capsys.readouterr().out
    assert "| busy | 1 | PASSIVE |" in out
