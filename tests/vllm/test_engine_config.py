"""``model.policy.engine``: validated with the rest of the config, in either environment."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest

from archer.config import ConfigError, PolicyConfig

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_hf_is_the_default_and_unknown_engines_are_refused() -> None:
    assert PolicyConfig().engine == "hf"
    with pytest.raises(ConfigError, match=r"^model\.policy\.engine: got 'sglang'; choose one of hf, vllm"):
        dataclasses.replace(PolicyConfig(), engine="sglang").validate()


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_vllm_without_the_package_names_the_install_command() -> None:
    with pytest.raises(ConfigError, match=r"^model\.policy\.engine: 'vllm' needs vLLM: pip install -e '\.\[vllm\]'"):
        dataclasses.replace(PolicyConfig(), engine="vllm").validate()


@pytest.mark.skipif(not HAS_VLLM, reason="needs vLLM (docs/speed.md, 'Rollouts with vLLM')")
@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"shard": "fsdp"}, "engine"),
        ({"append_token_ids": True}, "append_token_ids"),
        ({"engine_check_rows": -1}, "engine_check_rows"),
    ],
)
def test_vllm_refuses_what_it_cannot_do(changes: dict, key: str) -> None:
    dataclasses.replace(PolicyConfig(), engine="vllm").validate()
    with pytest.raises(ConfigError, match=rf"^model\.policy\.{key}: "):
        dataclasses.replace(PolicyConfig(), engine="vllm", **changes).validate()
