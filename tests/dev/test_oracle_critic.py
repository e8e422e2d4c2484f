"""dev/oracle_critic.py: optimal advantages by hand, read back from real observations, and a tiny run whose actor
trains on them while its critic stays untouched."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
import torch
from critic_probe import policy_scorer

from archer.envs.grid_games.frozen_lake import FrozenLakeEnv
from archer.envs.grid_games.sokoban import SokobanEnv
from tests.conftest import TINY_RUN_OVERRIDES, compose_run, load_dev_script, tiny_online_run


@pytest.fixture(scope="module")
def oracle() -> ModuleType:
    return load_dev_script("oracle_critic")


def _observation(turns: int, *rows: str) -> str:
    return f"Rules.\nLegend: symbols\nRecent moves: none\nTurns left: {turns}\nGrid:\n" + "\n".join(rows) + "\n"


def test_sokoban_advantages_by_hand(oracle: ModuleType) -> None:
    # The player stands left of the box, the target right of it: "right" solves the room (-0.1 + 1 + 10 = 10.9);
    # every other move is blocked by a wall (-0.1, then the best with one turn fewer, discounted by 0.5).
    room = ("# # # # #", "# P X O #", "# # # # #")
    advantages = oracle.OptimalAdvantages("sokoban", gamma=0.5, step_reward=-0.1, invalid_action_penalty=-0.5)
    two_turns = _observation(2, *room)
    assert advantages.move_values(two_turns) == pytest.approx({"right": 10.9, "left": 5.35, "up": 5.35, "down": 5.35})
    got = advantages([two_turns] * 4, ["Right.", "left", "UP", "no move at all"])
    # The utterance without a move: -0.1 - 0.5 + 0.5 * 10.9 = 4.85, so 4.85 - 10.9.
    assert got.tolist() == pytest.approx([0.0, -5.55, -5.55, -6.05])
    # As labels, only the move worth the best value counts.
    labels = advantages.best_move_labels([two_turns] * 4, ["Right.", "left", "UP", "no move at all"])
    assert labels.tolist() == [1.0, 0.0, 0.0, 0.0]
    # On the last turn nothing follows a wasted move.
    assert advantages([_observation(1, *room)], ["left"]).tolist() == pytest.approx([-11.0])
    # The policy's baseline: probabilities 0.1, 0.1, 0.7, 0.1 of left, down, right, up (given unnormalised, as
    # log-probabilities of the moves among other utterances) weigh the values: 0.3 * 5.35 + 0.7 * 10.9 = 9.235.
    logprobs = [math.log(p / 2) for p in (0.1, 0.1, 0.7, 0.1)]
    baseline = advantages.policy_baseline(two_turns, logprobs)
    assert baseline == pytest.approx(9.235)
    assert advantages([two_turns] * 2, ["right", "up"], [baseline] * 2).tolist() == pytest.approx([1.665, -3.885])


def test_frozen_lake_advantages_by_hand(oracle: ModuleType) -> None:
    # One row, no slips: the goal is two cells right of the player. With 2 turns "right" reaches it at the second
    # (0.5 * 1); "left" hits the edge and leaves one turn, too few (0). "up" and "down" likewise stay put.
    advantages = oracle.OptimalAdvantages("frozenlake", gamma=0.5, is_slippery=False)
    observation = _observation(2, "P _ G")
    assert advantages.move_values(observation) == pytest.approx({"left": 0.0, "down": 0.0, "right": 0.5, "up": 0.0})
    assert advantages([observation] * 2, ["right", "left"]).tolist() == pytest.approx([0.0, -0.5])
    # A hole between the player and the goal: no move reaches it.
    assert max(advantages.move_values(_observation(3, "P O G")).values()) == 0.0
    # Where every move is worth the same, none is labelled; two best moves of four both are.
    assert advantages.best_move_labels([_observation(3, "P O G")] * 2, ["left", "right"]).tolist() == [0.0, 0.0]
    two_ways = _observation(2, "P _", "_ G")
    assert advantages.move_values(two_ways) == pytest.approx({"left": 0.0, "down": 0.5, "right": 0.5, "up": 0.0})
    labels = advantages.best_move_labels([two_ways] * 4, ["right", "down", "left", "up"])
    assert labels.tolist() == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="on the ice"):
        advantages.move_values(_observation(2, "_ X G"))


@pytest.mark.parametrize("env_class", [SokobanEnv, FrozenLakeEnv])
def test_values_read_off_observations_are_the_games_own(oracle: ModuleType, env_class: type) -> None:
    """At positions of real games, mid-play, the values read back from the text equal the env's exact ones."""
    env = env_class(batch_size=6, max_turns=6, seed=3)
    observations = env.reset()
    advantages = oracle.OptimalAdvantages.of_env(env, gamma=0.9)
    checked = 0
    for turn in range(3):
        for slot, observation in enumerate(observations):
            if env.active[slot]:
                assert advantages.move_values(observation) == pytest.approx(env.move_values(slot, 0.9))
                checked += 1
        results = env.step(["left", "down", "right", "up", "left", "down"][turn:] + ["up"] * turn)
        observations = [None if result is None else result.observation for result in results]
    assert checked >= 12


def test_refuses_what_it_cannot_value(oracle: ModuleType) -> None:
    with pytest.raises(ValueError, match="not a grid game's observation"):
        oracle.read_grid("Questions so far: none\n")
    with pytest.raises(ValueError, match="one player"):
        oracle.sokoban_room((("#", "X", "O", "#"),))
    with pytest.raises(ValueError, match="Sokoban and FrozenLake"):
        oracle.OptimalAdvantages.of_env(object(), gamma=0.9)


def test_a_tiny_run_trains_the_actor_on_optimal_advantages_and_never_the_critic(
    oracle: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    overrides = tiny_online_run(tmp_path, run_dir)
    with pytest.raises(ValueError, match="Twenty Questions' only"):
        oracle.build_oracle_trainer(compose_run("archer_sokoban", overrides), value_noise=0.5)
    trainer = oracle.build_oracle_trainer(compose_run("archer_sokoban", overrides), baseline="best")
    policy_before = [p.detach().clone() for p in trainer.policy.model.parameters()]
    critic_before = [p.detach().clone() for p in trainer.algorithm.critic.parameters()]
    last = trainer.fit()
    # Optimal advantages are never positive, and the critic's figures are absent.
    assert last["actor/advantage_max"] <= 0.0 and last["actor/advantage_min"] < 0.0
    assert not any(key.startswith("critic/") for key in last)
    assert any(not torch.equal(a, b) for a, b in zip(policy_before, trainer.policy.model.parameters(), strict=True))
    critic_after = list(trainer.algorithm.critic.parameters())
    assert all(torch.equal(a, b) for a, b in zip(critic_before, critic_after, strict=True))
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1]

    # With the policy's baseline the four moves' advantages average to 0 under the policy's move probabilities.
    trainer = oracle.build_oracle_trainer(
        compose_run("archer_sokoban", [*overrides, f"run_dir={tmp_path / 'policy'}"])
    )
    observation = trainer.env.reset()[0]
    moves = ["left", "down", "right", "up"]
    advantages = trainer.algorithm.actor_advantages([observation] * 4, moves)
    weights = torch.softmax(torch.tensor(policy_scorer(trainer.policy)(observation, moves)), dim=0)
    assert float((weights * advantages).sum()) == pytest.approx(0.0, abs=1e-5)
    assert advantages.max() > 0.0 > advantages.min()
    with pytest.raises(ValueError, match="baseline must be"):
        oracle.build_oracle_trainer(compose_run("archer_sokoban", overrides), baseline="mean")
    # As labels: 1 for the best moves of the state, 0 for the others.
    trainer = oracle.build_oracle_trainer(
        compose_run("archer_sokoban", [*overrides, f"run_dir={tmp_path / 'labels'}"]), best_move_labels=True
    )
    values = oracle.OptimalAdvantages.of_env(trainer.env, trainer.cfg.algorithm.critic.gamma).move_values(observation)
    expected = [float(values[move] == max(values.values())) for move in moves]
    assert trainer.algorithm.actor_advantages([observation] * 4, moves).tolist() == expected
    assert 1.0 in expected

    with pytest.raises(SystemExit):
        oracle.main(["--config-name", "bc_sokoban", *TINY_RUN_OVERRIDES, f"run_dir={tmp_path / 'bc'}"])
    assert "needs online ArCHer on Sokoban, FrozenLake or Twenty Questions' subset" in capsys.readouterr().err
    assert not (tmp_path / "bc").exists()


def test_twenty_questions_advantages_by_hand(oracle: ModuleType) -> None:
    from archer.envs.twenty_questions.optimal import OptimalValues
    from archer.envs.twenty_questions.words import word_list

    dog, banana = (word for word in word_list("subset10") if word.name in ("banana", "dog"))
    values = oracle.TwentyQuestionsAdvantages(OptimalValues([dog, banana], gamma=1.0))
    # Two words possible: a guess wins at once half the time, else the next guess wins after paying -1.
    assert values.action_value("Questions:\n", "Is it a banana?") == pytest.approx(-0.5)
    assert values.best_value("Questions:\n") == pytest.approx(-0.5)
    # An utterance that rules nothing out costs a turn and leaves the same two words.
    assert values.action_value("Questions:\n", "Hello there.") == pytest.approx(-1.5)
    # Banana refuted: dog is certain, guessing it scores 0, asking about banana again wastes a turn.
    refuted = "Questions:\nIs it a banana? No.\n"
    assert values.action_value(refuted, "Is it a dog?") == pytest.approx(0.0)
    assert values.action_value(refuted, "Is it a banana?") == pytest.approx(-1.0)


def test_noisy_values_keep_one_error_per_move_and_state(oracle: ModuleType) -> None:
    from archer.envs.twenty_questions.optimal import OptimalValues
    from archer.envs.twenty_questions.words import word_list

    dog, banana = (word for word in word_list("subset10") if word.name in ("banana", "dog"))
    refuted = "Questions:\nIs it a banana? No.\n"
    noisy = oracle.TwentyQuestionsAdvantages(OptimalValues([dog, banana], gamma=1.0), noise=0.5, noise_seed=3)
    first = noisy.action_value(refuted, "Is it a dog?")
    assert noisy.action_value(refuted, "Is it a dog?") == first  # the same error every time it is valued
    assert first == pytest.approx(0.5 * oracle.persistent_normal(refuted, "Is it a dog?", 3))  # exact value 0
    assert first != 0.0 and noisy.action_value("Questions:\n", "Is it a dog?") != first - 0.5  # another state's
    other_seed = oracle.TwentyQuestionsAdvantages(noisy.values, noise=0.5, noise_seed=4)
    assert other_seed.action_value(refuted, "Is it a dog?") != first
    # Errors are standard normal: over many states their mean is near 0 and their spread near 1.
    draws = torch.tensor([oracle.persistent_normal(f"state {i}", "Is it a dog?", 0) for i in range(4000)])
    assert abs(float(draws.mean())) < 0.06 and abs(float(draws.std()) - 1.0) < 0.05


def test_a_tiny_twenty_questions_run_trains_on_exact_advantages(oracle: ModuleType, tmp_path: Path) -> None:
    overrides = [
        *tiny_online_run(tmp_path, tmp_path / "run"),
        "env=twenty_questions_subset",
        "env.max_turns=4",
        "algorithm.critic.gamma=1.0",
    ]
    # Against V* (the best move's value) no utterance has a positive advantage; a wasted one costs a whole turn.
    # (The untrained policy writes no readable question, so its advantages against sampled moves would all be 0.)
    trainer = oracle.build_oracle_trainer(compose_run("archer_20q_paper_cpu", overrides), baseline="best")
    before = [p.detach().clone() for p in trainer.policy.model.parameters()]
    last = trainer.fit()
    assert not any(key.startswith("critic/") for key in last)
    assert last["actor/advantage_max"] <= 0.0
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.model.parameters(), strict=True))
    advantages = trainer.algorithm.actor_advantages(["Questions:\n"] * 2, ["Is it a dog?", "Hello there."])
    assert float(advantages[1] - advantages[0]) < 0.0 and float(advantages.max()) <= 0.0
    assert float(advantages[1]) == pytest.approx(-1.0)
    # Against the mean of sampled moves a wasted turn, the least valuable move, is worth between -1 and 0.
    trainer = oracle.build_oracle_trainer(
        compose_run("archer_20q_paper_cpu", [*overrides, f"run_dir={tmp_path / 'policy'}"]), baseline_samples=2
    )
    advantages = trainer.algorithm.actor_advantages(["Questions:\n"] * 3, ["Hello there."] * 3)
    assert all(-1.0 - 1e-6 <= float(a) <= 1e-6 for a in advantages)
    env_cfg = compose_run("archer_20q_paper_cpu", overrides).env
    with pytest.raises(ValueError, match="knowledge-base oracle"):
        oracle.TwentyQuestionsAdvantages.of_config(replace(env_cfg, oracle="t5"), gamma=1.0)
    with pytest.raises(ValueError, match="at most 16 words"):
        oracle.TwentyQuestionsAdvantages.of_config(replace(env_cfg, words="full"), gamma=1.0)
    with pytest.raises(ValueError, match="baseline_samples"):
        oracle.build_oracle_trainer(compose_run("archer_20q_paper_cpu", overrides), baseline_samples=0)
    with pytest.raises(ValueError, match="best-move labels are the grid games' only"):
        oracle.build_oracle_trainer(compose_run("archer_20q_paper_cpu", overrides), best_move_labels=True)
    with pytest.raises(ValueError, match="standard deviation, >= 0"):
        oracle.TwentyQuestionsAdvantages.of_config(env_cfg, gamma=1.0, noise=-0.1)
    # The noise's cost in ordering, at script-played probe states: none without it, some with it.
    exact = oracle.TwentyQuestionsAdvantages.of_config(env_cfg, gamma=0.95)
    noisy = oracle.TwentyQuestionsAdvantages.of_config(env_cfg, gamma=0.95, noise=0.5)
    assert oracle.noisy_ranking(exact, env_cfg, 20)["optimal/pair_agreement"] == 1.0
    assert 0.5 < oracle.noisy_ranking(noisy, env_cfg, 20)["optimal/pair_agreement"] < 0.9
