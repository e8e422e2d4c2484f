"""The 7B config's prompts at the turn limit of a 128-game run keep their ``[INST]`` header and instruction
(issue 91), with a tiny Llama whose tokenizer has Mistral's chat format and special tokens
(``test_city_and_llm.build_chat_model``): its small vocabulary makes the histories longer in tokens than
Mistral-7B's, so the shipped ``max_prompt_tokens`` cuts them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from archer.data.rollout import collect_trajectories
from archer.envs.registry import make_env
from archer.envs.twenty_questions.prompts import TWENTY_QUESTIONS_INSTRUCTION
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy
from archer.models.templates import split_history
from tests.conftest import compose_run
from tests.integration.test_city_and_llm import build_chat_model

pytestmark = pytest.mark.integration


# Questions as long as a 7B instruct model's in a 128-game run (every history over 1,024 Mistral tokens from turn 13
# on, the measurement), varied by game and turn.
QUESTION = "Is the hidden word something you would find in a kitchen, a garage, an office or a shed, number {n}?"


def test_turn_twenty_prompts_of_a_128_game_run_keep_the_instruction(tmp_path: Path) -> None:
    folder = build_chat_model(tmp_path / "tiny_mistral")
    cfg = compose_run("archer_llm_20q", [f"model.policy.name_or_path={folder}", "model.policy.dtype=float32"])
    settings = cfg.model.policy
    assert (settings.template, cfg.env.max_turns) == ("twenty_questions_chat", 20)
    model, tokenizer = load_policy_model(settings, str(tmp_path / "cache"), corpus=lambda: [])
    policy = LanguagePolicy(model, tokenizer, settings)
    env = make_env(dataclasses.replace(cfg.env, batch_size=128), seed=0)
    # Scripted questions stand in for the model's 64-token samples: 128 games of 20 turns of tiny-model decoding
    # take minutes on a CPU. Generation and scoring on cut prompts are checked in tests/unit/test_prompt_truncation.py.
    games = collect_trajectories(
        env, lambda observations: [QUESTION.format(n=len(o) % 97) for o in observations], num_episodes=128
    )
    last = [game.observations[19] for game in games if game.length == 20]  # the prompt of each game's 20th turn
    assert len(last) == 128
    limit = settings.max_prompt_tokens
    full = [tokenizer(policy.template(observation), verbose=False)["input_ids"] for observation in last]
    assert all(len(ids) > limit for ids in full)  # the tiny vocabulary's tokens are short: every one is cut
    head, tail = TWENTY_QUESTIONS_INSTRUCTION.format(history="\0").split("\0")
    for observation, ids in zip(last, policy.encode_prompts(last), strict=True):
        text = tokenizer.decode(ids)
        assert len(ids) <= limit
        assert text.startswith("<s>[INST] " + head + "Questions:\n") and text.endswith(tail + " [/INST]")
        # What lies between is the newest whole turns of the history, as many as fit.
        title, turns = split_history(observation)
        kept = text.removeprefix("<s>[INST] " + head + title).removesuffix(tail + " [/INST]")
        assert any(kept == "".join(turns[k:]) for k in range(1, len(turns)))
