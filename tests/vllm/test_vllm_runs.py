"""Tiny ArCHer (Twenty Questions) and GiGPO (Sokoban) runs end to end with ``model.policy.engine=vllm``: every
sampling goes through the engine, the weights reach it after each actor step, and a resumed run repeats an
uninterrupted one.

    ~/venvs/vllm/bin/python -m pytest -q tests/vllm
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

from archer.models.vllm_engine import VLLMEngine  # noqa: E402
from archer.trainer import build_trainer  # noqa: E402
from tests.conftest import TINY_RUN_OVERRIDES, compose_run  # noqa: E402
from tests.integration.test_online_methods import changed, read_records, snapshot  # noqa: E402

ENGINE = ["model.policy.engine=vllm", "model.policy.engine_kv_cache_gib=0.1"]
RUNS = {
    "archer_20q": [
        "pretrain=null",
        "algorithm.warmup_iters=0",
        "algorithm.rollout.episodes_per_iter=4",
        "algorithm.critic_steps_per_iter=1",
        "algorithm.actor_steps_per_iter=1",
        "algorithm.critic_batch_size=4",
        "algorithm.actor_batch_size=4",
        "algorithm.critic.micro_batch_size=2",
        "algorithm.actor_micro_batch_size=2",
        "algorithm.generation_batch_size=4",
    ],
    "gigpo_sokoban": [
        # A short behaviour-cloning start, so that the games of a group end differently (an untrained policy loses
        # them all alike: every advantage zero, no step).
        "pretrain.num_iterations=1",
        "pretrain.steps_per_iter=2",
        "pretrain.batch_size=8",
        "pretrain.actor_micro_batch_size=4",
        "algorithm.rollout.episodes_per_iter=8",
        "algorithm.group_size=4",
        "algorithm.num_minibatches=2",
        "algorithm.actor_micro_batch_size=4",
        "algorithm.generation_batch_size=8",
        "algorithm.actor_lr=1e-3",
    ],
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("vllm_cache"))


def fit(name: str, run_dir: Path, cache: str, iterations: int) -> tuple[object, list[int]]:
    """Train ``iterations`` iterations (resuming what ``run_dir`` holds); the trainer and the engine's loads per
    sampling call (1 when it reloaded the weights)."""
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", *ENGINE, *RUNS[name]]
    trainer = build_trainer(compose_run(name, [*overrides, f"algorithm.num_iterations={iterations}"]), run_dir)
    loads: list[int] = []
    sample = VLLMEngine.sample

    def counted(engine: VLLMEngine, prompts: list[list[int]], greedy: bool):  # noqa: ANN202
        before = engine.stats.syncs
        result = sample(engine, prompts, greedy)
        loads.append(engine.stats.syncs - before)
        return result

    VLLMEngine.sample = counted
    try:
        trainer.fit()
    finally:
        VLLMEngine.sample = sample
        trainer.policy.engine().close()
    return trainer, loads


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_tiny_run_trains_through_the_engine(tmp_path: Path, cache: str, name: str) -> None:
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", *ENGINE, *RUNS[name], "algorithm.num_iterations=2"]
    start = snapshot(build_trainer(compose_run(name, overrides), tmp_path / "start").policy.model)
    trainer, loads = fit(name, tmp_path / "run", cache, iterations=2)
    assert changed(start, trainer.policy.model) > 0.9
    assert sum(loads) >= 2 and loads[0] == 1  # built and loaded once, then again after the actor steps
    records = read_records(tmp_path / "run")
    for record in records[1:]:
        assert record["rollout/engine_logprob_max_diff"] < 1e-3
    assert sum(record["rollout/engine_weight_syncs"] for record in records[1:]) >= 2


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_resumed_run_repeats_an_uninterrupted_one(tmp_path: Path, cache: str, name: str) -> None:
    fit(name, tmp_path / "a", cache, iterations=1)
    fit(name, tmp_path / "a", cache, iterations=2)  # resumes from iteration 1
    fit(name, tmp_path / "b", cache, iterations=2)

    def comparable(run: str) -> list[dict]:
        records = read_records(tmp_path / run)
        return [
            {k: v for k, v in r.items() if not k.startswith("time/") and k != "rollout/engine_sync_s"} for r in records
        ]

    assert comparable("a") == comparable("b")
    assert [r["iteration"] for r in comparable("a")] == [0, 1, 2]
