"""The WebShop schema: ``env=webshop`` (``scripts/config/env/webshop.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from archer.config import ConfigError, EnvConfig, check


@dataclass
class WebShopEnvConfig(EnvConfig):
    """WebShop (Yao et al., 2022; an ArCHer paper task): the generated in-process shop, or a WebShop server over HTTP.

    Game id ``i`` plays instruction ``i`` (session ``fixed_<i>``); evaluation plays ids drawn from all instructions.

    Attributes:
        batch_size: games played at once (reference ``bsize``: 32).
        max_turns: actions per game; the game ends with the last one (reference: 10).
        num_products: products in the generated catalogue.
        shop_seed: seed of the generated catalogue and instructions.
        num_instructions: instructions that exist (game ids ``0 .. num_instructions - 1``).
        train_lower, train_upper: training games draw instructions from ``[train_lower, train_upper)`` with
            replacement (reference ``webshop_lower`` / ``webshop_upper``: 2000, 2100).
        show_attributes: show the ``[Attributes]`` button on item pages (the reference ran WebShop with ``--attrs``).
        server_url: ``null`` plays the in-process shop; an ``http://host:port`` URL plays a WebShop server
            (Princeton's ``web_agent_site`` or ``python -m archer.envs.webshop.server``) over HTTP.
        request_timeout_s: deadline in seconds for one HTTP request as a whole (connecting, headers and body), so a
            server that trickles its answer fails in time like one that sends nothing.
        request_retries: further attempts after a connection error, timeout or 5xx answer.
        retry_backoff_s: wait before the first retry, doubled for each further one.
        max_concurrent_requests: HTTP requests in flight at once (a batch's pages are fetched concurrently).
        data_lower, data_upper: instructions the scripted shoppers play when the offline dataset is generated
            (the paper's SFT data came from instructions 0-1000).
        data_option_accuracy: probability that a scripted shopper picks the option value the instruction names.
    """

    name: str = "webshop"
    batch_size: int = 32
    max_turns: int = 10
    num_products: int = 1000
    shop_seed: int = 0
    num_instructions: int = 3000
    train_lower: int = 2000
    train_upper: int = 2100
    show_attributes: bool = True
    server_url: str | None = None
    request_timeout_s: float = 10.0
    request_retries: int = 3
    retry_backoff_s: float = 0.5
    max_concurrent_requests: int = 16
    data_lower: int = 0
    data_upper: int = 1000
    data_option_accuracy: float = 0.8

    def validate(self) -> None:
        super().validate()
        check(self.num_products > 0, "env.num_products", "must be positive")
        check(self.num_instructions > 0, "env.num_instructions", "must be positive")
        for low, high in (("train_lower", "train_upper"), ("data_lower", "data_upper")):
            check(getattr(self, low) >= 0, f"env.{low}", "must be >= 0")
            check(getattr(self, high) > getattr(self, low), f"env.{high}", f"must be above env.{low}")
            check(
                getattr(self, high) <= self.num_instructions,
                f"env.{high}",
                f"must be at most env.num_instructions={self.num_instructions} (it is an exclusive bound)",
            )
        check(
            self.server_url is None or self.server_url.startswith(("http://", "https://")),
            "env.server_url",
            "must be null (in-process shop) or start with http:// or https://",
        )
        if self.server_url is not None:
            check_server_url(self.server_url)
        check(self.request_timeout_s > 0, "env.request_timeout_s", "must be positive")
        check(self.request_retries >= 0, "env.request_retries", "must be >= 0")
        check(self.retry_backoff_s >= 0, "env.retry_backoff_s", "must be >= 0")
        check(self.max_concurrent_requests > 0, "env.max_concurrent_requests", "must be positive")
        check(0 <= self.data_option_accuracy <= 1, "env.data_option_accuracy", "must be in [0, 1]")


def check_server_url(url: str) -> None:
    """``env.server_url`` parses as ``http(s)://host[:port]``, its port (if given) a number from 1 to 65535."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ConfigError(f"env.server_url: {url!r} is not a URL ({error}); give http://host:port") from None
    check(bool(parts.hostname), "env.server_url", f"{url!r} names no host; give http://host:port")
    check(port is None or port > 0, "env.server_url", f"{url!r}: the port must be between 1 and 65535")
