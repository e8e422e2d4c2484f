"""What the developer scripts in ``dev/`` share: where the repository's configs and user scripts are, and how a
script turns its command line into a run config.

A script run as ``python dev/<script>.py`` has ``dev/`` on its import path, so it imports this module by name
(``from devkit import ...``); the test suite puts ``dev/`` on its path the same way (``pyproject.toml``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from archer.cli import compose_run_config
from archer.config import RunConfig

if TYPE_CHECKING:
    from archer.trainer import Trainer

REPO = Path(__file__).resolve().parents[1]
SCRIPTS_DIR = REPO / "scripts"
CONFIG_DIR = SCRIPTS_DIR / "config"


def run_parser(description: str, default_config: str = "archer_20q") -> argparse.ArgumentParser:
    """A parser with the options every run-building script has: ``--config-name`` (a top-level file of
    ``scripts/config``) and ``--json`` (where to write the script's records); Hydra overrides of the run config go
    after the options (``parse_run``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config-name", default=default_config, help="top-level file of scripts/config")
    parser.add_argument("--json", type=Path, default=None, help="also write the records here")
    return parser


def parse_run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> tuple[argparse.Namespace, RunConfig]:
    """The options, and the run config composed from ``--config-name`` and the remaining arguments (Hydra
    overrides) as ``scripts/run.py`` composes it; logging goes to the console."""
    args, overrides = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    return args, compose_run_config(CONFIG_DIR, args.config_name, overrides)


def fit_built(parser: argparse.ArgumentParser, args: argparse.Namespace, build: Callable[[], Trainer]) -> dict:
    """Build the script's trainer and run it to the end, returning its last metrics; a ``ValueError`` from ``build``
    (a config the script cannot change as it means to) is a usage error that names the config."""
    try:
        trainer = build()
    except ValueError as error:
        parser.error(f"--config-name {args.config_name}: {error}")
    return trainer.fit()


def write_records(path: Path | None, records: Any) -> None:
    """Write ``records`` as JSON to ``path`` (nothing when it is None)."""
    if path is not None:
        path.write_text(json.dumps(records, indent=1))


def user_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` (a user tool, such as ``benchmark_speed``) imported as a module, for a developer
    script that builds on it; ``scripts/`` is not a package."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
