"""Pages from a WebShop server over HTTP: the real Princeton WebShop site or ``server.py``.

The client requests WebShop's GET routes (``/{session}``, ``/search_results/...``, ``/item_page/...``,
``/item_sub_page/...``, ``/done/...``) with the options dict written into the URL as Python ``str()``, as the
reference client did, and turns each HTML page into text nodes the way the reference's BeautifulSoup code saw them
(visible text only: nothing inside ``style``, ``script``, ``head``, ``title`` or ``meta``, no comments). The nodes
then go through the same ``scrape`` as the in-process shop. Only the standard library is used.

Unlike the reference (one request at a time, no timeout, a crash on the first error), a batch's requests run
concurrently in a thread pool; each has a deadline for the whole exchange (connecting, headers and body: a server
that trickles its page a byte at a time is cut off, not read for hours); connection errors, timeouts and 5xx answers
are retried with exponential back-off; and a server that is absent or keeps failing raises ``WebShopServerError``
naming the URL. A start page that is not a WebShop page (a mistyped URL answering 200 with some other site) is
refused at once, so a run never trains on another site's text.
"""

from __future__ import annotations

import http.client
import logging
import socket
import threading
import time
import urllib.parse
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser

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
from archer.errors import ArcherError

log = logging.getLogger(__name__)

_INVISIBLE = frozenset(("style", "script", "head", "title", "meta", "[document]"))
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)


MAX_PAGE_BYTES = 16 * 2**20
"""The largest page accepted; WebShop's pages are tens of kilobytes."""
START_PAGE_TEXT = "Instruction:"
START_PAGE_BUTTON = "Search"


class WebShopServerError(ArcherError, RuntimeError):
    """The WebShop server could not be reached, kept failing, or is not a WebShop server; the message names the URL."""


class _Deadline:
    """Shuts a connection's socket down when its time is up, so a blocked read returns at once."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.expired = False
        self._connection = connection
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True

    def _expire(self) -> None:
        self.expired = True
        sock = self._connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: nothing left to interrupt

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


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


def is_start_page(nodes: Sequence[Node]) -> bool:
    """Whether ``nodes`` are a WebShop start page: an ``Instruction:`` text and a ``Search`` button, which is what the
    environment reads the instruction from."""
    has_text = any(node.kind == TEXT and node.text.strip().startswith(START_PAGE_TEXT) for node in nodes)
    has_button = any(node.kind == BUTTON and node.text.strip() == START_PAGE_BUTTON for node in nodes)
    return has_text and has_button


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

    def _exchange(self, url: str) -> tuple[int, str, str]:
        """One GET of ``url``: status, body and ``Location`` header, all within ``timeout_s`` from the start.

        Raises:
            TimeoutError: the exchange did not finish in time (connecting, headers or body).
            OSError, http.client.HTTPException: the connection failed or the answer is not HTTP.
            WebShopServerError: the body is larger than ``MAX_PAGE_BYTES``.
        """
        parts = urllib.parse.urlsplit(url)
        connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        # The socket timeout bounds connecting and each read; the deadline bounds everything together.
        connection = connection_type(parts.hostname, parts.port, timeout=self.timeout_s)
        deadline = time.monotonic() + self.timeout_s
        try:
            connection.connect()
            with _Deadline(connection, deadline - time.monotonic()) as watch:
                try:
                    connection.request("GET", parts.path or "/", headers={"Accept": "text/html"})
                    answer = connection.getresponse()
                    body = answer.read(MAX_PAGE_BYTES + 1)
                    if len(body) > MAX_PAGE_BYTES:
                        raise WebShopServerError(f"WebShop server sent more than {MAX_PAGE_BYTES} bytes for GET {url}")
                    if answer.length:  # a read of at most n bytes returns what came before the end, however short
                        raise http.client.IncompleteRead(body, answer.length)
                except (OSError, http.client.HTTPException):
                    if watch.expired:
                        raise TimeoutError(f"timed out: no complete answer within {self.timeout_s} s") from None
                    raise
            if watch.expired:
                raise TimeoutError(f"timed out: no complete answer within {self.timeout_s} s")
        finally:
            connection.close()
        return answer.status, body.decode("utf-8", errors="replace"), answer.getheader("Location") or ""

    def get(self, url: str) -> str:
        """The body of ``url``, retried as configured.

        Raises:
            WebShopServerError: the server answered 3xx or 4xx, or every attempt failed.
        """
        attempts = self.max_retries + 1
        last_error = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            with self._count_lock:
                self.requests_sent += 1
            try:
                status, body, location = self._exchange(url)
            except (OSError, http.client.HTTPException) as error:
                last_error = f"{type(error).__name__}: {error}"
                log.debug("GET %s failed (attempt %d of %d): %s", url, attempt + 1, attempts, last_error)
                continue
            if 200 <= status < 300:
                return body
            if 300 <= status < 400:
                raise WebShopServerError(
                    f"WebShop server answered {status} (a redirect to {location!r}) for GET {url}; set "
                    "env.server_url to the address that serves WebShop's pages itself"
                )
            if status < 500:
                raise WebShopServerError(f"WebShop server answered {status} for GET {url}: {body[:200]}")
            last_error = f"HTTP {status}: {body[:200]}"
            log.debug("GET %s failed (attempt %d of %d): %s", url, attempt + 1, attempts, last_error)
        raise WebShopServerError(
            f"WebShop server at {self.base_url} did not answer GET {url} after {attempts} attempts "
            f"(each within {self.timeout_s} s); last error: {last_error}. Is the server running? "
            "`python -m archer.envs.webshop.server` serves the generated shop."
        )

    def page(self, request: PageRequest) -> ScrapedPage:
        """One page, fetched and scraped.

        Raises:
            WebShopServerError: the server failed (see ``get``), or a start page is not a WebShop page.
        """
        url, raw_url = page_urls(self.base_url, request)
        html = self.get(url)
        nodes = html_nodes(html)
        if request.kind == INIT and not is_start_page(nodes):
            seen = " ".join(" ".join(node.text.split()) for node in nodes if node.text.strip())
            raise WebShopServerError(
                f"GET {url} answered with a page that is not a WebShop start page (no {START_PAGE_TEXT!r} text and "
                f"[{START_PAGE_BUTTON}] button; it reads {seen[:120]!r}). Is env.server_url={self.base_url} the "
                "address of a WebShop server?"
            )
        try:
            return scrape(nodes, request.kind, lambda text: f"'{text}'" in raw_url)
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
