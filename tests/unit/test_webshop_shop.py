"""The generated WebShop: catalogue, instructions, reward formula, BM25 search and the scraped page text."""

from __future__ import annotations

import re

import pytest

from archer.envs.webshop.catalogue import PRODUCT_TYPES, Catalogue, Product, Review, generate_catalogue
from archer.envs.webshop.client import html_nodes
from archer.envs.webshop.instructions import NO_PRICE_BOUND, Instruction, InstructionSet, price_bound
from archer.envs.webshop.pages import (
    BUTTON,
    END,
    INIT,
    ITEM,
    ITEM_SUB,
    LABEL,
    PRODUCT,
    SEARCH,
    TEXT,
    Node,
    PageNotFound,
    PageRequest,
    Site,
    scrape,
)
from archer.envs.webshop.reward import score_purchase, token_set_ratio, type_match
from archer.envs.webshop.search import SearchEngine, search_words
from archer.envs.webshop.shop import build_site


def product(asin: str = "B000000001", **changes) -> Product:
    fields = dict(
        asin=asin,
        title="Acme Lightweight Running Shoes",
        category="fashion",
        query="running shoes",
        product_category="Clothing › Shoes › Athletic › Running Shoes",
        product_type="running shoes",
        attributes=("lightweight", "arch support"),
        options={"color": ("black", "teal"), "size": ("8", "9")},
        price=45.99,
        description="Acme presents running shoes made for gym sessions.",
        bullet_points=("Lightweight design for everyday comfort",),
        reviews=(Review("Love it", 5, "Great shoes."), Review("Okay", 3, "Fine.")),
    )
    fields.update(changes)
    return Product(**fields)


def goal(**changes) -> Instruction:
    fields = dict(
        index=0,
        asin="B000000001",
        text="i need lightweight and non slip running shoes in black color, size 9, and price lower than 50 dollars",
        name="Acme Lightweight Running Shoes",
        product_type="running shoes",
        query="running shoes",
        category="fashion",
        product_category="Clothing › Shoes › Athletic › Running Shoes",
        attributes=("lightweight", "non slip"),
        goal_options={"color": "black", "size": "9"},
        price_upper=50.0,
    )
    fields.update(changes)
    return Instruction(**fields)


# ---- catalogue and instructions --------------------------------------------------------------------------------


def test_catalogue_is_deterministic_covers_every_type_and_keeps_option_values_out_of_text() -> None:
    catalogue = generate_catalogue(300, seed=3)
    assert catalogue.to_json() == generate_catalogue(300, seed=3).to_json()
    assert catalogue.to_json() != generate_catalogue(300, seed=4).to_json()
    assert len(catalogue) == 300 and len({p.asin for p in catalogue.products}) == 300
    assert {p.product_type for p in catalogue.products} == {t.name for t in PRODUCT_TYPES}
    assert {p.category for p in catalogue.products} == {"beauty", "grocery", "fashion", "home", "electronics"}
    kinds = {kind.name: kind for kind in PRODUCT_TYPES}
    for p in catalogue.products:
        assert re.fullmatch(r"B0[A-Z0-9]{8}", p.asin)
        text = " ".join((p.title, p.description, *p.bullet_points)).lower()
        # The reward's substring fallback must not match an option the buyer did not pick, nor digits a size.
        assert not re.search(r"\d", text), p.title
        assert not [v for values in p.options.values() for v in values if v in text], p.title
        assert set(p.attributes) <= set(kinds[p.product_type].attributes)
    record = catalogue.products[0].to_webshop()
    assert {"asin", "name", "Title", "query", "product_category", "Attributes", "options", "Price"} <= set(record)


def test_instructions_are_deterministic_per_index_and_phrase_their_goal() -> None:
    catalogue = generate_catalogue(200, seed=0)
    first, second = InstructionSet(catalogue, 500, seed=0), InstructionSet(catalogue, 500, seed=0)
    assert second[321] == first[321]  # built alone, in another order
    assert [first[i].text for i in range(5)] != [InstructionSet(catalogue, 500, seed=1)[i].text for i in range(5)]
    for i in range(100):
        instruction = first[i]
        target = catalogue[instruction.asin]
        assert instruction.product_type in instruction.text
        assert set(instruction.attributes) <= set(target.attributes)
        assert all(value in target.options[name] for name, value in instruction.goal_options.items())
        assert all(value in instruction.text for value in instruction.goal_options.values())
        assert target.price <= instruction.price_upper
        if instruction.price_upper != NO_PRICE_BOUND:
            assert instruction.text.endswith(f", and price lower than {instruction.price_upper:.2f} dollars")
    with pytest.raises(IndexError):
        first[500]


def test_price_bound_follows_webshop() -> None:
    import random

    # A $23.50 product: the next multiples of ten are 30, 40, 50, 60; the bound is the larger of two of them.
    bounds = {price_bound(23.5, random.Random(seed)) for seed in range(50)}
    assert bounds == {40.0, 50.0, 60.0}
    # $985: only 990 lies above (fewer than two candidates), so there is no bound.
    assert price_bound(985.0, random.Random(0)) == NO_PRICE_BOUND


# ---- reward --------------------------------------------------------------------------------------------------


def test_token_set_ratio_matches_thefuzz_on_the_cases_the_reward_relies_on() -> None:
    assert token_set_ratio("long lasting", "Long-Lasting") == 100
    assert token_set_ratio("blue", "navy blue") == 100  # a subset scores 100
    assert token_set_ratio("black", "teal") < 50
    # "pack of 1" vs "pack of 12": ratio("of pack 1", "of pack 12") = 2 * 9 / (9 + 10) = 0.947 -> 95, above 85,
    # which is why the catalogue keeps pack counts in exactly matched "size" options.
    assert token_set_ratio("pack of 1", "pack of 12") == 95


def test_score_of_the_right_product_with_the_right_options() -> None:
    # Goal: 2 attributes + 2 options + price -> denominator 5. "lightweight" matches; "non slip" is neither an
    # attribute nor in the text -> 1 attribute. color black and size 9 match -> 2. $45.99 <= $50 -> 1.
    # r = 1.0 * (1 + 2 + 1) / 5 = 0.8
    score = score_purchase(product(), goal(), {"color": "black", "size": "9"})
    assert (score.attribute_matches, score.option_matches, score.price_ok) == (1, 2, True)
    assert score.reward == pytest.approx(0.8)
    # With every goal attribute present: (2 + 2 + 1) / 5 = 1.0
    full = score_purchase(product(attributes=("lightweight", "non slip")), goal(), {"color": "black", "size": "9"})
    assert full.reward == 1.0


def test_wrong_options_price_and_missing_options_lower_the_score() -> None:
    # teal vs black: no fuzzy match, "teal" not in the text; size 8 is not the goal's 9 (exact match) -> 0 options.
    # r = (1 + 0 + 1) / 5 = 0.4
    assert score_purchase(product(), goal(), {"color": "teal", "size": "8"}).reward == pytest.approx(0.4)
    # No option chosen: (1 + 0 + 1) / 5 = 0.4; one right: (1 + 1 + 1) / 5 = 0.6
    assert score_purchase(product(), goal(), {}).reward == pytest.approx(0.4)
    assert score_purchase(product(), goal(), {"size": "9"}).reward == pytest.approx(0.6)
    # $55.99 above the $50 bound: (1 + 2 + 0) / 5 = 0.6
    assert score_purchase(product(price=55.99), goal(), {"color": "black", "size": "9"}).reward == pytest.approx(0.6)
    # An attribute named in the description counts (WebShop's fallback): "non slip" in the text -> (2 + 2 + 1) / 5
    described = product(description="Grippy and non slip soles.")
    assert score_purchase(described, goal(), {"color": "black", "size": "9"}).reward == 1.0


def test_type_reward_levels() -> None:
    other = product(query="x", product_category="A › B")
    # Same words: title score 2/2 = 1 -> r_type 1.
    assert type_match(product(), goal()).r_type == 1.0
    # Goal "trail running shoes" (3 words) vs "running shoes": 2/3 > 0.2 -> 1, even without query/category match.
    assert type_match(other, goal(product_type="trail running shoes")).title_score == pytest.approx(2 / 3)
    assert type_match(other, goal(product_type="trail running shoes")).r_type == 1.0
    # 1 of 5 goal words shared: 0.2 is not above 0.2, and no query or category match -> 0.5.
    five = goal(product_type="extra wide waterproof hiking shoes")
    assert type_match(other, five).r_type == 0.5
    # The same with a category match (2 shared levels) -> 1.
    assert type_match(product(query="x"), five).r_type == 1.0
    # 1 of 11 goal words: 0.09 < 0.1 -> 0.1, whatever else matches.
    eleven = goal(product_type="a b c d e f g h i j shoes")
    assert type_match(product(), eleven).r_type == 0.1
    # No shared word -> 0, and the whole score is 0.
    tea = product(product_type="herbal tea", query="herbal tea", product_category="Grocery › Tea")
    assert score_purchase(tea, goal(), {"color": "black", "size": "9"}).reward == 0.0


def test_option_matches_are_capped_at_the_goal_options() -> None:
    # One goal option (color black); the buyer also picked a size whose value happens to be in the title.
    titled = product(title="Acme Running Shoes Nine", options={"color": ("black",), "size": ("nine",)})
    one = goal(goal_options={"color": "black"})
    score = score_purchase(titled, one, {"color": "black", "size": "nine"})
    # 2 options matched, capped at 1: (1 + 1 + 1) / (2 + 1 + 1) = 0.75
    assert score.option_matches == 1 and score.reward == pytest.approx(0.75)


# ---- search ---------------------------------------------------------------------------------------------------


def test_search_words_and_bm25_ranking() -> None:
    assert search_words("I need Running Shoes, and price lower than 50.00 dollars") == ["running", "shoe", "50", "00"]
    catalogue = Catalogue(
        [
            product("B000000001", title="Acme Lightweight Running Shoes"),
            product("B000000002", title="Acme Herbal Tea", description="Calm tea.", bullet_points=("Tea",)),
            product("B000000003", title="Bolt Running Shoes Running Shoes", bullet_points=("Sturdy",)),
        ]
    )
    engine = SearchEngine(catalogue)
    # "lightweight" is rare (one product) and outweighs the repeated common words of the third product.
    found = [p.asin for p in engine.search("lightweight running shoes")]
    assert found == ["B000000001", "B000000003"]
    assert [p.asin for p in engine.search("herbal tea")] == ["B000000002"]
    assert engine.search("zzz unknown") == ()
    assert engine.search("lightweight running shoes") is engine.search("lightweight running shoes")  # cached


def test_search_finds_an_instructions_target_among_the_first_results() -> None:
    site = build_site(200, 0, 300)
    hits = 0
    for i in range(60):
        instruction = site.instructions[i]
        top = [p.asin for p in site.search.search(instruction.text)[:10]]
        hits += instruction.asin in top
    assert hits >= 40  # the full instruction text mostly ranks the target on the first results page


# ---- pages and their text ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mini_site() -> Site:
    products = [
        product(f"B00000000{i}", title=f"Acme Model {'ABCDE'[i - 1]} Running Shoes", price=40.0 + i)
        for i in range(1, 6)
    ]
    catalogue = Catalogue(products)
    return Site(catalogue, InstructionSet(catalogue, 3, seed=0), SearchEngine(catalogue))


def test_start_results_and_item_pages_have_the_reference_text(mini_site: Site) -> None:
    instruction = mini_site.instructions[0].text
    start = mini_site.page(PageRequest(INIT, "fixed_0"))
    assert start.text == f"\nWebShop \nInstruction:  \n{instruction} \n[Search] "

    results = mini_site.page(PageRequest(SEARCH, "fixed_0", query="running shoes"))
    order = [p.asin for p in mini_site.search.search("running shoes")]
    shown = "".join(
        f"\n[{asin}] \n{mini_site.catalogue[asin].title} \n{mini_site.catalogue[asin].price_tag} "
        for asin in order[:3]
    )
    # The instruction (first two plain texts) is dropped; only 3 of the 5 products are shown, all 5 are clickable.
    assert results.text == "\n[Back to Search] \nPage 1 (Total results: 5) \n[Next >] " + shown
    assert results.asins == tuple(order)

    item = mini_site.page(PageRequest(ITEM, "fixed_0", "running shoes", asin="B000000001", options={"size": "9"}))
    assert item.text == (
        "\n[Back to Search] \n[< Prev] \ncolor [black][teal]\nsize [8][[9]]\nAcme Model A Running Shoes "
        "\nPrice: $41.00 \nRating: 4.0 \n[Description] \n[Features] \n[Reviews] \n[Attributes] \n[Buy Now] "
    )
    assert item.option_types == {"black": "color", "teal": "color", "8": "size", "9": "size"}


def test_sub_pages_and_done_page(mini_site: Site) -> None:
    def sub(name: str) -> str:
        return mini_site.page(PageRequest(ITEM_SUB, "fixed_0", "q", asin="B000000001", subpage=name)).text

    head = "\n[Back to Search] \n[< Prev] "
    assert sub("Description") == head + "\nAcme presents running shoes made for gym sessions. "
    assert sub("Features") == head + "\n Lightweight design for everyday comfort "
    assert sub("Reviews") == head + '\n"Love it" \n5 \nGreat shoes. \n"Okay" \n3 \nFine. '
    assert sub("Attributes") == (
        head
        + "\n lightweight \n arch support \nfashion \nrunning shoes \nClothing › Shoes › Athletic › Running Shoes "
    )
    with pytest.raises(PageNotFound, match="sub-page"):
        sub("Warranty")
    done = mini_site.page(PageRequest(END, "fixed_0", asin="B000000001", options={"color": "black"}))
    expected = mini_site.score(PageRequest(END, "fixed_0", asin="B000000001", options={"color": "black"})).reward
    assert done.text == f"Your score (min 0.0, max 1.0): {expected}" and done.reward == expected


def test_unknown_session_or_product_is_not_found(mini_site: Site) -> None:
    for request in (PageRequest(INIT, "abc"), PageRequest(INIT, "fixed_3"), PageRequest(ITEM, "fixed_0", asin="NOPE")):
        with pytest.raises(PageNotFound):
            mini_site.nodes(request)


def test_scrape_reads_a_webshop_results_page_as_the_react_prompt_shows_it() -> None:
    # A results page in the layout of WebShop's templates (head, scripts, the instruction split by <br>, forms,
    # product links), with the products of the ReAct WebShop prompt: the scraped text must equal the prompt's.
    rows = [
        ("B078GWRC1J", "Bright Citrus Deodorant by Earth Mama | Natural and Safe for Sensitive Skin", "$10.99"),
        ("B078GTKVXY", "Ginger Fresh Deodorant by Earth Mama | Natural and Safe for Sensitive Skin", "$10.99"),
        ("B08KBVJ4XN", "Barrel and Oak - Aluminum-Free Deodorant, Deodorant for Men", "$15.95"),
        ("B0000HIDDN", "A fourth product the client does not show", "$1.00"),
    ]
    items = "".join(
        f'\n<div class="col-lg-8">\n  <h4 class="product-asin"><a class="product-link" href="/x">{asin}</a></h5>\n'
        f'  <h4 class="product-title">{title}</h5>\n  <div><h5 class="product-price">{price}</h6></div>\n</div>'
        for asin, title, price in rows
    )
    html = (
        '<!DOCTYPE html>\n<html>\n<head>\n  <link rel="stylesheet" href="s.css">\n  <script src="j.js"></script>\n'
        "  <title>WebShop</title>\n</head>\n<body>\n<!-- a comment -->\n<div>\n  <h4>Instruction:<br>i need a "
        '3 ounce bottle of bright citrus deodorant</h4>\n</div>\n<form><button type="submit">Back to Search'
        "</button></form>\n<h3>Page 1 (Total results: 50)</h3>\n<form><button>Next &gt;</button></form>"
        f"{items}\n<script>var x = '<p>not text</p>';</script>\n</body>\n</html>"
    )
    page = scrape(html_nodes(html), SEARCH, lambda text: False)
    assert page.text == (
        "\n[Back to Search] \nPage 1 (Total results: 50) \n[Next >] \n[B078GWRC1J] \n"
        "Bright Citrus Deodorant by Earth Mama | Natural and Safe for Sensitive Skin \n$10.99 \n[B078GTKVXY] \n"
        "Ginger Fresh Deodorant by Earth Mama | Natural and Safe for Sensitive Skin \n$10.99 \n[B08KBVJ4XN] \n"
        "Barrel and Oak - Aluminum-Free Deodorant, Deodorant for Men \n$15.95 "
    )
    assert page.asins == ("B078GWRC1J", "B078GTKVXY", "B08KBVJ4XN", "B0000HIDDN")


def test_scrape_maps_labels_to_the_option_name_before_them() -> None:
    nodes = [
        Node(TEXT, "Instruction:"),
        Node(TEXT, "goal"),
        Node(BUTTON, "Back to Search"),
        Node(TEXT, "scent"),
        Node(LABEL, "lavender"),
        Node(LABEL, "cedar"),
        Node(TEXT, " \n "),  # blank nodes are skipped
        Node(TEXT, "size"),
        Node(LABEL, "small"),
        Node(PRODUCT, "B000000009"),
    ]
    page = scrape(nodes, ITEM, lambda text: text == "cedar")
    assert page.text == "\n[Back to Search] \nscent [lavender][[cedar]]\nsize [small]\n[B000000009] "
    assert page.option_types == {"lavender": "scent", "cedar": "scent", "small": "size"}
