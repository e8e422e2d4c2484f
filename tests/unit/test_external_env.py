"""``env=external``: a user's environment by import path (archer/envs/external): the target is found, called with
``env.kwargs`` and the common keys it names, played in either shape, and refused in one line naming ``env.target``
when it cannot be used; the start-up check and the offline-data rules."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from archer.config import ConfigError
from archer.data.json_records import DatasetError
from archer.data.trajectory import Trajectory
from archer.data.trajectory_file import save_trajectories
from archer.envs.external import offline_settings
from archer.envs.external.config import ExternalEnvConfig
from archer.envs.external.target import make_external_env
from archer.envs.gym_adapter import GymTextEnv
from archer.envs.registry import GAMES, make_env
from tests.conftest import compose_run

USER_MODULE = '''
from archer.envs.base import BatchedTextEnv, StepResult

CALLS = []


class Say:
    """Say the word: game ``seed`` wants the word ``w<seed % 5>``; reward 1 and the end for it."""

    def __init__(self, prefix="w"):
        self.prefix = prefix
        self.word = ""

    def reset(self, seed=None):
        self.word = f"{self.prefix}{(seed or 0) % 5}"
        return f"say {self.word}", {}

    def step(self, action):
        won = action.strip() == self.word
        return ("right" if won else "wrong"), float(won), won, False, {"success": won}


def make_say(prefix="w", max_turns=None):
    CALLS.append({"prefix": prefix, "max_turns": max_turns})
    return Say(prefix)


class Batched(BatchedTextEnv):
    """Two games; each ends after one step with reward 1."""

    num_games = 2

    def _reset_game(self, slot, game_id):
        game_id = game_id if game_id is not None else self.draw_game_id()
        return f"game {game_id}"

    def _step_games(self, slots, actions):
        return [StepResult("done", 1.0, True, False, {"success": True}) for _ in slots]


def make_batched(batch_size, seed=None):
    return Batched(batch_size, seed)


def broken():
    raise RuntimeError("no data file")


def not_an_env():
    return 42


NUMBER = 3
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module written outside the repository, on sys.path; returns its name."""
    (tmp_path / "user_games_87.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_games_87"


def external(target: str, **settings) -> ExternalEnvConfig:
    cfg = ExternalEnvConfig(target=target, **{"batch_size": 2, "max_turns": 3, **settings})
    cfg.validate()
    return cfg


def test_a_single_game_is_played_batched_with_kwargs_and_the_common_keys_it_names(user_module: str) -> None:
    import user_games_87

    env = make_env(external(f"{user_module}:make_say", kwargs={"prefix": "v"}), seed=0)
    assert isinstance(env, GymTextEnv) and env.batch_size == 2 and env.max_turns == 3
    # One call per slot; max_turns given because the callable names it, batch_size and seed not.
    assert user_games_87.CALLS == [{"prefix": "v", "max_turns": 3}] * 2
    assert env.reset(game_ids=[7, 3]) == ["say v2", "say v3"]
    results = env.step(["v2", "v0"])
    assert results[0].info["success"] and results[0].terminated and not results[1].done


def test_a_batched_env_is_used_as_returned_and_reseeded(user_module: str) -> None:
    env = make_env(external(f"{user_module}:make_batched"), seed=11)
    assert type(env).__name__ == "Batched" and env.batch_size == 2
    drawn = env.reset()
    again = make_env(external(f"{user_module}:make_batched"), seed=11).reset()
    assert drawn == again
    # It brings no corpus: its two games are played (on another instance) for the tokenizer's text.
    assert env.corpus() == ["game 0", "game 1", "done"]


@pytest.mark.parametrize(
    ("target", "settings", "problem"),
    [
        ("no_such_module_87:make", {}, "no module named 'no_such_module_87'; put the folder holding it on PYTHONPATH"),
        ("{m}:make_sai", {}, "{m} has no attribute 'make_sai'; did you mean make_say?"),
        ("{m}:NUMBER", {}, "{m}.NUMBER is a int, not a callable"),
        ("{m}:make_say", {"kwargs": {"colour": "red"}}, "cannot be called with env.kwargs={{'colour': 'red'}}"),
        ("{m}:broken", {}, "calling it raised RuntimeError: no data file"),
        ("{m}:not_an_env", {}, "returned a int, which is neither a BatchedTextEnv nor a text game"),
        ("{m}:Batched", {}, "returned a BatchedTextEnv of batch_size 1, but env.batch_size=2"),
    ],
)
def test_a_target_that_cannot_be_used_is_refused_in_one_line_naming_it(
    user_module: str, target: str, settings: dict, problem: str
) -> None:
    target = target.format(m=user_module)
    settings = {"kwargs": {"batch_size": 1}} if target.endswith(":Batched") else settings
    with pytest.raises(ConfigError) as caught:
        make_external_env(external(target, **settings), seed=0)
    message = str(caught.value)
    assert message.startswith(f"env.target={target}: ") and problem.format(m=user_module) in message
    assert "\n" not in message


@pytest.mark.parametrize("target", ["", "module", "module:", ":make", "my-games:make", "a.b:c d"])
def test_a_target_not_of_the_form_module_callable_is_refused_by_validation(target: str) -> None:
    with pytest.raises(ConfigError, match="env.target: got .*; give module:callable"):
        ExternalEnvConfig(target=target).validate()


def test_the_start_up_check_refuses_a_broken_game_and_runs_that_need_data(
    user_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "user_bad_87.py").write_text(
        "class Bad:\n"
        "    def reset(self, seed=None):\n        return 'hi', {}\n"
        "    def step(self, action):\n        return 'hi', float('nan'), False, False, {}\n"
    )
    preflight = GAMES["external"].preflight
    assert preflight is not None
    good = ["env=external", f"env.target={user_module}:make_say", "pretrain=null", "algorithm.bc_coeff=0"]
    preflight(compose_run("archer_20q", good))
    bad = compose_run("archer_20q", [*good, "env.target=user_bad_87:Bad"])
    with pytest.raises(ConfigError, match=r"^env.target=user_bad_87:Bad: step returned the reward nan; give a finite"):
        preflight(bad)
    # check_games=0 skips playing, not finding the target.
    preflight(compose_run("archer_20q", [*good, "env.target=user_bad_87:Bad", "env.check_games=0"]))
    with pytest.raises(ConfigError, match="no module named 'gone_87'"):
        preflight(compose_run("archer_20q", [*good, "env.target=gone_87:Bad", "env.check_games=0"]))
    with pytest.raises(DatasetError, match="^data.path: pretraining needs offline data, and env=external"):
        preflight(compose_run("archer_20q", [*good[:2], "algorithm.bc_coeff=0"]))
    with pytest.raises(DatasetError, match="^data.path: algorithm.bc_coeff > 0 needs offline data"):
        preflight(compose_run("archer_20q", good[:3]))


def test_offline_data_is_a_trajectory_file_of_the_same_target(user_module: str, tmp_path: Path) -> None:
    load = GAMES["external"].load_offline
    assert load is not None
    overrides = ["env=external", f"env.target={user_module}:make_say", "pretrain=null"]
    with pytest.raises(DatasetError, match="has no scripted player to generate offline data"):
        load(compose_run("bc_20q", overrides), tmp_path, False)
    game = Trajectory(["say w1", "right"], ["w1"], [1.0], terminated=True, truncated=False, info={"success": True})
    path = tmp_path / "data.json"
    cfg = compose_run("bc_20q", [*overrides, f"data.path={path}"])
    assert isinstance(cfg.env, ExternalEnvConfig)
    save_trajectories([game], path, "external", offline_settings(cfg.env))
    loaded = load(cfg, tmp_path, False)
    assert [(t.observations, t.actions, t.rewards) for t in loaded] == [(["say w1", "right"], ["w1"], [1.0])]
