"""The in-process shop a ``WebShopEnvConfig`` describes, and the environment over it or over a WebShop server.

``build_site`` caches one site per setting, so the training and evaluation environments (and the data generator)
share one catalogue and search index.
"""

from __future__ import annotations

import random
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from archer.envs.webshop.catalogue import Catalogue, generate_catalogue
from archer.envs.webshop.env import WebShopEnv
from archer.envs.webshop.instructions import InstructionSet
from archer.envs.webshop.pages import LocalPageSource, PageSource, Site
from archer.envs.webshop.search import SearchEngine

if TYPE_CHECKING:
    from archer.config import EnvConfig

__all__ = ["Site", "WebShopEnv", "build_site", "make_webshop_env", "scripted_corpus", "site_for"]

CORPUS_GAMES = 40
_CORPUS_SEED = 20240229


@lru_cache(maxsize=4)
def build_site(num_products: int, seed: int, num_instructions: int, show_attributes: bool = True) -> Site:
    """The in-process shop: a catalogue of ``num_products`` and ``num_instructions`` goals, all from ``seed``."""
    catalogue: Catalogue = generate_catalogue(num_products, seed)
    return Site(catalogue, InstructionSet(catalogue, num_instructions, seed), SearchEngine(catalogue), show_attributes)


def scripted_corpus(site: Site, num_games: int = CORPUS_GAMES) -> list[str]:
    """Histories of scripted games in ``site`` (every page kind, message and action form), deterministically.

    The games are spread over all instructions and played with browsing, notes and some wrong choices, then a few
    illegal actions are added so ``Invalid action!`` and forbidden buttons appear too.
    """
    from archer.envs.webshop.shoppers import ScriptedShopper

    env = WebShopEnv(LocalPageSource(site), len(site.instructions), (0, len(site.instructions)), batch_size=1)
    rng = random.Random(_CORPUS_SEED)
    texts = []
    for game in range(num_games):
        (observation,) = env.reset(game_ids=[game * len(site.instructions) // num_games])
        shopper = ScriptedShopper(rng, option_accuracy=0.7, result_accuracy=0.8, browse_prob=0.6, think_prob=0.3)
        if game % 5 == 0:
            (result,) = env.step(["click[Next >]"])
            observation = result.observation
        while env.active[0]:
            (result,) = env.step([shopper.act(observation)])
            observation = result.observation
        texts.append(observation)
    return texts


def site_for(cfg: EnvConfig) -> Site:
    """The in-process shop a ``WebShopEnvConfig`` describes (cached)."""
    from archer.envs.webshop.config import WebShopEnvConfig

    assert isinstance(cfg, WebShopEnvConfig)
    return build_site(cfg.num_products, cfg.shop_seed, cfg.num_instructions, cfg.show_attributes)


def make_webshop_env(cfg: EnvConfig, seed: int | None = None) -> WebShopEnv:
    """The environment a ``WebShopEnvConfig`` describes: the in-process shop, or ``cfg.server_url`` over HTTP.

    The tokenizer corpus always comes from the in-process shop (no network while building models); its pages have
    the same layout as any WebShop server's.
    """
    from archer.envs.webshop.config import WebShopEnvConfig

    assert isinstance(cfg, WebShopEnvConfig)
    site = site_for(cfg)
    if cfg.server_url is None:
        pages: PageSource = LocalPageSource(site)
    else:
        from archer.envs.webshop.client import HttpPageSource

        pages = HttpPageSource(
            cfg.server_url,
            timeout_s=cfg.request_timeout_s,
            max_retries=cfg.request_retries,
            backoff_s=cfg.retry_backoff_s,
            max_workers=cfg.max_concurrent_requests,
        )
    return WebShopEnv(
        pages,
        num_instructions=cfg.num_instructions,
        train_range=(cfg.train_lower, cfg.train_upper),
        batch_size=cfg.batch_size,
        max_turns=cfg.max_turns,
        seed=seed,
        corpus_fn=partial(scripted_corpus, site),
    )
