"""``env=openenv``: a tiny GRPO run on Twenty Questions served by the project's own OpenEnv server on 127.0.0.1
(``archer.serve_openenv``'s app, in a thread), through the start-up check and the trainer, writing metrics."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest

from archer.trainer import build_trainer
from tests.conftest import TINY_RUN_OVERRIDES, compose_run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("openenv") is None, reason="needs openenv-core (the openenv extra)"),
]


def test_a_tiny_grpo_run_trains_on_a_served_game(tmp_path: Path) -> None:
    from archer.envs.openenv.server import ServerThread
    from archer.preflight import preflight
    from archer.serve_openenv import build_app, env_config

    app = build_app(env_config(["env=twenty_questions", "env.max_turns=4"]), max_sessions=8)
    with ServerThread(app) as server:
        cfg = compose_run(
            "grpo_20q",
            [
                *TINY_RUN_OVERRIDES,
                "env=openenv",
                f"env.server_url={server.url}",
                "env.timeout_s=10",
                f"cache_dir={tmp_path / 'cache'}",
                "pretrain=null",
                "eval.every_iters=1",
                "algorithm.num_iterations=1",
                "algorithm.rollout.episodes_per_iter=4",
                "algorithm.group_size=2",
                "algorithm.num_minibatches=1",
                "algorithm.actor_micro_batch_size=4",
                "algorithm.generation_batch_size=4",
            ],
        )
        preflight(cfg, tmp_path / "run")
        trainer = build_trainer(replace(cfg, run_dir=str(tmp_path / "run")), tmp_path / "run")
        trainer.fit()
        for env in (trainer.env, trainer.eval_env):
            env.close()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1] and "actor/ppo_loss" in records[1]
    assert records[1]["env/trajectories"] == 4.0 and 0.0 <= records[1]["rollout/success_rate"] <= 1.0
    # Twenty Questions pays -1 a question and 0 for the word: four questions at worst.
    assert -4.0 <= records[1]["rollout/return_min"] <= records[1]["rollout/return_max"] <= 0.0
