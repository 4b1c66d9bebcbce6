"""The HTTP server under `runner.py serve`: waitress, a production WSGI server, and
Werkzeug's development server only behind `--debug`.

Waitress reads and writes every connection in one event loop (poll, so past select's
1,024 descriptors) and hands only whole requests to a bounded pool of `THREADS`
threads: a client that connects and says nothing, or sends its headers a byte at a time,
holds a socket and never a thread, and is closed after `web.channel_timeout` seconds
without a byte; past `CONNECTION_LIMIT` connections the server stops accepting until some
close. Its access log (`AccessLog`) hides the values of query strings
(`redact_query`): a client may put a token there.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.server.stream import MAX_STREAMS

# The largest request line and headers taken (bytes): an upload's size is bounded apart.
MAX_HEADER_BYTES = 64 * 1024
# Requests answered at once: the pages and the API read the database in a few
# milliseconds and the judging runs elsewhere (the slots), so a few threads keep up with
# them beside the most popcorn-cli streams open at once, each of which holds one.
THREADS = MAX_STREAMS + 8
# Connections open at once (idle, slow or busy); past it, new ones wait in the backlog.
CONNECTION_LIMIT = 4000


class Served(Protocol):
    """A listening server: its port; serve until closed; close."""

    port: int

    def run(self) -> None: ...
    def close(self) -> None: ...


def redact_query(path: str) -> str:
    """A request path as the access log writes it: the query's values hidden (a client may
    put a token there; the server reads tokens from headers only), its keys kept."""
    base, sep, query = path.partition("?")
    if not sep:
        return path
    keys = [part.split("=", 1)[0] for part in query.split("&") if part]
    return base + "?" + "&".join(f"{key}=..." for key in keys)


class AccessLog:
    """WSGI middleware: a line per request on standard error, as Werkzeug writes it,
    with the query's values hidden."""

    def __init__(self, app: Callable, out: Any = None) -> None:
        self.app, self.out = app, out

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        seen: dict[str, str] = {}

        def starting(status: str, headers: list, exc_info: Any = None) -> Callable:
            seen["status"] = status.split(" ", 1)[0]
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, starting)
        finally:
            query = environ.get("QUERY_STRING", "")
            path = environ.get("PATH_INFO", "") + (f"?{query}" if query else "")
            stamp = time.strftime("%d/%b/%Y %H:%M:%S")
            print(f'{environ.get("REMOTE_ADDR", "-")} - - [{stamp}] "'
                  f'{environ.get("REQUEST_METHOD", "-")} {redact_query(path)} '
                  f'{environ.get("SERVER_PROTOCOL", "-")}" {seen.get("status", "-")} -',
                  file=self.out or sys.stderr, flush=True)


@dataclass
class _Running:
    """A made server, behind `Served`: its port and how to run and close it."""

    port: int
    run: Callable[[], None]
    close: Callable[[], None]


def make_server(app: Callable, host: str, port: int, web: Any, max_body: int,
                debug: bool = False) -> Served:
    """A server of `app` listening on `host`:`port` (0: a free port), bounded as the
    `web:` settings say, taking request bodies of up to `max_body` bytes; Werkzeug's
    development server where `debug`. OSError where it cannot listen."""
    logged = AccessLog(app)
    if debug:
        from werkzeug.serving import make_server as werkzeug_server

        try:
            server = werkzeug_server(host, port, logged, threaded=True)
        except SystemExit as exc:  # Werkzeug's way of saying the port is taken
            raise OSError(f"cannot listen on {host}:{port}") from exc
        return _Running(server.port, server.serve_forever, server.server_close)
    from waitress.server import create_server

    server = create_server(
        logged, host=host, port=port, threads=THREADS,
        connection_limit=CONNECTION_LIMIT, channel_timeout=web.channel_timeout,
        cleanup_interval=max(1, int(web.channel_timeout) // 3), asyncore_use_poll=True,
        max_request_header_size=MAX_HEADER_BYTES, max_request_body_size=max_body,
        backlog=1024, ident="kernel-harness",
        clear_untrusted_proxy_headers=True)
    return _Running(server.effective_port, server.run, server.close)
