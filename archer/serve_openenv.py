"""``python -m archer.serve_openenv env=<game> [env.KEY=VALUE ...] [--port 8000]``: serve one of the project's games
as an OpenEnv environment server (``openenv-core``, the ``openenv`` extra).

The game is composed from ``scripts/config/env/<game>.yaml`` with the overrides, as ``scripts/run.py`` composes it
(``env=twenty_questions_subset``, ``env=guess_my_city env.match=word``, ``env=webshop``, ``env=sokoban``, a user's
``env=external env.target=...``), and each session plays one game of it (``archer.envs.openenv.server``): other
trainers reach it with any OpenEnv client (``GenericEnvClient(base_url="http://127.0.0.1:8000")``; the action is
``{"text": ...}``, the observation's ``text`` what the project's policies read), and this project with
``env=openenv env.server_url=http://127.0.0.1:8000``. The oracle of the question games is built once and shared
by every session (one call at a time). Serves on 127.0.0.1 unless ``--host`` says otherwise; stops on Ctrl-C.
Exit status 2 for a setting that cannot be used.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from archer.config import ConfigError, EnvConfig
from archer.errors import ArcherError

CONFIG_DIR = Path(__file__).resolve().parents[1] / "scripts" / "config"
# A root config whose defaults list takes every env option (the env group is what is used of it).
ROOT_CONFIG = "bc_20q"
DEFAULT_MAX_SESSIONS = 128

log = logging.getLogger(__name__)


def env_config(overrides: Sequence[str]) -> EnvConfig:
    """The env settings ``env=<game>`` and ``env.KEY=VALUE`` overrides compose to, validated.

    Raises:
        ConfigError: no ``env=<game>``, an override outside ``env``, a setting refused, or ``env=openenv``.
    """
    from archer.cli import compose_run_config

    if "env=openenv" in overrides:
        raise ConfigError("env: env=openenv is a client of a server; serve the game itself (env=<game>)")
    if not any(override.startswith("env=") for override in overrides):
        raise ConfigError("env: choose the game to serve, env=<game> (a file of scripts/config/env/)")
    for override in overrides:
        if not override.lstrip("+~").startswith(("env=", "env.")):
            raise ConfigError(f"{override}: only env=<game> and env.KEY=VALUE settings choose what is served")
    if not CONFIG_DIR.is_dir():
        raise ConfigError(
            f"env: the game configs are read from {CONFIG_DIR}, which is not there (an editable install)"
        )
    return compose_run_config(CONFIG_DIR, ROOT_CONFIG, ["run_dir=unused", *overrides]).env


def build_app(cfg: EnvConfig, max_sessions: int = DEFAULT_MAX_SESSIONS, seed: int = 0) -> Any:
    """The OpenEnv app serving ``cfg``'s game: session ``i`` plays an environment of one game seeded ``seed + i``;
    the question games' oracle is built once and shared (with one lock around the game calls).

    Raises:
        MissingExtraError: openenv-core (or the game's own extra) is not installed.
    """
    from archer.envs.openenv.client import require_openenv

    require_openenv()
    from archer.envs.openenv.server import make_app
    from archer.envs.registry import make_env, make_oracle

    oracle = make_oracle(cfg)
    single = replace(cfg, batch_size=1)
    single.validate()
    make_env(single, seed=seed, oracle=oracle)  # a game that cannot be built here fails now, not at the first session
    return make_app(
        lambda index: make_env(single, seed=seed + index, oracle=oracle),
        name=cfg.name,
        max_sessions=max_sessions,
        shared_lock=threading.Lock() if oracle is not None else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m archer.serve_openenv", description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="env=<game> and env.KEY=VALUE settings")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (0: a free one)")
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        help="games played at once (a run needs 2 x its batch)",
    )
    parser.add_argument("--seed", type=int, default=0, help="session i's generator is seeded seed + i")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if not 0 <= args.port <= 65535:
            raise ConfigError(f"--port: got {args.port}; give a port from 1 to 65535 (0: a free one)")
        if args.max_sessions <= 0:
            raise ConfigError(f"--max-sessions: got {args.max_sessions}; must be positive")
        cfg = env_config(args.overrides)
        app = build_app(cfg, args.max_sessions, args.seed)
        from archer.envs.openenv.server import ServerThread

        server = ServerThread(app, args.host, args.port)
    except ArcherError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"--host/--port: cannot listen on {args.host}:{args.port} ({error})", file=sys.stderr)
        return 2
    log.info(
        "serving %s as an OpenEnv environment on %s (up to %d sessions; Ctrl-C stops)",
        cfg.name,
        server.url,
        args.max_sessions,
    )
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
