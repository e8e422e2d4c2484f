"""The environment checker's reports (archer/envs/checker.py) and its command (archer/check_env.py): a deliberately
broken game per defect, each found; the example game passes clean."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from archer import check_env as command
from archer.envs.base import BatchedTextEnv, StepResult
from archer.envs.checker import EnvContractError, check_batched_env, check_env, check_text_game
from archer.envs.gym_adapter import SUCCESS_RULE, GymTextEnv
from examples.guess_the_number import GuessTheNumber


class Good:
    """Game ``seed`` ends on the second step with reward 1 and success."""

    def __init__(self) -> None:
        self.turn = 0
        self.seed = 0

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        self.turn, self.seed = 0, seed or 0
        return f"game {self.seed}", {}

    def step(self, action: str) -> tuple[object, object, bool, bool, dict]:
        self.turn += 1
        done = self.turn == 2
        return f"turn {self.turn}", float(done), done, False, {"success": done}


def broken(**replaced) -> type:
    """``Good`` with one method replaced."""
    return type("Broken", (Good,), replaced)


def test_a_sound_game_reports_nothing() -> None:
    report = check_text_game(Good, num_games=3, max_turns=5)
    assert report.ok and report.warnings == [] and report.notes == []
    assert report.games == 4 and report.steps == 8  # three games and the replay of the first, two steps each
    report = check_text_game(lambda: GuessTheNumber(high=3), num_games=2, max_turns=3, act=lambda obs, turn: "2")
    assert report.ok and report.warnings == []


def step_returning(observation: object, reward: object) -> type:
    return broken(step=lambda self, action: (observation, reward, False, False, {"success": False}))


@pytest.mark.parametrize(
    ("game", "error"),
    [
        (broken(reset=lambda self, seed=None: (7, {})), "reset returned an observation of type int; give a string"),
        (step_returning(["a list"], 0.0), "step returned an observation of type list; give a string"),
        (step_returning("o", math.nan), "step returned the reward nan; give a finite number"),
        (step_returning("o", "0.5"), "step returned a reward of type str; give a number"),
        (step_returning("o", None), "step returned a reward of type NoneType; give a number"),
        (broken(step=lambda self, action: ("o", 0.0, False, {})), "got tuple of length 4"),
        (broken(step=lambda self, action: 1 / 0), "playing it raised ZeroDivisionError: division by zero"),
    ],
)
def test_each_type_defect_is_an_error(game: type, error: str) -> None:
    report = check_text_game(game, num_games=2, max_turns=4, label="env.target=m:f")
    assert not report.ok and len(report.errors) == 1
    assert error in report.errors[0] and not report.errors[0].startswith("env.target")
    assert report.lines()[0] == f"error: {report.errors[0]}"


def test_missing_success_is_a_warning_naming_the_rule() -> None:
    def step(self, action: str) -> tuple:
        return Good.step(self, action)[:4] + ({},)

    report = check_text_game(broken(step=step), num_games=2, max_turns=4)
    assert report.ok and report.warnings == [f"info has no 'success': {SUCCESS_RULE}"]


def test_a_game_that_ignores_its_seed_is_not_deterministic() -> None:
    counter = iter(range(1000))

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        self.turn = 0
        return f"game {next(counter)}", {}

    report = check_text_game(broken(reset=reset), num_games=2, max_turns=4)
    assert report.ok and len(report.warnings) == 1
    assert report.warnings[0].startswith(
        "not deterministic: replaying seed 0 with the same actions on a fresh instance, the first observation differs"
    )
    # The same start but other rewards on replay: named too.
    rewards = iter([1.0, 0.0] * 10)
    step = broken(step=lambda self, action: ("o", next(rewards), True, False, {"success": True}))
    report = check_text_game(step, num_games=1, max_turns=4)
    assert "the reward of turn 1 differs (1.0 then 0.0)" in report.warnings[0]


def test_a_game_that_keeps_state_across_resets_is_flagged() -> None:
    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        self.games = getattr(self, "games", 0) + 1
        self.turn = 0
        return ("game" if self.games <= 2 else "stale"), {}

    report = check_text_game(broken(reset=reset), num_games=2, max_turns=4)
    assert report.warnings == [
        "reset(seed=0) of an instance that has played other games gives another first observation than a fresh "
        "instance; the trainer reuses each instance for many games"
    ]


def test_slow_steps_empty_observations_and_games_the_turn_limit_cuts() -> None:
    def step(self, action: str) -> tuple:
        time.sleep(0.03)
        return "", 0.0, False, False, {"success": False}

    report = check_text_game(broken(step=step), num_games=2, max_turns=2, slow_step_s=0.02)
    assert report.ok and report.slowest_step_s >= 0.03
    assert report.warnings[0] == "an observation is empty: the policy would see nothing"
    assert report.warnings[1].startswith("slow: a call took 0.0") and "(more than 0.02 s)" in report.warnings[1]
    assert report.notes == [
        "2 of 2 games did not end within max_turns=2 probe actions: a run cuts them there (truncated)"
    ]


class StepsAfterTheEnd(BatchedTextEnv):
    """A batched env that overrides ``step`` and keeps answering for finished games (a contract break)."""

    num_games = 1

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        return "start"

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        return [StepResult("end", 1.0, True, False, {"success": True}) for _ in slots]

    def step(self, actions):
        ended = StepResult("end", 1.0, True, False, {"success": True})
        return [result or ended for result in super().step(actions)]


class NanBatched(StepsAfterTheEnd):
    step = BatchedTextEnv.step

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        return [StepResult("end", math.nan, True, False, {"success": True}) for _ in slots]


def test_batched_envs_stepping_after_the_end_or_paying_nan_are_reported() -> None:
    report = check_batched_env(StepsAfterTheEnd(batch_size=2))
    assert report.errors == ["finished games must keep returning None"]
    report = check_batched_env(NanBatched(batch_size=2))
    assert report.errors == ["reward must be a finite number, got nan"]
    with pytest.raises(EnvContractError, match="finite"):
        check_env(NanBatched(batch_size=1))
    assert check_batched_env(GymTextEnv(Good, batch_size=2, max_turns=3, num_games=5)).ok


@pytest.fixture
def user_games(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "check_games_87.py").write_text(
        "class Good:\n"
        "    def reset(self, seed=None):\n        return 'hi', {}\n"
        "    def step(self, action):\n        return 'won', 1.0, True, False, {'success': True}\n"
        "class Bad(Good):\n"
        "    def step(self, action):\n        return 'won', float('inf'), True, False, {}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return "check_games_87"


def test_the_command_prints_the_report_and_exits_by_it(user_games: str, capsys: pytest.CaptureFixture) -> None:
    assert command.main([f"env.target={user_games}:Good", "--games", "2"]) == 0
    assert capsys.readouterr().out == "played 3 games, 3 steps, slowest step 0.0 ms\n"
    assert command.main([f"env.target={user_games}:Bad", "env.max_turns=3"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "error: step returned the reward inf; give a finite number"
    assert command.main([f"env.target={user_games}:Gone"]) == 2
    assert capsys.readouterr().err.startswith(f"configuration error: env.target={user_games}:Gone: ")
    assert command.main(["env.max_turns=3"]) == 2
    assert capsys.readouterr().err == "configuration error: env.target: required; give env.target=module:callable\n"
    assert command.main(["max_turns=3", f"env.target={user_games}:Good"]) == 2
    assert "give env settings as env.KEY=VALUE" in capsys.readouterr().err


def test_the_command_reads_kwargs_and_common_keys_as_run_py_does() -> None:
    cfg = command.env_config(["env.target=a.b:c", "+env.kwargs.high=50", "env.max_turns=7", "env.history=true"])
    assert cfg.target == "a.b:c" and cfg.kwargs == {"high": 50} and cfg.max_turns == 7 and cfg.history
    with pytest.raises(ValueError, match="env.max_turns: must be positive"):
        command.env_config(["env.target=a:b", "env.max_turns=0"])
