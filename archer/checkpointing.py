"""Atomic, self-describing checkpoints: everything a run needs to continue exactly where it stopped.

A checkpoint is one ``torch.save`` file of plain containers and tensors (loadable with ``weights_only=True``: no
pickled project classes, so it survives refactors and torch's safe-loading default). It is written to a temporary
file in the same folder and renamed over the previous checkpoint, so a run killed at any moment leaves either the
old or the new checkpoint, never half of one.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import random
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from archer.distributed import Placement
from archer.errors import ArcherError
from archer.utils import atomic_open

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint.pt"
FORMAT_VERSION = 1
# Settings that change neither a checkpoint nor a cached pretrained policy, so the fingerprints ignore them. How
# rollouts encode prompts (archer.models.incremental) and whether samples at replay states share their prefixes'
# keys and values (archer.models.prefix_generation): no effect on the numbers. Whether the scoring passes are
# compiled: the same numbers, so that does not matter either. How many prompts one generate call samples: the same
# distribution (only the order of random draws changes), like share_prefixes. The advantage check is a diagnostic:
# it logs, and changes no weight and draws no random number.
SPEED_ONLY_KEYS = (
    "model.policy.reuse_kv_cache", "model.policy.append_token_ids", "model.policy.compile",
    "model.policy.share_prefixes", "algorithm.log_advantage_check", "algorithm.generation_batch_size",
)  # fmt: skip
# Keys that may change between a run and its resumption without invalidating the checkpoint (a finished run can
# be extended by raising num_iterations; a checkpoint holds full tensors whether or not the policy was sharded;
# sampled evaluation games never touch training's state, so they can be switched on for the rest of a run; the
# speed-only settings, ``SPEED_ONLY_KEYS``). The fingerprint leaves them out.
RESUMABLE_KEYS = (
    "run_dir", "resume", "logging", "torch_threads", "cache_dir", "algorithm.num_iterations", "model.policy.shard",
    "eval.sampled_episodes", *SPEED_ONLY_KEYS,
)  # fmt: skip
# Settings that compute nothing: when a checkpoint is written, and how long a process waits for the others at a
# collective. They are part of the fingerprint (so the fingerprints of runs and cached starts stay as they were),
# but a resume compares settings without them: a run that died of a process-group timeout continues with a longer
# one, and a run can checkpoint more or less often from its resumption on.
NON_COMPUTING_KEYS = ("save_every_iters", "process_group_timeout_s")


class CheckpointError(ArcherError, RuntimeError):
    """A checkpoint that cannot be used: corrupt, from another config, or of an unknown format."""


def explicit_settings(config: Any) -> Any:
    """The settings of a config that differ from its dataclasses' defaults, as nested dicts.

    Each dataclass becomes ``{"__type__": class name, field: value, ...}`` with only the fields whose value differs
    from the field's default, so a field added to a config class in a later version (whose default keeps the old
    behaviour) changes nothing here. Non-dataclass values are returned as they are.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return config
    settings: dict[str, Any] = {"__type__": type(config).__name__}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = dataclasses.MISSING
        if dataclasses.is_dataclass(value):
            if dataclasses.is_dataclass(default) and type(default) is type(value) and value == default:
                continue
            settings[field.name] = explicit_settings(value)
        elif value != default:
            settings[field.name] = value
    return settings


def fingerprint_settings(config: Any, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """The settings ``config_fingerprint`` hashes: ``explicit_settings`` of ``config`` with the ``ignore`` keys reset
    to their defaults, as plain JSON.

    Resetting (rather than deleting the keys from the settings) leaves no trace of an ignored key: a section whose
    only explicit setting is ignored drops out, as if it had never been set.

    Args:
        config: the run config (a dataclass, e.g. ``RunConfig``).
        ignore: dotted keys left out (``"run_dir"``, ``"algorithm.num_iterations"``); a key that is not a field of
            the config (an option of another algorithm, say) is skipped.
    """
    for key in ignore:
        config = _with_default(config, key.split("."))
    # Through JSON, so settings read back from a checkpoint compare equal to freshly computed ones.
    return json.loads(json.dumps(explicit_settings(config), sort_keys=True, default=str))


def _with_default(config: Any, path: list[str]) -> Any:
    """A copy of ``config`` with the field at ``path`` set to its dataclass default (unchanged if there is none).

    Fields are set on shallow copies rather than through ``dataclasses.replace``, whose ``__post_init__`` would
    validate a combination that only exists for the fingerprint.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return config
    field = next((f for f in dataclasses.fields(config) if f.name == path[0]), None)
    if field is None:
        return config
    if len(path) > 1:
        value = _with_default(getattr(config, path[0]), path[1:])
    elif field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return config
    clone = copy.copy(config)
    object.__setattr__(clone, path[0], value)
    return clone


def config_fingerprint(config: Any, ignore: tuple[str, ...] = ()) -> str:
    """A short hash of the config settings that must match for a checkpoint (or a cached model) to be reused.

    Only settings that differ from the defaults count (``explicit_settings``): upgrading archer to a version with
    new config keys keeps old checkpoints and cached starting policies usable.

    Args:
        config: the run config (a dataclass, e.g. ``RunConfig``).
        ignore: dotted keys left out of the hash (``"run_dir"``, ``"algorithm.num_iterations"``).
    """
    kept = fingerprint_settings(config, ignore)
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def _flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value; a section's class is listed under the section's own key."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "__type__":
            if prefix:
                flat[prefix.rstrip(".")] = f"<{value}>"
        elif isinstance(value, dict) and "__type__" in value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def settings_differences(old: dict[str, Any], new: dict[str, Any], exempt: tuple[str, ...] = ()) -> list[str]:
    """``"key: old -> new"`` for every dotted key whose value differs (``default`` where a side keeps the default),
    except the ``exempt`` keys (and the keys inside an exempt section)."""
    before, after = _flatten(old), _flatten(new)
    changes = []
    for key in sorted(before.keys() | after.keys()):
        if any(key == name or key.startswith(f"{name}.") for name in exempt):
            continue
        if before.get(key, dataclasses.MISSING) != after.get(key, dataclasses.MISSING):
            shown = [repr(side[key]) if key in side else "default" for side in (before, after)]
            changes.append(f"{key}: {shown[0]} -> {shown[1]}")
    return changes


def rng_state() -> dict[str, Any]:
    """The state of Python's, numpy's and torch's global generators, as plain lists and numbers.

    Plain containers survive ``weights_only`` loading and pickling through collectives (``all_gather_object``
    fails on tensors in some torch versions).
    """
    np_state = np.random.get_state()
    state = {
        "python": [list(x) if isinstance(x, tuple) else x for x in random.getstate()],
        "numpy": [np_state[0], np_state[1].tolist(), *np_state[2:]],
        "torch": torch.get_rng_state().tolist(),
    }
    if torch.cuda.is_available():
        state["cuda"] = [s.tolist() for s in torch.cuda.get_rng_state_all()]
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` returned."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, *rest = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), *rest))
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([torch.tensor(s, dtype=torch.uint8) for s in state["cuda"]])


def save_checkpoint(directory: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` atomically to ``directory/checkpoint.pt`` and return the path.

    Raises:
        StorageError: the disk is full or the folder is not writable (the previous checkpoint stays whole).
    """
    path = directory / CHECKPOINT_FILE
    if not torch.serialization.get_crc32_options():
        # The checksums ``verify_checksums`` checks at load: torch writes them unless told not to.
        torch.serialization.set_crc32_options(True)
    with atomic_open(path, binary=True) as handle:
        # Through a Python file object, so a full disk raises ENOSPC rather than torch's "unexpected pos".
        torch.save({"format_version": FORMAT_VERSION, **state}, handle)
    return path


def verify_checksums(path: Path) -> bool:
    """Check the CRC-32 that torch's checkpoint format (a zip archive) stores for every record it writes, against
    the bytes on disk: a checkpoint damaged after it was written (a few KB overwritten) loads without complaint
    otherwise, with whatever the damaged bytes now say.

    Returns:
        True when every record matched its checksum; False for a file that carries none (torch's legacy format, or
        one written with ``torch.serialization.set_crc32_options(False)``), which the caller loads with a note.

    Raises:
        CheckpointError: a record whose bytes do not match its checksum, or a damaged archive; the message names
            the file.
    """
    if not zipfile.is_zipfile(path):
        return False

    def damaged(what: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint {path} is damaged ({what}): its bytes changed after it was written. Delete it to start "
            "over, or point run_dir elsewhere."
        )

    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
            if all(record.CRC == 0 for record in records if record.file_size > 0):
                return False
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise damaged(f"{type(error).__name__}: {error}") from None
    if bad is not None:
        raise damaged(f"its record {bad} does not match its checksum")
    return True


def _load_failure(error: Exception) -> str:
    """What went wrong reading a checkpoint: the first sentence of torch's diagnosis, without its advice.

    torch suggests retrying with ``weights_only=False`` (which runs any code a pickle carries) or allow-listing the
    file's classes; neither is passed on.
    """
    message = str(error)
    _, marker, detail = message.partition("WeightsUnpickler error:")
    text = detail if marker else message
    sentence = re.split(r"\.\s|\n\s*\n", text.strip(), maxsplit=1)[0].strip()
    if not sentence or "weights_only" in sentence:
        sentence = "the safe loader refused it"
    return f"{type(error).__name__}: {sentence[:200]}"


def load_checkpoint(
    path: Path, expected_fingerprint: str | None = None, expected_settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Load a checkpoint, checking its format and (optionally) that it was written by the same config.

    Args:
        path: the checkpoint file.
        expected_fingerprint: the fingerprint the checkpoint must carry (None: not checked).
        expected_settings: the ``fingerprint_settings`` behind ``expected_fingerprint``; a refusal then lists the
            keys whose values differ from those the checkpoint was written with.

    Raises:
        CheckpointError: the file is damaged (its checksums, ``verify_checksums``), unreadable, of another format,
            or from another configuration (other than in ``NON_COMPUTING_KEYS``).
    """
    if not verify_checksums(path):
        log.warning("checkpoint %s carries no checksums (an older format): loaded without verifying it", path)
    state = read_checkpoint(path)
    check_same_config(state, path, expected_fingerprint, expected_settings)
    return state


def read_checkpoint(path: Path, mmap: bool = False) -> dict[str, Any]:
    """The contents of a checkpoint file, of this format (``mmap``: tensors mapped from the file, not read, for a
    quick look at its settings).

    Raises:
        CheckpointError: the file is unreadable or of another format.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as error:  # torch raises several types for truncated or foreign files
        raise CheckpointError(
            f"checkpoint {path} cannot be read ({_load_failure(error)}); it is corrupt or not an archer "
            "checkpoint. Delete it to start over, or point run_dir elsewhere."
        ) from None
    if not isinstance(state, dict) or state.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {path} is not an archer checkpoint of format {FORMAT_VERSION}")
    return state


def check_same_config(
    state: dict[str, Any],
    path: Path,
    expected_fingerprint: str | None,
    expected_settings: dict[str, Any] | None = None,
) -> None:
    """Refuse a checkpoint written by another configuration (see ``load_checkpoint``); settings that differ only in
    ``NON_COMPUTING_KEYS`` are accepted, with a note naming them.

    Raises:
        CheckpointError: the keys that differ, with both values.
    """
    if expected_fingerprint is not None and state.get("config_fingerprint") != expected_fingerprint:
        stored = state.get("config_settings")
        if isinstance(stored, str) and expected_settings is not None:
            changes = settings_differences(json.loads(stored), expected_settings, exempt=NON_COMPUTING_KEYS)
            if not changes:
                changed = settings_differences(json.loads(stored), expected_settings)
                log.info("resuming %s with settings that compute nothing changed: %s", path, "; ".join(changed))
                return
            what = f"these keys differ (checkpoint -> now): {'; '.join(changes)}"
        else:
            # Checkpoints of earlier versions carry only the fingerprint.
            what = f"fingerprint {state.get('config_fingerprint')} != {expected_fingerprint}; compare config.json"
        raise CheckpointError(
            f"checkpoint {path} was written by a different configuration: {what}. Resume with the same config, set "
            "resume=false to start over in this folder (the old run's files move to a previous-<time> folder), or "
            "choose another run_dir."
        )


def check_complete(state: dict[str, Any], path: Path, online: bool) -> None:
    """The checkpoint holds every part a resume reads (an online run's replay buffer too).

    Raises:
        CheckpointError: naming the missing parts and the file.
    """
    required = ["iteration", "algorithm", "process_states", "env_trajectories"]
    if online:
        required.append("buffer")  # resuming without it would continue with an empty replay buffer
    missing = [key for key in required if key not in state]
    if missing:
        raise CheckpointError(
            f"checkpoint {path} has no {', '.join(missing)}: it is not whole. Delete it to start over, or point "
            "run_dir elsewhere."
        )


def load_networks(networks: dict[str, nn.Module], state: dict[str, Any], placement: Placement, source: str) -> None:
    """Load each network of ``networks`` from the weights ``state`` holds under its name (an algorithm state, whose
    keys ``Algorithm.networks`` names), split like the live weights when the policy is sharded.

    Raises:
        CheckpointError: a network whose weights do not fit; the message starts with ``source``.
    """
    for name, network in networks.items():
        try:
            network.load_state_dict(placement.split_like(state[name], network.state_dict))
        except RuntimeError as error:
            raise CheckpointError(
                f"{source}: its {name} does not fit this run's model config ({error}); use the same model settings "
                "as that run"
            ) from error
