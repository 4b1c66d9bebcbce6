"""The submission API: popcorn-cli's protocol, our own richer endpoint, the admin endpoints.

popcorn-cli (github.com/gpu-mode/popcorn-cli, src/service/mod.rs) works unchanged with
POPCORN_API_URL pointing here: its token arrives in `X-Popcorn-Cli-Id` (ours also takes
`Authorization: Bearer`), errors answer `{"detail": ...}` with a 4xx code. Each endpoint
checks the token, validates the upload and queues a job (harness/storage/queue.py); worker
slots judge it as `runner.py submit` would. The user is only ever the token's. A contestant
is never served another user's code, nor more of a secret phase than
harness/results/disclosure.py allows.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from flask import Blueprint, Flask, Response, abort, jsonify, make_response, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from harness.options import MODES
from harness.results.disclosure import public_document
from harness.server.rejudging import add_rejudging_endpoints
from harness.server.rules import get_rules, parse_deadline, parse_modes, set_rules
from harness.server.slots import safe_file_name
from harness.server.stream import MAX_STREAMS, Streams, job_events
from harness.settings import ServerSettings
from harness.storage.queue import DONE, FAILED, Job, JobQueue, NewJob, standing
from harness.storage.store import PerThread
from harness.storage.users import User, user_for_token

RUNNER = "kernel-harness"
TASK_CACHE_SECONDS = 30.0


class Rejected(Exception):
    """An upload refused inside the queue's transaction (the rate limit)."""

    def __init__(self, code: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.code, self.detail, self.headers = code, detail, headers or {}


@dataclass
class Upload:
    """A submission as uploaded: the leaderboard, GPU kind and mode it asks for, and its
    file (name and bytes; None where none came)."""

    leaderboard: str
    gpu: str
    mode: str
    file_name: str | None
    data: bytes | None


def fail(code: int, detail: str, headers: dict[str, str] | None = None) -> NoReturn:
    """Answer `{"detail": ...}` with `code` (the shape popcorn-cli reads)."""
    reply = make_response(jsonify(detail=detail), code)
    for key, value in (headers or {}).items():
        reply.headers[key] = value
    abort(reply)


class Database:
    """The API's queue, on a connection of the request's thread (`PerThread`)."""

    def __init__(self, db_url: str, server: ServerSettings) -> None:
        self.stores = PerThread(db_url)
        self.server = server

    @contextmanager
    def __call__(self) -> Iterator[JobQueue]:
        yield JobQueue(self.stores.store(), self.server.lease_seconds,
                       self.server.max_attempts)


class Tasks:
    """The task folders' public facts, read at most every TASK_CACHE_SECONDS."""

    def __init__(self) -> None:
        self.read_at, self.known = 0.0, {}
        self.lock = threading.Lock()

    def all(self) -> dict[str, Any]:
        from harness.loading.task_folder import TaskError, list_task_names, load_task

        with self.lock:
            if time.monotonic() - self.read_at > TASK_CACHE_SECONDS:
                known = {}
                for name in list_task_names():
                    try:
                        known[name.lower()] = load_task(name)
                    except TaskError:
                        continue  # a broken task takes no uploads
                self.known, self.read_at = known, time.monotonic()
            return self.known

    def get(self, name: str) -> Any:
        return self.all().get(name.lower())


def token_of_request() -> str | None:
    """The token: popcorn-cli's header, else `Authorization: Bearer`."""
    token = request.headers.get("X-Popcorn-Cli-Id")
    if token:
        return token
    auth = request.headers.get("Authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else None


# -- what a contestant is shown ----------------------------------------------------------
def load_error_of(job: Job) -> str | None:
    """The loader's message where a judged job's file could not be loaded (a syntax error,
    a missing custom_kernel, an import that fails); None otherwise."""
    if job.status != DONE:
        return None
    error = (job.document() or {}).get("load_error")
    if not error:
        return None
    parts = [error.get("title") or error.get("status"), error.get("message"), error.get("hint")]
    return "\n".join(str(p) for p in parts if p)


def job_error(job: Job) -> str | None:
    """What popcorn-cli prints after `Submission N failed:`: why the job failed, or why its
    file could not be loaded."""
    return job.error or load_error_of(job)


def job_status(job: Job, hacked: bool = False) -> str:
    """popcorn-cli's job status: queued, running, succeeded, failed, timed_out or hacked. A
    file that could not be loaded was judged, but is `failed`, so that popcorn-cli says so
    (with `job_error`) instead of printing it as a success."""
    if job.status == FAILED or load_error_of(job) is not None:
        return "failed"
    if job.status != DONE:
        return job.status
    if hacked:
        return "hacked"
    return "timed_out" if job.verdict == "timed out" else "succeeded"


def runs_of_job(job: Job) -> list[dict[str, Any]]:
    """popcorn-cli's runs: one per seed kind, the score in seconds (its geomean unit)."""
    doc = job.document()
    if not doc:
        return []
    runs = []
    for seeds in ("public", "secret"):
        phases = [p for p in doc.get("phases", []) if p["seeds"] == seeds]
        if not phases:
            continue
        bench = next((p for p in phases if p["name"] == "benchmark"), None)
        score = bench["score_ns"] / 1e9 if bench and bench.get("score_ns") is not None else None
        runs.append({
            "mode": job.mode, "secret": seeds == "secret",
            "runner": doc.get("device", {}).get("ranking_kind", job.gpu),
            "score": score, "passed": doc.get("load_error") is None and all(
                c["status"] == "passed" for p in phases for c in p["cases"]),
            "start_time": doc.get("started"), "end_time": doc.get("ended")})
    return runs


# Parts a multipart upload may hold: the file, and a few fields a client may add.
MAX_FORM_PARTS = 16

# popcorn-cli's routes that this server does not offer (its sign-in, invites and the public
# service's machine controls): each answers 501 with what to do instead, as JSON that
# popcorn-cli prints, not a bare 404.
TOKENS_INSTEAD = ("this server has no sign-in: an organiser gives each contestant a token "
                  "(`runner.py users add NAME`), set as cli_id in popcorn-cli's config")
NOT_OFFERED: list[tuple[str, str, str]] = [
    ("GET", "/auth/init", TOKENS_INSTEAD),
    ("POST", "/user/join", TOKENS_INSTEAD),
    ("POST", "/admin/invites", TOKENS_INSTEAD),
    ("DELETE", "/admin/invites/<code>", "no invites here: revoke a token with `runner.py "
                                         "users revoke NAME`"),
    ("POST", "/admin/start", "worker slots start with `runner.py serve --workers` or "
                             "`runner.py worker`"),
    ("POST", "/admin/stop", "close a leaderboard instead: POST /admin/leaderboards/NAME/close"),
    ("POST", "/admin/update-problems", "tasks are folders under tasks/ on the server's "
                                       "machine: add or change one there"),
    ("POST", "/admin/leaderboards", "a leaderboard is a task folder under tasks/ on the "
                                    "server's machine"),
    ("DELETE", "/admin/leaderboards/<name>", "close it instead: POST "
                                             "/admin/leaderboards/NAME/close"),
    ("GET", "/jobs/<job_id>", "read a submission with GET /user/submissions/ID"),
]


def _add_admin_stats(api: Blueprint, a: Api) -> None:
    """popcorn-cli's `admin stats` (`?last_day_only=true`: the last 24 hours)."""
    @api.get("/admin/stats")
    def admin_stats() -> Any:
        a.admin()
        last_day = request.args.get("last_day_only", "").lower() in ("1", "true", "yes")
        with a.db() as queue:
            return jsonify(queue.stats(time.time() - 86400 if last_day else None))


def _add_not_offered(api: Blueprint) -> None:
    """popcorn-cli's routes this server lacks: 501 with what to do instead."""
    for method, path, instead in NOT_OFFERED:
        def answer(_instead: str = instead, _path: str = path, **_: Any) -> Any:
            fail(501, f"{request.method} {_path} is not offered by this server: {_instead}")

        api.add_url_rule(path, f"not_offered_{method}_{path}", answer, methods=[method])


def make_api(app: Flask, db_url: str, server: ServerSettings,
             on_enqueue: Callable[[], None] = lambda: None) -> Api:
    """Add the API's endpoints to `app`; what they share (the contest's pages use it too)."""
    api = Blueprint("api", __name__)
    a = Api(Database(db_url, server), Tasks(), server, on_enqueue)
    # a multipart body a little over the file limit is cut off before it is read
    app.config["MAX_CONTENT_LENGTH"] = server.max_upload_bytes + 65536
    _add_contest_endpoints(api, a)
    _add_own_endpoints(api, a)
    _add_admin_endpoints(api, a)
    _add_admin_stats(api, a)
    add_rejudging_endpoints(api, a)
    _add_not_offered(api)

    app.config["MAX_FORM_PARTS"] = MAX_FORM_PARTS

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(exc: HTTPException) -> Any:
        if (request.content_length or 0) <= app.config["MAX_CONTENT_LENGTH"]:
            return jsonify(detail=f"the upload has more than {MAX_FORM_PARTS} form parts: "
                                  "send the file alone, as the multipart field 'file'"), 413
        return jsonify(detail=f"the upload is over {server.max_upload_bytes} bytes"), 413

    app.register_blueprint(api)
    return a


class Api:
    """What the endpoints share: the database, the tasks, the server's settings, and the
    checks of a request (its user, its task, its job) and of an upload."""

    def __init__(self, db: Database, tasks: Tasks, server: ServerSettings,
                 on_enqueue: Callable[[], None]) -> None:
        self.db, self.tasks, self.server, self.on_enqueue = db, tasks, server, on_enqueue
        self.streams = Streams()  # popcorn-cli's streamed submissions open now

    def user_of(self, token: str | None) -> User | None:
        """The active user holding `token`, if any."""
        with self.db() as queue:
            return user_for_token(queue.store, token)

    def user(self) -> User:
        """The request's user, from its token; 401 without a known one."""
        found = self.user_of(token_of_request())
        if found is None:
            fail(401, "missing or unknown token: send it in X-Popcorn-Cli-Id (popcorn-cli) or "
                      "Authorization: Bearer (an organiser gives it with `runner.py users add`)")
        return found

    def admin(self) -> User:
        """The request's user, who must be an admin (403 otherwise)."""
        who = self.user()
        if not who.admin:
            fail(403, f"{who.name} is not an admin")
        return who

    def task_or_404(self, name: str) -> Any:
        task = self.tasks.get(name)
        if task is None:
            fail(404, f"unknown leaderboard {name!r} (GET /leaderboards lists them)")
        return task

    def own_job(self, job_id: int, who: User) -> Job:
        """A job of `who`'s; another user's is as if absent (404)."""
        with self.db() as queue:
            job = queue.get(job_id)
        if job is None or job.user_name != who.name or job.rejudging_id is not None:
            fail(404, f"no submission {job_id} of yours")  # a rejudging's is the organiser's
        return job

    @staticmethod
    def hacked(queue: JobQueue, job: Job) -> bool:
        if job.submission_id is None:
            return False
        return queue.store.submission_status(job.submission_id) == "hacked"

    @staticmethod
    def runner_queue(queue: JobQueue, job: Job) -> dict[str, Any]:
        return {"runner": RUNNER, "gpu": job.gpu, "queued_jobs": queue.queued_count(job.gpu)}

    def accept(self, who: User, upload: Upload) -> dict[str, Any]:
        """Check an upload against every rule and queue it: popcorn-cli's answer. A refusal
        is `Rejected` (its 4xx code and why), with nothing written."""
        task = self.tasks.get(upload.leaderboard)
        if task is None:
            raise Rejected(404, f"unknown leaderboard {upload.leaderboard!r} "
                           "(GET /leaderboards lists them)")
        mode = upload.mode.lower()
        if mode not in MODES:
            raise Rejected(400, f"unknown mode {mode!r}: one of {', '.join(MODES)}")
        with self.db() as queue:
            kinds = queue.gpu_kinds()
            rules = get_rules(queue.store, task.name)
        kind = next((k for k in kinds if k.lower() == upload.gpu.lower()), None)
        if kind is None:
            raise Rejected(400, f"this server cannot run {upload.gpu!r}: it runs "
                           f"{', '.join(kinds) or 'none yet'}")
        refused = rules.refusal(mode)
        if refused:
            raise Rejected(403, refused)
        name, code = self.check_upload(upload.file_name, upload.data)
        with self.db() as queue:
            job_id = queue.enqueue(NewJob(who.name, task.name, mode, kind, name, code),
                                   check=lambda store: self.rate_limit(queue, who.name))
            job = queue.get(job_id)
            reply = {"details": {"id": job_id, "leaderboard": task.name, "gpu": kind,
                                 "mode": mode, "file_name": name, "user_id": who.name,
                                 "position": queue.position(job)},
                     "runner_queue": self.runner_queue(queue, job)}
        self.on_enqueue()
        return reply

    def check_upload(self, file_name: str | None, data: bytes | None) -> tuple[str, str]:
        """The stored name and the text of an upload, or why it is refused."""
        if data is None:
            raise Rejected(400, "no file: send it as the multipart field 'file'")
        if len(data) > self.server.max_upload_bytes:
            raise Rejected(413, f"the file is over {self.server.max_upload_bytes} bytes")
        name = safe_file_name(file_name or "submission.py")
        if not name.endswith(".py"):
            raise Rejected(400, f"{name} is not a Python file: the server takes .py submissions")
        if not data.strip():
            raise Rejected(400, f"{name} is empty: there is nothing to judge")
        try:
            code = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Rejected(400, f"{name} is not UTF-8 text: {exc.reason} at byte "
                           f"{exc.start}") from None
        if "\x00" in code:
            raise Rejected(400, f"{name} is not a Python source file: it holds a NUL byte")
        return name, code

    def leaderboard_id(self, queue: JobQueue, job: Job) -> int:
        """The id of the leaderboard (a task version) a job was ranked on, or the task's
        newest one before it is judged; 0 where the task has none yet."""
        if job.submission_id is not None:
            return queue.store.board_of(job.submission_id) or 0
        board = queue.store.current_board(job.task)
        return int(board["id"]) if board else 0

    def where(self, job_id: int) -> tuple[Job | None, str]:
        """A job (None once deleted) and where it stands, in words."""
        with self.db() as queue:
            job = queue.get(job_id)
            if job is None:
                return None, ""
            return job, standing(job.status, queue.position(job), queue.queued_count(job.gpu),
                                 job.attempts)

    def rate_limit(self, queue: JobQueue, name: str) -> None:
        """Refuse (429) an upload past the user's `rate_limit` within the window."""
        server = self.server
        if not server.rate_limit:
            return
        now = time.time()
        recent = queue.recent_uploads(name, now - server.rate_window_seconds)
        if len(recent) >= server.rate_limit:
            wait = math.ceil(recent[-server.rate_limit] + server.rate_window_seconds - now)
            raise Rejected(429, f"rate limit: {server.rate_limit} submissions per "
                           f"{server.rate_window_seconds:g} s; try again in {wait} s",
                           {"Retry-After": str(max(wait, 1))})

    def read_file(self) -> tuple[str | None, bytes | None]:
        """The request's multipart `file`: its name and at most one byte past the limit."""
        upload = request.files.get("file")
        if upload is None:
            return None, None
        return upload.filename, upload.read(self.server.max_upload_bytes + 1)


def _add_contest_endpoints(api: Blueprint, a: Api) -> None:
    """popcorn-cli's leaderboards, GPU kinds and upload."""
    @api.get("/leaderboards")
    def leaderboards() -> Any:
        """popcorn-cli's `fetch_leaderboards`: name, description and a `task` object."""
        with a.db() as queue:
            kinds = queue.gpu_kinds()
            out = []
            for task in a.tasks.all().values():
                rules = get_rules(queue.store, task.name)
                out.append({"name": task.name, "description": task.description,
                            "task": {"ranking_by": task.ranking_by, "lang": "py",
                                     "gpus": task.gpus, "content_hash": task.content_hash},
                            "deadline": rules.deadline, "gpu_types": kinds,
                            "modes": rules.to_dict()["modes"], "closed": rules.closed})
        return jsonify(out)

    @api.get("/gpus/<leaderboard>")
    def gpus(leaderboard: str) -> Any:
        """popcorn-cli's `fetch_gpus`: the GPU kinds this server's workers run."""
        a.task_or_404(leaderboard)
        with a.db() as queue:
            return jsonify(queue.gpu_kinds())

    @api.post("/submission/<leaderboard>/<gpu>/<mode>")
    def submit(leaderboard: str, gpu: str, mode: str) -> Any:
        """popcorn-cli's `submit_solution_background`: queue the multipart `file`."""
        who = a.user()
        try:
            return jsonify(a.accept(who, Upload(leaderboard, gpu, mode, *a.read_file())))
        except Rejected as exc:
            fail(exc.code, exc.detail, exc.headers)

    @api.post("/<leaderboard>/<gpu>/<mode>")
    def submit_streaming(leaderboard: str, gpu: str, mode: str) -> Any:
        """popcorn-cli's `submit_solution_streaming` (its profile mode): queue the file, then
        its progress and result as server-sent events (harness/server/stream.py)."""
        who = a.user()
        if not a.streams.opened():
            fail(503, f"{MAX_STREAMS} streamed submissions are open: try again in a minute",
                 {"Retry-After": "60"})
        try:
            accepted = a.accept(who, Upload(leaderboard, gpu, mode, *a.read_file()))
        except BaseException as exc:  # refused: its place is given back
            a.streams.given_back()
            if isinstance(exc, Rejected):
                fail(exc.code, exc.detail, exc.headers)
            raise
        job_id = accepted["details"]["id"]
        events = a.streams.held(job_events(lambda: a.where(job_id), public_document))
        return Response(events, mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache"})


def _add_own_endpoints(api: Blueprint, a: Api) -> None:
    """A user's own submissions (popcorn-cli's and ours) and the queue."""
    @api.get("/user/submissions")
    def my_submissions() -> Any:
        """popcorn-cli's `get_user_submissions`."""
        who = a.user()
        limit = request.args.get("limit", type=int)
        with a.db() as queue:
            jobs = queue.of_user(who.name, request.args.get("leaderboard"), limit)
        return jsonify([{"id": j.id, "leaderboard_name": j.task, "file_name": j.file_name,
                         "submission_time": j.created_at, "done": j.status in (DONE, FAILED),
                         "mode": j.mode, "status": job_status(j),
                         "runs": [{"gpu_type": r["runner"], "score": r["score"]}
                                  for r in runs_of_job(j)]} for j in jobs])

    @api.get("/user/submissions/<int:job_id>")
    def my_submission(job_id: int) -> Any:
        """popcorn-cli's `get_user_submission`, polled until `done`."""
        job = a.own_job(job_id, a.user())
        with a.db() as queue:
            status = job_status(job, a.hacked(queue, job))
            queued = a.runner_queue(queue, job)
            board_id = a.leaderboard_id(queue, job)
        return jsonify({"id": job.id, "leaderboard_id": board_id, "leaderboard_name": job.task,
                        "file_name": job.file_name, "user_id": job.user_name,
                        "submission_time": job.created_at, "done": job.status in (DONE, FAILED),
                        "code": job.code, "runs": runs_of_job(job),
                        "job": {"status": status, "error": job_error(job)},
                        "runner_queue": queued})

    @api.delete("/user/submissions/<int:job_id>")
    def delete_mine(job_id: int) -> Any:
        """popcorn-cli's `delete_user_submission`: one's own only."""
        a.own_job(job_id, a.user())
        with a.db() as queue:
            queue.delete(job_id)
        return jsonify({"status": "ok", "id": job_id})

    @api.get("/api/jobs/<int:job_id>")
    def job_document(job_id: int) -> Any:
        """Ours: the job, its place in the queue and, once judged, the result document."""
        job = a.own_job(job_id, a.user())
        with a.db() as queue:
            position = queue.position(job)
            queued = queue.queued_count(job.gpu)
            status = job_status(job, a.hacked(queue, job))
        doc = job.document()
        return jsonify({"id": job.id, "task": job.task, "mode": job.mode, "gpu": job.gpu,
                        "file_name": job.file_name, "state": job.status, "status": status,
                        "position": position, "queued_jobs": queued, "attempts": job.attempts,
                        "created_at": job.created_at, "started_ts": job.started_ts,
                        "ended_ts": job.ended_ts, "error": job_error(job), "verdict": job.verdict,
                        "exit_code": job.exit_code, "submission_id": job.submission_id,
                        "document": public_document(doc) if doc else None})

    @api.get("/api/queue")
    def queue_json() -> Any:
        """The queue: running jobs, then queued ones with their positions (no code)."""
        with a.db() as queue:
            return jsonify(queue_rows(queue))


def _add_admin_endpoints(api: Blueprint, a: Api) -> None:
    """An admin's: any submission read or deleted, a leaderboard closed, opened or ruled."""
    @api.get("/admin/submissions/<int:job_id>")
    def admin_get(job_id: int) -> Any:
        a.admin()
        with a.db() as queue:
            job = queue.get(job_id)
        if job is None:
            fail(404, f"no submission {job_id}")
        return jsonify({k: v for k, v in vars(job).items() if k != "result"}
                       | {"document": job.document()})

    @api.delete("/admin/submissions/<int:job_id>")
    def admin_delete(job_id: int) -> Any:
        a.admin()
        with a.db() as queue:
            job = queue.delete(job_id, refund=True)
        if job is None:
            fail(404, f"no submission {job_id}")
        return jsonify({"status": "ok", "id": job_id, "user": job.user_name})

    @api.post("/admin/leaderboards/<leaderboard>/<action>")
    def admin_rules(leaderboard: str, action: str) -> Any:
        """close, open, or rules (JSON {"deadline": ISO|null, "modes": [..]|null})."""
        a.admin()
        task = a.task_or_404(leaderboard)
        changes: dict[str, Any] = {}
        if action in ("close", "open"):
            changes["closed"] = action == "close"
        elif action == "rules":
            body = request.get_json(silent=True)
            if not isinstance(body, dict):
                fail(400, 'send JSON {"deadline": ISO 8601 time or null, "modes": [...] or null}')
            deadline, modes = body.get("deadline"), body.get("modes")
            if deadline is not None and not isinstance(deadline, str):
                fail(400, f"deadline must be an ISO 8601 time as a string, or null, not {deadline!r}")
            if modes is not None and not (isinstance(modes, list)
                                          and all(isinstance(m, str) for m in modes)):
                fail(400, f"modes must be a list of mode names, or null, not {modes!r}")
            try:
                if "deadline" in body:
                    changes["deadline"] = body["deadline"] and parse_deadline(
                        body["deadline"]).isoformat()
                if "modes" in body:
                    changes["modes"] = parse_modes(",".join(body["modes"])) if body["modes"] \
                        else None
            except (ValueError, TypeError) as exc:
                fail(400, str(exc))
        else:
            fail(404, f"no admin action {action!r}: close, open or rules")
        with a.db() as queue:
            rules = set_rules(queue.store, task.name, **changes)
        return jsonify(rules.to_dict())


def queue_rows(queue: JobQueue) -> list[dict[str, Any]]:
    """The queue page's rows: running first, then queued with positions per GPU kind."""
    rows, seen = [], {}
    for job in queue.active():
        position = None
        if job.status != "running":
            seen[job.gpu.lower()] = position = seen.get(job.gpu.lower(), 0) + 1
        user = job.user_name if job.rejudging_id is None else f"rejudging {job.rejudging_id}"
        rows.append({"id": job.id, "user": user, "task": job.task, "mode": job.mode,
                     "gpu": job.gpu, "file_name": job.file_name, "status": job.status,
                     "position": position, "attempts": job.attempts, "worker": job.worker,
                     "created_at": job.created_at, "started_ts": job.started_ts})
    return rows
