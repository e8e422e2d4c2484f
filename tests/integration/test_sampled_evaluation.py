"""Sampled evaluation (``eval.sampled_episodes``): logged beside the greedy one, and invisible to training."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from archer.data.rollout import collect_trajectories
from tests.integration.test_training import ARCHER_TINY, read_records, tiny_archer

pytestmark = pytest.mark.integration

SAMPLED_KEYS = {
    "eval/sampled_return_mean",
    "eval/sampled_return_std",
    "eval/sampled_success_rate",
    "eval/sampled_length_mean",
    "eval/sampled_episodes",
}


def _training_view(records: list[dict]) -> list[dict]:
    """The records without times and without the sampled evaluation's own metrics."""
    return [{k: v for k, v in r.items() if not k.startswith(("time/", "eval/sampled_"))} for r in records]


def test_sampled_evaluation_is_logged_and_leaves_training_unchanged(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    tiny_archer(tmp_path / "off", cache, *ARCHER_TINY).fit()
    trainer = tiny_archer(tmp_path / "on", cache, *ARCHER_TINY, "eval.sampled_episodes=8")
    trainer.fit()
    off, on = read_records(tmp_path / "off"), read_records(tmp_path / "on")
    # Same seed: every training and greedy-evaluation number is identical with the sampled games switched on.
    assert [r["iteration"] for r in on] == [0, 1, 2]
    assert _training_view(on) == _training_view(off)
    assert all(not SAMPLED_KEYS & r.keys() for r in off)
    evaluated = [r for r in on if "eval/return_mean" in r]
    assert [r["iteration"] for r in evaluated] == [0, 2]
    for record in on:
        # Logged beside every greedy evaluation, and only then.
        assert (SAMPLED_KEYS <= record.keys()) == (record in evaluated) == ("time/sampled_eval_s" in record)
    for record in evaluated:
        assert record["eval/sampled_episodes"] == 8.0
        # Twenty Questions' repeated questions, in both kinds of play (a share of all turns).
        assert 0.0 <= record["eval/repeated_action_fraction"] <= 1.0
        assert 0.0 <= record["eval/sampled_repeated_action_fraction"] <= 1.0
        assert 0.0 <= record["eval/sampled_success_rate"] <= 1.0
        assert -4.0 <= record["eval/sampled_return_mean"] <= 0.0  # tiny games: at most 4 questions of -1
    # The sampled games are never stored: the buffer holds the training games only, as in the run without them.
    assert on[-1]["buffer/transitions"] == off[-1]["buffer/transitions"]
    # The pretrained start is shared: the sampled games are not part of the behaviour-cloning run.
    assert len(list((Path(cache) / "pretrained").iterdir())) == 1


def test_each_sampled_evaluation_plays_the_same_games_with_the_same_draws(tmp_path: Path) -> None:
    trainer = tiny_archer(tmp_path / "run", str(tmp_path / "cache"), *ARCHER_TINY, "eval.sampled_episodes=8")
    assert len(trainer.sampled_eval_game_ids) == 8
    assert sorted(set(trainer.sampled_eval_game_ids)) == sorted(set(trainer.eval_game_ids))
    torch.manual_seed(123)
    before = torch.get_rng_state()
    env_before = trainer.eval_env.get_rng_state()
    first, second = trainer.evaluate_sampled(), trainer.evaluate_sampled()
    assert (first.returns, first.lengths, first.sample_games) == (second.returns, second.lengths, second.sample_games)
    # Training's generators are where they were.
    assert torch.equal(torch.get_rng_state(), before) and trainer.eval_env.get_rng_state() == env_before
    # The games were sampled, not decoded greedily: the transcripts differ from the greedy play of the same games.
    greedy = collect_trajectories(
        trainer.eval_env,
        lambda observations: trainer.policy.generate(observations, greedy=True).texts,
        game_ids=trainer.sampled_eval_game_ids,
    )
    greedy_endings = [game.observations[-1] for game in greedy[: len(first.sample_games)]]
    assert greedy_endings != [game["final_observation"] for game in first.sample_games]
