"""``GymTextEnv``: a gymnasium-shaped single text game played as a batched environment (archer/envs/gym_adapter.py):
seeding per game, the turn limit, the success rule, grouped resets, the action bound, the corpus, type checks."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from archer.envs.base import MAX_ACTION_CHARS
from archer.envs.checker import check_env
from archer.envs.gym_adapter import GymTextEnv, TextGameError, game_success
from examples.guess_the_number import GuessTheNumber


class Counter:
    """Game ``seed``: the secret is ``seed % 7``; the action ``n`` scores ``reward`` and ends the game when n is the
    secret. Records the actions it was given. No ``success`` in its infos unless ``with_success``."""

    def __init__(self, reward: float = 1.0, with_success: bool = False) -> None:
        self.reward = reward
        self.with_success = with_success
        self.secret = 0
        self.actions: list[str] = []

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        self.secret = (seed or 0) % 7
        return f"start {seed}", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self.actions.append(action)
        won = action == str(self.secret)
        info = {"success": won} if self.with_success else {}
        return f"got {action}", self.reward if won else 0.0, won, False, info


def make(game_factory=Counter, batch_size: int = 3, max_turns: int = 3, **kwargs) -> GymTextEnv:
    return GymTextEnv(game_factory, batch_size=batch_size, max_turns=max_turns, num_games=50, seed=0, **kwargs)


def test_game_id_i_is_reset_with_seed_i_and_the_env_seed_draws_the_ids() -> None:
    env = make(lambda: GuessTheNumber(high=1000))
    secrets = []
    for seed in (4, 4, 9):
        game = GuessTheNumber(high=1000)
        game.reset(seed=seed)
        secrets.append(game.secret)
    env.reset(game_ids=[4, 4, 9])
    assert [game.secret for game in env.games] == secrets
    # Without ids: three ids drawn with random.Random(env seed), as BatchedTextEnv draws them.
    rng = random.Random(5)
    expected = [rng.randrange(50) for _ in range(3)]
    env.reset(seed=5)
    assert [game.secret for game in env.games] == [
        (lambda g: (g.reset(seed=i), g.secret)[1])(GuessTheNumber(high=1000)) for i in expected
    ]


def test_a_game_still_running_at_max_turns_ends_truncated_and_then_gives_none() -> None:
    env = make(max_turns=2)
    env.reset(game_ids=[3, 3, 3])  # secret 3
    first = env.step(["0", "3", "1"])
    assert [r.done for r in first] == [False, True, False]
    assert first[1].terminated and not first[1].truncated and first[1].reward == 1.0
    second = env.step(["0", None, "3"])
    assert second[1] is None
    assert second[0].truncated and not second[0].terminated and second[0].reward == 0.0
    assert second[2].terminated and not second[2].truncated
    assert env.active == [False, False, False]
    assert env.games[1].actions == ["3"]  # a finished game is never stepped again


@pytest.mark.parametrize(
    ("info", "terminated", "reward", "success"),
    [
        ({}, True, 1.0, True),  # won by its own rules with a positive last reward
        ({}, True, 0.0, False),  # ended, nothing earned
        ({}, True, -1.0, False),
        ({}, False, 1.0, False),  # cut by a turn limit: not won, whatever it earned
        ({"success": True}, False, 0.0, True),  # the game's own word wins
        ({"success": np.bool_(False)}, True, 5.0, False),
    ],
)
def test_the_success_rule(info: dict, terminated: bool, reward: float, success: bool) -> None:
    assert game_success(info, terminated, reward) is success


def test_success_in_step_infos_follows_the_rule_without_the_games_word() -> None:
    env = make(lambda: Counter(reward=2.0), max_turns=1)
    env.reset(game_ids=[2, 2, 2])
    results = env.step(["2", "5", "2"])
    assert [r.info["success"] for r in results] == [True, False, True]
    assert results[1].truncated  # max_turns=1: the wrong guess was cut, not lost
    env = make(lambda: Counter(reward=0.0, with_success=True), max_turns=1)
    env.reset(game_ids=[2, 2, 2])
    assert [r.info["success"] for r in env.step(["2", "5", "2"])] == [True, False, True]


def test_grouped_resets_start_each_group_alike() -> None:
    env = make(lambda: GuessTheNumber(high=1000), batch_size=4)
    ids = env.draw_groups(num_groups=2, group_size=2)
    assert ids[0] == ids[1] and ids[2] == ids[3]
    env.reset(game_ids=ids)
    secrets = [game.secret for game in env.games]
    assert secrets[0] == secrets[1] and secrets[2] == secrets[3]
    # The same answers give the same replies within a group.
    results = env.step(["500"] * 4)
    assert results[0].observation == results[1].observation and results[2].observation == results[3].observation


def test_actions_are_cut_to_the_bound_before_the_game_reads_them() -> None:
    env = make(batch_size=1)
    env.reset(game_ids=[0])
    env.step(["x" * (MAX_ACTION_CHARS + 500)])
    assert env.games[0].actions == ["x" * MAX_ACTION_CHARS]


def test_history_shows_the_whole_game() -> None:
    env = make(batch_size=1, max_turns=5, history=True)
    assert env.reset(game_ids=[3]) == ["start 3"]
    env.step(["1"])
    assert env.step(["3"])[0].observation == "start 3\n> 1\ngot 1\n> 3\ngot 3"


def test_a_terminated_and_truncated_step_ends_terminated_only() -> None:
    class Both(Counter):
        def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
            return "end", 1.0, True, True, {}

    env = make(Both, batch_size=1)
    env.reset(game_ids=[0])
    result = env.step(["a"])[0]
    assert result.terminated and not result.truncated and result.info["success"]


def test_numpy_rewards_and_flags_are_accepted_and_infos_keep_json_values_only() -> None:
    class Numpy(Counter):
        def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
            return "ok", np.float32(0.5), np.bool_(True), np.bool_(False), {"board": np.zeros(3), "moves": 2}

    env = make(Numpy, batch_size=1)
    env.reset(game_ids=[0])
    result = env.step(["a"])[0]
    assert result.reward == 0.5 and type(result.reward) is float
    assert result.terminated is True and result.truncated is False
    assert result.info == {"moves": 2, "success": True}


@pytest.mark.parametrize(
    ("reset", "step", "message"),
    [
        (lambda: "just text", None, "reset must return (observation, info), got str"),
        (lambda: ({"text": "hi"}, {}), None, "reset returned an observation of type dict; give a string"),
        (lambda: ("hi", None), None, "reset returned an info of type NoneType; give a dict"),
        (None, lambda: ("o", 1.0, False, {}), "got tuple of length 4 (gym's old 4-tuple"),
        (None, lambda: (b"o", 1.0, False, False, {}), "step returned an observation of type bytes"),
        (None, lambda: ("o", "1.0", False, False, {}), "step returned a reward of type str; give a number"),
        (None, lambda: ("o", math.nan, False, False, {}), "step returned the reward nan; give a finite number"),
        (None, lambda: ("o", math.inf, False, False, {}), "step returned the reward inf"),
        (None, lambda: ("o", 1.0, 0, False, {}), "step returned terminated of type int; give a bool"),
    ],
)
def test_wrong_shapes_and_types_raise_naming_the_game(reset, step, message: str) -> None:
    class Broken(Counter):
        def reset(self, seed: int | None = None):
            return reset() if reset is not None else super().reset(seed)

        def step(self, action: str):
            return step() if step is not None else super().step(action)

    env = GymTextEnv(Broken, batch_size=1, max_turns=3, num_games=5, label="env.target=m:f")
    with pytest.raises(TextGameError) as caught:
        env.reset(game_ids=[0])
        env.step(["a"])
    assert str(caught.value).startswith("env.target=m:f: ") and message in str(caught.value)


def test_the_corpus_is_the_games_own_or_its_played_observations() -> None:
    env = make(lambda: GuessTheNumber(high=3))
    assert env.corpus() == GuessTheNumber(high=3).corpus()
    # Counter has no corpus(): games 0 and 1, one after the other on a fresh instance, played with "?" until the
    # turn limit (2); no repeats, in the order seen.
    played = GymTextEnv(Counter, batch_size=2, max_turns=2, num_games=50, corpus_games=2)
    assert played.corpus() == ["start 0", "got ?", "start 1"]


def test_the_adapter_passes_the_batched_contract() -> None:
    check_env(make(lambda: GuessTheNumber(high=5), batch_size=4, max_turns=6))
    check_env(make(batch_size=2, max_turns=4), act=lambda observations: ["3"] * len(observations))


def test_a_gymnasium_env_subclass_is_played_as_is() -> None:
    gymnasium = pytest.importorskip("gymnasium")

    class Echo(gymnasium.Env):
        def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
            super().reset(seed=seed)
            self.target = str(self.np_random.integers(10))
            return f"say {self.target}", {}

        def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
            won = action.strip() == self.target
            return ("yes" if won else "no"), float(won), won, False, {"success": won}

    env = GymTextEnv(Echo, batch_size=2, max_turns=2, num_games=100)
    first = env.reset(game_ids=[7, 7])
    assert first[0] == first[1] and first[0].startswith("say ")
    results = env.step([first[0].removeprefix("say "), "x"])
    assert results[0].info["success"] and results[0].terminated and not results[1].done
