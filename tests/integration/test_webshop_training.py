"""ArCHer on WebShop end to end on tiny models: the shipped archer_webshop config, two iterations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from archer.trainer import build_trainer
from tests.conftest import TINY_RUN_OVERRIDES, compose_run
from tests.integration.test_training import ARCHER_TINY

pytestmark = pytest.mark.integration

# A smaller shop than the default, so building it and its search index costs little.
SMALL_SHOP = ["env.num_products=200", "env.num_instructions=300", "env.train_lower=200", "env.train_upper=250"]
SMALL_SHOP += ["env.data_upper=100"]


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def changed(before: dict[str, torch.Tensor], module: torch.nn.Module) -> float:
    after = dict(module.named_parameters())
    return sum(not torch.equal(before[n], after[n].detach()) for n in before) / len(before)


def test_archer_webshop_two_iterations_train_every_network(tmp_path: Path) -> None:
    overrides = [*TINY_RUN_OVERRIDES, *SMALL_SHOP, f"cache_dir={tmp_path / 'cache'}", "algorithm.num_iterations=2"]
    cfg = compose_run("archer_webshop", [*overrides, *ARCHER_TINY])
    assert cfg.algorithm.critic.gamma == 0.9 and cfg.pretrain is not None
    trainer = build_trainer(cfg, tmp_path / "run")
    algorithm = trainer.algorithm
    policy, critic, target = (snapshot(m) for m in (trainer.policy.model, algorithm.critic, algorithm.target_critic))
    trainer.fit()
    assert changed(policy, trainer.policy.model) > 0.9
    assert changed(critic, algorithm.critic) > 0.9
    assert changed(target, algorithm.target_critic) > 0.9
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2]
    assert "actor/pg_loss" not in records[1] and "actor/pg_loss" in records[2]  # one warm-up iteration
    assert records[2]["env/trajectories"] == 8 and records[2]["eval/episodes"] == 4
    # Every stored transition is one action of a game of at most env.max_turns=4 actions: no duplicates.
    assert 8 <= records[2]["buffer/transitions"] <= 8 * 4
    # The training games played instructions of the configured range; evaluation the fixed ids.
    assert all(200 <= trainer.env.instruction_index(slot) < 250 for slot in range(len(trainer.env.active)))
