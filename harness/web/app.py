"""The web leaderboard and contest server: Flask views over the results database.

Every board page and /api/ endpoint reads through harness.views.boards, the functions
behind `runner.py leaderboard/history/show --json`, so what the site ranks is what the
command line ranks. The submission API (harness/server/api.py) and the pages below that
take uploads only queue jobs; worker slots judge and record them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, abort, current_app, jsonify, render_template, request
from markupsafe import Markup
from werkzeug.exceptions import HTTPException

from harness.results.disclosure import public_submission
from harness.server.api import Api, make_api
from harness.settings import ServerSettings, Settings, WebSettings
from harness.storage.store import PerThread
from harness.views import boards
from harness.web import charts
from harness.web.contest import add_contest_pages
from harness.web.format import FILTERS

# Characters of the worker's output a submission page shows (its end, where errors are).
OUTPUT_TAIL_CHARS = 4000

# On every page and API answer: no script runs (the pages have none), nothing loads from
# elsewhere, no other site frames a page, no type is guessed from content, and no other
# site learns which page a link was followed from.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'none'; object-src 'none'; "
                               "img-src 'self' data:; style-src 'self'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def create_app(db_url: str, show_code: bool, settings: WebSettings | None = None,
               server: ServerSettings | None = None,
               on_enqueue: Callable[[], None] = lambda: None) -> Flask:
    """The web leaderboard and submission API on the database at `db_url` (a SQLite path or
    postgresql:// URL). `show_code`: whether submission pages (and their JSON) include the
    submitted code. `on_enqueue` is called after each accepted upload (wakes local slots)."""
    loaded = Settings.load() if settings is None or server is None else None
    web = settings or loaded.web
    app = Flask(__name__)
    api = make_api(app, db_url, server or ServerSettings.from_settings(loaded), on_enqueue)
    add_contest_pages(app, api)
    app.json.sort_keys = False  # the key order of the commands' --json
    app.json.ensure_ascii = False
    app.jinja_env.filters.update(FILTERS)
    read = PerThread(db_url)  # `with read() as store:` the request thread's connection
    _add_pages(app, read, show_code, web, api)
    _add_api(app, read, show_code)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _internal_error)
    app.after_request(_secured)
    return app


def _secured(response: Any) -> Any:
    """A response with the security headers (`SECURITY_HEADERS`) added."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _task_board(read: PerThread, task: str, **kw: Any) -> boards.Board:
    """A task's boards; 404 for a task the database does not know."""
    try:
        with read() as store:
            return boards.board(store, task, **kw)
    except boards.UnknownTask as exc:
        abort(404, str(exc))


def _one_submission(read: PerThread, submission_id: int, show_code: bool) -> dict[str, Any]:
    """One submission as `runner.py show` shows it, less what the public may not see of its
    secret runs (results/disclosure.py); 404 for an unknown id."""
    with read() as store:
        sub = boards.submission(store, submission_id, show_code)
    if sub is None:
        abort(404, f"no submission {submission_id}")
    return public_submission(sub)


def _add_pages(app: Flask, read: PerThread, show_code: bool, web: WebSettings,
               api: Api) -> None:
    """The HTML pages: the tasks, a task's boards, trends and upload form, a submission, a
    user."""
    @app.get("/")
    def home() -> str:
        with read() as store:
            tiles = boards.overview(store)
        return render_template("home.html", tiles=tiles)

    @app.get("/tasks/<task>")
    def task_page(task: str) -> str:
        b = _task_board(read, task, all_versions=request.args.get("all_versions") == "1")
        trends = {kind: Markup(charts.trend_svg(boards.trend(b, kind))) for kind in b.tables}
        with read() as store:
            subs = boards.history(store, task)
        with api.db() as queue:
            gpus = queue.gpu_kinds()
        return render_template("task.html", board=b, info=boards.task_info(task),
                               trends=trends, submissions=subs[::-1], upload_gpus=gpus)

    @app.get("/submissions/<int:submission_id>")
    def submission_page(submission_id: int) -> str:
        sub = _one_submission(read, submission_id, show_code)
        with read() as store:
            ranked, ranked_of = boards.standing(store, sub)
        output = next((r["messages"].get("output") for r in sub["runs"]
                       if r["messages"].get("output")), {}) or {}
        tails = {k: v[-OUTPUT_TAIL_CHARS:] for k, v in output.items() if v and v.strip()}
        return render_template("submission.html", sub=sub, ranked=ranked, ranked_of=ranked_of,
                               output=tails, show_code=show_code)

    @app.get("/users/<user>")
    def user_page(user: str) -> str:
        with read() as store:
            subs = boards.history(store, user=user)
        if not subs:
            abort(404, f"no submissions by {user!r}")
        ranks = []
        for task in sorted({s["task"] for s in subs}):
            b = _task_board(read, task)
            ranks += [(task, kind, r, len(t)) for kind, t in b.tables.items()
                      for r in t if r.user == user]
        return render_template("user.html", user=user, submissions=subs[::-1], ranks=ranks)


def _add_api(app: Flask, read: PerThread, show_code: bool) -> None:
    """The JSON endpoints: the shapes of the commands' --json."""
    @app.get("/api/tasks")
    def api_tasks() -> Any:
        with read() as store:
            return jsonify(boards.overview(store))

    @app.get("/api/leaderboard/<task>")
    def api_leaderboard(task: str) -> Any:
        """`runner.py leaderboard TASK [--device D] [--all-versions] --json`."""
        return jsonify(_task_board(read, task, device=request.args.get("device"),
                                   all_versions=request.args.get("all_versions") == "1")
                       .to_dict())

    @app.get("/api/tasks/<task>/trend/<device>")
    def api_trend(task: str, device: str) -> Any:
        return jsonify(boards.trend(_task_board(read, task), device))

    @app.get("/api/history")
    def api_history() -> Any:
        """`runner.py history [--task T] [--user U] --json`."""
        with read() as store:
            return jsonify(boards.history(store, request.args.get("task"),
                                          request.args.get("user")))

    @app.get("/api/users/<user>")
    def api_user(user: str) -> Any:
        """`runner.py history --user U --json`."""
        with read() as store:
            return jsonify(boards.history(store, user=user))

    @app.get("/api/submissions/<int:submission_id>")
    def api_submission(submission_id: int) -> Any:
        """`runner.py show ID --json` (with `--code` when the organiser shows code)."""
        return jsonify(_one_submission(read, submission_id, show_code))


def _wants_page() -> bool:
    """Whether the request is a browser's for a page: it prefers HTML to JSON and is not for
    /api/. Clients (popcorn-cli sends `Accept: */*`, ours none) get JSON."""
    accept = request.accept_mimetypes
    return (not request.path.startswith("/api/")
            and accept["text/html"] > accept["application/json"])


def _http_error(exc: HTTPException) -> Any:
    """Any HTTP error (an unknown path, a method a route does not take, an abort) as
    `{"detail": ...}` with its code, the shape popcorn-cli prints; a page for a browser."""
    if exc.response is not None:  # a reply made whole already (api.fail)
        return exc.response
    code, message = exc.code or 500, exc.description or exc.name
    if _wants_page():
        return render_template("error.html", title=exc.name, message=message), code
    return jsonify(detail=message), code


def _internal_error(exc: Exception) -> Any:
    """An error the server did not expect: 500 with `{"detail": ...}` (a page for a
    browser), the traceback in the server's log, never in the reply."""
    if isinstance(exc, HTTPException):
        return _http_error(exc)
    current_app.logger.error("internal error on %s %s", request.method, request.path,
                             exc_info=exc)
    message = "internal server error: the organiser can read the server's log"
    if _wants_page():
        return render_template("error.html", title="Server error", message=message), 500
    return jsonify(detail=message), 500
