"""`runner.py serve`: the web leaderboard, the submission API and, with `--workers`, the
worker slots that judge the queue, in one process (Flask and waitress, imported only
here: harness/web/serving.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.consts import ExitCode
from harness.options import RunOptions
from harness.settings import Settings
from harness.storage.store import StoreError, is_server, require_existing, resolve_db


@dataclass
class ServeOptions:
    """What `runner.py serve` is asked: the database, where to listen (None: the
    settings'), whether pages show code, the settings file, and the worker slots."""

    db: str | None = None
    host: str | None = None
    port: int | None = None
    show_code: bool | None = None
    config: Path | None = None
    workers: str = "0"
    debug: bool = False  # Werkzeug's development server, not waitress


def run_serve(console: Console, opts: ServeOptions, judge: RunOptions | None = None) -> int:
    """Serve the board and the API (and judge with `opts.workers` slots) until
    interrupted; the exit code."""
    config, workers = opts.config, opts.workers
    try:
        import waitress  # noqa: F401 - the server, checked before anything starts

        from harness.web import create_app
        from harness.web.serving import THREADS, make_server
    except ImportError as exc:
        console.print(f"[red]error:[/] the web leaderboard needs Flask and waitress "
                      f"({exc.name} is missing): " + escape("pip install -e '.[web]'"))
        return ExitCode.USAGE
    from harness.server.slots import Judging, make_slots, start_slots, stop_slots
    from harness.settings import ServerSettings

    try:
        settings = Settings.load(config)
        server_settings = ServerSettings.from_settings(settings)
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/] settings: {escape(str(exc))}")
        return ExitCode.USAGE
    web = settings.web
    try:
        url = require_existing(resolve_db(opts.db, settings.store_path))
        slots = make_slots(judge.device if judge else None, workers) if workers != "0" else []
    except (StoreError, ValueError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    judging = Judging(url, judge or RunOptions(config=config), settings, server_settings,
                      console.print)
    show = web.show_code if opts.show_code is None else opts.show_code
    app = create_app(url, show, web, server_settings, judging.wake.set)
    host, port = opts.host or web.host, web.port if opts.port is None else opts.port
    try:
        server = make_server(app, host, port, web, server_settings.max_upload_bytes + (1 << 16),
                             debug=opts.debug)
    except OSError as exc:  # the port in use, an unknown address
        console.print(f"[red]error:[/] cannot listen on {host}:{port}: {escape(str(exc))}")
        return ExitCode.USAGE
    from harness.execution.stopping import EXIT_CODE, stop_on_sigterm, stopped_by_sigterm

    stop_on_sigterm()
    threads = start_slots(judging, slots, poll=0.5)
    shown = "postgresql" if is_server(url) else url
    where = ", ".join(f"{s.env['_where']} ({s.kind})" for s in slots) or (
        "none here: `runner.py worker` judges")
    kind = ("Werkzeug's development server (--debug)" if opts.debug else
            f"waitress, {THREADS} threads")
    console.print(f"serving {shown} at http://{host}:{server.port}/ ({kind}; code "
                  f"{'shown' if show else 'hidden'}; worker slots: {where}; Ctrl-C stops)")
    try:
        server.run()  # waitress ends its loop on SystemExit and KeyboardInterrupt alike
    except KeyboardInterrupt:
        pass
    finally:
        stop_slots(judging, threads)  # running jobs go back to the queue
        server.close()
    return EXIT_CODE if stopped_by_sigterm() else ExitCode.OK
