"""dev/diagnose_critic.py: returns, loss and the read-out of returns by hand; tiny runs fit the critic and score
held-out games, and on a grid game rank probe moves against their exact values."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

from archer.data.trajectory import Trajectory
from archer.models.critic import CriticOutput
from archer.trainer import build_trainer
from tests.conftest import TINY_RUN_OVERRIDES, compose_run, load_dev_script
from tests.integration.test_training import ARCHER_TINY

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def diagnose() -> ModuleType:
    return load_dev_script("diagnose_critic")


def test_moves_carry_the_discounted_return_that_followed(diagnose: ModuleType) -> None:
    # gamma 0.5. Game A: rewards -1, 0 -> returns -1, 0. Game B: rewards -1, -1, -1 -> -1.75, -1.5, -1.
    won = Trajectory(["a0", "a1", "a2"], ["x0", "x1"], [-1.0, 0.0], terminated=True)
    lost = Trajectory(["b0", "b1", "b2", "b3"], ["y0", "y1", "y2"], [-1.0, -1.0, -1.0], truncated=True)
    assert diagnose.moves_with_returns([won, lost], gamma=0.5) == [
        ("a0", "x0", -1.0), ("a1", "x1", 0.0), ("b0", "y0", -1.75), ("b1", "y1", -1.5), ("b2", "y2", -1.0),
    ]  # fmt: skip


def test_the_loss_sums_each_heads_mean_squared_error(diagnose: ModuleType) -> None:
    # returns (1, 3). q1 = (0, 3): (1 + 0) / 2 = 0.5; q2 = (1, 1): (0 + 4) / 2 = 2; v1 = (2, 3): 0.5; v2 = (1, 3): 0.
    heads = {"q1": [0.0, 3.0], "q2": [1.0, 1.0], "v1": [2.0, 3.0], "v2": [1.0, 3.0]}
    out = CriticOutput(**{name: torch.tensor(values) for name, values in heads.items()})
    assert diagnose.monte_carlo_critic_loss(out, torch.tensor([1.0, 3.0])).item() == pytest.approx(3.0)


def test_a_tiny_run_fits_the_critic_and_scores_the_held_out_games(diagnose: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "records.json"
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        "pretrain=null",
        "algorithm.critic_batch_size=4",
        "algorithm.critic.micro_batch_size=2",
    ]
    args = ["--games", "6", "--holdout", "2", "--steps", "2", "--eval-every", "1"]
    records = diagnose.main([*args, "--json", str(out), *overrides, f"run_dir={tmp_path / 'run'}"])
    assert [r["step"] for r in records] == [0, 1, 2]
    assert all(r["samples_per_s"] > 0 for r in records[1:])
    assert json.loads(out.read_text()) == records

    # Every trained critic parameter moves (archer_20q's critic encoder is frozen); the policy is never touched.
    trainer = build_trainer(compose_run("archer_20q", [*overrides, f"run_dir={tmp_path / 'run2'}"]))
    games = diagnose.collect_trajectories(trainer.env, trainer.algorithm.rollout_actor(greedy=False), 4)
    policy_before = {n: p.detach().clone() for n, p in trainer.policy.model.named_parameters()}
    critic_before = {n: p.detach().clone() for n, p in trainer.algorithm.critic.named_parameters()}
    diagnose.fit_critic_on_returns(trainer, games, holdout=1, steps=1, eval_every=1)
    critic = trainer.algorithm.critic
    moved = [not torch.equal(critic_before[n], p) for n, p in critic.named_parameters() if p.requires_grad]
    assert sum(moved) / len(moved) > 0.9
    assert all(torch.equal(critic_before[n], p) for n, p in critic.named_parameters() if not p.requires_grad)
    assert all(torch.equal(policy_before[n], p) for n, p in trainer.policy.model.named_parameters())
    with pytest.raises(ValueError, match="--holdout"):
        diagnose.fit_critic_on_returns(trainer, games, holdout=4, steps=1, eval_every=1)


def test_configs_without_an_utterance_critic_and_an_empty_holdout_are_refused(
    diagnose: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        diagnose.main(["--config-name", "offline_bc_20q", f"run_dir={tmp_path}", *TINY_RUN_OVERRIDES])
    assert "needs an online utterance-level critic" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        diagnose.main(["--games", "5", "--holdout", "5", f"run_dir={tmp_path}", *TINY_RUN_OVERRIDES])
    assert "--holdout must be between 1 and --games - 1 (4), got 5" in capsys.readouterr().err


class _LengthCritic(nn.Module):
    """A stand-in critic whose observation vector is the observation's length."""

    def embed(self, texts: list[str]) -> torch.Tensor:
        return torch.tensor([[float(len(text))] for text in texts])


def test_the_readout_of_returns_fits_each_direction_on_the_returns_that_followed_it(diagnose: ModuleType) -> None:
    critic_probe = load_dev_script("critic_probe")
    # gamma 0.5. Game A: "left" at "s" then "Right!" at "ss", rewards 0 then 1: returns 0.5 and 1. Game B: "jump"
    # names no direction and is left out. "left" (one example, at length 1) reads 0.5 everywhere, "right" (at length
    # 2) reads 1; "up" was never taken and reads the lowest return, 0.5.
    games = [
        Trajectory(["s", "ss", "sss"], ["left", "Right!"], [0.0, 1.0], terminated=True),
        Trajectory(["s", "s_"], ["jump"], [0.0], truncated=True),
    ]
    # At "s" the truth has left above right above up: the read-out orders right first, so one pair of three agrees
    # (left above up is a tie in the read-out: not agreeing).
    probe = [critic_probe.ValuedState("s", ("left", "right", "up"), (1.0, 0.5, 0.0))]
    figures = diagnose.returns_readout(_LengthCritic(), games, 0.5, probe, penalty=0.0)
    assert figures["readout/examples"] == 2.0 and figures["readout/positions"] == 2.0
    assert figures["readout/pair_agreement"] == pytest.approx(1 / 3)
    assert figures["readout/best_move"] == 0.0 and figures["readout/states"] == 1.0
    with pytest.raises(ValueError, match="names a direction"):
        diagnose.returns_readout(_LengthCritic(), games[1:], 0.5, probe, penalty=0.0)


def test_a_grid_run_ranks_probe_moves_by_the_fitted_critic_its_policy_and_a_readout(
    diagnose: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        *ARCHER_TINY,
        "pretrain=null",
        "algorithm.critic_batch_size=4",
        "algorithm.critic.micro_batch_size=2",
        f"run_dir={tmp_path / 'run'}",
    ]
    args = ["--config-name", "archer_sokoban", "--games", "8", "--holdout", "2", "--steps", "2", "--eval-every", "1"]
    records = diagnose.main([*args, "--probe-states", "4", *overrides])
    last = records[-1]
    for prefix in ("optimal", "policy_optimal", "readout"):
        assert last[f"{prefix}/states"] == 4 and 0.0 <= last[f"{prefix}/pair_agreement"] <= 1.0
        assert 0.0 < last[f"{prefix}/best_by_chance"] < 1.0
    assert last["readout/examples"] >= 1
    assert not any(key.startswith("readout/") for record in records[:-1] for key in record)
    with pytest.raises(SystemExit):
        diagnose.main([*args, "--probe-states", "-1", *overrides])
    with pytest.raises(SystemExit):
        diagnose.main(["--probe-states", "4", *overrides])
    assert "exact move values exist for Sokoban and FrozenLake only" in capsys.readouterr().err
