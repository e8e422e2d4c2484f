"""WebShop without a JVM or a download: a generated catalogue, BM25 search, WebShop's pages and reward, in process or
over HTTP.

- ``catalogue.py``: products in WebShop's schema, generated from a seed.
- ``instructions.py``: goals made from the catalogue (instruction ``i`` is session ``fixed_<i>``).
- ``reward.py``: WebShop's purchase score.
- ``search.py``: BM25 search (``rank_bm25``).
- ``pages.py``: the pages and the text the ArCHer client scrapes from them; ``Site`` ties the parts together.
- ``env.py``: the batched environment and its action grammar.
- ``client.py``: pages from a WebShop server over HTTP; ``server.py``: a server for the generated shop.
- ``shoppers.py``: scripted shoppers (offline data, tokenizer corpus); ``dataset.py``: the offline dataset they play.
- ``shop.py``: the shop and environment a ``WebShopEnvConfig`` describes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from archer.config import EnvConfig, RunConfig
from archer.envs.base import BatchedTextEnv
from archer.envs.oracles import Oracle
from archer.envs.spec import GameSpec
from archer.envs.webshop.config import WebShopEnvConfig

if TYPE_CHECKING:
    from archer.data.trajectory import Trajectory


def build_env(cfg: EnvConfig, seed: int | None, oracle: Oracle | None) -> BatchedTextEnv:
    from archer.envs.webshop.shop import make_webshop_env

    return make_webshop_env(cfg, seed)


def load_offline(cfg: RunConfig, cache_dir: Path, progress: bool) -> list[Trajectory]:
    from archer.envs.webshop.dataset import webshop_trajectories

    return webshop_trajectories(cfg, cache_dir, progress)


WEBSHOP = GameSpec(name="webshop", config=WebShopEnvConfig, build_env=build_env, load_offline=load_offline)
