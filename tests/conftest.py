"""Shared pytest fixtures. Each section serves one part of the package; add new sections at the end."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from archer.cli import compose_run_config
from archer.config import CriticConfig, EmbeddedModelConfig, PolicyConfig, RunConfig

if TYPE_CHECKING:
    import torch

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


def tiny_online_run(tmp_path: Path, run_dir: Path) -> list[str]:
    """Overrides of a one-iteration online ArCHer run of four games from an untrained start, for the developer
    scripts that replace part of its actor (``dev/oracle_critic.py``, ``centred_actor.py``, ``actor_advantages``)."""
    return [
        *TINY_RUN_OVERRIDES,
        f"cache_dir={tmp_path / 'cache'}",
        f"run_dir={run_dir}",
        "pretrain=null",
        "algorithm.num_iterations=1",
        "algorithm.warmup_iters=0",
        "algorithm.rollout.episodes_per_iter=4",
        "algorithm.actor_steps_per_iter=1",
        "algorithm.actor_batch_size=4",
        "algorithm.actor_micro_batch_size=2",
        "algorithm.generation_batch_size=4",
    ]


# The KALM pipeline's networks and d3rlpy learner at the smallest size that runs; each test adds its own schedule.
TINY_KALM_MODELS = [
    "torch_threads=1",
    "grounding.steps=2",
    "grounding.batch_size=4",
    "grounding.n_layer=1",
    "grounding.n_embd=16",
    "grounding.n_head=2",
    "grounding.max_positions=64",
    "offline.batch_size=16",
    "offline.hidden_units=[16]",
]


def save_tiny_kalm_lm(folder: Path, architecture: str = "gpt2") -> Path:
    """A tiny causal LM (``gpt2`` or ``llama``, the paper's family; 1 layer, width 32) and a byte-level BPE tokenizer
    trained on the KALM prompts' words, saved in ``folder`` as a Hugging Face model folder (what
    ``grounding.model=<folder>`` loads)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from archer.kalm import grounding, language
    from archer.models.tokenizer import train_bpe_tokenizer

    corpus = [" ".join(language.vocabulary()), " ".join(grounding.PATTERN_WORDS), "state # action @ next ^"]
    tokenizer = train_bpe_tokenizer(corpus, 300, "causal")
    special = {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    torch.manual_seed(0)
    if architecture == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, n_positions=128, **special))
    else:
        config = LlamaConfig(
            num_hidden_layers=1,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=128,
            **special,
        )
        model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def compose_run(name: str, overrides: list[str] | None = None) -> RunConfig:
    """Compose ``scripts/config/<name>.yaml`` with ``overrides`` and convert it to a validated ``RunConfig``."""
    return compose_run_config(CONFIG_DIR, name, ["run_dir=unused", *(overrides or [])])


SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "scripts"
# Detective's story file is not shipped (it is dataset/detective.z5 in github.com/YifeiZhou02/ArCHer): the tests
# that play it look for it in a ``shared/data`` folder beside the repository, or where ARCHER_DETECTIVE_PATH says.
DETECTIVE = os.environ.get("ARCHER_DETECTIVE_PATH", str(SCRIPTS_DIR.parents[1] / "shared" / "data" / "detective.z5"))


def load_dev_script(name: str) -> ModuleType:
    """Import ``dev/<name>.py`` as a module: ``dev/`` is on the test suite's import path (``pyproject.toml``), as it
    is on a developer script's own when it runs."""
    return importlib.import_module(name)


def load_script(filename: str) -> ModuleType:
    """Import ``scripts/<filename>`` as a module (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location(Path(filename).stem, SCRIPTS_DIR / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------------------------
# Tiny policy weights worth decoding greedily (archer.models.incremental, archer.models.prefix_generation).
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_policy_weights(model_cache_dir: str, tiny_corpus: list[str]) -> dict[str, dict[str, torch.Tensor]]:
    """Weights for the tiny policy of ``tiny_policy_config`` that make greedy play worth comparing.

    ``trained``: 60 Adam steps on the corpus give questions of varied lengths, ended by the stop token (the
    untrained model stops at once). ``noisy``: random weights that never stop before ``max_new_tokens`` and write
    byte tokens that do not re-tokenise to themselves.
    """
    # Imported here so that collecting tests that need no model does not import torch and transformers.
    import copy

    import torch

    from archer.models.loading import load_policy_model
    from archer.models.policy import LanguagePolicy

    cfg = PolicyConfig(embedded=EmbeddedModelConfig(n_layer=2, n_embd=32, n_head=2, vocab_size=320, max_positions=128))
    model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    policy = LanguagePolicy(model, tokenizer, cfg)
    initial = copy.deepcopy(model.state_dict())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ids, mask = policy.left_pad(policy.encode_prompts(tiny_corpus))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(60):
            position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
            labels = ids.masked_fill(mask == 0, -100)
            model(input_ids=ids, attention_mask=mask, position_ids=position_ids, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        noisy = {name: value + 0.5 * torch.randn_like(value) for name, value in initial.items()}
    return {"trained": copy.deepcopy(model.state_dict()), "noisy": noisy}


# ---------------------------------------------------------------------------------------------------------------
# Devices (tests/gpu, tests/unit/test_device_guards.py): a small ArCHer run and where its tensors live.
# ---------------------------------------------------------------------------------------------------------------

# A tiny online ArCHer run whose every network is trained in one iteration: the paper's critic (an embedded encoder
# trained from scratch), the actor from the first iteration, and a KL penalty's frozen starting policy.
TINY_ARCHER_RUN = [
    *TINY_RUN_OVERRIDES,
    "pretrain=null",
    "eval.every_iters=0",
    "algorithm.num_iterations=1",
    "algorithm.warmup_iters=0",
    "algorithm.kl_coeff=0.1",
    "algorithm.rollout.episodes_per_iter=4",
    "algorithm.critic_steps_per_iter=2",
    "algorithm.critic_batch_size=8",
    "algorithm.critic.micro_batch_size=4",
    "algorithm.actor_steps_per_iter=1",
    "algorithm.actor_batch_size=4",
    "algorithm.actor_micro_batch_size=2",
]


def tensors_off_device(modules: dict[str, torch.nn.Module], device: torch.device) -> list[str]:
    """``"<module>.<name> on <device>"`` for every parameter and buffer of ``modules`` that is not on ``device``."""
    return [
        f"{label}.{name} on {tensor.device}"
        for label, module in modules.items()
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]
        if tensor.device.type != device.type
    ]


def every_network(algorithm: object) -> dict[str, torch.nn.Module]:
    """The networks an algorithm owns (``Algorithm.networks``) and the frozen ones it keeps beside them (a KL
    penalty's starting policy, a critic's target)."""
    modules = dict(algorithm.networks())  # type: ignore[attr-defined]
    reference = getattr(algorithm, "reference", None)
    if reference is not None:
        modules["reference_policy"] = reference.model
    target = getattr(algorithm, "target_critic", None)
    if target is not None:
        modules.setdefault("target_critic", target)
    return modules
