"""A small WebShop server for the generated shop: WebShop's GET routes, answered with HTML pages of a ``Site``.

Routes (as Princeton's ``web_agent_site/app.py``)::

    /{session}
    /search_results/{session}/{query}/{page}
    /item_page/{session}/{asin}/{query}/{page}/{options}
    /item_sub_page/{session}/{asin}/{query}/{page}/{subpage}/{options}
    /done/{session}/{asin}/{options}

``session`` is ``fixed_<i>`` (instruction ``i``) and ``options`` a Python dict literal such as
``{'size': 'small'}``. Sessions need no state: the id names the instruction, so any number of clients may play the
same instruction at once. Unknown sessions, products or routes answer 404; unreadable arguments 400.

The server is the standard library's ``ThreadingHTTPServer`` in a daemon thread, bound to 127.0.0.1 unless told
otherwise. ``max_requests`` and ``max_lifetime_s`` make it stop by itself (tests use them so a forgotten server
cannot outlive its test). Run one from the command line with::

    python -m archer.envs.webshop.server --port 3000
"""

from __future__ import annotations

import argparse
import ast
import html
import logging
import threading
import urllib.parse
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from archer.envs.webshop.pages import (
    BUTTON,
    END,
    INIT,
    ITEM,
    ITEM_SUB,
    LABEL,
    PRODUCT,
    SEARCH,
    Node,
    PageNotFound,
    PageRequest,
    Site,
)

log = logging.getLogger(__name__)


class BadRequest(ValueError):
    """A route argument cannot be read."""


def render_html(nodes: Sequence[Node], title: str = "WebShop") -> str:
    """An HTML page showing ``nodes`` in order; ``client.html_nodes`` reads the same nodes back."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"]
    for node in nodes:
        text = html.escape(node.text, quote=False)
        if node.kind == BUTTON:
            parts.append(f'<form method="post"><button type="submit">{text}</button></form>')
        elif node.kind == LABEL:
            parts.append(f'<input type="radio" name="option" value="{html.escape(node.text)}"><label>{text}</label>')
        elif node.kind == PRODUCT:
            parts.append(f'<h4><a class="product-link" href="#">{text}</a></h4>')
        else:
            parts.append(f"<p>{text}</p>")
    parts.append("</body></html>")
    return "".join(parts)


def _options(text: str) -> dict[str, str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as error:
        raise BadRequest(f"options {text!r} is not a Python dict literal") from error
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequest(f"options {text!r} must map option names to values (strings)")
    return value


def _page_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"page {text!r} is not a number") from None


def parse_route(path: str) -> PageRequest:
    """The page a URL path asks for (segments percent-decoded).

    Raises:
        PageNotFound: the path matches no route.
        BadRequest: a page number or options literal cannot be read.
    """
    segments = [urllib.parse.unquote(s) for s in urllib.parse.urlsplit(path).path.strip("/").split("/")]
    route, args = segments[0], segments[1:]
    if len(segments) == 1 and route:
        return PageRequest(INIT, route)
    if route == "search_results" and len(args) == 3:
        return PageRequest(SEARCH, args[0], query=args[1], page_num=_page_number(args[2]))
    if route == "item_page" and len(args) == 5:
        session, asin, query, page, options = args
        return PageRequest(ITEM, session, query, _page_number(page), asin=asin, options=_options(options))
    if route == "item_sub_page" and len(args) == 6:
        session, asin, query, page, subpage, options = args
        return PageRequest(
            ITEM_SUB, session, query, _page_number(page), asin=asin, options=_options(options), subpage=subpage
        )
    if route == "done" and len(args) == 3:
        return PageRequest(END, args[0], asin=args[1], options=_options(args[2]))
    raise PageNotFound(f"no route for {path!r}")


class WebShopRequestHandler(BaseHTTPRequestHandler):
    """Answers GET requests from ``self.server.site`` (subclass it to change how requests are answered)."""

    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self.server.count_request()
        try:
            request = parse_route(self.path)
            body, status = render_html(self.server.site.nodes(request)), 200
        except PageNotFound as error:
            body, status = f"<html><body><p>Not found: {html.escape(str(error))}</p></body></html>", 404
        except BadRequest as error:
            body, status = f"<html><body><p>Bad request: {html.escape(str(error))}</p></body></html>", 400
        except Exception:  # answer 500 rather than drop the connection, as a Flask app would
            log.exception("WebShop server failed on %s", self.path)
            body, status = "<html><body><p>Internal server error</p></body></html>", 500
        self.send_page(status, body)

    def send_page(self, status: int, body: str) -> None:
        """Send an HTML answer."""
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connections when a batch's requests arrive together; the client
    # then waits a full TCP retransmission (1 s) for each. Werkzeug, which serves WebShop, uses 128 too.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: WebShopServer) -> None:
        super().__init__(address, handler)
        self.site = owner.site
        self.owner = owner

    def count_request(self) -> None:
        self.owner._count_request()


class WebShopServer:
    """Serves ``site`` over HTTP in a background thread.

    Args:
        site: the shop to serve.
        host: the interface to bind (loopback by default).
        port: the port; 0 picks a free one (read it from ``url``).
        handler: the request handler class.
        max_requests: stop after answering this many requests (None: no limit).
        max_lifetime_s: stop this many seconds after ``start`` (None: no limit).
    """

    def __init__(
        self,
        site: Site,
        host: str = "127.0.0.1",
        port: int = 0,
        handler: type[BaseHTTPRequestHandler] = WebShopRequestHandler,
        max_requests: int | None = None,
        max_lifetime_s: float | None = None,
    ) -> None:
        self.site = site
        self.max_requests = max_requests
        self.max_lifetime_s = max_lifetime_s
        self.requests = 0
        self._lock = threading.Lock()
        self._httpd = _Server((host, port), handler, self)
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        """The server's base URL."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def _count_request(self) -> None:
        with self._lock:
            self.requests += 1
            over = self.max_requests is not None and self.requests >= self.max_requests
        if over:
            # shutdown() waits for serve_forever to return, so it must not run on a request thread of this server
            # while that thread is needed; a helper thread does it.
            threading.Thread(target=self.stop, daemon=True).start()

    def start(self) -> WebShopServer:
        """Start serving in a daemon thread; returns self."""
        # A short poll interval lets stop() return quickly (shutdown waits for the serving loop's next poll).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="webshop-server", daemon=True
        )
        self._thread.start()
        if self.max_lifetime_s is not None:
            self._timer = threading.Timer(self.max_lifetime_s, self.stop)
            self._timer.daemon = True
            self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port (idempotent)."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._thread is not None:
            self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> WebShopServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: serve the generated shop until interrupted."""
    from archer.envs.webshop.shop import build_site

    parser = argparse.ArgumentParser(description="Serve the generated WebShop catalogue on WebShop's routes.")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000, help="port (default 3000, WebShop's)")
    parser.add_argument("--num-products", type=int, default=1000, help="catalogue size (default 1000)")
    parser.add_argument("--num-instructions", type=int, default=3000, help="instructions (default 3000)")
    parser.add_argument("--seed", type=int, default=0, help="catalogue and instruction seed (default 0)")
    parser.add_argument("--no-attributes", action="store_true", help="hide the [Attributes] button")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    site = build_site(args.num_products, args.seed, args.num_instructions, not args.no_attributes)
    server = WebShopServer(site, args.host, args.port).start()
    log.info("serving %d products and %d instructions at %s", len(site.catalogue), len(site.instructions), server.url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
