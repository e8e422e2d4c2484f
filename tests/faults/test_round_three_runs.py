"""Fault injection: issue 90 ("Reliability, round three"), the items about ``run.py`` itself.

Each case is the input a new user tried (a changed setting that computes nothing, a path with ``..``, links in a
run folder, model folders that do not fit, damaged or partial checkpoints, settings a game cannot have, a foreign
story file) and checks that it is now accepted where it computes nothing, or refused in one line naming the key,
folder or file, before anything is built, without writing outside the run folder.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

import archer.trainer
from archer import locking
from archer.checkpointing import (
    CHECKPOINT_FILE,
    RESUMABLE_KEYS,
    CheckpointError,
    config_fingerprint,
    fingerprint_settings,
    load_checkpoint,
    save_checkpoint,
)
from archer.cli import device_lines, main, register_configs, run_folder_name, run_or_refuse
from archer.config import ConfigError, LoggingConfig, PolicyConfig, RunConfig
from archer.errors import StorageError
from archer.models.loading import load_policy_model, save_policy
from archer.preflight import check_model_folder, preflight
from archer.tracking import METRICS_FILE, Tracker
from archer.trainer import move_previous_run
from tests.conftest import CONFIG_DIR, DETECTIVE, TINY_RUN_OVERRIDES, compose_run
from tests.integration.test_training import tiny_bc

LAUNCHER_FILES = frozenset({".hydra", "run.log"})
KEY = "model.policy.name_or_path"


def launched(folder: Path) -> Path:
    """A run folder as ``@hydra.main`` leaves it before the run starts."""
    (folder / ".hydra").mkdir(parents=True, exist_ok=True)
    (folder / "run.log").write_text("")
    return folder


def refusal(tmp_path: Path, config: str, *overrides: str, folder: Path | None = None) -> str:
    """The line ``run.py --config-name config overrides`` ends with, in a folder as Hydra leaves it."""
    folder = launched(folder or tmp_path / "run")
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose(config, overrides=[f"run_dir={folder}", f"cache_dir={tmp_path / 'cache'}", *overrides])
    with pytest.raises(SystemExit) as refused:
        run_or_refuse(cfg, folder, LAUNCHER_FILES, "run.log")
    return str(refused.value)


@pytest.fixture
def no_pretraining(monkeypatch: pytest.MonkeyPatch) -> None:
    def pretrained_policy(*args: object) -> None:
        raise AssertionError("the starting policy was built before the refusal")

    monkeypatch.setattr(archer.trainer, "pretrained_policy", pretrained_policy)


def fake_checkpoint(cfg: RunConfig, folder: Path, **state: object) -> Path:
    """A checkpoint of ``cfg`` in ``folder`` holding the config's fingerprint and ``state``."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = fingerprint_settings(cfg, ignore=RESUMABLE_KEYS)
    full = {
        "config_fingerprint": config_fingerprint(cfg, ignore=RESUMABLE_KEYS),
        "config_settings": json.dumps(settings, sort_keys=True),
        **state,
    }
    return save_checkpoint(folder, full)


WHOLE = {"iteration": 1, "algorithm": {}, "process_states": [{}], "env_trajectories": 0}


# ---- 3: settings that compute nothing do not block a resume ------------------------------------------------------


def test_a_resume_with_another_checkpoint_schedule_or_timeout_is_accepted(tmp_path: Path) -> None:
    before = compose_run("bc_20q", ["save_every_iters=5", "process_group_timeout_s=60"])
    path = fake_checkpoint(before, tmp_path, **WHOLE)
    after = compose_run("bc_20q", ["save_every_iters=2", "process_group_timeout_s=86400"])
    fingerprint, settings = (f(after, ignore=RESUMABLE_KEYS) for f in (config_fingerprint, fingerprint_settings))
    assert load_checkpoint(path, fingerprint, settings)["iteration"] == 1
    preflight(after, tmp_path)  # the early look agrees
    changed = compose_run("bc_20q", ["save_every_iters=2", "algorithm.actor_lr=0.5"])  # a setting that computes
    fingerprint, settings = (f(changed, ignore=RESUMABLE_KEYS) for f in (config_fingerprint, fingerprint_settings))
    with pytest.raises(CheckpointError, match=r"these keys differ \(checkpoint -> now\): algorithm.actor_lr: ") as no:
        load_checkpoint(path, fingerprint, settings)
    assert "save_every_iters" not in str(no.value)


def test_a_finished_run_resumes_with_another_checkpoint_schedule(tmp_path: Path) -> None:
    cache, run = str(tmp_path / "cache"), tmp_path / "run"
    tiny_bc(run, cache).fit()
    resumed = tiny_bc(run, cache, "save_every_iters=3", "process_group_timeout_s=600")
    assert resumed.start_iteration == 2
    # 25: a checkpoint without a part its algorithm keeps is one line naming the checkpoint.
    state = torch.load(run / CHECKPOINT_FILE, weights_only=True)
    del state["algorithm"]["actor_optimizer"]
    save_checkpoint(run, state)
    with pytest.raises(CheckpointError, match=f"^checkpoint {run / CHECKPOINT_FILE} has no 'actor_optimizer' "):
        tiny_bc(run, cache)


# ---- 4: a path value with .. keeps the default run folder inside outputs/ ----------------------------------------


def test_a_relative_path_with_dots_keeps_the_run_folder_inside_outputs(tmp_path: Path) -> None:
    outputs = (tmp_path / "outputs" / "bc_20q").resolve()
    for value in ("../../../x/data.json", "../../../../../../x/data.json", "a/../../b/../../../c"):
        run_dir = compose_run_config_default("bc_20q", [f"data.path={value}"])
        assert (tmp_path / run_dir).resolve().is_relative_to(outputs), run_dir
    assert run_folder_name("data.path=../../../x/data.json") == run_folder_name("data.path=../../../x/data.json")
    assert run_folder_name("data.path=../x") != run_folder_name("data.path=../y")
    # Names that stay inside are as before, so the runs already in their folders still resume there.
    assert run_folder_name("data.path=/data/x.json,seed=1") == "data.path=/data/x.json,seed=1"


def compose_run_config_default(config: str, overrides: list[str]) -> str:
    from archer.cli import compose_run_config

    run_dir = compose_run_config(CONFIG_DIR, config, overrides).run_dir
    assert run_dir is not None
    return run_dir


# ---- 5, 6: links in a run folder are never written through -------------------------------------------------------


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("a week of notes\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / locking.LOCK_FILE).symlink_to(precious)
    with pytest.raises(StorageError, match=f"^{run / locking.LOCK_FILE} is a symbolic link"):
        locking.check_free(run, "run folder", locking.RUN_FOLDER_BUSY)
    with pytest.raises(StorageError, match=f"^{run / locking.LOCK_FILE} is a symbolic link"):
        locking.hold(run, "run folder", locking.RUN_FOLDER_BUSY)
    assert precious.read_text() == "a week of notes\n" and not locking.holds(run)


def test_a_dangling_metrics_link_is_moved_aside_and_never_appended_through(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "metrics.jsonl"
    outside.parent.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (run / METRICS_FILE).symlink_to(outside)
    previous = move_previous_run(run)  # a fresh start in the folder
    assert previous is not None and (previous / METRICS_FILE).is_symlink()
    assert not (run / METRICS_FILE).is_symlink() and not outside.exists()
    (run / METRICS_FILE).symlink_to(outside)  # a link made while the run trains
    tracker = Tracker(run, LoggingConfig(), run_name="test")
    with pytest.raises(StorageError, match="is a symbolic link"):
        tracker.log({"loss": 1.0}, iteration=1)
    with pytest.raises(StorageError, match="is a symbolic link"):
        tracker.truncate_after(0)  # a resume would copy the outside file's lines in
    assert not outside.exists()


# ---- 7, 8, 25: policy folders whose tokenizer is missing or does not fit ----------------------------------------


@pytest.fixture
def policy_folder(
    tmp_path: Path, tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> Path:
    model, tokenizer = load_policy_model(tiny_policy_config, model_cache_dir, lambda: tiny_corpus)
    folder = tmp_path / "finished" / "policy"
    save_policy(model, tokenizer, folder)
    check_model_folder(str(folder), KEY, causal=True)  # whole: accepted
    return folder


def edit_config(folder: Path, **changes: object) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | changes))


def test_a_tokenizer_larger_than_the_embedding_is_refused_with_both_sizes(policy_folder: Path) -> None:
    tokens = json.loads((policy_folder / "config.json").read_text())["vocab_size"]
    edit_config(policy_folder, vocab_size=tokens // 2)
    with pytest.raises(ConfigError) as refused:
        check_model_folder(str(policy_folder), KEY, causal=True)
    assert str(refused.value) == (
        f"{KEY}={policy_folder}: its tokenizer has {tokens:,} tokens but the model has {tokens // 2:,} embedding rows "
        "(config.json vocab_size); the tokenizer is not this model's: save the model with its own tokenizer"
    )


@pytest.mark.usefixtures("no_pretraining")
def test_a_policy_folder_without_tokenizer_files_is_refused_naming_them(tmp_path: Path, policy_folder: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt"):
        (policy_folder / name).unlink(missing_ok=True)
    line = refusal(tmp_path, "bc_20q", *TINY_RUN_OVERRIDES, f"{KEY}={policy_folder}", "mode=evaluate")
    assert line.startswith(
        f"error: {KEY}={policy_folder}: the folder holds no tokenizer files (tokenizer.json, vocab.json, "
    )
    assert not (tmp_path / "run").exists()  # refused before it started: no run folder left


def test_a_critic_encoder_given_as_the_policy_is_refused_naming_the_policy(policy_folder: Path) -> None:
    encoder = policy_folder.parent / "critic_encoder"
    shutil.copytree(policy_folder, encoder)
    edit_config(encoder, architectures=["RobertaModel"], model_type="roberta")
    with pytest.raises(ConfigError) as refused:
        check_model_folder(str(encoder), KEY, causal=True)
    assert str(refused.value).startswith(
        f"{KEY}={encoder}: the folder holds RobertaModel, an encoder without a language model head, not a policy "
        f"(a run's critic_encoder/ is one); this run's policy is {policy_folder}; "
    )
    check_model_folder(str(encoder), "model.critic.name_or_path")  # as a critic it is fine


# ---- 9, 25: checkpoints that are not whole ------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["buffer", "process_states"])
def test_a_checkpoint_without_a_part_is_refused_in_one_line(tmp_path: Path, missing: str) -> None:
    cfg = compose_run("archer_20q", [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}"])
    state = {**WHOLE, "buffer": {}}
    del state[missing]
    path = fake_checkpoint(cfg, tmp_path / "run", **state)
    with pytest.raises(CheckpointError) as refused:
        preflight(cfg, tmp_path / "run")
    assert str(refused.value) == (
        f"checkpoint {path} has no {missing}: it is not whole. Delete it to start over, or point run_dir elsewhere."
    )


# ---- 10: a checkpoint damaged after it was written ----------------------------------------------------------------


def test_a_checkpoint_with_overwritten_bytes_is_refused_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = save_checkpoint(tmp_path, {"algorithm": {"moments": torch.randn(100_000)}, "iteration": 3})
    assert load_checkpoint(path)["iteration"] == 3
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\x7f" * 4096  # 4 KB of 3.4e38
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(path)
    assert str(refused.value).startswith(f"checkpoint {path} is damaged (its record ")
    assert "\n" not in str(refused.value)
    # A checkpoint that carries no checksums (torch's legacy format) still loads, with a note.
    legacy = tmp_path / "legacy.pt"
    torch.save({"format_version": 1, "iteration": 2}, legacy, _use_new_zipfile_serialization=False)
    with caplog.at_level(logging.WARNING, logger="archer.checkpointing"):
        assert load_checkpoint(legacy)["iteration"] == 2
    assert f"checkpoint {legacy} carries no checksums" in caplog.text


# ---- 11: the device is named in the first lines ------------------------------------------------------------------


def test_the_device_is_named_and_a_gpu_config_on_a_cpu_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cpu = torch.device("cpu")
    assert device_lines(cpu, {}) == [(logging.INFO, "device: cpu (no CUDA GPU found)")]
    launched_for_a_gpu = {"ACCELERATE_USE_CPU": "False", "CUDA_VISIBLE_DEVICES": "0"}
    _, (level, warning) = device_lines(cpu, launched_for_a_gpu)
    assert level == logging.WARNING and warning.startswith(
        "accelerate launch's config expects a GPU (use_cpu: false, gpu_ids: 0), but this "
    )
    assert len(device_lines(cpu, {"ACCELERATE_USE_CPU": "True"})) == 1  # launched with --cpu: no warning

    monkeypatch.setattr(archer.trainer, "train", lambda *args, **kwargs: {})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("bc_20q", [*TINY_RUN_OVERRIDES, f"run_dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'c'}"])
    try:
        with caplog.at_level(logging.INFO, logger="archer.cli"):
            main(cfg)
    finally:
        locking.release(tmp_path / "run")
    messages = [record.getMessage() for record in caplog.records if record.name == "archer.cli"]
    assert messages[0] == "device: cpu (no CUDA GPU found)" and messages[1].startswith("config:")


# ---- 14: a resume under a changed config is refused before the cloning start is built ----------------------------


@pytest.mark.usefixtures("no_pretraining")
def test_a_resume_under_a_changed_config_is_refused_before_the_start_is_built(tmp_path: Path) -> None:
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={tmp_path / 'cache'}"]
    fake_checkpoint(compose_run("archer_20q", [*overrides, "algorithm.actor_lr=0.5"]), tmp_path / "run", **WHOLE)
    line = refusal(tmp_path, "archer_20q", *TINY_RUN_OVERRIDES)
    assert line.startswith(
        f"error: checkpoint {tmp_path / 'run' / CHECKPOINT_FILE} was written by a different configuration: these "
        "keys differ (checkpoint -> now): algorithm.actor_lr: 0.5 -> "
    )


# ---- 18, 19, 20, 25: settings a game cannot have ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "overrides", "message"),
    [
        ("gigpo_20q", ["algorithm.anchor=state"], "algorithm.anchor: =state groups turns by the game's board state"),
        ("bc_frozenlake", ["env.size=1000"], "env.size: got 1000; must be between 2 and 32"),
        ("bc_sokoban", ["env.height=300", "env.width=300"], "env.height: got 300; must be between 4 (2 cells inside"),
        ("bc_sokoban", ["env.width=33"], "env.width: got 33; must be between 4 (2 cells inside the wall) and 32"),
        ("bc_webshop", ["env.server_url=http://127.0.0.1:notaport"], "env.server_url: 'http://127.0.0.1:notaport' is"),
    ],
)
def test_a_setting_the_game_cannot_have_is_refused_at_validation(
    config: str, overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        compose_run(config, overrides)
    assert str(refused.value).startswith(message)


def test_the_bounds_leave_the_settings_that_work() -> None:
    compose_run("bc_frozenlake", ["env.size=32"])
    compose_run("bc_sokoban", ["env.height=32", "env.width=32"])
    compose_run("bc_webshop", ["env.server_url=http://127.0.0.1:3000"])


def test_a_state_anchor_is_accepted_on_a_game_with_a_board() -> None:
    compose_run("gigpo_frozenlake", ["algorithm.anchor=state"])


# ---- 25: a cache folder that cannot be created ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 300, "proc"])
def test_a_cache_folder_that_cannot_be_created_is_one_line_and_leaves_no_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    cache = tmp_path / name if name != "proc" else Path("/proc/self/fd/999999/cache")
    if name == "proc" and not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc")
    monkeypatch.setenv("ARCHER_CACHE_DIR", str(cache))
    folder = launched(tmp_path / "run")
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("bc_20q", overrides=[f"run_dir={folder}"])
    with pytest.raises(SystemExit) as refused:
        run_or_refuse(cfg, folder, LAUNCHER_FILES, "run.log")
    assert str(refused.value).startswith("error: cache_dir (or $ARCHER_CACHE_DIR): cannot create ")
    assert not folder.exists()


# ---- 26: Detective with a corrupt or foreign story file ----------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("version", "is not a Z-machine story file (its first byte, the Z-code version, is 0, not 1-8): corrupt"),
        (
            "truncated",
            "is not a whole Z-machine story file: its header gives a length of 107,576 bytes, the file has 54,016 ",
        ),
        ("text", "is not a Z-machine story file (its first byte, the Z-code version, is 35, not 1-8)"),
    ],
)
def test_a_foreign_story_file_is_refused_naming_env_game_path(tmp_path: Path, damage: str, message: str) -> None:
    if not Path(DETECTIVE).is_file():
        pytest.skip("Detective's story file is not here")
    story = Path(DETECTIVE).read_bytes()
    bad = tmp_path / "detective.z5"
    if damage == "version":
        bad.write_bytes(b"\x00" + story[1:])
    elif damage == "truncated":
        bad.write_bytes(story[: len(story) // 2])
    else:
        bad.write_bytes(b"# not a story file, but a README\n" * 10)
    with pytest.raises(ConfigError) as refused:
        compose_run("bc_detective", [f"env.game_path={bad}"])
    assert str(refused.value).startswith(f"env.game_path: {bad} {message}")
    compose_run("bc_detective", [f"env.game_path={DETECTIVE}"])  # the real one is accepted
