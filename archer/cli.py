"""The command-line entry: registers the schemas, turns a composed Hydra config into a typed ``RunConfig`` and trains.

``scripts/run.py`` is a thin ``@hydra.main`` wrapper around ``run_or_refuse`` (``main``, with the project's errors
printed as one line), after ``register_configs``; tests call ``to_run_config`` and ``archer.trainer.train`` directly.
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import hashlib
import logging
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException, ConfigCompositionException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from archer.config import ConfigError, RunConfig, register_schemas, renamed_key_message
from archer.envs.registry import GAMES
from archer.errors import ArcherError, RunInterrupted, StorageError, storage_error
from archer.locking import LOCK_FILE, RUN_FOLDER_BUSY, FolderBusyError, check_free, read_owner

log = logging.getLogger(__name__)


RUN_FOLDER_NAME_MAX = 200
"""Bytes a default run folder's name may take from the overrides (file systems allow 255 per name)."""


def run_folder_name(overrides: str) -> str:
    """The default run folder's name for a run's overrides (Hydra's ``job.override_dirname``).

    The overrides themselves when they fit a file name and stay inside the outputs folder. A longer set (or one
    whose path-like values hold a piece that long), or one with a ``..`` piece (``data.path=../../x/data.json``,
    which would put the run folder outside ``outputs/``), keeps its first characters, slashes made underscores, and
    ends with a digest of the whole set, so the same overrides always name the same folder and a rerun still
    resumes.
    """
    raw = overrides.encode()
    pieces = raw.split(b"/")
    if all(len(piece) <= RUN_FOLDER_NAME_MAX for piece in pieces) and b".." not in pieces:
        return overrides
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = raw.replace(b"/", b"_")[: RUN_FOLDER_NAME_MAX - len(digest) - 1].decode(errors="ignore")
    return f"{head}-{digest}"


def register_configs() -> None:
    """Register every schema with Hydra's ConfigStore: the config layer's (``register_schemas``) and each game's
    config class as the ``env`` option ``base_<game>`` (the schema ``scripts/config/env/<game>.yaml`` extends); and
    the ``run_folder_name`` resolver the default ``run_dir`` is named with."""
    OmegaConf.register_new_resolver("run_folder_name", run_folder_name, replace=True)
    store = ConfigStore.instance()
    register_schemas(store)
    for spec in GAMES.values():
        store.store(group="env", name=f"base_{spec.name}", node=spec.config)


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Build and validate the typed config; errors name the offending key and how to fix it."""
    missing = sorted(key for key in OmegaConf.missing_keys(cfg) if not key.startswith("hydra"))
    if missing:
        raise ConfigError(f"{', '.join(missing)}: required, set it on the command line (e.g. {missing[0]}=...)")
    try:
        run_cfg = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as error:
        cause = error.__cause__ if isinstance(error.__cause__, ConfigError) else None
        if cause is not None:
            raise cause from None
        raise ConfigError(str(error)) from error
    if not isinstance(run_cfg, RunConfig):
        raise ConfigError("the composed config is not a RunConfig: its defaults list must start with base_run")
    check_known_keys(cfg, run_cfg)
    return run_cfg


def check_known_keys(node: DictConfig, config: Any, prefix: str = "") -> None:
    """Refuse keys of ``node`` that the typed ``config`` built from it has no field for.

    Hydra checks every key against the schema except those added with ``+key=value``, which ``OmegaConf.to_object``
    then drops without a word; a misspelt ``+algorithm.actor_lrr=0.5`` would train at the default rate.

    Raises:
        ConfigError: naming the first unknown key, and the closest known one.
    """
    if not dataclasses.is_dataclass(config):
        return
    fields = [field.name for field in dataclasses.fields(config)]
    for key in node.keys():
        key = str(key)
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"did you mean {prefix}{close[0]}?" if close else f"the settings here are {', '.join(fields)}"
            raise ConfigError(f"{prefix}{key}: no such setting ({type(config).__name__}); {hint}")
        child = getattr(config, key)
        if dataclasses.is_dataclass(child):
            check_known_keys(node[key], child, f"{prefix}{key}.")


def compose_run_config(config_dir: str | Path, config_name: str, overrides: Sequence[str]) -> RunConfig:
    """Compose ``<config_dir>/<config_name>.yaml`` with Hydra's compose API, as ``scripts/run.py`` composes it
    (command-line ``overrides`` included), into a validated ``RunConfig``; for scripts and tests that build a run
    without ``@hydra.main``. Without a ``run_dir`` override the run folder is the one ``run.py`` would use for the
    same overrides (relative to the current directory)."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(Path(config_dir).resolve())):
        try:
            cfg = compose(config_name, overrides=list(overrides), return_hydra_config=True)
        except ConfigCompositionException as error:
            message = renamed_key_message(error)
            if message is None:
                raise
            raise ConfigError(message) from error
        except yaml.YAMLError as error:
            raise ConfigError(yaml_error_message(error)) from None
        # ``${hydra:...}`` in run_dir reads the global HydraConfig, which only @hydra.main sets otherwise.
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
        return to_run_config(cfg)


def main(
    cfg: DictConfig, run_dir: str | None = None, lock_record: dict[str, object] | None = None
) -> dict[str, float]:
    """Validate ``cfg``, check that this machine can run it (``archer.preflight``), take the run folder
    (``archer.trainer.claim_run_folder``), print the config, and train in ``run_dir`` (or the config's ``run_dir``).

    Args:
        cfg: the composed config.
        run_dir: the run folder when the config has none.
        lock_record: facts to store in the run folder's lock file (``run_or_refuse``: the launcher's records).
    """
    if cfg.get("pipeline") == "kalm":  # scripts/config/kalm_*.yaml: the KALM pipeline (archer/kalm)
        from archer.kalm.pipeline import main as kalm_main

        return kalm_main(cfg, run_dir)
    run_cfg = to_run_config(cfg)
    folder = Path(run_cfg.run_dir or run_dir or ".").expanduser()
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        # Before the heavy imports: a second run on a busy folder is refused in a second or two. (Under several
        # processes the main process's verdict reaches them all through claim_run_folder.)
        check_free(folder, "run folder", RUN_FOLDER_BUSY)
    from archer.evaluation import evaluate_saved_policy
    from archer.preflight import preflight
    from archer.trainer import claim_run_folder, run_title, train

    preflight(run_cfg, folder)
    placement = claim_run_folder(run_cfg, folder, record=lock_record)
    for level, line in device_lines(placement.device, os.environ):
        log.log(level, line)
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    log.info("run folder: %s", folder.resolve())
    if run_cfg.mode == "evaluate":
        return evaluate_saved_policy(run_cfg, folder)
    return train(run_cfg, folder, title=run_title(run_cfg, *hydra_names()))


def device_lines(device: Any, environ: Any) -> list[tuple[int, str]]:
    """The log lines that name the device a run uses (``torch.device``), and a warning when ``accelerate launch``
    was told to use a GPU (its config's ``use_cpu: false``, which it passes on as ``ACCELERATE_USE_CPU``) but the
    run found none and trains on the CPU."""
    if device.type == "cuda":
        import torch

        name = torch.cuda.get_device_name(device)
        return [(logging.INFO, f"device: {device} ({name})")]
    lines = [(logging.INFO, f"device: {device} (no CUDA GPU found)" if device.type == "cpu" else f"device: {device}")]
    if device.type == "cpu" and str(environ.get("ACCELERATE_USE_CPU", "")).lower() == "false":
        gpus = environ.get("CUDA_VISIBLE_DEVICES")
        asked = f"use_cpu: false, gpu_ids: {gpus}" if gpus else "use_cpu: false"
        lines.append(
            (
                logging.WARNING,
                f"accelerate launch's config expects a GPU ({asked}), but this machine has no CUDA GPU: the run "
                "trains on the CPU (launch with --cpu, or plain python, to say so)",
            )
        )
    return lines


def hydra_names() -> tuple[str | None, str | None]:
    """The top-level config's name and the chosen ``env`` option, as Hydra composed this run; (None, None) outside
    Hydra."""
    if not HydraConfig.initialized():
        return None, None
    hydra_cfg = HydraConfig.get()
    return hydra_cfg.job.get("config_name"), hydra_cfg.runtime.choices.get("env")


def describe_error(error: ArcherError) -> str:
    """The one line the command line prints for a project error."""
    label = "configuration error" if isinstance(error, ConfigError) else "error"
    return f"{label}: {error}"


def yaml_error_message(error: yaml.YAMLError) -> str:
    """One line for a YAML file that does not parse: the file, line and column, and the problem."""
    mark = getattr(error, "problem_mark", None)
    where = f"{mark.name} line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    hint = "; YAML indents with spaces, not tabs" if "\\t" in problem or "\t" in problem else ""
    return f"{where}{problem}{hint}"


def launch_error_message(error: Exception) -> str | None:
    """One line for an error Hydra meets while it sets up the run folder (creating it, opening its log, writing
    ``.hydra/``), or None for any other error."""
    cause = error.__cause__ if isinstance(error, ValueError) else error
    if not isinstance(cause, OSError):
        return None
    if isinstance(cause, FileExistsError | NotADirectoryError):
        return f"error: run_dir: {cause.filename} is a file (or lies under one); give a folder"
    if cause.errno == errno.ENAMETOOLONG:
        return (
            f"error: run_dir: {cause.filename}: a name in it is too long for the file system (at most 255 bytes "
            "each); give a shorter run_dir"
        )
    refusal = storage_error(cause)
    return None if refusal is None else f"error: the run folder: {refusal}"


def report_composition_errors(run: Callable[[], None]) -> None:
    """Call ``run``, an ``@hydra.main`` function, printing a refused composition as Hydra does, except that a renamed
    key is named with its new path (``archer.config.renamed``).

    Hydra prints composition errors itself unless ``HYDRA_FULL_ERROR`` is set, so it is set here and the error comes
    back to be reported; a user who set it gets the traceback as before.

    Raises:
        SystemExit: with the one-line message (exit status 1) when composition fails.
    """
    wants_traceback = "HYDRA_FULL_ERROR" in os.environ
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        run()
    except CompactHydraException as error:
        if wants_traceback:
            raise
        message = renamed_key_message(error)
        if message is not None:
            sys.exit(describe_error(ConfigError(message)))
        cause = f"{os.linesep}{error.__cause__}" if isinstance(error.__cause__, OmegaConfBaseException) else ""
        sys.exit(f"{error}{cause}")
    except yaml.YAMLError as error:
        if wants_traceback:
            raise
        sys.exit(describe_error(ConfigError(yaml_error_message(error))))
    except (OSError, ValueError) as error:
        # Hydra creates the run folder, opens its log and writes .hydra/ before the run starts.
        message = launch_error_message(error)
        if wants_traceback or message is None:
            raise
        sys.exit(message)


def holds_only(folder: Path, names: frozenset[str]) -> bool:
    """Whether ``folder`` exists and every entry in it is one of ``names``."""
    return folder.is_dir() and all(entry.name in names for entry in folder.iterdir())


def remove_run_folder(folder: Path) -> None:
    """Remove ``folder`` after closing the log files open in it (Hydra's ``run.log``)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == folder.resolve():
            handler.close()
            root.removeHandler(handler)
    shutil.rmtree(folder, ignore_errors=True)


def run_or_refuse(cfg: DictConfig, run_folder: Path, launcher_files: frozenset[str], log_file: str) -> None:
    """``main(cfg)`` for ``scripts/run.py``: a project error ends the process with its message alone.

    ``@hydra.main`` creates the run folder, with ``launcher_files`` in it (``.hydra/`` and the log ``log_file``),
    before this is called. When the run is refused (an ``ArcherError``: a bad config, a missing dataset, an
    unusable checkpoint, an absent server) and the folder held nothing but those files, with the log still empty,
    the folder is removed: a refused run leaves no run folder behind. A folder holding anything else is kept.

    Raises:
        SystemExit: with the error's one-line message (exit status 1) on a project error; other errors are bugs and
            propagate with their traceback.
    """
    log_path = run_folder / log_file
    created_here = holds_only(run_folder, launcher_files) and (not log_path.exists() or log_path.stat().st_size == 0)
    records = launcher_records(run_folder, launcher_files)
    try:
        main(cfg, lock_record={"launcher_records": records})
    except FolderBusyError as error:
        restore_launcher_records(run_folder)
        sys.exit(describe_error(error))
    except ArcherError as error:
        if created_here and holds_only(run_folder, launcher_files | {LOCK_FILE}):
            remove_run_folder(run_folder)
        sys.exit(describe_error(error))
    except KeyboardInterrupt as interrupt:
        if isinstance(interrupt, RunInterrupted) and interrupt.checkpoint_iteration > 0:
            where, then = interrupt.where(), "continue from there"
        else:
            where = interrupt.where() if isinstance(interrupt, RunInterrupted) else "interrupted before training"
            then = "start it again"
        print(f"{where}; rerun the same command to {then}: {command_line()}", file=sys.stderr)
        sys.exit(130)
    except OSError as error:
        refusal = error if isinstance(error, StorageError) else storage_error(error)
        if refusal is None:
            raise
        sys.exit(describe_error(refusal))


def command_line() -> str:
    """The command that started this process, as a shell line."""
    return shlex.join([Path(sys.executable).name, *sys.argv])


def launcher_records(run_folder: Path, launcher_files: frozenset[str]) -> dict[str, str]:
    """The text of the files the launcher wrote into the launcher folders of ``run_folder`` (Hydra's ``.hydra/``),
    by path relative to the run folder."""
    records = {}
    for name in sorted(launcher_files):
        folder = run_folder / name
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and path.stat().st_size < 1 << 20:
                    records[str(path.relative_to(run_folder))] = path.read_text(encoding="utf-8", errors="replace")
    return records


def restore_launcher_records(run_folder: Path) -> None:
    """Put back the launcher files of the run that owns ``run_folder``, as its lock file recorded them.

    Hydra rewrites ``.hydra/`` before a run starts, so a run refused because another owns the folder has already
    replaced the owner's record of its own command.
    """
    from archer.utils import atomic_write_text

    records = read_owner(run_folder).get("launcher_records")
    if isinstance(records, dict):
        for relative, text in records.items():
            target = (run_folder / str(relative)).resolve()
            if target.parent.parent == run_folder.resolve() and isinstance(text, str):
                atomic_write_text(target, text)
