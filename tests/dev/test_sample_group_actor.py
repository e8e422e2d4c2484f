"""dev/sample_group_actor.py: leave-one-out advantages by hand, and a tiny CHAI run whose actor takes them."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch

from tests.conftest import TINY_RUN_OVERRIDES, compose_run, load_dev_script


@pytest.fixture(scope="module")
def group() -> ModuleType:
    return load_dev_script("sample_group_actor")


def _tiny_chai(tmp_path: Path, *extra: str) -> list[str]:
    """Overrides of a one-iteration CHAI run of four games that trains its untrained policy, k = 3."""
    return [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        f"run_dir={tmp_path / 'run'}",
        "pretrain=null",
        "algorithm=chai",
        "algorithm.update_policy=true",
        "algorithm.num_candidates=3",
        "algorithm.num_iterations=1",
        "algorithm.warmup_iters=0",
        "algorithm.rollout.episodes_per_iter=4",
        "algorithm.critic_steps_per_iter=1",
        "algorithm.critic_batch_size=4",
        "algorithm.actor_steps_per_iter=1",
        "algorithm.actor_batch_size=2",
        "algorithm.actor_micro_batch_size=2",
        "algorithm.generation_batch_size=6",
        *extra,
    ]


def test_leave_one_out_advantages_by_hand(group: ModuleType) -> None:
    scores = torch.tensor([[1.0, 2.0, 6.0], [0.5, 0.5, 0.5]])
    # Row 0: 1 - (2 + 6) / 2 = -3, 2 - (1 + 6) / 2 = -1.5, 6 - (1 + 2) / 2 = 4.5. Row 1: equal scores, no advantage.
    expected = torch.tensor([[-3.0, -1.5, 4.5], [0.0, 0.0, 0.0]])
    assert torch.allclose(group.leave_one_out_advantages(scores), expected)
    assert torch.allclose(group.leave_one_out_advantages(torch.tensor([[4.0, 1.0]])), torch.tensor([[3.0, -3.0]]))
    with pytest.raises(ValueError, match="k >= 2"):
        group.leave_one_out_advantages(torch.tensor([[1.0], [2.0]]))


def test_best_of_k_advantages_by_hand(group: ModuleType) -> None:
    scores = torch.tensor([[1.0, 2.0, 6.0], [0.5, 0.5, 0.5], [-1.0, -3.0, -2.0]])
    # The highest score per row; equal scores pick the first.
    expected = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert torch.equal(group.best_of_k_advantages(scores), expected)
    with pytest.raises(ValueError, match="k >= 2"):
        group.best_of_k_advantages(torch.tensor([1.0, 2.0]))


def test_best_of_k_gives_the_critics_pick_the_advantage(group: ModuleType, tmp_path: Path) -> None:
    trainer = group.build_group_trainer(compose_run("archer_20q", _tiny_chai(tmp_path)), advantage="best_of_k")
    algorithm = trainer.algorithm
    state = trainer.env.reset()[0]
    actions = ["Is it a dog?", "Is it alive?", "Is it a car?"]
    got = algorithm.actor_advantages([state] * 3, actions)
    pick = algorithm.candidate_scores([state], actions)[0].argmax().item()
    assert got.tolist() == [1.0 if j == pick else 0.0 for j in range(3)]


def test_the_actor_scores_k_samples_per_state_with_the_target_critic(group: ModuleType, tmp_path: Path) -> None:
    trainer = group.build_group_trainer(compose_run("archer_20q", _tiny_chai(tmp_path)))
    algorithm = trainer.algorithm
    state = trainer.env.reset()[0]
    other = state + "Is it alive? No.\n"
    actions = ["Is it a dog?", "Is it alive?", "Is it a car?", "Is it red?", "Is it red?", "Is it big?"]
    got = algorithm.actor_advantages([state] * 3 + [other] * 3, actions)
    scores = algorithm.candidate_scores([state, other], actions)
    assert torch.allclose(got, group.leave_one_out_advantages(scores).flatten())
    # Two samples of the same utterance at a state are scored alike.
    assert got[3].item() == pytest.approx(got[4].item(), abs=1e-5)


def test_a_tiny_run_trains_the_policy_on_group_advantages(group: ModuleType, tmp_path: Path) -> None:
    trainer = group.build_group_trainer(compose_run("archer_20q", _tiny_chai(tmp_path)))
    seen: list[int] = []
    score = trainer.algorithm.candidate_scores

    def counting_scores(observations: list[str], texts: list[str]) -> torch.Tensor:
        seen.append(len(texts))
        return score(observations, texts)

    trainer.algorithm.candidate_scores = counting_scores
    before = [p.detach().clone() for p in trainer.policy.model.parameters()]
    last = trainer.fit()
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.model.parameters(), strict=True))
    # The actor step scored 2 states x 3 samples; its advantages sum to zero over each state's samples.
    assert 6 in seen
    assert last["actor/advantage_mean"] == pytest.approx(0.0, abs=1e-5)


def test_refuses_a_run_that_is_not_chai_training_its_policy(group: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="update_policy=true"):
        group.build_group_trainer(compose_run("archer_20q", [*TINY_RUN_OVERRIDES, "algorithm=chai"]))
    reranked = ["algorithm=chai", "algorithm.update_policy=true", "algorithm.rerank_at_eval=true"]
    with pytest.raises(ValueError, match="rerank_at_eval=false"):
        group.build_group_trainer(compose_run("archer_20q", [*TINY_RUN_OVERRIDES, *reranked]))
    with pytest.raises(SystemExit):
        group.main(["--config-name", "archer_20q", *TINY_RUN_OVERRIDES, f"run_dir={tmp_path / 'r'}"])


def test_policy_acting_samples_the_policy_once_and_reranked_acting_asks_the_critic(
    group: ModuleType, tmp_path: Path
) -> None:
    calls: dict[str, list[int]] = {}
    for acting in ("policy", "reranked"):
        trainer = group.build_group_trainer(compose_run("archer_20q", _tiny_chai(tmp_path / acting)), acting)
        scored = calls.setdefault(acting, [])
        score = trainer.algorithm.candidate_scores
        trainer.algorithm.candidate_scores = lambda obs, texts, score=score, scored=scored: (
            scored.append(len(texts)) or score(obs, texts)
        )
        states = trainer.env.reset()[:2]
        assert len(trainer.algorithm.rollout_actor(greedy=False)(states)) == 2
    assert calls == {"policy": [], "reranked": [6]}
    with pytest.raises(ValueError, match="acting must be"):
        group.build_group_trainer(compose_run("archer_20q", _tiny_chai(tmp_path / "x")), "greedy")
    with pytest.raises(ValueError, match="advantage must be one of"):
        group.build_group_trainer(compose_run("archer_20q", _tiny_chai(tmp_path / "y")), "policy", "softmax")
