"""Fault: issue 90 item 22. ``HF_HUB_OFFLINE=0``, no network, a hub model name that is not cached: the run used to
spend a minute in huggingface_hub's retries (160 lines of warnings) before the clear line. Now the cache is tried
first (``local_files_only=True``), then one bounded probe of the hub, then one ``ModelLoadError`` line.

The hub's address is a port on 127.0.0.1 that nothing listens on, so the case needs no network and never reaches
one; a timer stops it after ``DEADLINE_S`` if the loader still retries.
"""

from __future__ import annotations

import logging
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub
import pytest

from archer.config import CriticConfig, PolicyConfig
from archer.models.loading import ModelLoadError, load_critic_encoder, load_policy_model

DEADLINE_S = 10.0


class StillRetrying(Exception):
    pass


@pytest.fixture
def unreachable_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(
        huggingface_hub.constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    def stop(*_: object) -> None:
        raise StillRetrying(f"the loader was still retrying the hub after {DEADLINE_S:g} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, DEADLINE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("unreachable_hub")
@pytest.mark.parametrize("role", ["policy", "critic"])
def test_an_unreachable_hub_is_one_line_in_seconds(
    role: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    start = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(ModelLoadError) as raised:
        if role == "policy":
            load_policy_model(PolicyConfig(name_or_path="not-a-real-org/none"), str(tmp_path), lambda: [])
        else:
            load_critic_encoder(CriticConfig(name_or_path="not-a-real-org/none"), str(tmp_path), lambda: [])
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"could not load {role} 'not-a-real-org/none': not a local")
    assert "the Hugging Face hub cannot be reached" in message and "HF_HUB_OFFLINE=1" in message
    assert f"model.{role}.name_or_path" in message
    assert time.monotonic() - start < 5.0
    assert not [record for record in caplog.records if "Retrying" in record.getMessage()]


@pytest.mark.usefixtures("unreachable_hub")
def test_a_cached_hub_model_loads_without_asking_the_hub(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str, caplog: pytest.LogCaptureFixture
) -> None:
    model, tokenizer = load_policy_model(tiny_policy_config, model_cache_dir, lambda: tiny_corpus)
    # Hugging Face's cache layout: models--<org>--<name>/refs/main names the snapshot folder.
    repo = Path(huggingface_hub.constants.HF_HUB_CACHE) / "models--tiny-org--tiny-policy"
    snapshot = repo / "snapshots" / ("0" * 40)
    model.save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING):
        cached, _ = load_policy_model(PolicyConfig(name_or_path="tiny-org/tiny-policy"), model_cache_dir, lambda: [])
    assert time.monotonic() - start < 5.0 and not [r for r in caplog.records if "Retrying" in r.getMessage()]
    assert cached.config.n_layer == 2
