"""ArCHer end to end on Detective, FrozenLake and Sokoban with tiny models: the shipped configs, two iterations."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from archer.envs.registry import GAMES
from archer.trainer import build_trainer
from tests.conftest import DETECTIVE, TINY_RUN_OVERRIDES, compose_run
from tests.integration.test_training import ARCHER_TINY

pytestmark = pytest.mark.integration

# Noise-free walkthrough data: its few game states are the ones the Detective unit tests already searched.
DETECTIVE_RUN = [f"env.game_path={DETECTIVE}", "env.data_noise_levels=[0.0]", "data.generate_episodes=8"]
needs_detective = pytest.mark.skipif(
    importlib.util.find_spec("jericho") is None or not Path(DETECTIVE).is_file(),
    reason=f"needs the jericho extra and the Detective story file at {DETECTIVE} (set ARCHER_DETECTIVE_PATH)",
)


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def changed(before: dict[str, torch.Tensor], module: torch.nn.Module) -> float:
    after = dict(module.named_parameters())
    return sum(not torch.equal(before[n], after[n].detach()) for n in before) / len(before)


@pytest.mark.parametrize(
    ("name", "extra", "gamma"),
    [
        pytest.param("archer_detective", DETECTIVE_RUN, 0.98, marks=needs_detective),
        pytest.param(
            "archer_frozenlake",
            ["data.generate_episodes=16"],
            0.95,
            marks=pytest.mark.skipif(importlib.util.find_spec("gymnasium") is None, reason="needs the grid extra"),
        ),
        ("archer_sokoban", ["data.generate_episodes=16"], 0.95),
    ],
)
def test_archer_two_iterations_train_every_network(name: str, extra: list[str], gamma: float, tmp_path: Path) -> None:
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}", "algorithm.num_iterations=2", *extra]
    cfg = compose_run(name, [*overrides, *ARCHER_TINY])
    assert cfg.algorithm.critic.gamma == gamma and cfg.pretrain is not None
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
    # The best achievable success on the evaluation games, in the first record; Detective has no exact solver.
    solve = GAMES[cfg.env.name].best
    if solve is None:
        assert "eval/best_success_rate" not in records[0]
    else:
        assert records[0]["eval/best_success_rate"] == solve(cfg.env, trainer.eval_game_ids).success_rate > 0
    # The grid games measure how much the move depends on the state at every evaluation; Detective's moves are text.
    dependence = [r.get("eval/move_state_dependence") for r in records if "eval/return_mean" in r]
    if GAMES[cfg.env.name].moves:
        assert len(dependence) >= 2 and all(0 <= d <= 0.75 for d in dependence), dependence
    else:
        assert dependence == [None] * len(dependence)
    # Every stored transition is one step of a game of at most env.max_turns=4 steps.
    assert 8 <= records[2]["buffer/transitions"] <= 8 * 4
    assert list((tmp_path / "cache" / "datasets").glob(f"{cfg.env.name}-*.json"))
