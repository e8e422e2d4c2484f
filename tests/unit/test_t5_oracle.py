"""Seq2SeqOracle with a tiny T5 built locally: the reference's prompt format, checkpoint loading, robustness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

from archer.envs.oracles import INVALID, NO, YES
from archer.envs.t5_oracle import Seq2SeqOracle
from archer.envs.twenty_questions.words import Word

JUNK_QUESTIONS = ["", "?" * 3, "x" * 10_000, "¿Es un 🐱?\x00\x1b[31m", "{secret} {question} {0}", "\n\n\n"]


def _t5_tokenizer() -> PreTrainedTokenizerFast:
    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        ["The object is dog.Is it alive?", "The object is chair.Is it made of wood?", "Yes. No. yes no"],
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<pad>", "</s>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    raw.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


@pytest.fixture(scope="module")
def base_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_t5")
    tokenizer = _t5_tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def checkpoint(base_model: Path) -> Path:
    """A reference-format oracle checkpoint: the base model's weights, changed, under ``model_state_dict``."""
    model = T5ForConditionalGeneration.from_pretrained(base_model)
    state = {key: value * 1.5 for key, value in model.state_dict().items()}
    path = base_model / "20q_t5_oracle.pt"
    torch.save({"model_state_dict": state}, path)
    return path


def test_prompt_is_the_reference_format(base_model: Path, checkpoint: Path) -> None:
    oracle = Seq2SeqOracle(str(checkpoint), base_model=str(base_model), device="cpu")
    dog = Word(("dog", "puppy"), "Animals")
    assert oracle.prompts([dog, "chair"], ["Is it alive?", " Is it wood?"]) == [
        "The object is dog.Is it alive?",
        "The object is chair. Is it wood?",
    ]


def test_answer_feeds_exactly_those_prompts(base_model: Path, checkpoint: Path) -> None:
    oracle = Seq2SeqOracle(str(checkpoint), base_model=str(base_model), device="cpu", batch_size=2)
    seen: list[list[str]] = []
    tokenizer = oracle.tokenizer

    class RecordingTokenizer:
        def __call__(self, texts: list[str], **kwargs: Any) -> Any:
            seen.append(list(texts))
            assert kwargs["padding"] is True and tokenizer.padding_side == "right"
            return tokenizer(texts, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(tokenizer, name)

    oracle.tokenizer = RecordingTokenizer()  # type: ignore[assignment]
    words = [Word(("pants", "pant", "pair of pants"), "Clothes"), Word(("cat",), "Animals"), Word(("pen",), "Office")]
    answers = oracle.answer(words, ["Is it clothing?", "Is it a cat?", "Can you write with it?"])
    assert seen == [
        ["The object is pants.Is it clothing?", "The object is cat.Is it a cat?"],
        ["The object is pen.Can you write with it?"],
    ]
    assert len(answers) == 3


def test_checkpoint_weights_replace_the_base_weights(base_model: Path, checkpoint: Path) -> None:
    oracle = Seq2SeqOracle(str(checkpoint), base_model=str(base_model), device="cpu")
    saved = torch.load(checkpoint, weights_only=True)["model_state_dict"]
    for key, value in oracle.model.state_dict().items():
        torch.testing.assert_close(value, saved[key], rtol=0, atol=0)
    assert not oracle.model.training


def test_answers_are_normalised_and_junk_never_raises(base_model: Path, checkpoint: Path) -> None:
    oracle = Seq2SeqOracle(str(checkpoint), base_model=str(base_model), device="cpu", batch_size=4)
    answers = oracle.answer(["dog"] * len(JUNK_QUESTIONS), JUNK_QUESTIONS)
    assert len(answers) == len(JUNK_QUESTIONS)
    assert set(answers) <= {YES, NO, INVALID}
    assert oracle.answer([], []) == []


def test_raw_answers_without_normalisation(base_model: Path) -> None:
    oracle = Seq2SeqOracle(None, base_model=str(base_model), normalisation=None, max_new_tokens=4, device="cpu")
    answers = oracle.answer(["paris,france", "tokyo,japan"], ["What is your city known for?", ""])
    assert len(answers) == 2 and all(isinstance(answer, str) for answer in answers)
    assert oracle.generate_raw(["paris,france"], ["x"])[0].strip() == oracle.answer(["paris,france"], ["x"])[0]


def test_missing_checkpoint_says_where_to_get_it(tmp_path: Path) -> None:
    missing = tmp_path / "20q_t5_oracle.pt"
    # Checked before the base model is loaded, so even an unreachable hub name fails with this message.
    with pytest.raises(FileNotFoundError) as error:
        Seq2SeqOracle(str(missing), base_model="google/flan-t5-small")
    message = str(error.value)
    assert message.startswith(f"Twenty Questions oracle checkpoint '{missing}' not found.")
    assert "github.com/YifeiZhou02/ArCHer" in message and "env.oracle=knowledge_base" in message


def test_bad_checkpoint_and_bad_normalisation(base_model: Path, tmp_path: Path) -> None:
    torch.save({"state_dict": {}}, tmp_path / "wrong.pt")
    with pytest.raises(KeyError, match="model_state_dict"):
        Seq2SeqOracle(str(tmp_path / "wrong.pt"), base_model=str(base_model), device="cpu")
    with pytest.raises(ValueError, match="normalisation"):
        Seq2SeqOracle(None, base_model=str(base_model), normalisation="fuzzy", device="cpu")
