"""dev/prompt_lengths.py: prompt token counts turn by turn, checked by hand on a tiny chat tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

from archer.envs.twenty_questions.prompts import TWENTY_QUESTIONS_INSTRUCTION
from tests.conftest import load_dev_script
from tests.integration.test_city_and_llm import build_chat_model


def test_prompt_lengths_count_the_rendered_chat_prompt(tmp_path: Path) -> None:
    script = load_dev_script("prompt_lengths")
    folder = build_chat_model(tmp_path / "tiny_mistral")
    output = tmp_path / "lengths.json"
    record = script.main(["--tokenizer", str(folder), "--json", str(output), "env.max_turns=3"])
    tokenizer = script.load_tokenizer(str(folder))

    def tokens(history: str) -> int:
        return len(tokenizer("[INST] " + TWENTY_QUESTIONS_INSTRUCTION.format(history=history) + " [/INST]").input_ids)

    question = record["questions"]["typical"]
    assert record["fixed_tokens"] == tokens("")
    assert record["typical_tokens"] == [tokens("Questions:\n" + f"{question} Yes.\n" * t) for t in range(4)]
    longest = record["longest_tokens"]
    assert len(tokenizer(record["questions"]["longest"], add_special_tokens=False).input_ids) <= 64
    assert longest[0] == tokens("Questions:\n") and longest[3] > record["typical_tokens"][3]
    assert record["typical_first_over"] is None and json.loads(output.read_text()) == record
