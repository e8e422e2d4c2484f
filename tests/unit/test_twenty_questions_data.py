"""Twenty Questions offline data: loading with clear errors, transitions, scripted players, generation, round trip."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from archer.envs.oracles import INVALID, NO, YES
from archer.envs.twenty_questions.dataset import (
    Conversation,
    DatasetError,
    OfflineTransition,
    conversation_to_transitions,
    generate_twenty_questions_dataset,
    load_twenty_questions_dataset,
    main,
    save_twenty_questions_dataset,
)
from archer.envs.twenty_questions.env import names_word_last_phrase
from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle, parse_question
from archer.envs.twenty_questions.questioners import (
    GreedyQuestioner,
    RandomQuestioner,
    guess_phrasings,
    make_questioner,
    play_game,
)
from archer.envs.twenty_questions.words import SUBSET_WORDS, WORDS

ORACLE = KnowledgeBaseOracle()
VALID = {"lines": ["Is it alive? No.", "Is it a pen? Yes."], "correct": True, "word": ["pen"]}


def write_json(path: Path, content: object) -> Path:
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ loading


def test_loads_a_valid_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "data.json", [VALID, {**VALID, "correct": False, "extra": 1}])
    conversations = load_twenty_questions_dataset(path)
    assert conversations == [
        Conversation(VALID["lines"], True, ["pen"]),
        Conversation(VALID["lines"], False, ["pen"]),
    ]


def test_missing_file_says_what_it_is_and_how_to_make_one(tmp_path: Path) -> None:
    path = tmp_path / "20q_train.json"
    with pytest.raises(DatasetError) as error:
        load_twenty_questions_dataset(path)
    message = str(error.value)
    assert str(path) in message and "not found" in message
    assert "LMRL-Gym" in message and "python -m archer.envs.twenty_questions.dataset" in message


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('[{"lines": [', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"data\.json: not valid JSON"):
        load_twenty_questions_dataset(path)


@pytest.mark.parametrize("config", ["bc_20q", "bc_city", "bc_webshop"])
def test_a_dataset_with_no_records_is_refused_naming_the_file(tmp_path: Path, config: str) -> None:
    from archer.data.offline import load_offline_trajectories
    from tests.conftest import compose_run

    path = tmp_path / "empty.json"
    path.write_text("[]\n", encoding="utf-8")
    cfg = compose_run(config, [f"data.path={path}"])
    # Before, an empty file reached training and failed as "cannot sample from an empty replay buffer".
    with pytest.raises(DatasetError, match=rf"^{path}: holds no \w+ \(an empty list\)"):
        load_offline_trajectories(cfg, tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(b"\xff\xfe\x00[")
    with pytest.raises(DatasetError, match="data.json"):
        load_twenty_questions_dataset(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"lines": []}, "top level is a JSON dict, expected a list"),
        ([VALID, "Is it alive? No."], "record 1 is a JSON str, expected an object"),
        ([{"lines": ["Is it alive? No."], "correct": False}], "record 0 has no 'word'"),
        ([{"correct": False, "word": ["pen"]}], "record 0 has no 'lines'"),
        ([{**VALID, "lines": "Is it alive? No."}], "'lines' must be a list of strings"),
        ([{**VALID, "lines": []}], "'lines' is empty"),
        ([{**VALID, "lines": ["Is it alive? No."] * 21}], "has 21 lines; the format allows at most 20"),
        ([{**VALID, "lines": ["Is it alive? No.", 7]}], "line 1 is a int, expected a string"),
        (
            [{**VALID, "lines": ["Is it alive? Maybe."]}],
            "line 0 'Is it alive? Maybe.' must end with ' Yes.' or ' No.'",
        ),
        ([{**VALID, "lines": ["Is it alive? Invalid Question."]}], "must end with ' Yes.' or ' No.'"),
        ([{**VALID, "lines": ["Is it alive?No."]}], "must end with ' Yes.' or ' No.'"),
        ([{**VALID, "lines": [" Yes."]}], "has an answer but no question"),
        ([{**VALID, "correct": 1}], "'correct' must be true or false"),
        ([{**VALID, "correct": "yes"}], "'correct' must be true or false"),
        ([{**VALID, "word": "pen"}], "'word' must be a list of non-empty alias strings"),
        ([{**VALID, "word": [""]}], "'word' must be a list of non-empty alias strings"),
        ([{**VALID, "word": []}], "'word' is empty"),
    ],
)
def test_malformed_records_give_helpful_errors(tmp_path: Path, content: object, expected: str) -> None:
    path = write_json(tmp_path / "data.json", content)
    with pytest.raises(DatasetError) as error:
        load_twenty_questions_dataset(path)
    assert str(path) in str(error.value)
    assert expected in str(error.value)


# ------------------------------------------------------------------------------------------------ transitions


def test_transitions_of_a_correct_conversation_hand_checked() -> None:
    # The first line repeats the last one: only the last line's reward is 0 (the reference gave both 0).
    conversation = Conversation(["Is it a pen? Yes.", "Is it alive? No.", "Is it a pen? Yes."], True, ["pen"])
    h0 = "Questions:\n"
    h1 = h0 + "Is it a pen? Yes.\n"
    h2 = h1 + "Is it alive? No.\n"
    h3 = h2 + "Is it a pen? Yes.\n"
    assert conversation_to_transitions(conversation) == [
        OfflineTransition(h0, "Is it a pen?", -1.0, h1, False),
        OfflineTransition(h1, "Is it alive?", -1.0, h2, False),
        OfflineTransition(h2, "Is it a pen?", 0.0, h3, True),
    ]
    assert conversation.episode_return == -2.0


def test_transitions_of_a_failed_conversation_end_with_minus_one() -> None:
    conversation = Conversation(["Is it alive? Yes.", "Is it a dog? No."], correct=False, word=["cat"])
    transitions = conversation_to_transitions(conversation)
    assert [t.reward for t in transitions] == [-1.0, -1.0]
    assert [t.done for t in transitions] == [False, True]
    assert transitions[-1].next_observation == "Questions:\nIs it alive? Yes.\nIs it a dog? No.\n"
    observation, action, reward, next_observation, done = transitions[0]
    assert (observation, action, reward, done) == ("Questions:\n", "Is it alive?", -1.0, False)
    assert conversation.episode_return == -2.0


# ------------------------------------------------------------------------------------------------ scripted players


def test_every_word_has_guess_phrasings_that_win_in_the_environment() -> None:
    for word in WORDS:
        phrasings = guess_phrasings(word)
        assert len(set(phrasings)) >= 3
        for question in phrasings:
            assert parse_question(question).words == {word.name}, question
            assert ORACLE.answer([word], [question]) == [YES]
            assert names_word_last_phrase(question, word), question


def test_greedy_player_keeps_the_secret_among_its_candidates() -> None:
    questioner = GreedyQuestioner()
    rng = random.Random(5)
    for word in rng.sample(WORDS, 20):
        game = play_game(questioner, word, ORACLE, rng)
        assert game.success and len(game.turns) <= 12
        for turn in range(len(game.turns)):
            assert word in questioner.candidates(game.turns[:turn])


def test_scripted_questions_never_get_invalid_answers() -> None:
    rng = random.Random(9)
    for skill in (0.0, 0.3, 0.6, 1.0):
        questioner = make_questioner(skill)
        for _ in range(60):
            game = play_game(questioner, rng.choice(WORDS), ORACLE, rng)
            assert all(answer in (YES, NO) for _, answer in game.turns)


def test_random_player_repeats_itself_and_sometimes_guesses() -> None:
    rng = random.Random(2)
    questions = []
    history: list[tuple[str, str]] = []
    questioner = RandomQuestioner(guess_prob=0.3)
    for _ in range(200):
        question = questioner.ask(history, rng)
        questions.append(question)
        history.append((question, ORACLE.answer(["dog"], [question])[0]))
    assert len(set(questions)) < len(questions)
    assert any(parse_question(q).kind == "guess" for q in questions)


def test_play_game_wins_multi_word_words() -> None:
    game = play_game(GreedyQuestioner(), WORDS[3], ORACLE, random.Random(0))
    assert WORDS[3].name == "soccer ball"
    assert game.success and game.rewards[-1] == 0.0 and game.episode_return == 1 - len(game.turns)


def test_play_game_uses_the_given_success_test() -> None:
    game = play_game(GreedyQuestioner(), WORDS[0], ORACLE, random.Random(0), max_turns=5, success_fn=lambda *_: False)
    assert not game.success and len(game.turns) == 5


def test_play_game_with_a_subset_of_words() -> None:
    questioner = make_questioner(1.0, SUBSET_WORDS)
    game = play_game(questioner, SUBSET_WORDS[4], ORACLE, random.Random(0))
    assert game.success and len(game.turns) <= 5


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_skill_must_lie_in_unit_interval(bad: float) -> None:
    with pytest.raises(ValueError, match="skill"):
        make_questioner(bad)


# ------------------------------------------------------------------------------------------------ generation


def test_generation_is_deterministic_per_seed() -> None:
    first = generate_twenty_questions_dataset(40, seed=3)
    assert first == generate_twenty_questions_dataset(40, seed=3)
    assert first != generate_twenty_questions_dataset(40, seed=4)


def test_skilled_players_do_much_better_than_random_ones() -> None:
    def play(skill: float) -> list[Conversation]:
        return generate_twenty_questions_dataset(150, seed=11, skill_mix=((skill, 1.0),))

    random_games, skilled_games = play(0.0), play(1.0)
    random_rate = sum(c.correct for c in random_games) / len(random_games)
    skilled_rate = sum(c.correct for c in skilled_games) / len(skilled_games)
    assert random_rate < 0.15 and skilled_rate > 0.95
    assert statistics.mean(c.episode_return for c in skilled_games) > -10
    assert statistics.mean(c.episode_return for c in random_games) < -18


def test_default_mix_spreads_returns() -> None:
    conversations = generate_twenty_questions_dataset(300, seed=1)
    returns = [c.episode_return for c in conversations]
    assert 0.4 < sum(c.correct for c in conversations) / len(conversations) < 0.9
    assert statistics.pstdev(returns) > 3
    assert min(returns) == -20 and max(returns) > -8
    assert len({line for c in conversations for line in c.lines}) > 1000


def test_generated_data_round_trips_through_the_loader(tmp_path: Path) -> None:
    conversations = generate_twenty_questions_dataset(200, seed=7)
    path = tmp_path / "nested" / "20q.json"
    save_twenty_questions_dataset(conversations, path)
    assert load_twenty_questions_dataset(path) == conversations
    assert [p.name for p in path.parent.iterdir()] == ["20q.json"]
    for conversation in conversations:
        assert conversation.word == list(next(w for w in WORDS if w.name == conversation.word[0]).aliases)
        transitions = conversation_to_transitions(conversation)
        assert transitions[-1].done and (transitions[-1].reward == 0.0) == conversation.correct
        assert all(ORACLE.answer([conversation.word[0]], [t.action])[0] != INVALID for t in transitions)


def test_save_overwrites_and_refuses_malformed_conversations(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    save_twenty_questions_dataset([Conversation(VALID["lines"], True, ["pen"])], path)
    save_twenty_questions_dataset([], path)
    assert path.read_text(encoding="utf-8") == "[]\n"  # written, though loading refuses a file with no games
    with pytest.raises(DatasetError, match="not written"):
        save_twenty_questions_dataset([Conversation(["Is it alive? Maybe."], False, ["pen"])], path)
    assert path.read_text(encoding="utf-8") == "[]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.json"]


def test_generation_rejects_an_oracle_that_answers_invalid() -> None:
    class Unhelpful(KnowledgeBaseOracle):
        def answer(self, secrets, questions):  # type: ignore[no-untyped-def]
            return [INVALID] * len(questions)

    with pytest.raises(RuntimeError, match="must be answerable"):
        generate_twenty_questions_dataset(3, seed=0, oracle=Unhelpful())


def test_command_line_writes_a_dataset(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    main(["--out", str(path), "--episodes", "5", "--seed", "2"])
    assert len(load_twenty_questions_dataset(path)) == 5
