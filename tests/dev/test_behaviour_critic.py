"""dev/behaviour_critic.py: the critic's batches and targets from the offline dataset's own moves, by hand, and a
tiny run whose critic learns only from that dataset."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from archer.data.offline import load_offline_trajectories
from archer.data.replay_buffer import ReplayBuffer
from archer.data.trajectory import Trajectory
from archer.envs.twenty_questions.oracle import parse_question
from tests.conftest import compose_run, load_dev_script, tiny_online_run


@pytest.fixture(scope="module")
def behaviour() -> ModuleType:
    return load_dev_script("behaviour_critic")


def _game(moves: list[str], rewards: list[float]) -> Trajectory:
    observations = ["Questions:\n"]
    for move in moves:
        observations.append(f"{observations[-1]}{move} No.\n")
    return Trajectory(observations=observations, actions=moves, rewards=rewards, terminated=True, truncated=False)


def test_behaviour_batches_take_each_rows_v_target_at_the_datasets_own_move(behaviour: ModuleType) -> None:
    data = ReplayBuffer(capacity=16, gamma_mc=0.5)
    data.add_trajectory(_game(["A?", "B?", "C?"], [-1.0, -1.0, 0.0]))
    batches, actions = behaviour.behaviour_batches(data, steps=3, size=4, rng=np.random.default_rng(0))
    assert [len(batch) for batch in batches] == [4, 4, 4] and len(actions) == 12
    assert actions == [action for batch in batches for action in batch.actions]
    # Each row's state is the one its move was made at: the move's question closes the next state's history.
    for batch in batches:
        for obs, act, nxt in zip(batch.observations, batch.actions, batch.next_observations, strict=True):
            assert nxt == f"{obs}{act} No.\n"
    # Returns-to-go discounted at 0.5 (-1 - 0.5 + 0, -1 + 0, 0): the Monte Carlo targets, all four the same.
    by_move = {}
    for batch in batches:
        by_move.update(zip(batch.actions, batch.mc_returns.tolist(), strict=True))
    assert by_move == {"A?": -1.5, "B?": -1.0, "C?": 0.0}
    batch = batches[0]
    targets = behaviour.monte_carlo_targets(batch, list(batch.actions), torch.zeros(len(batch)))
    assert len(targets) == 4 and all(torch.equal(t, batch.mc_returns) for t in targets)


def test_a_tiny_run_trains_its_critic_on_the_dataset_only(behaviour: ModuleType, tmp_path: Path) -> None:
    overrides = [
        *tiny_online_run(tmp_path, tmp_path / "run"),
        "algorithm.critic_steps_per_iter=2",
        "algorithm.critic_batch_size=4",
        "algorithm.bc_coeff=0.3",
    ]
    cfg = compose_run("archer_20q_paper_cpu", overrides)
    trainer = behaviour.build_behaviour_critic_trainer(cfg, targets="mc")
    algorithm = trainer.algorithm
    dataset_moves = set(algorithm.demonstrations.distinct_actions())
    # Every critic row is a dataset transition, its V target taken at the dataset's move.
    batches, actions = algorithm._critic_batches(trainer.buffer, np.random.default_rng(1))
    assert len(batches) == 2 and all(len(batch) == 4 for batch in batches)
    assert set(actions) <= dataset_moves
    # The dataset again with returns discounted at the critic's gamma, not summed as the run's own copy is.
    assert algorithm.demonstrations.gamma_mc == cfg.algorithm.critic.gamma < 1.0
    dataset = load_offline_trajectories(cfg, trainer.cache_dir)
    assert len(algorithm.demonstrations) == sum(game.length for game in dataset) > 0
    before = [p.detach().clone() for p in algorithm.critic.parameters()]
    policy_before = [p.detach().clone() for p in trainer.policy.model.parameters()]
    last = trainer.fit()
    assert np.isfinite(last["critic/loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, algorithm.critic.parameters(), strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(policy_before, trainer.policy.model.parameters(), strict=True))
    with pytest.raises(ValueError, match="bc_coeff > 0"):
        behaviour.build_behaviour_critic_trainer(compose_run("archer_20q_paper_cpu", overrides[:-1]))
    with pytest.raises(ValueError, match="targets must be td or mc"):
        behaviour.build_behaviour_critic_trainer(cfg, targets="max")
    with pytest.raises(ValueError, match="online ArCHer's critic phase"):
        behaviour.build_behaviour_critic_trainer(compose_run("archer_ppo_20q", overrides[:3]))


def test_scripted_v_targets_are_a_scripted_players_moves_at_the_replay_states(
    behaviour: ModuleType, tmp_path: Path
) -> None:
    buffer = ReplayBuffer(capacity=16, gamma_mc=1.0)
    buffer.add_trajectory(_game(["A?", "B?"], [-1.0, 0.0]))
    seen: list[str] = []

    def act(observations: list[str]) -> list[str]:
        seen.extend(observations)
        return [f"after {len(o)}?" for o in observations]

    batches, actions = behaviour.scripted_batches(buffer, act, steps=2, size=3, rng=np.random.default_rng(0))
    states = [o for batch in batches for o in batch.observations]
    assert seen == states and actions == [f"after {len(o)}?" for o in states]
    overrides = [
        *tiny_online_run(tmp_path, tmp_path / "run"),
        "algorithm.critic_steps_per_iter=2",
        "algorithm.critic_batch_size=4",
        "algorithm.bc_coeff=0.3",
        "env.data_skills=[1.0]",
    ]
    cfg = compose_run("archer_20q_paper_cpu", overrides)
    trainer = behaviour.build_behaviour_critic_trainer(cfg, v_target="scripted")
    trainer.buffer.add_trajectory(_game(["Is it an animal?"], [-1.0]))
    _, moves = trainer.algorithm._critic_batches(trainer.buffer, np.random.default_rng(0))
    # A skill-1 player at the opening asks the subset's best-splitting property, the same every time.
    assert len(set(moves)) == 1 and parse_question(moves[0]).kind == "property"
    with pytest.raises(ValueError, match="scripted with td targets"):
        behaviour.build_behaviour_critic_trainer(cfg, targets="mc", v_target="scripted")
