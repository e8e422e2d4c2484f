"""dev/centred_actor.py: the normalisations by hand, and a tiny run whose actor weighs its samples by the critic's
advantages less their batch mean."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tests.conftest import compose_run, load_dev_script, tiny_online_run


@pytest.fixture(scope="module")
def centred() -> ModuleType:
    return load_dev_script("centred_actor")


def test_normalisations_by_hand(centred: ModuleType) -> None:
    advantages = torch.tensor([1.0, 2.0, 6.0])
    # mean 3; centred (-2, -1, 3); unbiased std sqrt((4 + 1 + 9) / 2) = sqrt(7).
    torch.testing.assert_close(centred.normalised(advantages, "mean_norm"), torch.tensor([-2.0, -1.0, 3.0]))
    root7 = math.sqrt(7.0)
    torch.testing.assert_close(
        centred.normalised(advantages, "mean_std_norm", epsilon=0.0), torch.tensor([-2.0, -1.0, 3.0]) / root7
    )
    # A constant offset (a V lagging Q alike everywhere) leaves the centred weights unchanged.
    torch.testing.assert_close(centred.normalised(advantages - 0.3, "mean_norm"), torch.tensor([-2.0, -1.0, 3.0]))
    torch.testing.assert_close(centred.normalised(torch.tensor([-0.3]), "mean_std_norm"), torch.tensor([0.0]))
    torch.testing.assert_close(centred.normalised(advantages, "none"), advantages)
    with pytest.raises(ValueError, match="norm must be one of"):
        centred.normalised(advantages, "median")


def test_a_tiny_run_weighs_its_samples_by_centred_advantages(centred: ModuleType, tmp_path: Path) -> None:
    overrides = [
        *tiny_online_run(tmp_path, tmp_path / "run"),
        "algorithm.critic_steps_per_iter=2",
        "algorithm.critic_batch_size=4",
    ]
    cfg = compose_run("archer_20q_paper_cpu", overrides)
    trainer = centred.build_centred_trainer(cfg, "mean_norm")
    critic = trainer.algorithm.learner
    states, actions = (
        ["Questions:\n", "Questions:\nIs it an animal? No.\n", "Questions:\n"],
        ["A?", "B?", "Is it a dog?"],
    )
    raw = critic.advantages(states, actions, rows_per_pass=len(states))
    torch.testing.assert_close(trainer.algorithm.actor_advantages(states, actions), raw - raw.mean())
    before = [p.detach().clone() for p in trainer.policy.model.parameters()]
    last = trainer.fit()
    assert last["actor/advantage_mean"] == pytest.approx(0.0, abs=1e-6)  # the centred batch, logged
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.model.parameters(), strict=True))
    # Against the critic's own Q at 3 more policy samples: minus their mean Q, each state's own samples drawn.
    q_trainer = centred.build_centred_trainer(cfg, "none", q_baseline=3)
    q_advantages = q_trainer.algorithm.actor_advantages(states, actions)
    assert q_advantages.shape == (3,) and bool(torch.isfinite(q_advantages).all())
    assert not torch.allclose(q_advantages, raw)  # V is not the baseline any more
    with pytest.raises(ValueError, match="q_baseline must be >= 0"):
        centred.build_centred_trainer(cfg, "none", q_baseline=-1)
    with pytest.raises(ValueError, match="online ArCHer's actor"):
        centred.build_centred_trainer(compose_run("archer_ppo_20q", overrides[:3]), "mean_norm")
