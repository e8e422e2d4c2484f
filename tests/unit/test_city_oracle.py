"""The Guess My City oracles: the built-in knowledge base (facts, question understanding, never naming the city,
robustness, speed) and the reference's flan-t5 format through ``Seq2SeqOracle`` with a tiny local T5."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

from archer.envs.guess_my_city.config import GuessMyCityEnvConfig
from archer.envs.guess_my_city.env import CITY_PROMPT_TEMPLATE, make_t5_oracle
from archer.envs.guess_my_city.facts import CITIES, CITY_BY_KEY, COUNTRIES, LANGUAGE_NAMES, REGION_NAMES, TOPICS
from archer.envs.guess_my_city.oracle import (
    REFUSE_NAME,
    UNSURE,
    CityKnowledgeOracle,
    answer_parsed,
    leaks_city,
    mentioned_cities,
    names_city,
    parse,
    resolve_city,
)
from archer.envs.guess_my_city.questioners import DESCRIPTIVE_QUESTIONS, SPLIT_QUESTIONS
from archer.envs.registry import make_env, make_oracle
from archer.envs.t5_oracle import Seq2SeqOracle

ORACLE = CityKnowledgeOracle()

EXAMPLE_QUESTIONS = (
    "What country is it in?",
    "Is it in Asia?",
    "What language do people speak there?",
    "Is it on the coast?",
    "What is the climate like?",
    "Is it a capital city?",
    "What is it famous for?",
    "What food is it known for?",
    "Is it in the southern hemisphere?",
)


def ask(key: str, question: str) -> str:
    return ORACLE.answer([key], [question])[0]


# ---- the fact table ----------------------------------------------------------------------------------------------


def test_every_city_has_a_full_set_of_facts() -> None:
    for city in CITIES:
        assert city.country in COUNTRIES and city.continent in city.regions, city.key
        assert all(region in REGION_NAMES for region in city.regions), city.key
        assert city.spoken and all(language in LANGUAGE_NAMES for language in city.spoken), city.key
        assert city.climate and city.known_for and city.landmarks and city.division, city.key
        assert city.coast in ("coast", "near", "lake", "inland"), city.key
        assert (city.water is not None) == (city.coast != "inland"), city.key
        assert city.capital in ("national", "regional", "none"), city.key
        assert (city.capital_of is not None) == (city.capital == "regional"), city.key
        assert set(city.parts) <= {"north", "south", "east", "west", "center"}, city.key
        assert city.tags <= set(TOPICS), city.key
        assert -90 <= city.lat <= 90 and -180 <= city.lon <= 180 and city.temps[0] <= city.temps[1], city.key
    assert sum(bool(city.foods) for city in CITIES) >= 90


def test_no_fact_text_names_its_own_city() -> None:
    for city in CITIES:
        texts = [
            city.climate,
            city.known_for,
            city.division,
            city.water or "",
            city.island or "",
            city.peninsula or "",
            city.mountains or "",
            city.capital_of or "",
            *city.rivers,
            *city.landmarks,
            *city.foods,
            *city.sports,
        ]
        texts += city.spoken  # language names are said as they are written ("Wu Chinese", not "Shanghainese")
        for text in texts:
            # Not even inside a word: "Kievan Rus" gave Kiev away.
            assert not leaks_city(text, city), (city.key, text)


@pytest.mark.parametrize(
    ("key", "question", "expected"),
    [
        ("Lima", "What country is it in?", "It is in Peru."),
        ("Taipei", "What country is it in?", "It is in Taiwan."),
        ("Taipei", "Is it in China?", "It is in Taiwan."),
        ("Kinshaha", "Is it in Congo?", "Yes, it is in the Democratic Republic of the Congo."),
        ("London", "Is it in England?", "Yes, it is in the United Kingdom."),
        ("Bombay", "Is it in Asia?", "Yes, it is in Asia."),
        ("Cairo", "Is it in Africa?", "Yes, it is in Africa."),
        ("Cairo", "Is it in the Middle East?", "Yes, it is in the Middle East."),
        ("Havanna", "Is it in North America?", "Yes, it is in North America."),
        ("Moscow", "Is it in Asia?", "No, it is not in that part of the world."),
        ("Sydney", "Is it in the southern hemisphere?", "Yes, it is in the southern hemisphere."),
        ("Jakarta", "Is it in the southern hemisphere?", "Yes, it is in the southern hemisphere."),
        ("Chicago", "Is it in the western hemisphere?", "Yes, it is in the western hemisphere."),
        ("Singapore", "Is it near the equator?", "Yes, it is close to the equator, just north of it."),
        ("Delhi", "Is it a capital city?", "Yes, it is the seat of India's national government."),
        ("Lima", "Is it a capital city?", "Yes, it is the capital of Peru."),
        (
            "Bombay",
            "Is it the capital of the country?",
            "No, it is not the national capital, but it is the capital of its state or province.",
        ),
        ("Bombay", "Is it in Maharashtra?", "Yes, it is in the state of Maharashtra."),
        ("Houston", "Is it a capital city?", "No, it is not a capital city."),
        ("Yangon", "Is it the capital?", "No, it is not a capital today, though it used to be one."),
        ("Chicago", "Is it on the coast?", "It is not on the sea, but it lies on the shore of a huge lake."),
        ("Madrid", "Is it on the coast?", "No, it is inland, away from the sea."),
        ("Addis Ababa", "Is it on the coast?", "No, it is inland, and its country has no coast at all."),
        ("Rio", "Is it on the coast?", None),
        ("Paris", "Does a river flow through it?", "Yes, a river flows through it."),
        ("Paris", "Is it on the Seine river?", "Yes, that river flows through it."),
        ("Berlin", "Is it on the Seine river?", "No, that river does not flow through it."),
        ("Paris", "What river flows through it?", "The Seine flows through it."),
        ("Haerbin", "Does it snow in winter?", "Yes, it usually snows in winter."),
        ("Bangkok", "Does it snow?", "No, it almost never snows there."),
        ("Cairo", "Is it a dry place?", "Yes, it has a desert climate with hardly any rain."),
        ("Haerbin", "Are the winters cold?", "Yes, winters are very cold, well below freezing."),
        ("Singapore", "Is it hot?", "Yes, it is hot all year round."),
        ("Addis Ababa", "Is it at a high altitude?", "Yes, it lies high up, more than 2,000 metres above sea level."),
        ("Tokyo", "Is it on an island?", "Yes, it is on an island."),
        ("Bogota", "Is it in the Andes?", "Yes, it lies in or right beside the Andes."),
        ("Tokyo", "Does it have more than 10 million people?", None),
        ("Sukabumi", "Is it a big city?", "No. It is a fairly small city of a few hundred thousand people."),
        ("Istanbul", "Is it in Europe?", None),
        ("Casablanca", "What is the main religion?", "Islam is the main religion."),
        ("Dhaka", "Is Islam the main religion?", "Yes, that is the main religion there."),
        ("Rome", "Is it known for its ancient history?", "Yes, it is known for its ancient history."),
        ("Chengdu", "Is your city famous for pandas?", "Yes, it is known for its giant pandas."),
        ("Houston", "Is it known for space exploration?", "Yes, it is known for space flight."),
        ("Zibo", "Is it known for its beaches?", "No, it is not especially known for its beaches."),
        ("Madras", "Is cricket popular there?", "Yes, cricket is popular there."),
        ("Seoul", "Do people speak Korean?", "Yes, people there mainly speak Korean."),
        ("Seoul", "Do people speak Japanese?", "No, that is not a main language there."),
        ("Xian", "Is it in the north of the country?", "Yes, it is in the north of the country."),
        ("Guangzhou", "Is it in northern China?", "No, it is not in the north of the country."),
        ("Tianjin", "Is it near Beijing?", "Yes, it is quite close to there."),
        ("Lima", "Is it near Beijing?", "No, it is far from there."),
        ("Shanghai", "Is it in the same country as Beijing?", "Yes, it is also in China."),
        ("Bombay", "Is it Mumbai?", "Yes, that's right!"),
        ("Bombay", "Is it Delhi?", "No, that is not my city."),
        ("Bombay", "Is it New York?", "No, that is not my city."),
        ("Bombay", "Is your city Chefchaouen?", "No, that is not my city."),
        ("Bombay", "What is the name of your city?", REFUSE_NAME),
    ],
)
def test_answers_agree_with_the_facts(key: str, question: str, expected: str | None) -> None:
    if key == "Rio":
        with pytest.raises(ValueError, match="unknown Guess My City city"):
            ask(key, question)
        return
    answer = ask(key, question)
    if expected is not None:
        assert answer == expected
    elif key == "Tokyo":
        assert answer.startswith("Yes. It is a megacity")
    else:
        assert "Europe and partly in Asia" in answer


def test_the_example_questions_get_real_answers_for_every_city() -> None:
    for city in CITIES:
        answers = ORACLE.answer([city] * len(EXAMPLE_QUESTIONS), list(EXAMPLE_QUESTIONS))
        assert UNSURE not in answers, (city.key, answers)
        country, _, language, _, climate, _, famous, food, hemisphere = answers
        if city.country != "singapore":
            assert COUNTRIES[city.country].name in country
        assert climate == f"It has {city.climate}." and famous.startswith("It is famous for")
        assert hemisphere.startswith("Yes" if city.lat < 0 else "No")


def test_no_answer_ever_names_the_hidden_city() -> None:
    questions = [*EXAMPLE_QUESTIONS, *SPLIT_QUESTIONS, *DESCRIPTIVE_QUESTIONS]
    questions += [f"Which {word} is it?" for word in ("river", "sea", "province", "mountain range")]
    for city in CITIES:
        for question in questions:
            # Checked before the oracle's own safety net, which would hide a slip; inside words too ("Shanghainese").
            assert not leaks_city(answer_parsed(city, parse(question)), city), (city.key, question)


def test_every_topic_question_is_understood() -> None:
    for tag, (_, phrase) in TOPICS.items():
        parsed = parse(f"Is your city known for {phrase}?")
        assert parsed.topics[:1] == (tag,), (tag, phrase, parsed.topics)
        assert not parsed.wh


def test_city_mentions_respect_word_boundaries_and_exclusions() -> None:
    assert mentioned_cities("What is the climate like?") == frozenset()
    assert mentioned_cities("Is it in El Salvador or near Salvador?") == {"Salvador"}
    assert mentioned_cities("Is it Bogotá, Xi'an or KYIV?") == {"Bogota", "Xian", "Kiev"}
    assert mentioned_cities("Is it Santiago de Cali?") == {"Cali"}
    assert mentioned_cities("Is it New Taipei?") == frozenset()


def test_questions_it_cannot_place_get_the_generic_answer() -> None:
    for question in ("asdf qwer?", "", "?", "Does your city have a good public transport system?", "Hmm."):
        assert ask("Tokyo", question) == UNSURE


def test_secrets_may_be_keys_names_reference_texts_or_cities() -> None:
    bombay = CITY_BY_KEY["Bombay"]
    for secret in ("Bombay", "Mumbai", "Bombay, India", "bombay,india", bombay):
        assert resolve_city(secret) is bombay
    with pytest.raises(ValueError, match="unknown Guess My City city"):
        resolve_city("Atlantis")
    with pytest.raises(ValueError, match="one per question"):
        ORACLE.answer(["Bombay", "Lima"], ["Is it in Asia?"])


def _junk(rng: random.Random) -> str:
    length = rng.choice([0, 1, 2, 5, 20, 100, 401, 1000, 10_000])
    pools = [
        lambda: chr(rng.randrange(0, 32)),
        lambda: chr(rng.randrange(32, 127)),
        lambda: chr(rng.randrange(0x80, 0x3000)),
        lambda: chr(rng.randrange(0xD800, 0xE000)),
        lambda: chr(rng.randrange(0x1F300, 0x1FAFF)),
        lambda: chr(rng.randrange(0, 0x110000)),
        lambda: rng.choice(
            [
                "Is your city ",
                "in ",
                "Asia",
                "Lima",
                "?",
                " or ",
                "not ",
                "\n",
                "'",
                "\u2019",
                "more than 5 million ",
                "What ",
                "capital",
                ":",
                "Is it Paris",
                "climate ",
                "river ",
                "Chefchaouen",
            ]
        ),
    ]
    return "".join(rng.choice(pools)() for _ in range(length))


def test_junk_never_raises_and_never_names_the_city() -> None:
    rng = random.Random(1234)
    questions = [_junk(rng) for _ in range(2000)]
    secrets = [rng.choice(CITIES) for _ in questions]
    answers = ORACLE.answer(secrets, questions)
    assert all(isinstance(a, str) and a for a in answers)
    assert not any(names_city(a, c) for a, c in zip(answers, secrets, strict=True))
    assert set(ORACLE.answer(["Lima"] * 4, [None, 3, b"Is it Lima?", ["x"]])) == {UNSURE}  # type: ignore[list-item]


# ---- the reference's flan-t5 oracle format, with a tiny local T5 -------------------------------------------------


def _t5_tokenizer() -> PreTrainedTokenizerFast:
    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        ["Your home town is Bombay, India.Is it in Asia?", "My city is by the sea. It is in India."],
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<pad>", "</s>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    raw.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """The 2-core machine is shared: T5 generation with several threads is many times slower under load."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny T5 folder and a reference-format checkpoint (``city_t5_oracle.pt``) of changed weights for it."""
    folder = tmp_path_factory.mktemp("tiny_city_t5")
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
    model = T5ForConditionalGeneration(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    checkpoint = folder / "city_t5_oracle.pt"
    torch.save({"model_state_dict": {k: v * 1.5 for k, v in model.state_dict().items()}}, checkpoint)
    return folder, checkpoint


def test_t5_oracle_uses_the_reference_prompt_and_free_form_answers(tiny_t5: tuple[Path, Path]) -> None:
    folder, checkpoint = tiny_t5
    oracle = make_t5_oracle(str(checkpoint), base_model=str(folder), device="cpu")
    assert isinstance(oracle, Seq2SeqOracle)
    assert oracle.max_new_tokens == 64 and oracle.normalisation is None
    assert oracle.prompt_template == CITY_PROMPT_TEMPLATE
    assert oracle.prompts(["Bombay, India"], ["Is it in Asia?"]) == ["Your home town is Bombay, India.Is it in Asia?"]
    saved = torch.load(checkpoint, weights_only=True)["model_state_dict"]
    torch.testing.assert_close(oracle.model.state_dict()["shared.weight"], saved["shared.weight"], rtol=0, atol=0)
    answers = oracle.answer(["Bombay, India", "Lima, Peru"], ["Is it in Asia?", "x" * 5000])
    assert len(answers) == 2 and all(isinstance(a, str) and a == a.strip() for a in answers)


def test_env_with_the_t5_oracle_from_the_registry(tiny_t5: tuple[Path, Path]) -> None:
    folder, checkpoint = tiny_t5
    cfg = GuessMyCityEnvConfig(
        batch_size=2, max_turns=3, oracle="t5", oracle_path=str(checkpoint), oracle_base_model=str(folder)
    )
    oracle = make_oracle(cfg)
    assert isinstance(oracle, Seq2SeqOracle) and oracle.prompt_template == CITY_PROMPT_TEMPLATE
    env = make_env(cfg, seed=0, oracle=oracle)
    env.reset(game_ids=[2, 18])
    results = env.step(["Is it in Asia?", "Is it Lima?"])
    assert results[0].observation.startswith("Questions:\nIs it in Asia? ") and results[1].terminated


def test_missing_t5_checkpoint_says_where_to_get_it(tmp_path: Path) -> None:
    missing = tmp_path / "city_t5_oracle.pt"
    with pytest.raises(FileNotFoundError) as error:
        make_oracle(GuessMyCityEnvConfig(oracle="t5", oracle_path=str(missing)))
    message = str(error.value)
    assert str(missing) in message and "city_t5_oracle.pt" in message and "Google Drive" in message
    assert "github.com/YifeiZhou02/ArCHer" in message and "env.oracle=knowledge_base" in message
