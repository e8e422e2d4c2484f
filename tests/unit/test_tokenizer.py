"""The run-time byte-level BPE tokenizers: any text encodes, newline is one token, special tokens per kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from archer.models.tokenizer import train_bpe_tokenizer

ODD_TEXTS = ["", "plain ascii", "emoji 🐱🚀", "control \x00\x01\x7f\t\r", "accents ¿Qué pasó? ÆØÅ 東京", " \n\n  \n"]


@pytest.mark.parametrize("kind", ["causal", "encoder"])
def test_newline_is_one_token_and_ends_a_question(tiny_corpus: list[str], kind: str) -> None:
    tokenizer = train_bpe_tokenizer(tiny_corpus, 320, kind)
    (newline,) = tokenizer.encode("\n", add_special_tokens=False)
    assert len(tokenizer.encode("\n", add_special_tokens=False)) == 1
    assert tokenizer.encode("Is it alive?\n", add_special_tokens=False)[-1] == newline
    # Newlines are never merged with anything, so "\n\n" is two stop tokens, not a new token.
    assert tokenizer.encode("Yes.\n\nIs", add_special_tokens=False).count(newline) == 2


def test_causal_tokenizer_adds_nothing_and_uses_one_special_token(tiny_corpus: list[str]) -> None:
    tokenizer = train_bpe_tokenizer(tiny_corpus, 320, "causal")
    assert tokenizer("Is it alive?")["input_ids"] == tokenizer.encode("Is it alive?", add_special_tokens=False)
    assert {tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token, tokenizer.unk_token} == {"<|endoftext|>"}
    assert 256 < len(tokenizer) <= 320


def test_encoder_tokenizer_wraps_texts_roberta_style(tiny_corpus: list[str]) -> None:
    tokenizer = train_bpe_tokenizer(tiny_corpus, 320, "encoder")
    ids = tokenizer("Is it alive?")["input_ids"]
    assert tokenizer.convert_ids_to_tokens([ids[0], ids[-1]]) == ["<s>", "</s>"]
    assert tokenizer.convert_tokens_to_ids(["<s>", "<pad>", "</s>", "<unk>", "<mask>"]) == [0, 1, 2, 3, 4]
    assert tokenizer.pad_token_id == 1


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_any_text_round_trips(tiny_corpus: list[str], text: str) -> None:
    tokenizer = train_bpe_tokenizer(tiny_corpus, 320, "causal")
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids) == text


def test_training_is_deterministic_and_survives_save_and_load(tiny_corpus: list[str], tmp_path: Path) -> None:
    first = train_bpe_tokenizer(tiny_corpus, 320, "encoder")
    second = train_bpe_tokenizer(tiny_corpus, 320, "encoder")
    assert first.get_vocab() == second.get_vocab()
    first.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "Questions:\nIs it a dog? Yes.\n🐶"
    assert loaded(text)["input_ids"] == first(text)["input_ids"]


def test_unknown_kind_is_rejected(tiny_corpus: list[str]) -> None:
    with pytest.raises(ValueError, match="causal"):
        train_bpe_tokenizer(tiny_corpus, 320, "seq2seq")  # type: ignore[arg-type]
