"""OpenEnv at both edges (archer/envs/openenv, archer/serve_openenv.py), against servers on 127.0.0.1 only: the
project's games served and played through OpenEnv's own client and through ``env=openenv`` (one session per slot,
the same games as played in-process); a server that is down, slow, full or speaks another observation refused by
name within ``env.timeout_s``; a bad address refused at validation. Each test that needs openenv-core skips
without it (the ``openenv`` extra)."""

from __future__ import annotations

import importlib.util
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from archer.config import ConfigError
from archer.data.json_records import DatasetError
from archer.envs.base import BatchedTextEnv, StepResult
from archer.envs.openenv.config import OpenEnvEnvConfig
from archer.envs.registry import make_env, make_oracle
from tests.conftest import compose_run

needs_openenv = pytest.mark.skipif(
    importlib.util.find_spec("openenv") is None, reason="needs openenv-core (the openenv extra)"
)
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def client_config(url: str, **settings: object) -> OpenEnvEnvConfig:
    cfg = OpenEnvEnvConfig(server_url=url, **{"batch_size": 3, "max_turns": 4, "timeout_s": 5.0, **settings})
    cfg.validate()
    return cfg


class EchoGame(BatchedTextEnv):
    """Five one-turn games; each reset sleeps ``delay`` seconds (a slow server)."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(batch_size=1, seed=0)
        self.delay = delay

    @property
    def num_games(self) -> int:
        return 5

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        time.sleep(self.delay)
        return f"game {game_id}: say something"

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        return [StepResult(f"you said {action}", 1.0, True, False, {"success": True}) for action in actions]


@pytest.fixture(scope="module")
def twenty_questions_server() -> Iterator[str]:
    if importlib.util.find_spec("openenv") is None:
        pytest.skip("needs openenv-core (the openenv extra)")
    from archer.envs.openenv.server import ServerThread
    from archer.serve_openenv import build_app, env_config

    with ServerThread(build_app(env_config(["env=twenty_questions"]), max_sessions=8)) as server:
        yield server.url


def serving(make_game, max_sessions: int = 4):
    from archer.envs.openenv.server import ServerThread, make_app

    return ServerThread(make_app(lambda index: make_game(), "echo", max_sessions))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:notaport", "is not a URL"),
        ("127.0.0.1:8000", "give the OpenEnv server's address"),
        ("http://:8000", "names no host"),
        ("http://127.0.0.1:0", "the port must be between 1 and 65535"),
        ("http://127.0.0.1:8000/ws", "give the server's root"),
    ],
)
def test_a_bad_address_is_refused_at_validation_naming_the_key(url: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=f"^env.server_url: .*{problem}"):
        compose_run("grpo_20q", ["env=openenv", f"env.server_url={url}", "pretrain=null"])
    with pytest.raises(ConfigError, match="^env.timeout_s: must be positive"):
        compose_run("grpo_20q", ["env=openenv", "env.server_url=http://127.0.0.1:8000", "env.timeout_s=0"])


@needs_openenv
def test_another_trainer_plays_a_served_game_with_openenvs_own_client(twenty_questions_server: str) -> None:
    from openenv.core import GenericEnvClient

    client = GenericEnvClient(base_url=twenty_questions_server, message_timeout_s=5.0)
    client = client.sync() if hasattr(client, "sync") else client
    with client:
        first = client.reset(seed=3)
        assert first.observation["text"] == "Questions:\n" and first.done is False
        result = client.step({"text": "Is it an animal?"})
        assert result.observation["text"].startswith("Questions:\nIs it an animal? ")
        assert result.reward == -1.0 and result.done is False and result.observation["success"] is False


@needs_openenv
def test_env_openenv_plays_the_served_games_exactly_as_the_project_plays_them(twenty_questions_server: str) -> None:
    from archer.envs.openenv.client import OpenEnvTextEnv

    cfg = compose_run("grpo_20q", ["env=twenty_questions", "env.batch_size=3"]).env
    local = make_env(cfg, seed=0, oracle=make_oracle(cfg))
    remote = OpenEnvTextEnv(client_config(twenty_questions_server, max_turns=cfg.max_turns), seed=0)
    try:
        assert remote.reset(game_ids=[0, 5, 156]) == local.reset(game_ids=[0, 5, 156])
        for question in ["Is it an animal?", "Is it a cat?", "Is it a mammal?"]:
            mine, theirs = local.step([question] * 3), remote.step([question] * 3)
            assert [(r.observation, r.reward, r.done, r.info["success"]) for r in mine] == [
                (r.observation, r.reward, r.done, r.info["success"]) for r in theirs
            ]
        assert remote.reset(count=2) and len(remote.corpus()) > 1
    finally:
        remote.close()


@needs_openenv
def test_a_server_that_is_down_is_refused_by_name_at_once() -> None:
    from archer.envs.openenv.client import OpenEnvServerError, OpenEnvTextEnv

    url = f"http://127.0.0.1:{free_port()}"
    env = OpenEnvTextEnv(client_config(url), seed=0)
    start = time.monotonic()
    with pytest.raises(
        OpenEnvServerError, match=rf"^env.server_url={url}: no OpenEnv server accepted a session within "
    ):
        env.reset()
    assert time.monotonic() - start < 5.0
    env.close()


@needs_openenv
def test_a_slow_server_is_refused_after_env_timeout_s() -> None:
    from archer.envs.openenv.client import OpenEnvServerError, OpenEnvTextEnv

    with serving(lambda: EchoGame(delay=3.0)) as server:
        env = OpenEnvTextEnv(client_config(server.url, timeout_s=0.5, batch_size=1), seed=0)
        start = time.monotonic()
        with pytest.raises(OpenEnvServerError, match=r"did not answer a reset within env.timeout_s=0.5 s; raise env"):
            env.reset()
        assert time.monotonic() - start < 2.5
        env.close()


@needs_openenv
def test_a_full_server_and_a_foreign_observation_are_refused_by_name() -> None:
    from archer.envs.openenv.client import OpenEnvServerError, OpenEnvTextEnv

    with serving(EchoGame, max_sessions=2) as server:
        env = OpenEnvTextEnv(client_config(server.url, batch_size=3), seed=0)
        with pytest.raises(
            OpenEnvServerError, match=r"reset failed: the server (is full|closed the session) .*--max-sessions"
        ):
            env.reset()
        env.close()
        env = OpenEnvTextEnv(client_config(server.url, batch_size=1, observation_key="prompt"), seed=0)
        with pytest.raises(
            OpenEnvServerError, match=r"has no text field 'prompt' \(env.observation_key\); its fields"
        ):
            env.reset()
        env.close()
        env = OpenEnvTextEnv(client_config(server.url, batch_size=2), seed=0)
        assert env.reset(game_ids=[1, 4]) == ["game 1: say something", "game 4: say something"]
        (first, second) = env.step(["hi", "ho"])
        assert (first.observation, first.terminated, first.info["success"]) == ("you said hi", True, True)
        assert second.observation == "you said ho" and not any(env.active)
        env.close()


@needs_openenv
def test_the_start_up_check_refuses_a_down_server_before_anything_is_built(tmp_path: Path) -> None:
    from archer.envs.openenv.client import OpenEnvServerError
    from archer.preflight import preflight

    url = f"http://127.0.0.1:{free_port()}"
    cfg = compose_run("grpo_20q", ["env=openenv", f"env.server_url={url}", "pretrain=null"])
    with pytest.raises(OpenEnvServerError, match=rf"^env.server_url={url}: no OpenEnv server"):
        preflight(replace(cfg, cache_dir=str(tmp_path / "cache")), tmp_path / "run")
    needs_data = compose_run("grpo_20q", ["env=openenv", f"env.server_url={url}"])
    with pytest.raises(DatasetError, match="^data.path: this run needs offline data"):
        preflight(replace(needs_data, cache_dir=str(tmp_path / "cache")), tmp_path / "run")


@needs_openenv
def test_the_serve_command_serves_a_game_and_refuses_what_it_cannot_serve() -> None:
    from archer.envs.openenv.client import OpenEnvTextEnv

    command = [sys.executable, "-m", "archer.serve_openenv"]
    refused = subprocess.run([*command, "env=openenv"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1] == (
        "configuration error: env: env=openenv is a client of a server; serve the game itself (env=<game>)"
    )
    server = subprocess.Popen(
        [*command, "env=sokoban", "--port", "0", "--max-sessions", "2"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 60)
        url = server.stdout.readline().strip() if ready else ""  # the command prints its address once it serves
        assert url.startswith("http://127.0.0.1:"), url
        env = OpenEnvTextEnv(client_config(url, batch_size=2), seed=0)
        observations = env.reset(game_ids=[0, 0])
        assert observations[0] == observations[1] and observations[0].strip()
        assert all(isinstance(result.reward, float) for result in env.step(["up", "left"]))
        env.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
