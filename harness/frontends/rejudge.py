"""`runner.py rejudge TASK`: a task's stored submissions evaluated again on its current
version and this harness, the static screen included, their new results kept beside the
originals (changing no ranking) until the organiser applies (`--apply ID`) or cancels
(`--cancel ID`) the rejudging as a whole.

Which submissions: by default those that rank on their own task version (each program's
ranked one, every device kind); `--top N` the first N of each such ranking; `--all` every
submission of the task that was judged and is not hacked or superseded; `--user` and
`--id` narrow or name them. The evaluations run as `batch` runs them (a judge process per
evaluation, on the machine's GPUs or `--jobs` CPU slots), in leaderboard mode.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.consts import ExitCode, JobState, Mark
from harness.durations import readable
from harness.execution.backends import make_backend
from harness.execution.protocol import Result, Unjudged
from harness.frontends.batch import Batch, Job, _run_live
from harness.options import RunOptions
from harness.results.admission import admit
from harness.results.ranking import rank
from harness.results.recording import record_evaluation, resolve_user
from harness.settings import Settings
from harness.storage import rejudgings
from harness.storage.store import Store, StoreError, resolve_db

NOT_COUNTED = (Mark.HACKED, Mark.PENDING, Mark.SUPERSEDED)


@dataclass
class Selection:
    """Which stored submissions a rejudging takes."""

    ids: tuple[int, ...] = ()
    users: tuple[str, ...] = ()
    top: int | None = None
    everything: bool = False


def select(store: Store, task: str, chosen: Selection) -> list[dict[str, Any]]:
    """The originals (entries of `store.entries`) that `chosen` names, oldest first."""
    entries = [e for e in store.entries(task) if e["status"] not in NOT_COUNTED]
    if chosen.ids:
        entries = [e for e in entries if e["id"] in chosen.ids]
    elif not chosen.everything:
        ranked: set[int] = set()
        for version in {e["content_hash"] for e in entries}:
            of_version = [e for e in entries if e["content_hash"] == version]
            for kind in {e["device_kind"] for e in of_version}:
                table = rank(of_version, kind)[:chosen.top] if chosen.top else rank(of_version,
                                                                                   kind)
                ranked |= {row.submission_id for row in table}
        entries = [e for e in entries if e["id"] in ranked]
    if chosen.users:
        entries = [e for e in entries if e["user_name"] in chosen.users]
    return sorted(entries, key=lambda e: e["id"])


class Rejudge(Batch):
    """A batch whose files are stored submissions, each recorded as its original's
    rejudged result: under the original's user, `rejudging` until applied."""

    def __init__(self, folder: Path, originals: list[dict[str, Any]], options: RunOptions,
                 settings: Settings) -> None:
        self.originals: dict[Path, dict[str, Any]] = {}
        store = Store(resolve_db(options.db, settings.store_path))
        try:
            for entry in originals:
                sub = store.submission(entry["id"])
                path = folder / str(entry["id"]) / sub["file_name"]
                path.parent.mkdir(parents=True)
                path.write_text(sub["code"])
                self.originals[path] = entry
        finally:
            store.close()
        super().__init__(list(self.originals), options, settings)
        self.board = self.boards[self.jobs[0].task]  # the task's current version
        self.rid = rejudgings.open_rejudging(self.store, self.board.task,
                                             self.board.content_hash, resolve_user(None),
                                             [e["id"] for e in originals])

    def finish(self, job: Job, result: Result) -> None:
        """Record one new result beside its original (the driver's one writer)."""
        with self.lock:
            job.wall = time.time() - job.started
            job.state = JobState.DONE
            original = self.originals[job.file]["id"]
            if isinstance(result, Unjudged):
                job.error = f"not judged: {result.reason}"
            else:
                job.doc = result.document
                decision = admit(job.doc, self.policy)
                if not decision.recorded:
                    job.error = decision.reason
            if job.error:
                rejudgings.set_outcome(self.store, self.rid, original, None, None, job.error)
                return
            user = self.originals[job.file]["user_name"]
            job.submission_id = record_evaluation(
                self.store, self.boards[job.task], user, result.as_evaluation(),
                replace(decision, mark=Mark.PENDING))
            rejudgings.set_outcome(self.store, self.rid, original, job.submission_id,
                                   decision.mark)


def run_rejudge(console: Console, chosen: Selection, options: RunOptions,
                jobs: int | None) -> int:
    """`runner.py rejudge TASK`: evaluate the chosen submissions again and show what
    would change; exit 0 when every one was judged."""
    from harness.loading.task_folder import TaskError, load_task

    settings = Settings.load(options.config)
    try:
        task = load_task(options.task)
    except TaskError as exc:
        console.print(f"[red]error:[/] {exc}")
        return ExitCode.USAGE
    store = Store(resolve_db(options.db, settings.store_path))
    try:
        originals = select(store, task.name, chosen)
    finally:
        store.close()
    if not originals:
        console.print(f"nothing to rejudge: no submission of {task.name} is chosen")
        return ExitCode.USAGE
    from harness.execution.stopping import stop_on_sigterm

    stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="harness-rejudge-") as folder:
        batch = Rejudge(Path(folder), originals, replace(options, mode="leaderboard"), settings)
        try:
            console.print(f"rejudging {batch.rid}: {len(originals)} submissions of {task.name} "
                          f"on version {batch.board.content_hash[:12]}")
            _run_live(console, batch, make_backend("local", None, jobs))
            show(console, batch.store, batch.rid)
        finally:
            batch.store.close()
    console.print(f"apply it with `runner.py rejudge {options.task} --apply {batch.rid}`, "
                  f"or drop it with --cancel {batch.rid}")
    return ExitCode.OK if not any(j.error for j in batch.jobs) else ExitCode.FAILED


def verdict(sub: dict[str, Any] | None) -> tuple[str, float | None]:
    """A stored submission's leaderboard verdict and score: its secret run's (or its
    public one's, where it has no secret run)."""
    if sub is None:
        return "", None
    runs = {r["seeds"]: r for r in sub["runs"]}
    run = runs.get("secret") or runs.get("public")
    if run is None:
        return "not run", None
    passed = all(r["passed"] for r in sub["runs"])
    return ("passed" if passed else "failed"), run["score_ns"] if passed else None


def changes(store: Store, rid: int) -> list[dict[str, Any]]:
    """Per original: its verdict and score, the new ones, the change, and the new
    screen's findings the original did not have."""
    found = rejudgings.rejudging(store, rid)
    if found is None:
        raise StoreError(f"no rejudging {rid}")
    rows = []
    for item in found["items"]:
        old, new = store.submission(item["original_id"]), None
        if item["submission_id"] is not None:
            new = store.submission(item["submission_id"])
        (was, before), (now_, after) = verdict(old), verdict(new)
        seen = {f["rule"] for f in (old or {}).get("screen") or []}
        rows.append({
            "original": item["original_id"], "new": item["submission_id"],
            "user": old["user_name"] if old else "", "file": old["file_name"] if old else "",
            "was": was, "before_ns": before, "now": now_ if new else "not judged",
            "after_ns": after, "mark": item["mark"], "error": item["error"],
            "change": (after / before - 1) if before and after else None,
            "new_findings": sorted({f["rule"] for f in (new or {}).get("screen") or []
                                    if f["severity"] in ("hard", "flag")} - seen)})
    return rows


def rankings(store: Store, rid: int) -> dict[str, tuple[list, list]]:
    """Per device kind, the ranking of the originals as they stand and the one their new
    results would make once applied (each with the mark admission gave it)."""
    found = rejudgings.rejudging(store, rid)
    items = found["items"] if found else []
    originals = {i["original_id"] for i in items}
    marks = {i["submission_id"]: i["mark"] for i in items if i["submission_id"] is not None}
    entries = store.entries(found["task"]) if found else []
    before = [e for e in entries if e["id"] in originals]
    after = [dict(e, status=marks[e["id"]]) for e in entries if e["id"] in marks]
    kinds = sorted({e["device_kind"] for e in before + after})
    return {kind: (rank(before, kind), rank(after, kind)) for kind in kinds}


def show(console: Console, store: Store, rid: int) -> None:
    """A rejudging: what changed per submission, then each ranking before and after."""
    found = rejudgings.rejudging(store, rid)
    if found is None:
        raise StoreError(f"no rejudging {rid}")
    table = Table(title=f"Rejudging {rid} of {found['task']} on version "
                  f"{found['content_hash'][:12]} ({found['state']}, by {found['created_by']})",
                  title_justify="left")
    for col in ("submission", "user", "file", "was", "now", "score before", "after", "change",
                "new findings, or why not judged", "new #"):
        table.add_column(col)
    for row in changes(store, rid):
        now_style = "green" if row["now"] == "passed" else "red"
        moved = row["was"] != row["now"]
        change = f"{row['change']:+.1%}" if row["change"] is not None else ""
        why = row["error"] or ", ".join(row["new_findings"])
        table.add_row(str(row["original"]), escape(row["user"]), escape(row["file"]), row["was"],
                      f"[{now_style}]{'[bold]' if moved else ''}{row['now']}[/][/]" if moved
                      else f"[{now_style}]{row['now']}[/]",
                      readable(row["before_ns"]) if row["before_ns"] else "",
                      readable(row["after_ns"]) if row["after_ns"] else "", change,
                      escape(why), str(row["new"] or ""))
    console.print(table)
    for kind, (before, after) in rankings(store, rid).items():
        ranked = Table(title=f"Ranking on {kind}: before | after", title_justify="left")
        for col in ("rank", "before", "score", "after", "score "):
            ranked.add_column(col)
        for i in range(max(len(before), len(after))):
            b = before[i] if i < len(before) else None
            a = after[i] if i < len(after) else None
            ranked.add_row(str(i + 1), escape(b.user) if b else "",
                           readable(b.score_ns) if b else "", escape(a.user) if a else "",
                           readable(a.score_ns) if a else "")
        console.print(ranked)


def settle(console: Console, db: str | None, rid: int, action: str,
           config: Path | None = None) -> int:
    """`--apply ID` or `--cancel ID` (or `--show ID`): the rejudging settled as a whole."""
    settings = Settings.load(config)
    store = Store(resolve_db(db, settings.store_path))
    try:
        if action == "show":
            show(console, store, rid)
            return ExitCode.OK
        found = (rejudgings.apply if action == "apply" else rejudgings.cancel)(store, rid)
        judged = sum(1 for i in found["items"] if i["submission_id"] is not None)
        if action == "apply":
            console.print(f"rejudging {rid} applied: {judged} new results count now, their "
                          "originals are superseded (kept in the history)")
        else:
            console.print(f"rejudging {rid} cancelled: its {judged} new results are gone, "
                          "the rankings are as they were")
        return ExitCode.OK
    finally:
        store.close()


def list_rejudgings(console: Console, db: str | None, task: str,
                    config: Path | None = None) -> int:
    """`--list`: a task's rejudgings, newest first."""
    settings = Settings.load(config)
    store = Store(resolve_db(db, settings.store_path))
    try:
        table = Table(title=f"Rejudgings of {task}", title_justify="left")
        for col in ("id", "version", "submissions", "by", "when", "state"):
            table.add_column(col)
        for r in rejudgings.rejudgings_of(store, task):
            table.add_row(str(r["id"]), r["content_hash"][:12], str(r["originals"]),
                          escape(r["created_by"]), r["created_at"][:19], r["state"])
        console.print(table)
        return ExitCode.OK
    finally:
        store.close()
