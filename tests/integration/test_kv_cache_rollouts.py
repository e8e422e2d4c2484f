"""Training runs whose rollouts reuse each game's KV cache across turns (model.policy.reuse_kv_cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archer.data.trajectory import Trajectory
from archer.models.incremental import IncrementalActor
from tests.integration.test_online_methods import tiny_run
from tests.integration.test_training import ARCHER_TINY, read_records, tiny_archer

pytestmark = pytest.mark.integration

REUSE = "model.policy.reuse_kv_cache=true"


@pytest.mark.parametrize("name", ["archer_20q", "ppo_20q"])
def test_two_iterations_with_kv_cache_reuse(tmp_path: Path, name: str) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    trainer = (
        tiny_archer(run, cache, *ARCHER_TINY, REUSE) if name == "archer_20q" else tiny_run(name, run, cache, REUSE)
    )
    assert isinstance(trainer.algorithm.rollout_actor(greedy=False), IncrementalActor)
    games: list[Trajectory] = []
    observe = trainer.algorithm.observe

    def recording_observe(trajectories: list[Trajectory], iteration: int) -> None:
        games.extend(trajectories)
        observe(trajectories, iteration)

    trainer.algorithm.observe = recording_observe
    trainer.fit()
    records = read_records(run)
    assert [r["iteration"] for r in records] == [0, 1, 2]
    assert len(games) == records[2]["env/trajectories"] == 2 * trainer.cfg.algorithm.rollout.episodes_per_iter
    # The sampled ids are recorded (PPO trains on them): they decode to the actions the environment received.
    for game in games:
        assert game.action_token_ids is not None
        assert [trainer.policy.action_text(ids) for ids in game.action_token_ids] == game.actions
