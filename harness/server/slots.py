"""Worker slots: each takes jobs from the queue, one at a time, and judges each exactly as
`runner.py batch` does (a judge process pinned to its GPU, `harness.execution.judge_process`:
the same sandbox and judge as `runner.py submit`), then records the result and closes the
job in one transaction. One slot per GPU, so a GPU never runs two evaluations at once;
`runner.py worker` runs slots on a GPU machine, `runner.py serve --workers` beside the API.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.consts import WORKER_START
from harness.execution.judge_template import JudgeTemplate
from harness.execution.protocol import Unjudged
from harness.options import RunOptions
from harness.server.gang import Gang
from harness.settings import ServerSettings, Settings
from harness.storage import rejudgings
from harness.storage.queue import FAILED, QUEUED, Job, JobQueue
from harness.storage.store import Store, database_errors

# The pause before a slot connects again to a database that failed (s).
RECONNECT_S = 1.0

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"


@dataclass
class Slot:
    """One place an evaluation runs: a GPU (its environment pins it) or a CPU slot."""

    name: str  # unique across machines: host, process, slot
    kind: str  # the GPU kind jobs ask for (a ranking kind: "H200", "CPU")
    env: dict[str, str]
    # Its judges are forked from this (harness/execution/judge_template.py).
    template: JudgeTemplate = field(default_factory=JudgeTemplate, repr=False, compare=False)


def gpu_kind(name: str) -> str:
    """A device's ranking kind from its name, as the judge reports it."""
    from harness.judging import DeviceInfo

    return DeviceInfo("cuda", name, "default").ranking_kind


def make_slots(device: str | None, workers: str | int) -> list[Slot]:
    """One slot per local GPU (`auto`, or the first N GPUs), else N CPU slots (`auto`: 1)."""
    import torch

    from harness.execution.backends import local_slots

    count = None if workers == "auto" else int(workers)
    gpus = device != "cpu" and torch.cuda.is_available()
    envs = local_slots(device, count if not gpus else None)
    if gpus and count is not None:
        envs = envs[:count]
    host = f"{socket.gethostname()}:{os.getpid()}"
    slots = []
    for i, env in enumerate(envs):
        kind = gpu_kind(torch.cuda.get_device_name(i)) if gpus else "CPU"
        slots.append(Slot(f"{host}:{env['_where']}", kind, env))
    return slots


MAX_NAME = 100  # characters of a stored file name


def safe_file_name(name: str) -> str:
    """The last part of an uploaded file's name, in letters, digits and ._- only."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(c if c in SAFE else "_" for c in base).lstrip(".") or "submission.py"
    if len(cleaned) <= MAX_NAME:
        return cleaned
    stem, dot, suffix = cleaned.rpartition(".")
    if dot and stem and len(suffix) < 10:  # cut the stem, keep what says the file's kind
        return stem[:MAX_NAME - len(suffix) - 1] + "." + suffix
    return cleaned[:MAX_NAME]


class Judging:
    """What every slot of one process shares: the database, the organiser's options
    (cases, device, timeout, settings file) and the settings."""

    def __init__(self, db_url: str, options: RunOptions, settings: Settings,
                 server: ServerSettings, log: Callable[[str], None]) -> None:
        self.db_url, self.options, self.settings, self.server = db_url, options, settings, server
        self.log = log
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.gang = Gang([])  # this process's slots (`start_slots`), lent to multi-slot jobs

    def queue(self) -> JobQueue:
        """A queue on a connection of its own (one per thread)."""
        return JobQueue(Store(self.db_url), self.server.lease_seconds, self.server.max_attempts)

    def serve(self, slot: Slot, poll: float = 1.0) -> None:
        """Take and judge jobs until told to stop. A database that fails (a dropped
        connection, a restarted server) is connected to again, after a pause; a job it
        failed in the middle of runs again once its lease runs out."""
        queue: JobQueue | None = None
        try:
            while not self.stopping.is_set():
                try:
                    if queue is None:
                        queue = self.queue()
                        queue.register_worker(slot.name, slot.kind)  # its kind is served now
                        self._warm(slot)  # once (a running template is kept)
                    self.gang.lend_while_wanted(slot, self.stopping)
                    job = queue.claim(slot.name, [slot.kind])
                except database_errors() as exc:
                    self.log(f"[yellow]{slot.env['_where']}: the database failed[/] "
                             f"({escape(repr(exc))}); connecting again")
                    queue = _dropped(queue)
                    self.stopping.wait(RECONNECT_S)
                    continue
                if job is None:
                    self.wake.wait(poll)
                    self.wake.clear()
                    continue
                try:
                    self.judge(queue, slot, job)
                except database_errors() as exc:
                    self.log(f"[yellow]job {job.id}: the database failed[/] "
                             f"({escape(repr(exc))}); it runs again once its lease runs out")
                    queue = _dropped(queue)
                except Exception as exc:  # noqa: BLE001 - the lease brings the job back
                    self.log(f"[red]job {job.id}: internal error[/] {escape(repr(exc))}")
                    queue = _dropped(queue)  # the next job on a fresh connection
        finally:
            _dropped(queue)
            slot.template.close()

    def judge(self, queue: JobQueue, slot: Slot, job: Job) -> None:
        """Judge one claimed job, renewing its lease meanwhile, and close it."""
        done = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job, done), daemon=True)
        beat.start()
        began = time.time()
        others: list[Slot] | None = []
        try:
            others = self._gather(slot, job)  # the lease is renewed while it waits
            if others is not None:
                try:
                    outcome = self._evaluate(queue.store, job, slot, others)
                finally:
                    if others:
                        self.gang.release()
        finally:
            done.set()
            beat.join()
        if others is None and not self.stopping.is_set():  # another job gathers slots
            queue.release(job)
            return
        if self.stopping.is_set():  # stopped mid-job: the job waits for the next worker
            queue.release(job)
            self.log(f"job {job.id}: stopped, queued again")
            return
        if outcome.pop("retry", False):  # the machine's side: the job runs again
            state = queue.retry(job, outcome["error"])
            if state == FAILED:
                _not_rejudged(queue, job, outcome["error"])
            self.log(f"job {job.id}: not judged ({escape(outcome['error'])}); "
                     + {QUEUED: "queued again", FAILED: "no attempts left: failed",
                        None: "its lease was lost"}[state])
            return
        closed = queue.finish(job, **outcome)
        if closed and outcome["error"]:
            _not_rejudged(queue, job, outcome["error"])
        what = outcome["error"] or outcome["verdict"]
        where = " + ".join(s.env["_where"] for s in [slot, *others])
        self.log(f"job {job.id} ({escape(job.user_name)}, {job.task} {job.mode}) on "
                 f"{where}: {escape(str(what))}, {time.time() - began:.1f} s"
                 + ("" if closed else " [yellow](its lease was lost: result dropped)[/]"))

    def _gather(self, slot: Slot, job: Job) -> list[Slot] | None:
        """The other slots `job` runs on beside `slot` (a multi-GPU task's ranks: as many
        as its largest case, where this process has that many, else none), once they are
        lent to it (gang.py); None where they cannot be had now."""
        from harness.execution.slot_queue import ranks_of, slots_taken
        from harness.loading.task_folder import TaskError, load_task

        try:
            task = load_task(job.task)
        except TaskError:
            return []  # its judging says why
        need = slots_taken(ranks_of(task, self.options.cases), self.gang.size)
        return [] if need == 1 else self.gang.gather(slot, need - 1, self.stopping)

    def _warm(self, slot: Slot) -> None:
        """Start the slot's judge template now, beside the first claims, so that the first
        job after a start does not wait for its imports; after the slot's registration,
        which the API waits for before it accepts uploads of the slot's kind."""
        from harness.execution.judge_process import template_env_of
        from harness.execution.protocol import JudgeRequest

        env = template_env_of(JudgeRequest(self.options, slot.env))
        if env is not None:
            slot.template.start_soon(env)

    def _heartbeat(self, job: Job, done: threading.Event) -> None:
        """Renew the job's lease until `done`; a beat the database failed is tried again
        on a new connection at the next one."""
        queue: JobQueue | None = None
        try:
            while not done.wait(self.server.lease_seconds / 3):
                try:
                    queue = queue or self.queue()
                    if not queue.heartbeat(job):
                        return
                except database_errors():  # a new connection at the next beat
                    queue = _dropped(queue)
        finally:
            _dropped(queue)

    def _evaluate(self, store: Store, job: Job, slot: Slot,
                  others: list[Slot]) -> dict[str, Any]:
        """Run the judge process on the job's code, on `slot` and the `others` lent to it
        (their GPUs all visible to it); what `JobQueue.finish` takes."""
        from harness.execution.backends import joined
        from harness.execution.judge_process import run_judge
        from harness.execution.protocol import JudgeRequest
        from harness.judging import run_folder_prefix
        from harness.loading.task_folder import TaskError, load_task

        try:
            task = load_task(job.task)
        except TaskError as exc:
            return self._unjudged(f"the task cannot be loaded: {exc}", retry=False)
        board = store.leaderboard(task.name, task.content_hash)
        with tempfile.TemporaryDirectory(prefix=run_folder_prefix("job")) as tmp:
            path = Path(tmp) / safe_file_name(job.file_name)
            path.write_text(job.code)
            secret = board.secret if job.mode == "leaderboard" else None
            # the server records as the mode says (leaderboard runs), whatever its options
            request = JudgeRequest.of(replace(self.options, record=None), path, task,
                                      self.settings, job.mode, secret)
            # a judge of several slots starts from scratch: the template serves one's GPU
            env = joined([slot.env, *(o.env for o in others)])
            result = run_judge(replace(request, env=env), None if others else slot.template)
        if isinstance(result, Unjudged):
            return self._unjudged(f"not judged: {result.reason}", result.retry)
        rejudged = (job.rejudging_id, job.original_id) if job.rejudging_id else None
        return self.admitted(result.document, board, job.user_name, request.options.records,
                             rejudged)

    @staticmethod
    def _unjudged(reason: str, retry: bool, document: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
        """What `JobQueue.finish` takes for a job that was not judged; `retry`: the
        machine's side, so it runs again."""
        return {"document": document, "verdict": None, "exit_code": None, "error": reason,
                "retry": retry}

    def admitted(self, doc: dict[str, Any], board: Any, user: str, records: bool,
                 rejudged: tuple[int, int] | None = None) -> dict[str, Any]:
        """What `JobQueue.finish` takes for a judge's answer, as admission decides
        (harness/results/admission.py): a refused one is the job's error, with no verdict;
        an admitted one records (where the mode records) when the queue finishes it. A
        rejudging's job (`rejudged`: the rejudging and the original) records its result
        beside the original, ranked nowhere until the rejudging is applied, and none once
        it is settled."""
        from harness.results.admission import Outcome, Policy, admit

        policy = Policy.of(self.settings, self.options.allow_partial_containment,
                           self.options.allow_shared_gpu)
        decision = admit(doc, policy)
        if decision.outcome == Outcome.NOT_JUDGED or (records and not decision.recorded):
            # a worker that never started: the machine's side, so it runs again
            machine = (doc.get("load_error") or {}).get("kind") == WORKER_START
            return self._unjudged(decision.reason, machine, doc)
        record = None
        if records and rejudged:
            def record(store: Store) -> int | None:
                return record_rejudged(store, board, user, doc, decision, rejudged)
        elif records:
            def record(store: Store) -> int:
                from harness.results.document import document_to_evaluation
                from harness.results.recording import record_with_standing

                ev = document_to_evaluation(doc)
                sub_id = record_with_standing(store, board, user, ev, decision)
                doc["record"] = ev.record
                return sub_id
        return {"document": doc, "verdict": doc["status"], "exit_code": doc["exit_code"],
                "error": None, "record": record}


def record_rejudged(store: Store, board: Any, user: str, doc: dict[str, Any], decision: Any,
                    rejudged: tuple[int, int]) -> int | None:
    """A rejudging's new result, recorded beside its original (in the transaction that
    closes its job); None, nothing recorded, where the rejudging was settled meanwhile."""
    from harness.consts import Mark
    from harness.results.document import document_to_evaluation
    from harness.results.recording import record_evaluation
    rid, original = rejudged
    found = rejudgings.rejudging(store, rid)
    if found is None or found["state"] != rejudgings.OPEN:
        return None
    sub_id = record_evaluation(store, board, user, document_to_evaluation(doc),
                               replace(decision, mark=Mark.PENDING))
    rejudgings.set_outcome(store, rid, original, sub_id, decision.mark)
    return sub_id


def _not_rejudged(queue: JobQueue, job: Job, error: str) -> None:
    """Where `job` is a rejudging's and ended without a result, say why beside its
    original."""
    if job.rejudging_id:
        rejudgings.set_outcome(queue.store, job.rejudging_id, job.original_id, None, None,
                               error)


def _dropped(queue: JobQueue | None) -> None:
    """Close a queue's connection, whatever state it is in; None, the queue's new value."""
    if queue is not None:
        try:
            queue.store.close()
        except Exception:  # noqa: BLE001 - a connection already broken
            pass
    return None


def start_slots(judging: Judging, slots: list[Slot], poll: float = 1.0) -> list[threading.Thread]:
    """A thread per slot, started, once the folders of killed slots, servers and judges of
    this machine are removed (harness/judging/sandbox/leftovers.py)."""
    from harness.judging import sweep_run_folders

    removed = sweep_run_folders()
    if removed:
        judging.log(f"removed {len(removed)} folder(s) left by killed processes")
    judging.gang = Gang(slots)
    threads = [threading.Thread(target=judging.serve, args=(s, poll), daemon=True,
                                name=f"slot {s.env['_where']}") for s in slots]
    for t in threads:
        t.start()
    return threads


def stop_slots(judging: Judging, threads: list[threading.Thread]) -> None:
    """Stop the slots: running judges end, their jobs are queued again."""
    from harness.execution.judge_process import stop_judges

    judging.stopping.set()
    judging.wake.set()
    stop_judges()
    for t in threads:
        t.join(timeout=30)


def run_worker(console: Console, db: str | None, workers: str, options: RunOptions) -> int:
    """`runner.py worker`: judge queued jobs on this machine until stopped; the exit code."""
    from harness.consts import ExitCode
    from harness.execution.stopping import stop_on_sigterm
    from harness.storage.store import StoreError, resolve_db

    try:
        settings = Settings.load(options.config)
        server = ServerSettings.from_settings(settings)
        url = resolve_db(db, settings.store_path)
        Store(url).close()  # the schema is made (or found newer) before the slots start
        slots = make_slots(options.device, workers)
    except (ValueError, OSError, StoreError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    judging = Judging(url, options, settings, server, console.print)
    stop_on_sigterm()
    threads = start_slots(judging, slots)
    kinds = ", ".join(f"{s.env['_where']} ({s.kind})" for s in slots)
    console.print(f"worker: {len(slots)} slot(s): {kinds}; Ctrl-C stops")
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop_slots(judging, threads)
    return ExitCode.OK
