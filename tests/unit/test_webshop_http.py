"""WebShop over HTTP: the client against the project's server on 127.0.0.1, and against servers that misbehave.

Every server here is bound to loopback, stops by itself (``max_lifetime_s``), and is stopped by its test.
"""

from __future__ import annotations

import random
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from archer.envs.webshop.client import HttpPageSource, WebShopServerError, html_nodes, page_urls
from archer.envs.webshop.env import INVALID_ACTION, WebShopEnv
from archer.envs.webshop.pages import END, INIT, ITEM, ITEM_SUB, SEARCH, LocalPageSource, PageRequest, Site
from archer.envs.webshop.server import BadRequest, WebShopRequestHandler, WebShopServer, parse_route, render_html
from archer.envs.webshop.shop import build_site
from archer.envs.webshop.shoppers import ScriptedShopper

NUM_INSTRUCTIONS = 300


@pytest.fixture(scope="module")
def site() -> Site:
    return build_site(200, 0, NUM_INSTRUCTIONS)


@contextmanager
def serving(site: Site, handler: type = WebShopRequestHandler, **limits) -> Iterator[WebShopServer]:
    server = WebShopServer(site, handler=handler, max_lifetime_s=limits.pop("max_lifetime_s", 30.0), **limits)
    with server:
        yield server


def client(url: str, **settings) -> HttpPageSource:
    defaults = dict(timeout_s=2.0, max_retries=2, backoff_s=0.01, max_workers=8)
    return HttpPageSource(url, **(defaults | settings))


def http_env(pages, batch_size: int = 1) -> WebShopEnv:
    return WebShopEnv(pages, NUM_INSTRUCTIONS, (200, 250), batch_size=batch_size, seed=0)


def test_html_round_trip_and_routes(site: Site) -> None:
    request = PageRequest(ITEM, "fixed_4", "a b/c", 1, asin=site.catalogue.products[0].asin, options={"size": "m"})
    nodes = site.nodes(request)
    assert [n for n in html_nodes(render_html(nodes)) if n.text.strip()] == nodes
    url, raw = page_urls("http://h:1/", request)
    assert raw == f"http://h:1/item_page/fixed_4/{request.asin}/a b c/1/{{'size': 'm'}}"
    assert parse_route(url.removeprefix("http://h:1")) == PageRequest(
        ITEM, "fixed_4", "a b c", 1, asin=request.asin, options={"size": "m"}
    )
    for kind, extra in ((INIT, {}), (SEARCH, {"query": "x y"}), (ITEM_SUB, {"asin": "B1", "subpage": "Reviews"})):
        routed = PageRequest(kind, "fixed_1", **extra)
        assert parse_route(page_urls("http://h:1", routed)[0].removeprefix("http://h:1")) == routed
    done = PageRequest(END, "fixed_1", asin="B1", options={"color": "red"})
    assert parse_route(page_urls("http://h:1", done)[0].removeprefix("http://h:1")) == done
    with pytest.raises(BadRequest):
        parse_route("/done/fixed_1/B1/not-a-dict")


def test_http_games_equal_in_process_games(site: Site) -> None:
    with serving(site) as server:
        remote = client(server.url)
        envs = [http_env(LocalPageSource(site), 6), http_env(remote, 6)]
        ids = list(range(10, 16))
        observations = [env.reset(game_ids=ids) for env in envs]
        assert observations[0] == observations[1]
        shoppers = [ScriptedShopper(random.Random(i), 0.5, 0.7, browse_prob=0.7, think_prob=0.5) for i in ids]
        while any(envs[0].active):
            live = envs[0].active
            actions = [s.act(o) if a else None for s, o, a in zip(shoppers, observations[0], live, strict=True)]
            local, over_http = (env.step(actions) for env in envs)
            for i, (a, b) in enumerate(zip(local, over_http, strict=True)):
                assert (a is None) == (b is None)
                if a is not None:
                    assert (a.observation, a.reward, a.terminated, a.truncated) == (
                        b.observation,
                        b.reward,
                        b.terminated,
                        b.truncated,
                    )
                    observations[0][i] = a.observation
        assert remote.requests_sent == server.requests > 6
        remote.close()


def test_empty_and_malformed_actions_send_no_request(site: Site) -> None:
    with serving(site) as server:
        remote = client(server.url)
        env = http_env(remote, batch_size=3)
        env.reset(game_ids=[1, 2, 3])
        sent = remote.requests_sent
        results = env.step(["", "click[", "think[fine]"])
        assert [r.observation.rsplit("\nObservation:\n", 1)[1].split("\nInstruction:\n")[0] for r in results] == [
            INVALID_ACTION,
            INVALID_ACTION,
            "OK.",
        ]
        assert remote.requests_sent == sent and not any(r.done for r in results)


class _Concurrency(WebShopRequestHandler):
    lock = threading.Lock()
    in_flight = 0
    most = 0

    def do_GET(self) -> None:  # noqa: N802
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.most = max(cls.most, cls.in_flight)
        time.sleep(0.1)
        with cls.lock:
            cls.in_flight -= 1
        super().do_GET()


def test_a_batch_is_requested_concurrently(site: Site) -> None:
    with serving(site, _Concurrency) as server:
        env = http_env(client(server.url, max_workers=8), batch_size=8)
        env.reset(game_ids=list(range(8)))
        env.close()
    # Each request is held 0.1 s while the handler counts the requests in flight: sequential ones never overlap.
    assert _Concurrency.most >= 4


class _Failing(WebShopRequestHandler):
    failures_left = 0

    def do_GET(self) -> None:  # noqa: N802
        self.server.count_request()
        cls = type(self)
        if cls.failures_left != 0:
            cls.failures_left -= 1
            self.send_page(500, "<p>boom</p>")
            return
        super().do_GET()


def test_failures_are_retried_then_reported_with_the_url(site: Site) -> None:
    _Failing.failures_left = 2
    with serving(site, _Failing) as server:
        remote = client(server.url, max_retries=2)
        assert "[Search]" in remote.fetch([PageRequest(INIT, "fixed_0")])[0].text  # 2 failures, then success
        assert remote.requests_sent == 3

        _Failing.failures_left = -1  # fails forever
        remote = client(server.url, max_retries=2)
        with pytest.raises(WebShopServerError, match=rf"{server.url}.*fixed_0.*3 attempts.*HTTP 500"):
            remote.fetch([PageRequest(INIT, "fixed_0")])
        assert remote.requests_sent == 3


def test_client_errors_are_not_retried(site: Site) -> None:
    with serving(site) as server:
        remote = client(server.url)
        with pytest.raises(WebShopServerError, match="answered 404 .*/no_such_session"):
            remote.fetch([PageRequest(INIT, "no_such_session")])
        assert remote.requests_sent == 1


class _Slow(WebShopRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.server.count_request()
        time.sleep(0.4)
        self.send_page(200, "<p>too late</p>")


def test_a_slow_server_times_out(site: Site) -> None:
    with serving(site, _Slow) as server:
        remote = client(server.url, timeout_s=0.1, max_retries=1)
        with pytest.raises(WebShopServerError, match=rf"{server.url}.*2 attempts.*timed out"):
            remote.fetch([PageRequest(INIT, "fixed_0")])


def test_an_absent_server_is_named_in_the_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.
    remote = client(f"http://127.0.0.1:{port}", max_retries=1)
    start = time.perf_counter()
    with pytest.raises(WebShopServerError, match=rf"127\.0\.0\.1:{port}.*2 attempts.*Is the server running"):
        http_env(remote).reset(game_ids=[0])
    assert time.perf_counter() - start < 2.0


def test_the_server_stops_by_itself(site: Site) -> None:
    server = WebShopServer(site, max_requests=2, max_lifetime_s=5.0).start()
    try:
        for _ in range(2):
            urllib.request.urlopen(f"{server.url}/fixed_0", timeout=2).read()
        deadline = time.monotonic() + 2.0
        while not server._stopped.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server._stopped.is_set()
        with pytest.raises(WebShopServerError):
            client(server.url, max_retries=0).fetch([PageRequest(INIT, "fixed_0")])
    finally:
        server.stop()
    timed = WebShopServer(site, max_lifetime_s=0.05).start()
    time.sleep(0.3)
    assert timed._stopped.is_set()


def test_make_env_plays_a_server_when_server_url_is_set(site: Site) -> None:
    from archer.envs.registry import make_env
    from archer.envs.webshop.config import WebShopEnvConfig

    shop = dict(num_products=200, num_instructions=NUM_INSTRUCTIONS, train_lower=200, train_upper=250, data_upper=100)
    with serving(site) as server:
        remote = make_env(WebShopEnvConfig(server_url=server.url, batch_size=2, **shop), seed=3)
        local = make_env(WebShopEnvConfig(batch_size=2, **shop), seed=3)
        assert remote.reset() == local.reset() and server.requests == 2
        assert remote.step(["search[hoodie]", "think[x]"]) == local.step(["search[hoodie]", "think[x]"])
        assert server.requests == 3
        remote.close()


class _Trickle(WebShopRequestHandler):
    """Promises a 100 kB page, then sends a byte every 50 ms (for 4 s at most, so no test can hang on it)."""

    headers_too = False

    def do_GET(self) -> None:  # noqa: N802
        self.server.count_request()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"
        body = b"<p>" + b"x" * 200
        stream = head + body if type(self).headers_too else body
        if not type(self).headers_too:
            self.wfile.write(head)
        start = time.monotonic()
        try:
            for byte in stream:
                if time.monotonic() - start > 4.0:
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass  # the client hung up, as it should


class _TrickleHeaders(_Trickle):
    headers_too = True


@pytest.mark.parametrize("handler", [_Trickle, _TrickleHeaders], ids=["body", "headers"])
def test_a_trickling_server_fails_within_the_request_deadline(site: Site, handler: type) -> None:
    with serving(site, handler) as server:
        remote = client(server.url, timeout_s=0.5, max_retries=0)
        start = time.perf_counter()
        with pytest.raises(WebShopServerError, match=rf"{server.url}.*1 attempts.*no complete answer within 0\.5 s"):
            remote.fetch([PageRequest(INIT, "fixed_0")])
        # Each byte arrives well within the socket timeout: only a deadline on the whole request stops it.
        assert time.perf_counter() - start < 0.5 + 0.4


class _NotWebShop(WebShopRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.server.count_request()
        self.send_page(200, "<html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>")


def test_a_server_that_is_not_webshop_is_refused_naming_the_url(site: Site) -> None:
    with serving(site, _NotWebShop) as server:
        env = http_env(client(server.url))
        refusal = rf"GET {server.url}/fixed_3 .*not a WebShop start page.*It works"
        with pytest.raises(WebShopServerError, match=refusal):
            env.reset(game_ids=[3])
        assert server.requests == 1  # not retried: another attempt would get the same page
    # The project's own server passes the check.
    with serving(site) as server:
        assert "Instruction:" in http_env(client(server.url)).reset(game_ids=[3])[0]
