"""The server side: any ``BatchedTextEnv`` served as an OpenEnv environment (``openenv-core``'s ``create_app``), one
game per WebSocket session, so that other trainers play the project's games as the project plays them.

Each session gets its own environment of one game (``make_env``); ``reset(seed=s)`` starts game ``s mod
num_games`` (``seed`` omitted: a game drawn by the session's generator), ``step(TextAction(text=...))`` plays one
turn. The observation (``TextObservation``) carries the text the project's policies read (the game's history for
the question games), the reward, ``done``, and the project's ``success`` and ``truncated`` flags as fields (OpenEnv
does not send an observation's ``metadata``), with the game's other facts in ``info``.

``python -m archer.serve_openenv env=<game>`` builds the app for a game of the registry; ``ServerThread`` runs an
app on a local port in a thread (tests, notebooks). Imported only where ``openenv-core`` is installed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import Field

from archer.envs.base import BatchedTextEnv

_INFO_TYPES = (str, int, float, bool)


class TextAction(Action):
    """One turn of a text game: what the player says."""

    text: str = Field(description="the player's action, as the project's policies write it")


class TextObservation(Observation):
    """What the player sees after a reset or a step (``reward`` and ``done`` are OpenEnv's own fields)."""

    text: str = Field(default="", description="the observation the project's policies read")
    success: bool = Field(default=False, description="the game was won (set on its last step)")
    truncated: bool = Field(default=False, description="the game was cut by its turn limit, not ended by its rules")
    info: dict[str, Any] = Field(default_factory=dict, description="the game's other facts of this step")


class GameSession(Environment):
    """One game of a ``BatchedTextEnv`` (batch size 1) as an OpenEnv ``Environment``.

    Args:
        env: the session's environment.
        lock: held around every call into the environment; one lock shared by all sessions when they share an
            oracle (a model called from one thread at a time), a lock of the session's own otherwise.
        name: the game's name, for ``/metadata``.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env: BatchedTextEnv, lock: threading.Lock | None = None, name: str = "game") -> None:
        super().__init__()
        self.env = env
        self.name = name
        self._lock = lock or threading.Lock()
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
        game_ids = None if seed is None else [seed % self.env.num_games]
        with self._lock:
            observation = self.env.reset(game_ids=game_ids, count=None if game_ids else 1)[0]
        self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        return TextObservation(text=observation, reward=0.0, done=False)

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        if not any(self.env.active):
            raise RuntimeError("no game is being played: reset starts one (the last one has ended)")
        with self._lock:
            result = self.env.step([action.text])[0]
        assert result is not None
        self._state = State(episode_id=self._state.episode_id, step_count=self._state.step_count + 1)
        info = {
            key: value for key, value in result.info.items() if key != "success" and isinstance(value, _INFO_TYPES)
        }
        return TextObservation(
            text=result.observation,
            reward=float(result.reward),
            done=result.done,
            success=bool(result.info.get("success", False)),
            truncated=result.truncated,
            info=info,
        )

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.name,
            description=(
                f"archer's {self.name}: {self.env.num_games} games; reset(seed=s) starts game s mod "
                f"{self.env.num_games}; step(TextAction(text=...)); observation.text, reward, done, success, truncated"
            ),
        )

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if callable(close):
            close()


def make_app(
    make_env: Callable[[int], BatchedTextEnv], name: str, max_sessions: int, shared_lock: threading.Lock | None = None
) -> Any:
    """The FastAPI app serving ``make_env``'s game: session ``i`` plays ``make_env(i)`` (an environment of batch
    size 1, seeded with ``i``), at most ``max_sessions`` sessions at once.

    Args:
        make_env: the environment of session ``i``.
        name: the game's name (``/metadata``).
        max_sessions: sessions served at once; a client opening one more is refused (``CAPACITY_REACHED``).
        shared_lock: held around every game call of every session (games that share an oracle); None: sessions run
            in parallel.
    """
    counter = iter(range(1 << 62))

    def session() -> GameSession:
        return GameSession(make_env(next(counter)), shared_lock, name)

    return create_app(session, TextAction, TextObservation, env_name=name, max_concurrent_envs=max_sessions)


class ServerThread:
    """``app`` served by uvicorn on ``host:port`` in a daemon thread (port 0: a free one); ``url`` is its address.

    Use as a context manager, or call ``close()``: the server stops within a few seconds.

    Raises:
        OSError: the port cannot be bound.
        TimeoutError: the server did not start within ``start_timeout_s``.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, start_timeout_s: float = 20.0) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.host, self.port = self._socket.getsockname()[:2]
        self.url = f"http://{self.host}:{self.port}"
        # uvicorn's newer websockets-sansio implementation logs a traceback for every session openenv-core 0.3
        # closes (it closes a socket the client already closed); the first implementation does not, and is kept.
        warnings.filterwarnings("ignore", message="The `websockets` implementation is deprecated")
        ws = "websockets"
        config = uvicorn.Config(app, log_level="warning", ws=ws, lifespan="off", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True, name="openenv-server"
        )
        self._thread.start()
        deadline = time.monotonic() + start_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise TimeoutError(f"the OpenEnv server on {self.url} did not start within {start_timeout_s:g} s")
            time.sleep(0.02)

    def close(self, timeout_s: float = 5.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)
        with contextlib.suppress(OSError):
            self._socket.close()

    def __enter__(self) -> ServerThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
