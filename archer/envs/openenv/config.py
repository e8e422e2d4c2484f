"""The schema of ``env=openenv`` (``scripts/config/env/openenv.yaml``): an OpenEnv environment server by address."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from omegaconf import MISSING

from archer.config import ConfigError, EnvConfig, check

SCHEMES = ("http://", "https://", "ws://", "wss://")


@dataclass
class OpenEnvEnvConfig(EnvConfig):
    """An environment served by an OpenEnv server (``openenv-core``, the ``openenv`` extra): each of the
    ``batch_size`` games is one WebSocket session of the server, played concurrently. The project's own games are
    served with ``python -m archer.serve_openenv env=<game>``; ``docs/add_an_environment.md`` has the contract.

    Attributes:
        server_url: the server's address, ``http://host:port`` (``ws://`` too).
        timeout_s: the most seconds to wait for the server to accept a session or answer one reset or step; a server
            that is down or slower fails the run with an error naming this key.
        batch_size: games (sessions) played at once. The trainer plays two environments (training and evaluation),
            so the server must accept ``2 * batch_size`` sessions (``--max-sessions``).
        max_turns: steps after which a game still running ends truncated (the server may end it sooner).
        num_games: game ``i`` starts with ``reset(seed=i)``; ids ``0 .. num_games - 1``.
        num_eval_games: evaluation plays game ids ``0 .. num_eval_games - 1``; training draws from all.
        history: the policy sees the whole game so far (first observation, then each action after ``"> "`` and the
            answer) instead of the last observation alone; the project's own games send their history already.
        observation_key: the observation's field holding the text the policy reads.
        action_key: the action's field the policy's text is sent in.
        corpus_games: games played to collect the embedded tokenizer's text.
        check_games: games the start-up check plays (``archer.envs.checker``); 0 only opens one session.
        slow_step_s: the start-up check warns about a step slower than this.
    """

    name: str = "openenv"
    server_url: str = MISSING
    timeout_s: float = 30.0
    batch_size: int = 32
    max_turns: int = 20
    num_games: int = 10_000
    num_eval_games: int = 100
    history: bool = False
    observation_key: str = "text"
    action_key: str = "text"
    corpus_games: int = 4
    check_games: int = 1
    slow_step_s: float = 1.0

    def validate(self) -> None:
        super().validate()
        check_server_url(self.server_url)
        check(self.timeout_s > 0, "env.timeout_s", "must be positive (seconds)")
        check(self.num_games > 0, "env.num_games", "must be positive")
        check(self.num_eval_games > 0, "env.num_eval_games", "must be positive")
        check(bool(self.observation_key), "env.observation_key", "must name the observation's text field")
        check(bool(self.action_key), "env.action_key", "must name the action's text field")
        check(self.corpus_games >= 0, "env.corpus_games", "must be >= 0")
        check(self.check_games >= 0, "env.check_games", "must be >= 0")
        check(self.slow_step_s > 0, "env.slow_step_s", "must be positive")


def check_server_url(url: str) -> None:
    """``url`` parses as ``http(s)://host[:port]`` or ``ws(s)://host[:port]``, the port a number from 1 to 65535.

    Raises:
        ConfigError: naming ``env.server_url``.
    """
    check(
        url.startswith(SCHEMES),
        "env.server_url",
        f"got {url!r}; give the OpenEnv server's address, http://host:port (e.g. http://127.0.0.1:8000)",
    )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ConfigError(f"env.server_url: {url!r} is not a URL ({error}); give http://host:port") from None
    check(bool(parts.hostname), "env.server_url", f"{url!r} names no host; give http://host:port")
    check(port is None or port > 0, "env.server_url", f"{url!r}: the port must be between 1 and 65535")
    check(
        parts.path in ("", "/") and not parts.query,
        "env.server_url",
        f"{url!r}: give the server's root, http://host:port (the client adds /ws)",
    )
