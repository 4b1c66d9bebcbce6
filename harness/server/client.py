"""`runner.py submit FILE --server URL`: upload to a contest server, follow the job, then
print the report a local run prints, from the stored result document, and exit with the
same code. The token comes from --token, $HARNESS_TOKEN or the token file."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.consts import ExitCode
from harness.options import RunOptions
from harness.storage.queue import standing

ENV_TOKEN = "HARNESS_TOKEN"
POLL_SECONDS = 0.5


class ServerError(RuntimeError):
    """The server refused a request (its `detail`) or could not be reached."""


def token_file() -> Path:
    """Where a contestant may keep the token (one line): $XDG_CONFIG_HOME/kernel-harness/token."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kernel-harness" / "token"


def resolve_token(flag: str | None) -> str | None:
    """--token, else $HARNESS_TOKEN, else the token file's first line."""
    if flag:
        return flag.strip()
    if os.environ.get(ENV_TOKEN):
        return os.environ[ENV_TOKEN].strip()
    path = token_file()
    if path.is_file():
        return path.read_text().strip() or None
    return None


class Client:
    """Requests to one server with one token."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url.rstrip("/"), token

    def call(self, method: str, path: str, body: bytes | None = None,
             content_type: str | None = None) -> Any:
        headers = {"X-Popcorn-Cli-Id": self.token, "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.url + path, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read()).get("detail")
            except (ValueError, AttributeError):
                detail = None
            raise ServerError(f"the server answered {exc.code}: {detail or exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ServerError(f"cannot reach {self.url}: {getattr(exc, 'reason', exc)}") from None

    def upload(self, task: str, gpu: str, mode: str, name: str, data: bytes) -> dict[str, Any]:
        """POST the file as popcorn-cli does (multipart field `file`)."""
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"{name}\"\r\nContent-Type: text/x-python\r\n\r\n").encode() + data + \
            f"\r\n--{boundary}--\r\n".encode()
        path = "/submission/" + "/".join(urllib.parse.quote(p, safe="") for p in (task, gpu, mode))
        return self.call("POST", path, body, f"multipart/form-data; boundary={boundary}")


def pick_gpu(asked: str | None, directive: list[str], served: list[str]) -> str:
    """--gpu, else the file's first #!POPCORN gpu this server runs, else the server's first."""
    if asked:
        return asked
    lower = {k.lower(): k for k in served}
    for gpu in directive:
        if gpu.lower() in lower:
            return lower[gpu.lower()]
    if not served:
        raise ServerError("the server has no worker yet: it runs no GPU kind")
    return served[0]


def run_remote(opts: RunOptions, console: Console, server: str, token: str | None,
               gpu: str | None) -> int:
    """Submit `opts.file` to `server`, wait, report; the exit code."""
    from harness.loading.directives import parse_directives

    local = [flag for flag, value in (("--case", opts.cases), ("--device", opts.device),
                                      ("--timeout", opts.timeout), ("--db", opts.db),
                                      ("--user", opts.user), ("--config", opts.config),
                                      ("--repeat", opts.repeat != 1)) if value]
    if local:
        console.print(f"[red]error:[/] {', '.join(local)} cannot go with --server: the server's "
                      "organiser sets how it judges, and your token says who you are")
        return ExitCode.USAGE
    token = resolve_token(token)
    if not token:
        console.print(f"[red]error:[/] no token: pass --token, set ${ENV_TOKEN} or write it to "
                      f"{token_file()} (the organiser gives it with `runner.py users add`)")
        return ExitCode.USAGE
    file = Path(opts.file)
    try:
        data = file.read_bytes()
    except OSError as exc:
        console.print(f"[red]error:[/] cannot read {file}: {exc.strerror}")
        return ExitCode.USAGE
    directives = parse_directives(data.decode("utf-8", "replace"))
    task = opts.task or directives.leaderboard
    if not task:
        console.print("[red]error:[/] no task: pass --task or start the file with "
                      "'#!POPCORN leaderboard NAME'")
        return ExitCode.USAGE
    client = Client(server, token)
    try:
        kind = pick_gpu(gpu, directives.gpus, client.call(
            "GET", "/gpus/" + urllib.parse.quote(task, safe="")))
        accepted = client.upload(task, kind, opts.mode, file.name, data)
        job_id = accepted["details"]["id"]
        console.print(f"submission {job_id} accepted by {escape(server)}: {task} on {kind}, "
                      f"mode {opts.mode}")
        job = follow(client, job_id, console)
    except ServerError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    return report(console, client, opts, job)


def follow(client: Client, job_id: int, console: Console) -> dict[str, Any]:
    """Poll the job until it ends, saying where it is whenever that changes."""
    said, began = None, time.monotonic()
    with console.status("waiting", spinner="dots") as status:
        while True:
            job = client.call("GET", f"/api/jobs/{job_id}")
            if job["state"] in ("done", "failed"):
                return job
            where = standing(job["state"], job["position"], job["queued_jobs"], job["attempts"])
            status.update(f"{where} ({time.monotonic() - began:.0f} s)")
            if where != said and not console.is_terminal:
                console.print(where)
            said = where
            time.sleep(POLL_SECONDS)


def report(console: Console, client: Client, opts: RunOptions, job: dict[str, Any]) -> int:
    """The local report from the stored document; the local exit code."""
    from harness.results.document import document_to_evaluation, write_json
    from harness.results.ranking import Ranked
    from harness.views.report import print_evaluation, print_ranked
    from harness.views.summary import write_summary

    doc = job["document"]
    if doc is None:
        console.print(f"[red]not judged:[/] {escape(job['error'] or 'no result')}")
        return ExitCode.INTERNAL
    ev = document_to_evaluation(doc)
    print_evaluation(console, ev, opts.verbose)
    if job["error"]:
        console.print(f"[yellow]{escape(job['error'])}[/]")
    record = doc.get("record") or {}
    sub = record.get("submission_id")
    if sub is not None and ev.mode == "leaderboard":
        kind = ev.device["ranking_kind"]
        board = client.call("GET", f"/api/leaderboard/{urllib.parse.quote(ev.task['name'])}"
                                   f"?device={urllib.parse.quote(kind)}")
        table = [Ranked(**row) for row in board["devices"].get(kind, [])]
        print_ranked(console, table, f"{ev.task['name']} on {kind}", sub)
        if record.get("rank"):
            console.print(f"submission {sub} by {escape(record['user'])}: [bold]rank "
                          f"{record['rank']}[/] of {record['ranked']} (when it was judged)")
        else:
            why = record.get("refused") or ("it did not pass every public and secret case"
                                             if not ev.passed else "a better earlier result")
            console.print(f"submission {sub} is recorded but not ranked: {escape(why)}")
    elif sub is not None:
        console.print(f"recorded as submission {sub} (mode {ev.mode}: not ranked)")
    if opts.json_path:
        write_json(opts.json_path, doc)
    write_summary(opts.summary_md, ev, None)
    return ExitCode.INTERNAL if job["error"] else ev.exit_code
