"""Commands that read (or annotate) the results database: leaderboard, history, show,
export, record, mark."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from harness.consts import ExitCode
from harness.durations import readable
from harness.results.admission import Policy
from harness.results.document import case_notes
from harness.results.recording import resolve_user
from harness.settings import Settings
from harness.storage.store import Store, require_existing, resolve_db
from harness.views import boards
from harness.views.report import print_ranked


def open_store(db: str | None, read_only: bool = True) -> Store:
    """The results database; one that does not exist is an error for a command that only
    reads it (`read_only`), made for one that records."""
    url = resolve_db(db, Settings.load().store_path)
    return Store(require_existing(url) if read_only else url)


def leaderboard(console: Console, task_name: str, device: str | None, as_json: bool,
                all_versions: bool, db: str | None) -> int:
    """Print (or emit as JSON) the ranked table of a task, per device kind."""
    try:
        b = boards.board(open_store(db), task_name, device, all_versions)
    except boards.UnknownTask as exc:
        console.print(f"[red]error:[/] {exc}")
        return ExitCode.USAGE
    if as_json:
        print(json.dumps(b.to_dict(), indent=2))
        return ExitCode.OK
    if not b.tables:
        console.print(f"no results for {task_name} yet")
    for kind, table in b.tables.items():
        print_ranked(console, table, f"{task_name} on {kind}")
    if b.older:
        console.print(f"[dim]{b.older} result(s) from earlier versions of the task are "
                      "kept; --all-versions ranks them together[/]")
    return ExitCode.OK


def history(console: Console, task: str | None, user: str | None, as_json: bool,
            db: str | None) -> int:
    """Every recorded submission, oldest first (as a table or JSON)."""
    rows = boards.history(open_store(db), task, user)
    if as_json:
        print(json.dumps(rows, indent=2))
        return ExitCode.OK
    table = Table(title="History", title_justify="left")
    for col in ("id", "task", "user", "file", "when", "status", "runs"):
        table.add_column(col)
    for row in rows:
        runs = ", ".join(
            f"{r['mode']}/{r['seeds']}: {'pass' if r['passed'] else 'FAIL'}"
            + (f" {readable(r['score_ns'])}" if r["score_ns"] else "") for r in row["runs"])
        table.add_row(str(row["id"]), row["task"], escape(row["user_name"]),
                      escape(row["file_name"]), row["created_at"][:19].replace("T", " "),
                      row["status"], escape(runs))
    console.print(table)
    return ExitCode.OK


def show(console: Console, submission_id: int, code: bool, as_json: bool, db: str | None) -> int:
    """One recorded submission: its runs, cases (with their flags and notes), screen
    findings and warnings (and code)."""
    sub = boards.submission(open_store(db), submission_id, code)
    if sub is None:
        console.print(f"[red]error:[/] no submission {submission_id}")
        return ExitCode.USAGE
    if as_json:
        print(json.dumps(sub, indent=2))
        return ExitCode.OK
    console.print(f"[bold]Submission {sub['id']}[/] {escape(sub['file_name'])} by "
                  f"{escape(sub['user_name'])} on {sub['task']} ({sub['created_at']}), "
                  f"status {sub['status']}" + (f", not ranked: {sub['refused']}" if sub["refused"] else ""))
    console.print(f"sha256 {sub['sha256']}  task version {sub['content_hash'][:12]}")
    for f in sub["screen"]:
        by = f"{f['by']}: " if f.get("by") else ""
        console.print(f"  screen [{f['severity']}] {by}{f['rule']} (line {f['line']}): "
                      f"{escape(f['explanation'])}")
    for run in sub["runs"]:
        verdict = "passed" if run["passed"] else "FAILED"
        console.print(f"run {run['id']}: {run['mode']} / {run['seeds']} seeds on "
                      f"{run['device_name']}: {verdict}, score {readable(run['score_ns'])}")
        for warning in (run.get("messages") or {}).get("warnings") or []:
            console.print(f"  [yellow]warning:[/] {escape(warning)}")
        for case in run["cases"]:
            mean = readable(case.get("score_ns"))
            console.print(f"    {case['phase']} #{case['index']}: {case['status']} {mean} "
                          f"{escape((case.get('message') or '').splitlines()[0][:100]) if case.get('message') else ''}")
            # what the report printed under the table when the run was made
            for flag in case.get("flags") or []:
                console.print(f"      [red]flag:[/] {escape(flag)}")
            for note in case_notes(case.get("integrity")):
                console.print(f"      [yellow]note:[/] {escape(note)}")
    if code:
        console.print(Syntax(sub["code"], "python", line_numbers=True))
    return ExitCode.OK


def export(fmt: str, output: Path | None, db: str | None) -> int:
    rows = open_store(db).export_rows()
    if fmt == "json":
        text = json.dumps(rows, indent=2)
    else:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["run_id"])
        writer.writeheader()
        writer.writerows(rows)
        text = buf.getvalue()
    if output:
        output.write_text(text)
    else:
        sys.stdout.write(text)
    return ExitCode.OK


def record(console: Console, documents: list[Path], user: str | None, db: str | None,
           repeat: int, policy: Policy) -> int:
    """Record result documents written by `submit --json` (e.g. CI artifacts), each as
    admission decides (harness/results/admission.py); exit code 2 where one was refused."""
    from harness.results.admission import Outcome, admit
    from harness.results.document import document_to_evaluation
    from harness.results.recording import record_evaluation
    from harness.results.signing import SignatureError, signing_key, verify

    store = open_store(db, read_only=False)
    key = signing_key()
    refused = False
    for path in documents:
        try:
            doc: dict[str, Any] = json.loads(Path(path).read_text())
            ev = document_to_evaluation(doc)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            console.print(f"[red]error:[/] {path}: not a result document ({exc})")
            return ExitCode.USAGE
        try:
            if key:
                verify(doc, key)
        except SignatureError as exc:
            console.print(f"[red]refused[/] {path}: {exc}")
            refused = True
            continue
        decision = admit(doc, policy)
        if decision.outcome == Outcome.NOT_JUDGED:  # the machine's side: the others count
            console.print(f"[yellow]skipped[/] {path}: {decision.reason}")
            continue
        if not decision.recorded:
            console.print(f"[red]refused[/] {path}: {decision.reason}")
            refused = True
            continue
        board = store.leaderboard(ev.task["name"], ev.task["content_hash"])
        who = user or doc.get("record", {}).get("user") or resolve_user(None)
        for _ in range(repeat):
            sub_id = record_evaluation(store, board, who, ev, decision)
        console.print(f"recorded {path} as submission {sub_id}")
    return ExitCode.USAGE if refused else ExitCode.OK


def mark(console: Console, submission_id: int, status: str, db: str | None) -> int:
    if not open_store(db).set_status(submission_id, status):
        console.print(f"[red]error:[/] no submission {submission_id}")
        return ExitCode.USAGE
    console.print(f"submission {submission_id} is now {status}")
    return ExitCode.OK
