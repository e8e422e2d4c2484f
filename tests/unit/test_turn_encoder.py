"""TurnEncoder (model.critic.history: turns): line splitting, one encoding per distinct line, padding, gradients."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from archer.config import ConfigError, CriticConfig, TurnReaderConfig
from archer.models.critic import DoubleCritic, build_critic, make_target_critic, soft_update
from archer.models.turn_encoder import TurnEncoder

HISTORY = "Questions:\nIs it alive? Yes.\nIs it an animal? No.\n"


def turn_critic(cfg: CriticConfig, corpus: list[str], cache_dir: str, **changes: object) -> DoubleCritic:
    torch.manual_seed(0)
    turns = TurnReaderConfig(max_turns=3, n_layer=1, n_embd=16, n_head=2)
    return build_critic(dataclasses.replace(cfg, history="turns", turns=turns, **changes), cache_dir, lambda: corpus)


@pytest.fixture
def critic(tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str) -> DoubleCritic:
    return turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir).eval()


@pytest.fixture
def frozen_critic(tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str) -> DoubleCritic:
    return turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir, freeze_encoder=True)


def test_lines_are_the_last_max_turns_non_blank_pieces(critic: DoubleCritic) -> None:
    reader = critic.encoder
    assert isinstance(reader, TurnEncoder)
    assert reader.lines(HISTORY) == ["Questions:", "Is it alive? Yes.", "Is it an animal? No."]
    assert reader.lines("a\nb\n  \nc\nd") == ["b", "c", "d"]  # blank dropped, then the last 3 kept
    assert reader.lines("") == [] and reader.lines("\n\n") == []


def test_heads_read_vectors_of_the_readers_width(critic: DoubleCritic) -> None:
    assert critic.encoder.hidden_size == 16
    assert critic.embed([HISTORY, "x"]).shape == (2, 16)
    assert [m.in_features for m in critic.q1 if isinstance(m, nn.Linear)] == [32, 16, 16]
    output = critic([HISTORY, ""], ["Is it a dog?", "Is it a cat?"])
    assert output.q1.shape == output.v2.shape == (2,)


def test_each_distinct_line_is_encoded_once_per_call(critic: DoubleCritic, monkeypatch: pytest.MonkeyPatch) -> None:
    line_encoder = critic.text_encoder
    seen: list[list[str]] = []
    encode = line_encoder.forward
    monkeypatch.setattr(line_encoder, "forward", lambda texts: seen.append(list(texts)) or encode(texts))
    critic.embed([HISTORY, "Questions:\nIs it alive? Yes.\nIs it alive? Yes.\n"])
    assert seen == [["Questions:", "Is it alive? Yes.", "Is it an animal? No."]]


def test_a_frozen_line_encoder_keeps_the_same_bits_whatever_it_was_encoded_with(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    # Two critics with the same weights meet the line "Is it alive? Yes." in different company, as a resumed run
    # meets its lines in other batches than the run it continues.
    first = turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir, freeze_encoder=True)
    second = turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir, freeze_encoder=True)
    assert first.text_encoder.encode_singly
    with torch.no_grad():
        first.embed([HISTORY])
        second.embed(["Is it alive? Yes.\nIs it a very, very large metal vehicle with wheels? No.\n"])
    line = "Is it alive? Yes."
    assert torch.equal(first.text_encoder._cache[line], second.text_encoder._cache[line])


def test_a_texts_vector_depends_on_its_kept_lines_and_their_order_not_on_its_batch(critic: DoubleCritic) -> None:
    with torch.no_grad():
        alone = critic.embed(["a\nb\n"])
        batched = critic.embed(["a\nb\n", "c\nd\ne\n", ""])
        torch.testing.assert_close(batched[0], alone[0])  # padding to the longer history changes nothing
        # Lines older than max_turns = 3 are not read.
        torch.testing.assert_close(critic.embed(["old\nc\nd\ne\n"]), critic.embed(["c\nd\ne\n"]))
        assert not torch.allclose(critic.embed(["b\na\n"]), alone)  # turns have positions
        torch.testing.assert_close(critic.embed([""]), critic.embed(["\n \n"]))


def test_gradients_reach_the_reader_and_the_line_encoder_unless_frozen(
    critic: DoubleCritic, frozen_critic: DoubleCritic
) -> None:
    for model, encoder_trained in ((critic.train(), True), (frozen_critic, False)):
        output = model([HISTORY], ["Is it a dog?"])
        (output.q1 + output.v1).sum().backward()
        reader = model.encoder
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in reader.project.parameters())
        assert all(p.grad is not None for p in reader.transformer.parameters())
        assert reader.summary.grad is not None and reader.summary.grad.abs().sum() > 0
        # RoBERTa's pooler is unused with cls pooling, so it gets no gradient either way.
        line_grads = [p.grad is not None for n, p in model.text_encoder.named_parameters() if ".pooler." not in n]
        assert all(line_grads) if encoder_trained else not any(line_grads)


def test_the_target_shares_a_frozen_line_encoder_and_copies_the_reader(frozen_critic: DoubleCritic) -> None:
    target = make_target_critic(frozen_critic)
    assert target.text_encoder is frozen_critic.text_encoder
    assert target.encoder is not frozen_critic.encoder
    with torch.no_grad():
        frozen_critic.encoder.project.weight.add_(1.0)
    soft_update(target, frozen_critic, tau=0.5)
    torch.testing.assert_close(target.encoder.project.weight, frozen_critic.encoder.project.weight - 0.5)


def test_an_unfrozen_target_copies_the_line_encoder_too(critic: DoubleCritic) -> None:
    assert make_target_critic(critic).text_encoder is not critic.text_encoder


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"history": "lines"}, "model.critic.history"),
        ({"turns": TurnReaderConfig(n_embd=10, n_head=4)}, "model.critic.turns.n_head"),
        ({"turns": TurnReaderConfig(separator="")}, "model.critic.turns.separator"),
        ({"turns": TurnReaderConfig(max_turns=0)}, "model.critic.turns.max_turns"),
        ({"turns": TurnReaderConfig(reply_separator=" ")}, "model.critic.turns.reply_separator"),
    ],
)
def test_bad_turn_reader_settings_name_their_key(
    tiny_critic_config: CriticConfig, changes: dict[str, object], key: str
) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        dataclasses.replace(tiny_critic_config, **changes).validate()


def _turn_critic(
    base: CriticConfig, corpus: list[str], cache: str, q_input: str | None = "joint", **turn_switches: bool
) -> DoubleCritic:
    """A tiny frozen-encoder critic reading turns (4 turns, 1 layer of width 16), with ``turn_switches`` set on its
    ``TurnReaderConfig``; ``q_input=None`` keeps the base config's."""
    turns = TurnReaderConfig(max_turns=4, n_layer=1, n_embd=16, n_head=2, reply_separator="? ", **turn_switches)
    changes = {"history": "turns", "turns": turns, "freeze_encoder": True}
    if q_input is not None:
        changes["q_input"] = q_input
    return build_critic(dataclasses.replace(base, **changes), cache, lambda: corpus)


@pytest.fixture
def reply_critic(tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str) -> DoubleCritic:
    torch.manual_seed(0)
    return _turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir).eval()


def test_a_line_is_cut_into_utterance_and_reply_at_its_last_separator(reply_critic: DoubleCritic) -> None:
    reader = reply_critic.encoder
    assert reader.split_reply("Is it a dog? No.") == ("Is it a dog?", "No.")
    assert reader.split_reply("Is it red? Or blue? Yes.") == ("Is it red? Or blue?", "Yes.")
    assert reader.split_reply("Questions:") == ("Questions:", None)
    assert reader.split_reply("Is it a dog? ") == ("Is it a dog? ", None)  # nothing after it: no reply


def test_utterances_and_replies_are_encoded_apart_and_an_action_is_never_cut(
    reply_critic: DoubleCritic, monkeypatch: pytest.MonkeyPatch
) -> None:
    line_encoder = reply_critic.text_encoder
    seen: list[list[str]] = []
    encode = line_encoder.forward
    monkeypatch.setattr(line_encoder, "forward", lambda texts: seen.append(list(texts)) or encode(texts))
    with torch.no_grad():
        reply_critic([HISTORY], ["Is it alive? Or dead?"])
    # The V pass reads the history; the Q pass reads it with the action as a last turn, which is not cut at "? ".
    assert ["Questions:", "Is it alive?", "Is it an animal?"] in seen
    assert ["Yes.", "No."] in seen
    assert ["Questions:", "Is it alive?", "Is it an animal?", "Is it alive? Or dead?"] in seen
    with torch.no_grad():  # a blank action adds no turn (a causal line encoder cannot read an empty text)
        torch.testing.assert_close(reply_critic.encoder([HISTORY], [" "]), reply_critic.encoder([HISTORY]))


def test_the_reply_changes_the_vector_and_a_repeated_question_matches_its_earlier_turn(
    reply_critic: DoubleCritic,
) -> None:
    with torch.no_grad():
        yes = reply_critic.embed(["Questions:\nIs it alive? Yes.\n"])
        no = reply_critic.embed(["Questions:\nIs it alive? No.\n"])
        assert not torch.allclose(yes, no)
        reader = reply_critic.encoder
        # The utterance part of the history line is exactly the projected vector of the same question as an action.
        utterance = reader.project(reply_critic.text_encoder(["Is it alive?"]))
        asked = reader.project(reply_critic.text_encoder([reader.split_reply("Is it alive? No.")[0]]))
        assert torch.equal(utterance, asked)


def test_action_similarity_is_the_cosine_to_each_earlier_turn_and_zero_elsewhere() -> None:
    # Three distinct utterances as unit-free vectors: rows 0 and 2 are parallel, row 1 is orthogonal to both.
    encoded = torch.tensor([[2.0, 0.0], [0.0, 3.0], [1.0, 0.0]])
    per_text = [[("q0", "No."), ("q1", "Yes."), ("a", None)], [("q1", "No."), ("a", None)], [("q0", "No.")]]
    index = torch.tensor([[0, 1, 2], [1, 2, 0], [0, 0, 0]])  # padding rows point anywhere
    similarity = TurnEncoder._action_similarities(encoded, index, per_text, with_action=[True, True, False])
    expected = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(similarity, expected)


def test_with_action_similarity_a_repeated_question_reads_differently_from_a_new_one(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    torch.manual_seed(0)
    critic = _turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir, action_similarity=True).eval()
    reader = critic.encoder
    with torch.no_grad():
        # The similarity map's output is added to the earlier turns only when an action is read.
        reader.similarity[-1].bias.zero_()
        plain = reader([HISTORY])
        repeat = reader([HISTORY], ["Is it alive?"])
        reader.similarity[-1].weight.zero_()  # switch the feature off: the same action then reads the same
        assert not torch.allclose(repeat, reader([HISTORY], ["Is it alive?"]))
        torch.testing.assert_close(reader([HISTORY]), plain)  # V's reading never carries it


def test_repeat_similarity_is_each_turns_highest_cosine_to_an_earlier_turn() -> None:
    # Rows 0 and 2 are parallel, row 1 is orthogonal to both (lengths differ: the cosine ignores them).
    encoded = torch.tensor([[2.0, 0.0], [0.0, 3.0], [1.0, 0.0]])
    index = torch.tensor([[0, 1, 2], [1, 1, 0]])
    similarity = TurnEncoder._repeat_similarities(encoded, index)
    # Text 0: nothing before turn 0; turn 1 is orthogonal to turn 0; turn 2 repeats turn 0's direction.
    # Text 1: turn 1 is turn 0 again; turn 2 is orthogonal to both.
    expected = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    torch.testing.assert_close(similarity, expected)


def test_with_repeat_similarity_the_history_reading_without_an_action_carries_it(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    torch.manual_seed(0)
    critic = _turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir, repeat_similarity=True).eval()
    reader = critic.encoder
    assert isinstance(reader, TurnEncoder) and reader.repeat_similarity and not reader.action_similarity
    repeated = HISTORY + "Is it alive? Yes.\n"
    with torch.no_grad():
        reader.repeat[-1].bias.zero_()
        with_feature = reader([repeated])
        reader.repeat[-1].weight.zero_()  # the map now adds nothing: the reading must change back
        assert not torch.allclose(with_feature, reader([repeated]))


def test_repeat_similarity_gets_gradient_from_a_v_loss(
    tiny_critic_config: CriticConfig, tiny_corpus: list[str], model_cache_dir: str
) -> None:
    critic = _turn_critic(tiny_critic_config, tiny_corpus, model_cache_dir, q_input=None, repeat_similarity=True)
    v1, v2 = critic.v_from_embeddings(critic.embed([HISTORY + "Is it alive? Yes.\n"]))
    (v1.sum() + v2.sum()).backward()
    grad = critic.encoder.repeat[0].weight.grad
    assert grad is not None and grad.abs().sum() > 0
