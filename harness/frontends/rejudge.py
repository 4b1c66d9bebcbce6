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
from dataclasses import replace
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
from harness.results.recording import record_evaluation, resolve_user
from harness.results.rejudging import Selection, changes, rankings, select
from harness.settings import Settings
from harness.storage import rejudgings
from harness.storage.store import Store, StoreError, require_existing, resolve_db


class Rejudge(Batch):
    """A batch whose files are stored submissions, each recorded as its original's
    rejudged result: under the original's user, `rejudging` until applied."""

    def __init__(self, folder: Path, originals: list[dict[str, Any]], options: RunOptions,
                 settings: Settings) -> None:
        """`originals`: the stored submissions (`Store.submission`), their code written
        into `folder`, one folder each."""
        self.originals: dict[Path, dict[str, Any]] = {}
        for sub in originals:
            path = folder / str(sub["id"]) / sub["file_name"]
            path.parent.mkdir(parents=True)
            path.write_text(sub["code"])
            self.originals[path] = sub
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
    store = Store(require_existing(resolve_db(options.db, settings.store_path)))
    try:
        originals = [store.submission(e["id"]) for e in select(store, task.name, chosen)]
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


def show(console: Console, store: Store, rid: int) -> None:
    """A rejudging: what changed per submission, then each ranking before and after."""
    found = rejudgings.rejudging(store, rid)
    if found is None:
        raise StoreError(f"no rejudging {rid}")
    table = Table(title=f"Rejudging {rid} of {found['task']} on version "
                  f"{found['content_hash'][:12]} ({found['state']}, by {found['created_by']})",
                  title_justify="left")
    for col in ("submission", "user", "file", "was", "now", "score before", "after", "change",
                "why it fails, new findings", "new #"):
        table.add_column(col)
    for row in changes(store, found):
        now_style = "green" if row["now"] == "passed" else "red"
        moved = row["was"] != row["now"]
        change = f"{row['change']:+.1%}" if row["change"] is not None else ""
        why = "; ".join(filter(None, [row["error"], row["fails_because"],
                                      ", ".join(row["new_findings"])]))
        table.add_row(str(row["original"]), escape(row["user"]), escape(row["file"]), row["was"],
                      f"[{now_style}]{'[bold]' if moved else ''}{row['now']}[/][/]" if moved
                      else f"[{now_style}]{row['now']}[/]",
                      readable(row["before_ns"]) if row["before_ns"] else "",
                      readable(row["after_ns"]) if row["after_ns"] else "", change,
                      escape(why), str(row["new"] or ""))
    console.print(table)
    for kind, (before, after) in rankings(store, found).items():
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
    store = Store(require_existing(resolve_db(db, settings.store_path)))
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
    store = Store(require_existing(resolve_db(db, settings.store_path)))
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
