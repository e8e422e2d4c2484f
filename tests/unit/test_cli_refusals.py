"""How the command line ends a refused run: one message, exit status 1 (130 for Ctrl-C), and no run folder left
behind."""

from __future__ import annotations

import errno
import logging
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml
from hydra import compose, initialize_config_dir

from archer.checkpointing import CheckpointError, save_checkpoint
from archer.cli import (
    describe_error,
    launch_error_message,
    register_configs,
    run_or_refuse,
    yaml_error_message,
)
from archer.config import ConfigError, PolicyConfig
from archer.data.json_records import DatasetError
from archer.envs.webshop.client import WebShopServerError
from archer.errors import ArcherError, MissingExtraError, MissingFileError, RunInterrupted, StorageError
from archer.models.loading import ModelLoadError, load_policy_model, save_policy
from archer.utils import writing
from tests.conftest import CONFIG_DIR

LAUNCHER_FILES = frozenset({".hydra", "run.log"})


def composed(*overrides: str):
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        return compose("bc_20q", overrides=["run_dir=unused", *overrides])


def launched(folder: Path, log_text: str = "") -> Path:
    """A run folder as ``@hydra.main`` leaves it before the run starts."""
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "config.yaml").write_text("seed: 0\n")
    (folder / "run.log").write_text(log_text)
    return folder


def test_the_project_errors_share_one_base() -> None:
    for error in (ConfigError, CheckpointError, DatasetError, WebShopServerError, MissingFileError, MissingExtraError):
        assert issubclass(error, ArcherError)
    assert describe_error(ConfigError("seed: bad")) == "configuration error: seed: bad"
    assert describe_error(DatasetError("data.json: empty")) == "error: data.json: empty"


def test_a_run_refused_before_it_starts_leaves_no_folder(tmp_path: Path) -> None:
    folder = launched(tmp_path / "run")
    handler = logging.FileHandler(folder / "run.log")
    logging.getLogger().addHandler(handler)
    try:
        with pytest.raises(SystemExit) as refused:
            run_or_refuse(composed("algorithm.batch_size=33"), folder, LAUNCHER_FILES, "run.log")
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert str(refused.value).startswith("configuration error: algorithm.batch_size: must be a multiple")
    assert not folder.exists()


@pytest.mark.parametrize("earlier", ["metrics.jsonl", "run.log"], ids=["records", "a log"])
def test_a_folder_holding_an_earlier_run_is_kept(tmp_path: Path, earlier: str) -> None:
    folder = launched(tmp_path / "run", log_text="an earlier run's log\n" if earlier == "run.log" else "")
    (folder / earlier).write_text("kept\n")
    with pytest.raises(SystemExit, match="configuration error: algorithm.batch_size"):
        run_or_refuse(composed("algorithm.batch_size=33"), folder, LAUNCHER_FILES, "run.log")
    assert (folder / earlier).read_text() == "kept\n"


def test_other_errors_are_bugs_and_keep_their_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import archer.cli

    def broken(cfg, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(archer.cli, "main", broken)
    folder = launched(tmp_path / "run")
    with pytest.raises(KeyError, match="a bug"):
        run_or_refuse(composed(), folder, LAUNCHER_FILES, "run.log")
    assert folder.exists()


# ---- each class of user mistake is one line naming the setting or file (issue 42) ----------------------------------


def refused(tmp_path: Path, *overrides: str, config: str = "bc_20q") -> str:
    """The line the command line ends with for ``overrides``, in a folder as Hydra leaves it (which must be gone)."""
    folder = launched(tmp_path / "run")
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose(config, overrides=[f"run_dir={folder}", f"cache_dir={tmp_path / 'cache'}", *overrides])
    with pytest.raises(SystemExit) as refusal:
        run_or_refuse(cfg, folder, LAUNCHER_FILES, "run.log")
    assert refusal.value.code != 0 and not folder.exists()
    return str(refusal.value.code)


def test_an_unknown_game_is_refused_naming_env_name(tmp_path: Path) -> None:
    assert refused(tmp_path, "env.name=chess") == (
        "configuration error: env.name: got 'chess', but the env group chose twenty_questions; choose the game with "
        "env=<game> (scripts/config/env/), not env.name"
    )


def test_a_non_finite_learning_rate_is_refused_at_validation(tmp_path: Path) -> None:
    assert (
        refused(tmp_path, "algorithm.actor_lr=inf")
        == "configuration error: algorithm.actor_lr: got inf; give a finite number"
    )
    assert refused(tmp_path, "algorithm.critic.lr=nan", config="archer_20q").startswith(
        "configuration error: algorithm.critic.lr: got nan"
    )


def test_a_cache_folder_that_is_a_file_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ARCHER_CACHE_DIR", str(blocker))
    folder = launched(tmp_path / "run")
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("bc_20q", overrides=[f"run_dir={folder}"])
    with pytest.raises(SystemExit) as refusal:
        run_or_refuse(cfg, folder, LAUNCHER_FILES, "run.log")
    assert str(refusal.value) == (
        f"error: the cache folder ($ARCHER_CACHE_DIR) {blocker} is a file (or lies under one); set cache_dir or "
        "$ARCHER_CACHE_DIR to a folder"
    )
    assert not folder.exists()


def test_a_policy_folder_that_cannot_be_loaded_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    run = tmp_path / "finished-run"
    (run / "policy").mkdir(parents=True)
    (run / "policy" / "config.json").write_text("{}")
    key = "model.policy.name_or_path"
    assert refused(tmp_path, f"{key}={tmp_path / 'nowhere'}") == (
        f"error: {key}={tmp_path / 'nowhere'}: no such folder; give a model folder, a hub name or embedded"
    )
    assert (
        refused(tmp_path, f"{key}={run}")
        == f"error: {key}={run}: this is a run folder; its policy is {run / 'policy'} (give that)"
    )
    assert refused(tmp_path, f"{key}={run / 'policy'}").startswith(
        f"error: {key}={run / 'policy'}: the folder holds no weights (model.safetensors, pytorch_model.bin"
    )


@pytest.mark.parametrize("damaged", ["tokenizer.json", "model.safetensors"])
def test_a_truncated_model_file_is_named(
    tmp_path: Path, damaged: str, tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    model, tokenizer = load_policy_model(tiny_policy_config, model_cache_dir, lambda: tiny_corpus)
    folder = tmp_path / "policy"
    save_policy(model, tokenizer, folder)
    with open(folder / damaged, "r+b") as handle:
        handle.truncate(handle.seek(0, 2) // 2)
    with pytest.raises(ModelLoadError) as refusal:
        load_policy_model(replace(tiny_policy_config, name_or_path=str(folder)), model_cache_dir, lambda: tiny_corpus)
    part = "tokenizer" if damaged == "tokenizer.json" else "weights"
    assert str(refusal.value).startswith(
        f"could not load policy '{folder}': its {part} ({folder / damaged}) cannot be read ("
    )
    assert isinstance(refusal.value, ArcherError)  # so the command line prints it as one line


def test_hydra_failing_to_set_up_the_run_folder_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    assert launch_error_message(FileExistsError(errno.EEXIST, "File exists", str(blocker))) == (
        f"error: run_dir: {blocker} is a file (or lies under one); give a folder"
    )
    # A finished run on a read-only disk: Hydra cannot open its log ("Unable to configure handler 'file'").
    log_file = tmp_path / "run" / "run.log"
    error = ValueError("Unable to configure handler 'file'")
    error.__cause__ = OSError(errno.EROFS, "Read-only file system", str(log_file))
    assert launch_error_message(error) == (
        f"error: the run folder: cannot write {log_file} (Read-only file system); make the folder writable or choose "
        "another run_dir or cache_dir"
    )
    full = OSError(errno.ENOSPC, "No space left on device", str(log_file))
    assert launch_error_message(full).startswith(f"error: the run folder: no space left on device writing {log_file}")
    too_long = OSError(errno.ENAMETOOLONG, "File name too long", str(tmp_path / ("x" * 300)))
    assert launch_error_message(too_long) == (
        f"error: run_dir: {tmp_path / ('x' * 300)}: a name in it is too long for the file system (at most 255 bytes "
        "each); give a shorter run_dir"
    )
    assert launch_error_message(ValueError("a bug")) is None and launch_error_message(KeyError("a bug")) is None


def test_a_tab_in_a_yaml_file_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("defaults:\n  - bc_20q\n  - _self_\nseed:\t3\n")
    try:
        yaml.safe_load((tmp_path / "mine.yaml").read_text())
    except yaml.YAMLError as error:
        message = yaml_error_message(error)
    assert message == (
        "<unicode string> line 4, column 6: found character '\\t' that cannot start any token; YAML indents with "
        "spaces, not tabs"
    )


def test_a_full_disk_at_a_checkpoint_names_the_file_and_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_checkpoint(tmp_path, {"iteration": 1})
    previous = (tmp_path / "checkpoint.pt").read_bytes()

    def full_disk(obj: object, handle: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(StorageError) as refusal:
        save_checkpoint(tmp_path, {"iteration": 2})
    assert str(refusal.value) == (
        f"no space left on device writing {tmp_path / 'checkpoint.pt'}; free some space (or choose another run_dir "
        "or cache_dir) and rerun: a run resumes from its last checkpoint"
    )
    assert (tmp_path / "checkpoint.pt").read_bytes() == previous and not list(tmp_path.glob(".checkpoint.*"))
    assert describe_error(refusal.value).startswith("error: no space left on device writing")


def test_ctrl_c_says_where_the_run_resumes_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import archer.cli

    def interrupted(cfg: object, **kwargs: object) -> None:
        raise RunInterrupted(tmp_path / "run", 3, 50, "the run")

    monkeypatch.setattr(archer.cli, "main", interrupted)
    monkeypatch.setattr(sys, "argv", ["run.py", "--config-name", "bc_20q", "seed=1"])
    with pytest.raises(SystemExit) as stopped:
        run_or_refuse(composed(), launched(tmp_path / "run"), LAUNCHER_FILES, "run.log")
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines() == [
        f"the run was interrupted; its last checkpoint ({tmp_path / 'run'}) is at iteration 3 of 50; rerun the same "
        f"command to continue from there: {Path(sys.executable).name} run.py --config-name bc_20q seed=1"
    ]


def test_a_full_disk_met_by_a_writer_outside_python_io_is_named(tmp_path: Path) -> None:
    # safetensors' Rust core reports a full disk in a SafetensorError's message only.
    with pytest.raises(StorageError, match=f"^no space left on device writing {tmp_path / 'policy'};"):
        with writing(tmp_path / "policy"):
            raise RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)")
    with pytest.raises(RuntimeError, match="another failure"), writing(tmp_path / "policy"):
        raise RuntimeError("another failure")
