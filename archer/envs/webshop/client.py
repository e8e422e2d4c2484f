"""Pages from a WebShop server over HTTP: the real Princeton WebShop site or ``server.py``.

The client requests WebShop's GET routes (``/{session}``, ``/search_results/...``, ``/item_page/...``,
``/item_sub_page/...``, ``/done/...``) with the options dict written into the URL as Python ``str()``, as the
reference client did, and turns each HTML page into text nodes the way the reference's BeautifulSoup code saw them
(visible text only: nothing inside ``style``, ``script``, ``head``, ``title`` or ``meta``, no comments). The nodes
then go through the same ``scrape`` as the in-process shop. Only the standard library is used.

Unlike the reference (one request at a time, no timeout, a crash on the first error), a batch's requests run
concurrently in a thread pool; each has a timeout; connection errors, timeouts and 5xx answers are retried with
exponential back-off; and a server that is absent or keeps failing raises ``WebShopServerError`` naming the URL.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from http.client import HTTPException

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
    PageRequest,
    PageSource,
    ScrapedPage,
    scrape,
)

log = logging.getLogger(__name__)

_INVISIBLE = frozenset(("style", "script", "head", "title", "meta", "[document]"))
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)


class WebShopServerError(RuntimeError):
    """The WebShop server could not be reached or kept failing; the message names the URL."""


class _TextNodes(HTMLParser):
    """Collects (parent tag, parent class, text) for every text run, as BeautifulSoup's ``findAll(text=True)``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str]] = []
        self.runs: list[tuple[str, str, str]] = []
        self._joinable = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._joinable = False
        if tag not in _VOID:
            self.stack.append((tag, dict(attrs).get("class") or ""))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._joinable = False

    def handle_endtag(self, tag: str) -> None:
        self._joinable = False
        # Close up to the matching open tag; a stray end tag (WebShop's templates have some) is ignored.
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        tag, css = self.stack[-1] if self.stack else ("[document]", "")
        if self._joinable and self.runs:
            self.runs[-1] = (tag, css, self.runs[-1][2] + data)
        else:
            self.runs.append((tag, css, data))
        self._joinable = True

    def handle_comment(self, data: str) -> None:
        self._joinable = False


def html_nodes(html: str) -> list[Node]:
    """The visible text nodes of an HTML page, tagged as the reference client tags them.

    A node is a ``button`` inside a ``<button>``, a ``label`` inside a ``<label>``, a ``product`` inside
    ``<a class="product-link">``, and plain ``text`` otherwise. Blank nodes are kept (``scrape`` skips them).
    """
    parser = _TextNodes()
    parser.feed(html)
    parser.close()
    nodes = []
    for tag, css, text in parser.runs:
        if tag in _INVISIBLE:
            continue
        if tag == "button":
            kind = BUTTON
        elif tag == "label":
            kind = LABEL
        elif tag == "a" and css.split() == ["product-link"]:
            kind = PRODUCT
        else:
            kind = TEXT
        nodes.append(Node(kind, text))
    return nodes


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def page_urls(base_url: str, request: PageRequest) -> tuple[str, str]:
    """The request's URL as sent (each path segment percent-encoded) and as the reference wrote it (raw).

    The raw form is what the reference checked selected options against: a label is selected when ``'value'``
    occurs in it. A ``/`` inside the query would split the route, so it is sent as a space.
    """
    base = base_url.rstrip("/")
    query = request.query.replace("/", " ")
    options = str(dict(request.options))
    if request.kind == INIT:
        parts = [request.session]
    elif request.kind == SEARCH:
        parts = ["search_results", request.session, query, str(request.page_num)]
    elif request.kind == ITEM:
        parts = ["item_page", request.session, request.asin, query, str(request.page_num), options]
    elif request.kind == ITEM_SUB:
        parts = ["item_sub_page", request.session, request.asin, query, str(request.page_num), request.subpage]
        parts.append(options)
    elif request.kind == END:
        parts = ["done", request.session, request.asin, options]
    else:
        raise ValueError(f"unknown page kind {request.kind!r}")
    return base + "/" + "/".join(_segment(p) for p in parts), base + "/" + "/".join(parts)


class HttpPageSource(PageSource):
    """Pages from a WebShop server.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:3000``.
        timeout_s: seconds to wait for one answer.
        max_retries: further attempts after a connection error, a timeout or a 5xx answer.
        backoff_s: wait before the first retry; it doubles with each further retry.
        max_workers: requests in flight at once.
    """

    def __init__(
        self,
        base_url: str,
        timeout_s: float = 10.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_workers: int = 16,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"server URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._count_lock = threading.Lock()
        self.requests_sent = 0

    def get(self, url: str) -> str:
        """The body of ``url``, retried as configured.

        Raises:
            WebShopServerError: the server answered 4xx, or every attempt failed.
        """
        attempts = self.max_retries + 1
        last_error = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            with self._count_lock:
                self.requests_sent += 1
            try:
                with urllib.request.urlopen(url, timeout=self.timeout_s) as answer:
                    return answer.read().decode("utf-8", errors="replace")
            except urllib.error.HTTPError as error:
                body = error.read().decode("utf-8", errors="replace")[:200]
                if error.code < 500:
                    raise WebShopServerError(f"WebShop server answered {error.code} for GET {url}: {body}") from None
                last_error = f"HTTP {error.code}: {body}"
            except (urllib.error.URLError, TimeoutError, ConnectionError, HTTPException) as error:
                reason = getattr(error, "reason", error)
                last_error = f"{type(reason).__name__}: {reason}"
            log.debug("GET %s failed (attempt %d of %d): %s", url, attempt + 1, attempts, last_error)
        raise WebShopServerError(
            f"WebShop server at {self.base_url} did not answer GET {url} after {attempts} attempts "
            f"(timeout {self.timeout_s} s each); last error: {last_error}. Is the server running? "
            "`python -m archer.envs.webshop.server` serves the generated shop."
        )

    def page(self, request: PageRequest) -> ScrapedPage:
        """One page, fetched and scraped."""
        url, raw_url = page_urls(self.base_url, request)
        html = self.get(url)
        try:
            return scrape(html_nodes(html), request.kind, lambda text: f"'{text}'" in raw_url)
        except ValueError as error:
            raise WebShopServerError(f"WebShop server sent a page GET {url} cannot be read: {error}") from error

    def fetch(self, requests: Sequence[PageRequest]) -> list[ScrapedPage]:
        if len(requests) <= 1 or self.max_workers <= 1:
            return [self.page(request) for request in requests]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="webshop-http")
        return list(self._pool.map(self.page, requests))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
