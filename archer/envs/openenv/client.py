"""The client side of ``env=openenv``: one OpenEnv session per game slot, played as a gymnasium-shaped game
(``OpenEnvGame``) and batched by ``OpenEnvTextEnv``, which resets and steps its sessions concurrently.

An OpenEnv server (``openenv.core.env_server.create_app``) gives each WebSocket session its own environment:
``reset(seed)`` and ``step(action)`` return an observation (its fields), a reward and ``done``. What is read of it:
the text in the field ``env.observation_key``; ``success`` and ``truncated`` when the observation has them as
booleans (the project's own server sends both, ``archer.envs.openenv.server``); else ``done`` is the game's own end
and the project's success rule applies (``archer.envs.gym_adapter.game_success``). The action is sent as
``{env.action_key: text}``.

Every call waits at most ``env.timeout_s``; a server that is down, slow, full, or that answers with an error fails
with an ``OpenEnvServerError`` naming ``env.server_url`` (and the key to change).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from archer.envs.base import StepResult
from archer.envs.gym_adapter import GymTextEnv, played_corpus
from archer.envs.openenv.config import OpenEnvEnvConfig
from archer.errors import ArcherError, MissingExtraError


class OpenEnvServerError(ArcherError, ConnectionError):
    """The OpenEnv server cannot be reached, is too slow, is full, or answered with an error; the message names
    ``env.server_url`` and the key to change."""


def require_openenv() -> None:
    if importlib.util.find_spec("openenv") is None:
        raise MissingExtraError("env=openenv and archer.serve_openenv need openenv-core: pip install -e '.[openenv]'")


def _client_class() -> type:
    require_openenv()
    from openenv.core import GenericEnvClient

    return GenericEnvClient


class OpenEnvGame:
    """One session of an OpenEnv server as a gymnasium-shaped text game (``reset(seed) -> (text, info)``,
    ``step(text) -> (text, reward, terminated, truncated, info)``); the session opens at the first ``reset``.

    Args:
        cfg: the ``env=openenv`` settings (address, timeout, field names).
    """

    def __init__(self, cfg: OpenEnvEnvConfig) -> None:
        self.cfg = cfg
        self._client: Any = None

    # ------------------------------------------------------------------------------------------------- session

    def _where(self) -> str:
        return f"env.server_url={self.cfg.server_url}"

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        client = _client_class()(
            base_url=self.cfg.server_url, connect_timeout_s=self.cfg.timeout_s, message_timeout_s=self.cfg.timeout_s
        )
        client = client.sync() if hasattr(client, "sync") else client  # openenv-core 0.3 is async, 0.2 sync
        try:
            client.connect()
        except Exception as error:  # refused, unreachable, not a WebSocket server, or no answer in time
            _close_quietly(client)
            raise OpenEnvServerError(
                f"{self._where()}: no OpenEnv server accepted a session within env.timeout_s={self.cfg.timeout_s:g} s "
                f"({_cause(error)}); start one (python -m archer.serve_openenv env=twenty_questions --port 8000) or "
                "correct env.server_url"
            ) from None
        self._client = client
        return client

    def _call(self, what: str, call: Any) -> Any:
        client = self._connect()
        try:
            return call(client)
        except TimeoutError:
            self.close()  # a late answer would be read as the next one's
            raise OpenEnvServerError(
                f"{self._where()}: the server did not answer a {what} within env.timeout_s={self.cfg.timeout_s:g} s; "
                "raise env.timeout_s for a slow game, or check the server"
            ) from None
        except Exception as error:
            self.close()
            raise OpenEnvServerError(f"{self._where()}: {what} failed: {_server_problem(error, self.cfg)}") from None

    def close(self) -> None:
        """Close the session (the server ends its game); the next ``reset`` opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            _close_quietly(client)

    # ---------------------------------------------------------------------------------------------------- game

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        result = self._call("reset", lambda client: client.reset(**({} if seed is None else {"seed": seed})))
        text, _ = self._read(result, "reset")
        return text, {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        result = self._call("step", lambda client: client.step({self.cfg.action_key: action}))
        text, observation = self._read(result, "step")
        truncated = bool(result.done) and observation.get("truncated") is True
        info: dict[str, Any] = {}
        if isinstance(observation.get("success"), bool):
            info["success"] = observation["success"]
        reward = 0.0 if result.reward is None else result.reward
        return text, reward, bool(result.done) and not truncated, truncated, info

    def _read(self, result: Any, what: str) -> tuple[str, dict]:
        observation = result.observation if isinstance(result.observation, dict) else {}
        text = observation.get(self.cfg.observation_key)
        if not isinstance(text, str):
            fields = ", ".join(sorted(observation)) or "none"
            raise OpenEnvServerError(
                f"{self._where()}: the {what}'s observation has no text field {self.cfg.observation_key!r} "
                f"(env.observation_key); its fields are {fields}"
            )
        return text, observation


def _cause(error: BaseException) -> str:
    """The innermost message of ``error``'s chain (openenv wraps the socket's error in its own)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _server_problem(error: BaseException, cfg: OpenEnvEnvConfig) -> str:
    text = str(error)
    sessions = f"--max-sessions of the server, at least 2 x env.batch_size={2 * cfg.batch_size} for a run"
    if "CAPACITY_REACHED" in text:
        return f"the server is full ({text}); start it with more sessions ({sessions}) or lower env.batch_size"
    if type(error).__name__.startswith("ConnectionClosed"):
        # A full server sends its refusal and closes at once: the refusal may not be read before the close.
        return (
            f"the server closed the session ({_cause(error)}); a full server does ({sessions}; or lower "
            "env.batch_size), and so does one that stopped"
        )
    if "VALIDATION_ERROR" in text or "validation error" in text.lower():
        return f"the server refused the action {{{cfg.action_key!r}: ...}} ({text}); set env.action_key to its field"
    return _cause(error) if not text else f"{type(error).__name__}: {text}"


def _close_quietly(client: Any) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing a broken session: nothing left to save
        pass


class OpenEnvTextEnv(GymTextEnv):
    """``batch_size`` sessions of an OpenEnv server played as one batched environment: resets and steps go to all
    sessions at once (one thread per session), games are drawn and seeded as ``GymTextEnv`` draws and seeds them.

    Args:
        cfg: the ``env=openenv`` settings.
        seed: seed of the generator that draws game ids.
    """

    def __init__(self, cfg: OpenEnvEnvConfig, seed: int | None = None) -> None:
        self.cfg = cfg
        super().__init__(
            lambda: OpenEnvGame(cfg),
            batch_size=cfg.batch_size,
            max_turns=cfg.max_turns,
            num_games=cfg.num_games,
            num_eval_games=cfg.num_eval_games,
            seed=seed,
            history=cfg.history,
            corpus_games=cfg.corpus_games,
            label=f"env.server_url={cfg.server_url}",
        )
        self._pool = ThreadPoolExecutor(max_workers=cfg.batch_size, thread_name_prefix="openenv")
        self._resets: list[Future[str]] = []

    def reset(
        self, seed: int | None = None, game_ids: Sequence[int] | None = None, count: int | None = None
    ) -> list[str]:
        # The base class draws each slot's game in slot order (``_reset_game`` below); the sessions reset together.
        self._resets = []
        super().reset(seed, game_ids, count)
        futures, self._resets = self._resets, []
        return [future.result() for future in futures]

    def _reset_game(self, slot: int, game_id: int | None) -> str:
        game_id = game_id if game_id is not None else self.draw_game_id()
        self._resets.append(self._pool.submit(GymTextEnv._reset_game, self, slot, game_id))
        return ""

    def _step_games(self, slots: list[int], actions: list[str]) -> list[StepResult]:
        return list(self._pool.map(self._step_game, slots, actions))

    def corpus(self) -> list[str]:
        """The observations of game ids ``0 .. corpus_games - 1``, played with ``CORPUS_ACTION`` in sessions of their
        own (closed after)."""
        games = range(min(self.corpus_games, self.num_games))
        fresh = OpenEnvTextEnv(replace(self.cfg, batch_size=max(1, min(len(games), self.batch_size))), seed=0)
        try:
            return played_corpus(fresh, games)
        finally:
            fresh.close()

    def close(self) -> None:
        """Close every session and the threads."""
        for game in self.games:
            game.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
