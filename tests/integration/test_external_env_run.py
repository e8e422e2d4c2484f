"""``env=external`` from the command line, as a user runs it: a gymnasium-shaped text game in a throwaway module
outside the repository, on PYTHONPATH, trains with GRPO through ``scripts/run.py``; a wrong ``env.target`` is
refused in seconds, in one line naming it, leaving no run folder."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archer.trainer import build_trainer
from tests.conftest import TINY_RUN_OVERRIDES, compose_run

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

# Say the word: game ``seed`` wants one of five words; reward 1 and the end for it, -0.1 for any other answer.
USER_GAME = """
WORDS = ["red", "green", "blue", "black", "white"]


class SayTheWord:
    def __init__(self, words=WORDS):
        self.words = list(words)
        self.word = ""

    def reset(self, seed=None):
        self.word = self.words[(seed or 0) % len(self.words)]
        return f"Say the colour {self.word}.", {}

    def step(self, action):
        won = self.word in action.lower()
        return ("Right." if won else "Wrong, again."), (1.0 if won else -0.1), won, False, {}
"""


def run(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess, float]:
    (tmp_path / "user_game_87.py").write_text(USER_GAME)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tmp_path)}
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "run.py", "--config-name", "grpo_20q", "env=external", *overrides],
        cwd=SCRIPTS,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return result, time.monotonic() - start


def test_a_users_gymnasium_shaped_game_trains_with_grpo_from_the_command_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result, _ = run(
        tmp_path,
        "env.target=user_game_87:SayTheWord",
        "+env.kwargs.words=[red,green]",
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        f"run_dir={run_dir}",
        "pretrain=null",
        "eval.every_iters=2",
        "algorithm.num_iterations=2",
        "algorithm.rollout.episodes_per_iter=8",
        "algorithm.group_size=4",
        "algorithm.num_minibatches=2",
        "algorithm.actor_micro_batch_size=4",
        "algorithm.generation_batch_size=8",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2]
    assert {"rollout/return_mean", "rollout/success_rate", "actor/ppo_loss"} <= set(records[1])
    # 4 turns of -0.1 at worst, one word said at best; success exactly when a game was won (the rule, no info).
    assert -0.4 - 1e-9 <= records[1]["rollout/return_min"] <= records[1]["rollout/return_max"] <= 1.0
    assert records[0]["eval/episodes"] == 4.0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"]["target"] == "user_game_87:SayTheWord"
    assert config["env"]["kwargs"] == {"words": ["red", "green"]}


def test_a_wrong_target_is_refused_in_seconds_naming_the_key(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result, seconds = run(tmp_path, "env.target=user_game_87:SayTheWorld", "pretrain=null", f"run_dir={run_dir}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "configuration error: env.target=user_game_87:SayTheWorld: user_game_87 has no attribute 'SayTheWorld'; did "
        "you mean SayTheWord?"
    )
    assert not run_dir.exists() and seconds < 60


@pytest.mark.parametrize(("option", "module"), [("gem", "gem"), ("textarena", "textarena")])
def test_the_ecosystems_games_train_in_a_tiny_run(option: str, module: str, tmp_path: Path) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"env={option} needs {module} (pip install -e '.[{option}]')")
    overrides = [
        *TINY_RUN_OVERRIDES,
        f"env={option}",
        f"cache_dir={tmp_path / 'cache'}",
        "pretrain=null",
        "eval.every_iters=1",
        "algorithm.num_iterations=1",
        "algorithm.rollout.episodes_per_iter=4",
        "algorithm.group_size=2",
        "algorithm.num_minibatches=1",
        "algorithm.actor_micro_batch_size=4",
        "algorithm.generation_batch_size=4",
    ]
    trainer = build_trainer(compose_run("grpo_20q", overrides), tmp_path / "run")
    trainer.fit()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1] and "actor/ppo_loss" in records[1]
    assert records[1]["env/trajectories"] == 4.0 and 0.0 <= records[1]["rollout/success_rate"] <= 1.0
