"""Checks made from the config before anything is built: what the machine must have for a run to finish.

Validation (``archer.config``) refuses settings that cannot work anywhere; these checks refuse settings that cannot
work here: an optional extra that is not installed, a folder that does not exist or cannot be written, a local
model folder without weights. ``archer.cli.main`` calls them before pretraining, so a run that would fail late (the
tracker, ``init_from``, a policy folder) fails in its first seconds, with one line naming the key. (The KALM pipeline
checks its own extras before its first stage: ``archer.kalm.pipeline.required_modules``.)
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from archer import utils
from archer.checkpointing import (
    CHECKPOINT_FILE,
    RESUMABLE_KEYS,
    check_complete,
    check_same_config,
    config_fingerprint,
    fingerprint_settings,
    read_checkpoint,
)
from archer.config import MINILM, POLICY_BODY, ConfigError, RunConfig
from archer.envs.registry import GAMES
from archer.errors import MissingExtraError, MissingFileError, StorageError, storage_error
from archer.models.loading import EMBEDDED
from archer.utils import resolve_cache_dir

# The files a Hugging Face model folder holds its weights in (one of them, or the index of a sharded one).
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "adapter_model.safetensors",
)
# The files a tokenizer is read from: one of them must be there (transformers otherwise builds an empty tokenizer of
# the model's type without a word).
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model", "vocab.txt", "spiece.model")
# The architectures a causal language model's config.json names end with (a bare encoder, a run's critic_encoder/,
# ends with "Model").
CAUSAL_LM_ARCHITECTURES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def preflight(cfg: RunConfig, run_folder: Path) -> None:
    """Refuse a run this machine cannot finish, before anything is built.

    Raises:
        ConfigError, MissingExtraError, MissingFileError, StorageError: the message names the key and the fix.
    """
    if cfg.env.name not in GAMES:
        raise ConfigError(f"env.name: got {cfg.env.name!r}; choose one of {', '.join(sorted(GAMES))} (env=<game>)")
    if cfg.logging.use_wandb and cfg.logging.wandb_mode != "disabled" and not utils.has_module("wandb"):
        raise MissingExtraError(
            "logging.use_wandb=true needs wandb: pip install -e '.[wandb]' (or set logging.use_wandb=false)"
        )
    check_writable(run_folder, "run_dir")
    check_writable(cache_folder(cfg.cache_dir), "cache_dir (or $ARCHER_CACHE_DIR)")
    resumes = cfg.resume and (run_folder / CHECKPOINT_FILE).exists()
    if resumes:
        check_resume(cfg, run_folder / CHECKPOINT_FILE)
    if cfg.init_from is not None and not resumes:
        check_init_from(Path(cfg.init_from).expanduser())
    check_model_folder(cfg.model.policy.name_or_path, "model.policy.name_or_path", causal=True)
    if cfg.algorithm.uses_critic and cfg.model.critic.name_or_path not in (MINILM, POLICY_BODY):
        check_model_folder(cfg.model.critic.name_or_path, "model.critic.name_or_path")
    game_check = GAMES[cfg.env.name].preflight  # env=external: the user's environment passes the checker
    if game_check is not None:
        game_check(cfg)


def cache_folder(cache_dir: str | None) -> Path:
    """The cache folder (``resolve_cache_dir``), created.

    Raises:
        StorageError: it cannot be created, for whatever reason (a raw ``FileNotFoundError`` otherwise, and the
            run folder left behind); the message names the key.
    """
    try:
        return resolve_cache_dir(cache_dir)
    except StorageError:
        raise
    except OSError as error:
        where = error.filename or cache_dir or "the cache folder"
        raise StorageError(
            f"cache_dir (or $ARCHER_CACHE_DIR): cannot create {where} ({error.strerror or error}); set cache_dir or "
            "$ARCHER_CACHE_DIR to a folder that can be created"
        ) from None


def check_resume(cfg: RunConfig, path: Path) -> None:
    """The run folder's checkpoint, which this run resumes, was written by the same config and holds every part a
    resume reads: checked from its settings alone (its tensors are mapped, not read), before the cloning start or
    anything else is built. (The resume itself checks it again, with its checksums.)

    Raises:
        CheckpointError: the checkpoint is of another config (the message lists the keys), unreadable, or not whole.
    """
    if not zipfile.is_zipfile(path):
        return  # torch's legacy format cannot be mapped; the resume reads it whole
    state = read_checkpoint(path, mmap=True)
    fingerprint = config_fingerprint(cfg, ignore=RESUMABLE_KEYS)
    check_same_config(state, path, fingerprint, fingerprint_settings(cfg, ignore=RESUMABLE_KEYS))
    check_complete(state, path, online=cfg.algorithm.online)


def check_writable(folder: Path, key: str) -> None:
    """``folder`` exists (or can be made) and takes a new file.

    Raises:
        StorageError: it is a file, or cannot be created or written; the message names ``key``.
    """
    folder = folder.expanduser()
    if folder.exists() and not folder.is_dir():
        raise StorageError(f"{key}: {folder} is a file; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except (FileExistsError, NotADirectoryError):
        raise StorageError(f"{key}: {folder} lies under a file; give a folder") from None
    except OSError as error:
        refusal = storage_error(error, folder)
        if refusal is None:
            raise
        raise StorageError(f"{key}: {refusal}") from None


def check_init_from(folder: Path) -> None:
    """``init_from`` names a run folder holding a checkpoint.

    Raises:
        MissingFileError: no such folder, or no checkpoint in it.
    """
    if not folder.is_dir():
        raise MissingFileError(f"init_from={folder}: no such folder; give the folder of a finished run")
    if not (folder / CHECKPOINT_FILE).is_file():
        raise MissingFileError(
            f"init_from={folder}: no {CHECKPOINT_FILE} there; give the folder of a finished run (the one holding "
            f"{CHECKPOINT_FILE}, not its policy/)"
        )


def check_model_folder(name_or_path: str, key: str, causal: bool = False) -> None:
    """A model named by a local path is a Hugging Face model folder with weights and a tokenizer that fits them; a
    hub name is left to the loader.

    A value is a local path when it exists, or starts like one (``/``, ``.``, ``~``), or has more than one ``/``
    (a hub name is ``name`` or ``owner/name``).

    Args:
        name_or_path: the setting's value.
        key: the setting, for the message.
        causal: the folder must hold a causal language model (the policy), not a bare encoder.

    Raises:
        MissingFileError: the folder does not exist, is a run folder rather than its ``policy/``, or has no
            ``config.json``, no weights or no tokenizer files.
        ConfigError: a policy folder holding an encoder (a run's ``critic_encoder/``), or a tokenizer with more
            tokens than the model has embedding rows.
    """
    if name_or_path == EMBEDDED:
        return
    path = Path(name_or_path).expanduser()
    looks_local = path.exists() or name_or_path.startswith(("/", ".", "~")) or name_or_path.count("/") > 1
    if not looks_local:
        return
    if not path.is_dir():
        raise MissingFileError(f"{key}={name_or_path}: no such folder; give a model folder, a hub name or embedded")
    if not (path / "config.json").is_file():
        if (path / "policy" / "config.json").is_file():
            raise MissingFileError(
                f"{key}={name_or_path}: this is a run folder; its policy is {path / 'policy'} (give that)"
            )
        raise MissingFileError(
            f"{key}={name_or_path}: no config.json there; give a Hugging Face model folder (a run's policy/)"
        )
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        raise MissingFileError(
            f"{key}={name_or_path}: the folder holds no weights ({', '.join(WEIGHT_FILES[::2])}); it was not "
            "written whole: save the model again or give another folder"
        )
    config = _read_json(path / "config.json")
    if causal:
        check_causal_lm(path, config, key)
    check_tokenizer(path, config, key)


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object file's content; empty when it is not one (the loader then names the file)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def check_causal_lm(path: Path, config: dict[str, Any], key: str) -> None:
    """``config.json`` of the folder at ``path`` names a causal language model (when it names architectures).

    Raises:
        ConfigError: it names only bare models (a run's ``critic_encoder/``, an encoder with no language model head).
    """
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or not architectures:
        return
    if not any(str(name).endswith(CAUSAL_LM_ARCHITECTURES) for name in architectures):
        policy = path.parent / "policy"
        hint = f"; this run's policy is {policy}" if (policy / "config.json").is_file() else ""
        raise ConfigError(
            f"{key}={path}: the folder holds {', '.join(map(str, architectures))}, an encoder without a language "
            f"model head, not a policy (a run's critic_encoder/ is one){hint}; give a causal language model's folder"
        )


def check_tokenizer(path: Path, config: dict[str, Any], key: str) -> None:
    """The folder at ``path`` holds tokenizer files, and its tokenizer has no more tokens than the model (whose
    ``config.json`` is ``config``) has embedding rows.

    Raises:
        MissingFileError: no tokenizer files.
        ConfigError: the tokenizer does not fit the model; the message gives both sizes.
    """
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise MissingFileError(
            f"{key}={path}: the folder holds no tokenizer files ({', '.join(TOKENIZER_FILES)}, or vocab.json with "
            "merges.txt); it was saved without its tokenizer: save the tokenizer there too (tokenizer.save_pretrained)"
            " or give another folder"
        )
    if (path / "vocab.json").is_file() and not (path / "tokenizer.json").is_file():
        if not (path / "merges.txt").is_file():
            raise MissingFileError(
                f"{key}={path}: vocab.json without merges.txt (or tokenizer.json); the tokenizer "
                "is not whole: save it again or give another folder"
            )
    rows = config.get("vocab_size")
    if not isinstance(rows, int):
        return
    try:
        from transformers import AutoTokenizer

        tokens = len(AutoTokenizer.from_pretrained(str(path)))
    except Exception:  # noqa: BLE001 - an unreadable tokenizer is named by the loader (ModelLoadError)
        return
    if tokens > rows:
        raise ConfigError(
            f"{key}={path}: its tokenizer has {tokens:,} tokens but the model has {rows:,} embedding rows "
            "(config.json vocab_size); the tokenizer is not this model's: save the model with its own tokenizer"
        )
