"""`runner.py serve`: the read-only web leaderboard (Flask, imported only here)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.consts import ExitCode
from harness.results.store import StoreError, is_server, require_existing, resolve_db
from harness.settings import Settings


def run_serve(console: Console, db: str | None, host: str | None, port: int | None,
              show_code: bool | None, config: Path | None) -> int:
    """Serve the leaderboard of the database until interrupted; the exit code."""
    try:
        from werkzeug.serving import make_server

        from harness.web import create_app
    except ImportError as exc:
        console.print(f"[red]error:[/] the web leaderboard needs Flask ({exc.name} is missing): "
                      + escape("pip install -e '.[web]'"))
        return ExitCode.USAGE
    try:
        settings = Settings.load(config)
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/] settings: {escape(str(exc))}")
        return ExitCode.USAGE
    web = settings.web
    try:
        url = require_existing(resolve_db(db, settings.store_path))
    except StoreError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    show = web.show_code if show_code is None else show_code
    app = create_app(url, show, web)
    host, port = host or web.host, web.port if port is None else port
    try:
        server = make_server(host, port, app, threaded=True)
    except (OSError, SystemExit):  # Werkzeug has said why (port in use, unknown address)
        console.print(f"[red]error:[/] cannot listen on {host}:{port}")
        return ExitCode.USAGE
    shown = "postgresql" if is_server(url) else url
    console.print(f"serving the leaderboard of {shown} at http://{host}:{server.port}/ "
                  f"(read-only, code {'shown' if show else 'hidden'}; Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return ExitCode.OK
