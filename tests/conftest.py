"""Shared pytest fixtures. Each section serves one part of the package; add new sections at the end."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from archer.cli import compose_run_config
from archer.config import CriticConfig, EmbeddedModelConfig, PolicyConfig, RunConfig

# ---------------------------------------------------------------------------------------------------------------
# Tiny language models (archer.models): built from configs with a tokenizer trained on TINY_CORPUS, no hub.
# ---------------------------------------------------------------------------------------------------------------

TINY_CORPUS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? Yes.\nIs it a dog? Yes.\n",
    "Questions:\nIs it alive? No.\nIs it a fruit? No.\nIs it a vehicle? Yes.\nIs it a truck? Yes.\n",
    "Questions:\nIs it made of metal? Yes.\nIs it used in the kitchen? Yes.\nIs it a knife? No.\n",
    "Questions:\nDoes it have wheels? No.\nIs it a piece of furniture? Yes.\nIs it a chair? Yes.\n",
]


@pytest.fixture(scope="session")
def tiny_corpus() -> list[str]:
    """Twenty-Questions-like text the tiny tokenizers are trained on."""
    return list(TINY_CORPUS)


@pytest.fixture
def tiny_policy_config() -> PolicyConfig:
    """An embedded GPT-2 policy: 2 layers, width 32, prompts of at most 64 tokens, actions of at most 12."""
    return PolicyConfig(
        embedded=EmbeddedModelConfig(n_layer=2, n_embd=32, n_head=2, vocab_size=320, max_positions=128),
        max_prompt_tokens=64,
        max_new_tokens=12,
    )


@pytest.fixture
def tiny_critic_config() -> CriticConfig:
    """An embedded RoBERTa critic: 2 layers, width 32, texts of at most 64 tokens."""
    return CriticConfig(
        embedded=EmbeddedModelConfig(n_layer=2, n_embd=32, n_head=2, vocab_size=320, max_positions=130),
        max_tokens=64,
    )


@pytest.fixture(scope="session")
def model_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One embedded-model cache for the whole session, so each tiny model is built once."""
    return str(tmp_path_factory.mktemp("model_cache"))


# ---------------------------------------------------------------------------------------------------------------
# Composed run configs (scripts/config): the same files users run, composed with Hydra's compose API.
# ---------------------------------------------------------------------------------------------------------------

CONFIG_DIR = Path(__file__).resolve().parents[1] / "scripts" / "config"

# Settings that make any shipped run config tiny: small models, a few short games, small batches.
TINY_RUN_OVERRIDES = [
    "model=tiny",
    "env.batch_size=4",
    "env.max_turns=4",
    "eval.num_episodes=4",
    "eval.every_iters=1",
    "data.generate_episodes=24",
    "logging.progress_bars=false",
    "torch_threads=1",
]


def compose_run(name: str, overrides: list[str] | None = None) -> RunConfig:
    """Compose ``scripts/config/<name>.yaml`` with ``overrides`` and convert it to a validated ``RunConfig``."""
    return compose_run_config(CONFIG_DIR, name, ["run_dir=unused", *(overrides or [])])


SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "scripts"


def load_script(filename: str) -> ModuleType:
    """Import ``scripts/<filename>`` as a module (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location(Path(filename).stem, SCRIPTS_DIR / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
