"""LanguagePolicy: generation and log-probabilities agree, padding changes nothing, the terminator is scored."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from archer.config import PolicyConfig
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy
from archer.models.templates import get_template

# Different prompt lengths, so every batch below is padded; the empty one starts from BOS.
OBSERVATIONS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? No.\nIs it made of metal? Yes.\n",
    "Questions:\nIs it a fruit? No.\n",
    "",
]


def _policy(cfg: PolicyConfig, cache_dir: str, corpus: list[str]) -> LanguagePolicy:
    model, tokenizer = load_policy_model(cfg, cache_dir, lambda: corpus)
    return LanguagePolicy(model, tokenizer, cfg)


@pytest.fixture
def make_policy(
    tiny_policy_config: PolicyConfig, tiny_corpus: list[str], model_cache_dir: str
) -> Callable[..., LanguagePolicy]:
    def make(**changes: Any) -> LanguagePolicy:
        return _policy(dataclasses.replace(tiny_policy_config, **changes), model_cache_dir, tiny_corpus)

    return make


@pytest.fixture
def policy(make_policy: Callable[..., LanguagePolicy]) -> LanguagePolicy:
    return make_policy()


def _unpadded_per_token_logprobs(policy: LanguagePolicy, observation: str, action: list[int]) -> torch.Tensor:
    """log p(a_j | prompt, a_<j), one unpadded forward per token, positions 0..n-1 by default."""
    prompt = policy.tokenizer(observation)["input_ids"] or [policy.tokenizer.bos_token_id]
    values = []
    for j, token in enumerate(action):
        prefix = torch.tensor([prompt + action[:j]])
        values.append(F.log_softmax(policy.model(input_ids=prefix).logits[0, -1], dim=-1)[token])
    return torch.stack(values)


def test_batched_padded_logprobs_equal_per_example_per_token_ones(policy: LanguagePolicy) -> None:
    newline = policy.stop_token_id
    actions = [[40, 41, 42, newline], [7], [100, 101, 102, 103, 104, 105, newline], [55, newline]]
    logprobs, mask = policy.token_logprobs(OBSERVATIONS, actions, as_sampled=False)

    assert logprobs.shape == mask.shape == (4, 7)
    assert mask.sum(dim=1).tolist() == [4, 1, 7, 2]
    for i, (observation, action) in enumerate(zip(OBSERVATIONS, actions, strict=True)):
        expected = _unpadded_per_token_logprobs(policy, observation, action)
        torch.testing.assert_close(logprobs[i, : len(action)], expected, rtol=0, atol=1e-5)
        assert torch.all(logprobs[i, len(action) :] == 0)
    torch.testing.assert_close(
        policy.sequence_logprobs(OBSERVATIONS, actions, as_sampled=False), (logprobs * mask).sum(dim=1)
    )


def test_logprobs_are_differentiable(policy: LanguagePolicy) -> None:
    actions = policy.encode_actions(["Is it a dog?", "Is it a cat?", "Is it big?", "No"])
    policy.sequence_logprobs(OBSERVATIONS, actions, as_sampled=False).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in policy.model.parameters())
    assert policy.model.transformer.wte.weight.grad.abs().sum() > 0


def test_compiled_scoring_gives_the_eager_numbers_and_gradients(make_policy: Callable[..., LanguagePolicy]) -> None:
    eager, compiled = make_policy(), make_policy(compile=True)
    actions = eager.encode_actions(["Is it a dog?", "Is it a cat?", "Is it big?", "No"])
    for policy in (eager, compiled):
        policy.sequence_logprobs(OBSERVATIONS, actions, as_sampled=False).sum().backward()
    torch.testing.assert_close(
        compiled.sequence_logprobs(OBSERVATIONS, actions, as_sampled=False),
        eager.sequence_logprobs(OBSERVATIONS, actions, as_sampled=False),
        atol=1e-5,
        rtol=0,
    )
    for (name, p_eager), p_compiled in zip(eager.model.named_parameters(), compiled.model.parameters(), strict=True):
        torch.testing.assert_close(p_compiled.grad, p_eager.grad, atol=1e-5, rtol=1e-4, msg=name)
    # The compiled wrapper follows the model when it is replaced (wrapped for distributed training, say).
    first = compiled._scoring_model()
    assert first is not compiled.model and compiled._scoring_model() is first
    compiled.model = make_policy().model
    assert compiled._scoring_model() is not first
    assert eager._scoring_model() is eager.model


def test_greedy_actions_are_scored_as_generate_scored_them(
    policy: LanguagePolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured = []
    generate = policy.model.generate

    def generate_with_logits(**kwargs: Any) -> Any:
        output = generate(**kwargs, output_logits=True)  # the policy's config returns a dict with the sequences
        captured.append(output)
        return output

    monkeypatch.setattr(policy.model, "generate", generate_with_logits)
    generation = policy.generate(OBSERVATIONS, greedy=True)
    steps = F.log_softmax(torch.stack(captured[0].logits, dim=1), dim=-1)  # (B, new tokens, V)
    logprobs, mask = policy.token_logprobs(OBSERVATIONS, generation.token_ids, as_sampled=False)

    for i, ids in enumerate(generation.token_ids):
        chosen = torch.tensor(ids)
        assert torch.equal(steps[i, : len(ids)].argmax(dim=-1), chosen)  # greedy = argmax of the model's own logits
        generated = steps[i, : len(ids)].gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(logprobs[i, : len(ids)], generated, rtol=0, atol=1e-5)
        assert mask[i].sum() == len(ids)


def _train_to_say(policy: LanguagePolicy, action: str, steps: int = 150) -> None:
    """Behaviour-clone one fixed action after every observation, through encode_actions and sequence_logprobs."""
    torch.manual_seed(0)
    optimiser = torch.optim.Adam(policy.model.parameters(), lr=1e-2)
    targets = policy.encode_actions([action] * len(OBSERVATIONS))
    policy.model.train()
    for _ in range(steps):
        optimiser.zero_grad()
        (-policy.sequence_logprobs(OBSERVATIONS, targets, as_sampled=False).mean()).backward()
        optimiser.step()


def test_terminator_is_kept_in_token_ids_scored_and_cut_from_texts(policy: LanguagePolicy) -> None:
    _train_to_say(policy, "Is it a dog?")
    assert policy.model.training
    generation = policy.generate(OBSERVATIONS, greedy=True)
    assert policy.model.training  # the previous mode is restored

    expected_ids = policy.encode_actions(["Is it a dog?"])[0]
    assert expected_ids[-1] == policy.stop_token_id
    assert generation.token_ids == [expected_ids] * len(OBSERVATIONS)
    assert generation.texts == ["Is it a dog?"] * len(OBSERVATIONS)
    logprobs, mask = policy.token_logprobs(OBSERVATIONS, generation.token_ids, as_sampled=False)
    assert mask[:, len(expected_ids) - 1].eq(1).all()
    assert logprobs[:, len(expected_ids) - 1].gt(-0.5).all()  # the learned "stop here" is scored


def test_generation_ends_at_eos_and_at_max_new_tokens(make_policy: Callable[..., LanguagePolicy]) -> None:
    policy = make_policy(stop_string=None)
    assert policy.stop_token_id is None
    assert policy.terminator_ids == [policy.tokenizer.eos_token_id]
    _train_to_say(policy, "Is it a dog?", steps=100)  # encode_actions appends EOS when there is no stop string
    generation = policy.generate(OBSERVATIONS[:2], greedy=True)
    assert generation.texts == ["Is it a dog?"] * 2
    assert generation.token_ids[0][-1] == policy.tokenizer.eos_token_id

    policy.cfg = dataclasses.replace(policy.cfg, max_new_tokens=3)
    generation = policy.generate(OBSERVATIONS[:2], greedy=True)
    assert generation.token_ids == [policy.encode_actions(["Is it a dog?"])[0][:3]] * 2


def test_texts_strip_leading_newlines_skip_specials_and_cut_at_the_stop_string(
    make_policy: Callable[..., LanguagePolicy], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = make_policy(stop_string="?")
    ids = policy.tokenizer.encode
    eos = policy.tokenizer.eos_token_id
    rows = [ids("\n\nIs it big") + ids("?") + ids(" junk"), ids("Is it red") + [eos], ids("no stop, the longest row")]

    def fake_generate(input_ids: torch.Tensor, **kwargs: Any) -> SimpleNamespace:
        width = max(len(row) for row in rows)
        new = torch.tensor([row + [eos] * (width - len(row)) for row in rows])
        return SimpleNamespace(sequences=torch.cat([input_ids, new], dim=1), past_key_values=None)

    monkeypatch.setattr(policy.model, "generate", fake_generate)
    generation = policy.generate(OBSERVATIONS[:3], greedy=False)
    assert generation.texts == ["Is it big", "Is it red", "no stop, the longest row"]
    assert generation.token_ids == [ids("\n\nIs it big?"), ids("Is it red") + [eos], ids("no stop, the longest row")]


def test_sampling_is_seeded_and_batch_size_does_not_matter(policy: LanguagePolicy) -> None:
    torch.manual_seed(7)
    first = policy.generate(OBSERVATIONS, greedy=False)
    torch.manual_seed(7)
    second = policy.generate(OBSERVATIONS, greedy=False)
    assert first == second
    assert policy.generate(OBSERVATIONS, greedy=True) == policy.generate(OBSERVATIONS, greedy=True, batch_size=3)
    assert policy.generate([], greedy=True).token_ids == []


def test_top_k_one_sampling_is_greedy(make_policy: Callable[..., LanguagePolicy]) -> None:
    policy = make_policy(top_k=1, temperature=0.7)
    assert policy.generate(OBSERVATIONS, greedy=False) == policy.generate(OBSERVATIONS, greedy=True)


def test_greedy_decoding_passes_no_sampling_filter_for_transformers_to_warn_about(
    make_policy: Callable[..., LanguagePolicy],
) -> None:
    policy = make_policy(top_k=5, top_p=0.9, temperature=0.7)
    greedy = policy._generation_config(greedy=True)
    # strict: what transformers would log as "generation flags are not valid and may be ignored" raises instead.
    greedy.validate(strict=True)
    assert not greedy.do_sample
    sampled = policy._generation_config(greedy=False)
    sampled.validate(strict=True)
    assert (sampled.top_k, sampled.top_p, sampled.temperature) == (5, 0.9, 0.7)


def test_long_prompts_drop_their_oldest_turns_in_both_paths(policy: LanguagePolicy) -> None:
    long_observation = "Questions:\n" + "Is it alive? Yes.\n" * 40
    # The prompt keeps the title and as many of the newest whole turns as fit (tests/unit/test_prompt_truncation.py).
    fitting = [policy.tokenizer("Questions:\n" + "Is it alive? Yes.\n" * n)["input_ids"] for n in range(1, 40)]
    tail_ids = [ids for ids in fitting if len(ids) <= policy.cfg.max_prompt_tokens][-1]
    assert len(fitting[-1]) > policy.cfg.max_prompt_tokens and policy.encode_prompts([long_observation]) == [tail_ids]
    action = policy.encode_actions(["Is it a dog?"])[0]
    logprobs, _ = policy.token_logprobs([long_observation], [action], as_sampled=False)
    values = [
        F.log_softmax(policy.model(input_ids=torch.tensor([tail_ids + action[:j]])).logits[0, -1], dim=-1)[token]
        for j, token in enumerate(action)
    ]
    torch.testing.assert_close(logprobs[0], torch.stack(values), rtol=0, atol=1e-5)
    assert len(policy.generate([long_observation], greedy=True).token_ids[0]) <= policy.cfg.max_new_tokens


def test_encode_actions_appends_the_stop_string_only(policy: LanguagePolicy) -> None:
    (ids,) = policy.encode_actions(["Is it a dog?"])
    assert ids == policy.tokenizer.encode("Is it a dog?\n", add_special_tokens=False)
    assert ids[-1] == policy.stop_token_id
    assert policy.encode_actions([""]) == [[policy.stop_token_id]]


def test_encode_actions_cuts_dataset_actions_at_max_new_tokens(policy: LanguagePolicy) -> None:
    long_action = "Is it " + "very " * 40 + "big?"
    (ids,) = policy.encode_actions([long_action])
    assert len(ids) == policy.cfg.max_new_tokens
    assert ids == policy.tokenizer(long_action + "\n", add_special_tokens=False)["input_ids"][: len(ids)]


def test_stop_string_must_be_one_token(make_policy: Callable[..., LanguagePolicy]) -> None:
    with pytest.raises(ValueError, match="model.policy.stop_string"):
        make_policy(stop_string="Is it a banana?")


def test_tokens_containing_the_stop_string_also_terminate(tiny_corpus: list[str]) -> None:
    # GPT-2's own vocabulary merges newlines ("\n\n" is one token); such a token ends the utterance too.
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        [text.replace("\n", "\n\n") for text in tiny_corpus],
        trainers.BpeTrainer(
            vocab_size=320, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    double_newline = tokenizer.convert_tokens_to_ids("ĊĊ")
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2))
    policy = LanguagePolicy(model, tokenizer, PolicyConfig())
    assert double_newline != tokenizer.unk_token_id
    assert {policy.stop_token_id, double_newline, tokenizer.eos_token_id} <= set(policy.terminator_ids)


def test_lora_policy_generates_and_scores(make_policy: Callable[..., LanguagePolicy]) -> None:
    policy = make_policy(use_lora=True, lora_target_modules=["c_attn"], lora_r=4)
    generation = policy.generate(OBSERVATIONS, greedy=True)
    logprobs, mask = policy.token_logprobs(OBSERVATIONS, generation.token_ids, as_sampled=False)
    assert logprobs.shape == mask.shape
    (logprobs * mask).sum().backward()
    assert all(p.grad is not None for p in policy.model.parameters() if p.requires_grad)


def test_templates_by_name() -> None:
    assert get_template("plain")("Questions:\n") == "Questions:\n"
    with pytest.raises(ValueError, match=r"model.policy.template.*plain"):
        get_template("chatml")


def _episode(questions: list[str], answers: list[str]) -> tuple[list[str], list[str]]:
    observations, history = [], "Questions:\n"
    for question, answer in zip(questions, answers, strict=True):
        observations.append(history)
        history += f"{question} {answer}\n"
    return observations, list(questions)


def test_packed_logprobs_equal_per_turn_logprobs(policy: LanguagePolicy) -> None:
    first = _episode(["Is it alive?", "Is it an animal?", "Is it a dog?"], ["Yes.", "Yes.", "Yes."])
    second = _episode(["Is it a fruit?", "Is it a vehicle?"], ["No.", "Yes."])
    observations = first[0] + second[0] + ["", "Questions:\n", "Questions:\nIs it red? No.\n"]
    # An empty observation, an action longer than max_new_tokens and a turn whose text is in no other
    # observation are scored on their own; the rest share two packed rows.
    actions = first[1] + second[1] + ["Is it a dog?", "Is it " + "very " * 30 + "big?", "Is it blue?"]
    expected, expected_mask = policy.token_logprobs(observations, policy.encode_actions(actions), as_sampled=False)
    packed, packed_mask = policy.packed_token_logprobs(observations, actions)
    torch.testing.assert_close(packed_mask, expected_mask)
    torch.testing.assert_close(packed, expected, rtol=1e-5, atol=1e-5)
    packed.sum().backward()
    assert all(p.grad is not None for p in policy.model.parameters() if p.requires_grad)
