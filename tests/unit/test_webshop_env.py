"""The WebShop environment: action grammar, history format, turn limit, resets, contract, and scripted games."""

from __future__ import annotations

import random

import pytest

from archer.data.rollout import collect_trajectories
from archer.envs.checker import check_env
from archer.envs.webshop.env import INVALID_ACTION, WebShopEnv, parse_instruction
from archer.envs.webshop.pages import INIT, LocalPageSource, PageRequest, Site
from archer.envs.webshop.shop import build_site, scripted_corpus
from archer.envs.webshop.shoppers import ScriptedShopper, named_value, options_of, results_of, search_query

NUM_INSTRUCTIONS = 300


@pytest.fixture(scope="module")
def site() -> Site:
    return build_site(200, 0, NUM_INSTRUCTIONS)


def make_env(site: Site, batch_size: int = 1, max_turns: int = 10, seed: int | None = 0) -> WebShopEnv:
    return WebShopEnv(LocalPageSource(site), NUM_INSTRUCTIONS, (200, 250), batch_size, max_turns, seed)


def page_of(observation: str) -> str:
    return observation.rsplit("\nInstruction:\n", 1)[0].rsplit("\nObservation:\n", 1)[1]


def buy(env: WebShopEnv, site: Site, asin: str, query: str, options: dict[str, str]):
    """Search, open ``asin`` (it must be on the results page), choose ``options``, buy; returns the last result."""
    (result,) = env.step([f"search[{query}]"])
    assert asin in env._states[0].asins, "the product is not on the first results page"
    env.step([f"click[{asin}]"])
    for value in options.values():
        (result,) = env.step([f"click[{value}]"])
        assert page_of(result.observation) == f"You have clicked {value}."
    (result,) = env.step(["click[Buy Now]"])
    return result


def test_history_format_and_instruction_suffix(site: Site) -> None:
    env = make_env(site)
    (first,) = env.reset(game_ids=[7])
    start = site.page(PageRequest(INIT, "fixed_7")).text
    instruction = site.instructions[7].text + " "  # parsed as the reference does: up to "\n[Search]"
    assert parse_instruction(start) == instruction
    assert first == "\nObservation:\n" + start + "\nInstruction:\n" + instruction
    (result,) = env.step(["think[first I search]"])
    assert result.observation == (
        "\nObservation:\n"
        + start
        + "\nAction:\nthink[first I search]\nObservation:\nOK.\nInstruction:\n"
        + instruction
    )
    assert (result.reward, result.terminated, result.truncated) == (0.0, False, False)
    (result,) = env.step(["search[running shoes]\n"])  # the policy's terminator is cut
    assert "\nAction:\nsearch[running shoes]\nObservation:\n\n[Back to Search] \nPage 1 (Total results:" in (
        result.observation
    )
    assert result.observation.endswith("\nInstruction:\n" + instruction)


@pytest.mark.parametrize(
    ("setup", "action"),
    [
        ([], ""),
        ([], "   "),
        ([], "search[]"),
        ([], "search[abc"),  # the reference searched for "ab"
        ([], "Search[abc]"),
        ([], "buy[it]"),
        ([], "reset"),
        ([], "click[Search]"),  # the reference silently reshowed the start page
        ([], "click[Buy Now]"),
        ([], "click[Back to Search]"),
        (["search[shoes]"], "search[shoes]"),
        (["search[shoes]"], "click[Next >]"),  # forbidden, as in the reference
        (["search[shoes]"], "click[< Prev]"),
        (["search[shoes]"], "click[B0NOTHERE0]"),
        (["search[shoes]"], "click[Description]"),
        (["search[shoes]"], "click[Buy Now]"),
    ],
)
def test_illegal_actions_are_invalid_and_change_nothing(site: Site, setup: list[str], action: str) -> None:
    env = make_env(site)
    env.reset(game_ids=[3])
    for step in setup:
        env.step([step])
    state = env._states[0]
    (result,) = env.step([action])
    assert page_of(result.observation) == INVALID_ACTION
    assert (result.reward, result.done, result.info["valid"]) == (0.0, False, False)
    assert env._states[0] == state and env.active == [True]


def test_item_page_navigation_and_stale_options(site: Site) -> None:
    env = make_env(site)
    env.reset(game_ids=[0])
    goal = site.instructions[0]
    env.step([f"search[{goal.text}]"])
    with_options = next(a for a in env._states[0].asins if site.catalogue[a].options)
    env.step([f"click[{with_options}]"])
    value = next(iter(site.catalogue[with_options].options.values()))[0]
    env.step([f"click[{value}]"])
    (result,) = env.step(["click[Features]"])
    assert page_of(result.observation).startswith("\n[Back to Search] \n[< Prev] \n ")
    (result,) = env.step(["click[< Prev]"])  # back to the item page, the chosen option marked
    assert f"[[{value}]]" in page_of(result.observation)
    (result,) = env.step(["click[< Prev]"])  # back to the results, options cleared
    assert "(Total results:" in page_of(result.observation) and env._states[0].options == {}
    (result,) = env.step([f"click[{value}]"])  # an option of the last product is not clickable on results
    assert page_of(result.observation) == INVALID_ACTION
    (result,) = env.step(["click[Back to Search]"])
    assert "\n[Search] " in page_of(result.observation)


def test_game_ends_with_the_tenth_action_and_never_repeats(site: Site) -> None:
    env = make_env(site, batch_size=2)
    env.reset(game_ids=[1, 2])
    for turn in range(10):
        results = env.step(["think[hm]", "click[nothing]"])
        assert all(r is not None for r in results)
        assert all(r.truncated == (turn == 9) and not r.terminated for r in results)
    assert results[0].observation.endswith("\nInstruction:\n" + site.instructions[1].text + " ")
    assert results[0].observation.count("\nAction:\n") == 10
    assert env.active == [False, False]
    assert env.step([None, None]) == [None, None]
    # The rollout driver records exactly one transition per action: no duplicate terminal transitions.
    (trajectory,) = collect_trajectories(make_env(site, max_turns=10), lambda obs: ["think[x]"] * len(obs), 1)
    assert trajectory.length == 10 and trajectory.truncated and len(set(trajectory.observations)) == 11


def test_buying_on_the_last_turn_terminates(site: Site) -> None:
    env = make_env(site, max_turns=3)
    env.reset(game_ids=[0])
    env.step([f"search[{site.instructions[0].text}]"])
    env.step([f"click[{env._states[0].asins[0]}]"])
    (result,) = env.step(["click[Buy Now]"])
    assert result.terminated and not result.truncated and result.info["page"] == "end"
    assert page_of(result.observation).startswith("Your score (min 0.0, max 1.0): ")


def test_resets_are_seeded_and_draw_training_instructions_with_replacement(site: Site) -> None:
    env = make_env(site, batch_size=32, seed=5)
    first = env.reset()
    drawn = [env.instruction_index(slot) for slot in range(32)]
    assert env.reset(seed=5) == first
    assert all(200 <= i < 250 for i in drawn) and len(set(drawn)) < 32  # 32 draws from 50: repeats expected
    env.reset(game_ids=[0, 299, 5])
    assert [env.instruction_index(s) for s in range(3)] == [0, 299, 5]
    with pytest.raises(ValueError, match="out of range"):
        env.reset(game_ids=[NUM_INSTRUCTIONS])
    with pytest.raises(ValueError, match="train_range"):
        WebShopEnv(LocalPageSource(site), NUM_INSTRUCTIONS, (250, 200))


def test_evaluation_plays_the_training_instructions(site: Site) -> None:
    assert list(make_env(site).evaluation_pool()) == list(range(200, 250))


def test_env_contract(site: Site) -> None:
    check_env(make_env(site, batch_size=4), max_steps=20)
    check_env(make_env(site, batch_size=4), act=lambda obs: ["click[Buy Now]"] * len(obs), max_steps=20)


def test_perfect_shopper_scores_one_and_a_wrong_product_scores_less(site: Site) -> None:
    scored = 0
    for index in range(40):
        goal = site.instructions[index]
        target = site.catalogue[goal.asin]
        env = make_env(site)
        env.reset(game_ids=[index])
        env.step([f"search[{target.title}]"])
        if goal.asin not in env._states[0].asins[:3]:
            continue
        env.reset(game_ids=[index])
        result = buy(env, site, goal.asin, target.title, goal.goal_options)
        assert result.reward == 1.0 and result.info["success"] and result.terminated
        wrong = next(p for p in site.catalogue.products if p.product_type != goal.product_type)
        env.reset(game_ids=[index])
        options = {name: values[0] for name, values in wrong.options.items()}
        worse = buy(env, site, wrong.asin, wrong.title, options)
        assert worse.reward < 1.0 and not worse.info["success"]
        scored += 1
    assert scored >= 35  # searching for its exact title puts nearly every target on the first results page


def test_scripted_shoppers_score_high_and_choose_worse_with_wrong_options(site: Site) -> None:
    def mean_score(option_accuracy: float) -> float:
        env = make_env(site, batch_size=10)
        rng = random.Random(0)
        observations = env.reset(game_ids=list(range(40, 50)))
        shoppers = [ScriptedShopper(random.Random(rng.random()), option_accuracy) for _ in observations]
        scores = [0.0] * 10
        while any(env.active):
            live = env.active
            actions = [s.act(o) if a else None for s, o, a in zip(shoppers, observations, live, strict=True)]
            for i, result in enumerate(env.step(actions)):
                if result is not None:
                    observations[i] = result.observation
                    scores[i] += result.reward
        return sum(scores) / len(scores)

    expert, careless = mean_score(1.0), mean_score(0.0)
    assert expert > 0.85 and careless < expert


def test_shopper_text_parsers() -> None:
    instruction = "i want a hoodie in size 7.5, in navy color, and price lower than 40.00 dollars"
    assert search_query(instruction) == "hoodie 7.5 navy"
    assert named_value(instruction, ["7", "7.5", "navy", "navy blue"]) in ("7.5", "navy")
    assert named_value(instruction, ["7", "8"]) is None  # "7" inside "7.5" is not named
    page = "\n[Back to Search] \n[< Prev] \ncolor [black][[navy]]\nsize [7][7.5]\nTitle \nPrice: $10.00 \n[Buy Now] "
    assert options_of(page) == {"color": ["black", "navy"], "size": ["7", "7.5"]}
    results = "\n[Back to Search] \nPage 1 (Total results: 2) \n[Next >] \n[B0AAAAAAAA] \nA hoodie \n$12.49 "
    assert results_of(results) == [("B0AAAAAAAA", "A hoodie", 12.49)]


def test_corpus_is_deterministic_and_covers_every_page(site: Site) -> None:
    corpus = scripted_corpus(site, num_games=10)
    assert corpus == scripted_corpus(site, num_games=10)
    text = "".join(corpus)
    for piece in ("[Search]", "(Total results:", "[Buy Now]", "Your score", "You have clicked", "Invalid action!"):
        assert piece in text


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("env.train_upper=5000", "env.train_upper"),
        ("env.train_lower=2100", "env.train_upper"),
        ("env.data_lower=-1", "env.data_lower"),
        ("env.server_url=localhost:3000", "env.server_url"),
        ("env.request_timeout_s=0", "env.request_timeout_s"),
        ("env.max_concurrent_requests=0", "env.max_concurrent_requests"),
        ("env.data_option_accuracy=1.5", "env.data_option_accuracy"),
        ("env.num_products=0", "env.num_products"),
    ],
)
def test_config_errors_name_the_key(override: str, key: str) -> None:
    from archer.config import ConfigError
    from tests.conftest import compose_run

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        compose_run("bc_webshop", [override])
