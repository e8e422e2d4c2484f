"""Long prompts lose the oldest whole turns of their history, never the template's head or tail (issue 91).

Expected prompts are built by hand: the chat tokenizer's is ``[INST] `` + the game's instruction around the kept
history + `` [/INST]`` (the tiny Mistral-like chat model of ``test_city_and_llm``), the GPT-2-style embedded
tokenizer's is the kept history itself; the number of newest turns kept is found by trying every number.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from archer.config import ConfigError, PolicyConfig
from archer.data.rollout import collect_trajectories
from archer.envs.twenty_questions.prompts import TWENTY_QUESTIONS_INSTRUCTION
from archer.models.incremental import IncrementalActor
from archer.models.loading import load_policy_model
from archer.models.policy import _NOTED_CUTS, LanguagePolicy
from archer.models.prefix_generation import generate_sharing_prefixes
from archer.models.templates import split_history
from tests.integration.test_city_and_llm import build_chat_model
from tests.unit.test_incremental_generation import Recording, ScriptedEnv

START = "Questions:\n"
TURNS = [
    f"Is it number {i} of the things you would keep in a garden shed? {'Yes' if i % 3 else 'No'}.\n" for i in range(24)
]


def chat_prompt(history: str) -> str:
    """The Twenty Questions chat prompt the Mistral-like template renders, written out by hand (no BOS: the
    tokenizer adds it)."""
    return "[INST] " + TWENTY_QUESTIONS_INSTRUCTION.format(history=history) + " [/INST]"


def newest_that_fit(tokenizer: Any, prompt_of: Callable[[str], str], turns: list[str], limit: int) -> list[int]:
    """The ids of the prompt with the most newest turns (at least one) that fits ``limit``, by trying them all."""
    for kept in range(len(turns), 0, -1):
        ids = tokenizer(prompt_of(START + "".join(turns[-kept:])))["input_ids"]
        if len(ids) <= limit:
            return ids
    raise AssertionError("not even the newest turn fits")


@pytest.fixture(scope="module")
def chat_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_chat_model(tmp_path_factory.mktemp("tiny_mistral"))


@pytest.fixture
def make_chat_policy(chat_folder: Path, tmp_path: Path) -> Callable[..., LanguagePolicy]:
    def make(**overrides: Any) -> LanguagePolicy:
        settings: dict[str, Any] = {
            "template": "twenty_questions_chat",
            "action_parser": "json_question",
            "max_prompt_tokens": 400,
            "max_new_tokens": 8,
            "stop_string": None,
            **overrides,
        }
        cfg = PolicyConfig(name_or_path=str(chat_folder), **settings)
        model, tokenizer = load_policy_model(cfg, str(tmp_path / "cache"), corpus=lambda: [])
        return LanguagePolicy(model, tokenizer, cfg)

    return make


@pytest.fixture
def make_plain_policy(
    tiny_policy_config: PolicyConfig,
    tiny_corpus: list[str],
    model_cache_dir: str,
    tiny_policy_weights: dict[str, dict[str, torch.Tensor]],
) -> Callable[..., LanguagePolicy]:
    """The embedded GPT-2-style policy (byte-level BPE, no BOS), plain template."""

    def make(**changes: Any) -> LanguagePolicy:
        cfg = dataclasses.replace(tiny_policy_config, **changes)
        model, tokenizer = load_policy_model(cfg, model_cache_dir, lambda: tiny_corpus)
        model.load_state_dict(tiny_policy_weights["trained"])
        return LanguagePolicy(model, tokenizer, cfg)

    return make


def test_split_history_keeps_the_title_and_one_turn_per_line() -> None:
    assert split_history(START + TURNS[0] + TURNS[1]) == (START, TURNS[:2])
    assert split_history(START) == (START, [])
    assert split_history("") == ("", [])
    assert split_history("no title\nlast line without newline") == ("", ["no title\n", "last line without newline"])
    assert split_history("\nObservation:\npage\n") == ("", ["\n", "Observation:\n", "page\n"])


def test_a_long_chat_prompt_keeps_its_head_and_tail_and_drops_the_oldest_turns(
    make_chat_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_chat_policy()
    tokenizer, limit = policy.tokenizer, policy.cfg.max_prompt_tokens
    observation = START + "".join(TURNS)
    assert len(tokenizer(chat_prompt(observation))["input_ids"]) > limit  # the whole history does not fit
    expected = newest_that_fit(tokenizer, chat_prompt, TURNS, limit)
    (ids,) = policy.encode_prompts([observation])
    assert ids == expected
    text = tokenizer.decode(ids)
    # The chat header, the instruction, the answer format and the closing [/INST] all stay; the history keeps its
    # title and its newest turns, whole; the oldest turns are gone.
    assert text.startswith("<s>[INST] Please play Twenty Questions with me.")
    assert '"Question": "Your Question",' in text and text.endswith("scissors. [/INST]")
    assert "Questions:\n" + TURNS[-1] not in text and TURNS[-1] in text and TURNS[0] not in text
    kept = [turn for turn in TURNS if turn in text]
    assert 1 <= len(kept) < len(TURNS) and kept == TURNS[-len(kept) :]
    assert "\n" + "".join(kept) + "\nPlease answer in the following format" in text


def test_a_long_plain_prompt_keeps_its_title_and_newest_whole_turns(
    make_plain_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_plain_policy()  # 64 prompt tokens
    tokenizer = policy.tokenizer
    turns = ["Is it alive? Yes.\n", "Is it an animal? No.\n", "Is it a vehicle? Yes.\n", "Is it a truck? No.\n"] * 3
    observation = START + "".join(turns)
    assert len(tokenizer(observation)["input_ids"]) > 64
    expected = newest_that_fit(tokenizer, lambda history: history, turns, 64)
    (ids,) = policy.encode_prompts([observation])
    assert ids == expected
    assert tokenizer.decode(ids) == START + "".join(turns[-(len(tokenizer.decode(ids).splitlines()) - 1) :])
    # The reference's cut (the last 64 tokens) would start inside a turn and drop the title.
    assert ids != tokenizer(observation)["input_ids"][-64:]


@pytest.mark.parametrize("kind", ["chat", "plain"])
def test_prompts_within_the_limit_are_encoded_as_before(
    make_chat_policy: Callable[..., LanguagePolicy], make_plain_policy: Callable[..., LanguagePolicy], kind: str
) -> None:
    observation = START + "".join(TURNS[:3])
    prompt_of = chat_prompt if kind == "chat" else (lambda history: history)
    probe = make_chat_policy() if kind == "chat" else make_plain_policy(max_prompt_tokens=120)
    exact = probe.tokenizer(prompt_of(observation))["input_ids"]
    # A limit of exactly the prompt's length keeps it whole, as the tokenizer's own truncation did; one less cuts it.
    make = make_chat_policy if kind == "chat" else make_plain_policy
    at_limit = make(max_prompt_tokens=len(exact))
    assert at_limit.encode_prompts([observation]) == [exact]
    assert at_limit.encode_prompts([observation]) == [
        list(at_limit.tokenizer(prompt_of(observation), truncation=True, max_length=len(exact))["input_ids"])
    ]
    cut = make(max_prompt_tokens=len(exact) - 1).encode_prompts([observation])[0]
    assert cut == probe.tokenizer(prompt_of(START + "".join(TURNS[1:3])))["input_ids"]


def test_generation_and_scoring_condition_on_the_cut_prompt(make_chat_policy: Callable[..., LanguagePolicy]) -> None:
    policy = make_chat_policy()
    observation = START + "".join(TURNS)
    expected = newest_that_fit(policy.tokenizer, chat_prompt, TURNS, policy.cfg.max_prompt_tokens)
    generation = policy.generate([observation], greedy=True)
    policy.model.eval()
    with torch.no_grad():
        fresh = policy.model.generate(
            input_ids=torch.tensor([expected]), generation_config=policy._generation_config(greedy=True)
        ).sequences[0, len(expected) :]
        action = generation.token_ids[0]
        assert action == fresh.tolist()[: len(action)]
        logprobs, _ = policy.token_logprobs([observation], [action], as_sampled=False)
        values = [
            F.log_softmax(policy.model(input_ids=torch.tensor([expected + action[:j]])).logits[0, -1], dim=-1)[token]
            for j, token in enumerate(action)
        ]
    torch.testing.assert_close(logprobs[0], torch.stack(values), rtol=0, atol=1e-5)


def test_a_newest_turn_too_long_to_fit_keeps_its_end_beside_the_head(
    make_chat_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_chat_policy()
    fixed = len(policy.tokenizer(chat_prompt(START))["input_ids"])
    long_turn = "Is it " + "very " * 200 + "big? No.\n"
    (ids,) = policy.encode_prompts([START + TURNS[0] + long_turn])
    text = policy.tokenizer.decode(ids)
    assert fixed < len(ids) <= policy.cfg.max_prompt_tokens
    assert text.startswith("<s>[INST] Please play") and text.endswith("scissors. [/INST]")
    assert "very big? No.\n\nPlease answer" in text and TURNS[0] not in text


def test_fixed_parts_that_fill_the_limit_are_refused_when_the_policy_is_built(
    make_chat_policy: Callable[..., LanguagePolicy],
) -> None:
    fixed = len(make_chat_policy().tokenizer(chat_prompt(""))["input_ids"])
    with pytest.raises(
        ConfigError, match=rf"model\.policy\.max_prompt_tokens: .* take {fixed} tokens .* more than {fixed}"
    ):
        make_chat_policy(max_prompt_tokens=fixed)
    make_chat_policy(max_prompt_tokens=fixed + 1)


def test_the_first_cut_of_a_run_is_noted_once(
    make_chat_policy: Callable[..., LanguagePolicy], caplog: pytest.LogCaptureFixture
) -> None:
    policy = make_chat_policy()
    short = START + TURNS[0]
    with caplog.at_level(logging.INFO, logger="archer.models.policy"):
        policy.encode_prompts([short])
        assert not caplog.records  # nothing was cut
        policy.encode_prompts([START + "".join(TURNS), START + "".join(TURNS[1:])])
        policy.encode_prompts([START + "".join(TURNS)])
    notes = [record.getMessage() for record in caplog.records]
    assert len(notes) == 1 and "model.policy.max_prompt_tokens=400" in notes[0] and "oldest turns" in notes[0]
    assert policy.tokenizer in _NOTED_CUTS


@pytest.mark.parametrize("append_token_ids", [False, True])
def test_kept_kv_cache_play_equals_full_reencoding_when_histories_are_cut(
    make_chat_policy: Callable[..., LanguagePolicy], append_token_ids: bool
) -> None:
    # 280 tokens: the instruction takes about 250, so from the third turn or so on every history is cut. The kept
    # cache may then reuse only the ids the cut prompt shares with the last turn's (its head); the rest is fed again.
    policy = make_chat_policy(max_prompt_tokens=280, max_new_tokens=6)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for param in policy.model.parameters():
            param.data.add_(0.5 * torch.randn_like(param))
    lengths = [6, 2, 5]
    full = collect_trajectories(
        ScriptedEnv(lengths), lambda observations: policy.generate(observations, greedy=True), num_episodes=3
    )
    cut = [
        o for game in full for o in game.observations if len(policy.tokenizer(policy.template(o))["input_ids"]) > 280
    ]
    assert len(cut) >= 4  # histories were cut
    actor = Recording(IncrementalActor(policy, greedy=True, append_token_ids=append_token_ids))
    incremental = collect_trajectories(ScriptedEnv(lengths), actor, num_episodes=3)
    if append_token_ids:
        # Token in, token out conditions on the ids as sampled until the limit, then re-encodes: the games may
        # differ from full re-encoding, but no prompt outgrows the limit and the cut ones keep their head.
        assert [g.length for g in incremental] == lengths
    else:
        assert [g.action_token_ids for g in full] == [g.action_token_ids for g in incremental]
        (session,) = actor.sessions
        assert session.stats.full_encodes == 3  # a cut prompt still shares its head with the last turn's ids
    head = policy.tokenizer(chat_prompt(START))["input_ids"][:20]
    for game in incremental:
        for prompt in policy.encode_prompts(game.observations):
            assert len(prompt) <= 280 and prompt[:20] == head
    assert generate_sharing_prefixes(policy, cut, greedy=True) == policy.generate(cut, greedy=True)
