"""`runner.py batch`: many submissions, one evaluation per device at a time.

Each evaluation runs in its own judge process (`python -m harness.remote`) pinned to one
GPU with CUDA_VISIBLE_DEVICES (two evaluations never share a GPU), or to one of `--jobs`
CPU slots. With `--backend ray`, each evaluation is a Ray task asking for one GPU (or one
CPU), running the same judge process on its node. Either way the driver records every
result in the database and prints the ranked table at the end.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from .cpus import parse, slot_cpus
from .cpus import pin as pin_cpus
from .recording import print_ranked, record_evaluation
from .report import fmt_ns
from .results import case_flags, document_to_evaluation
from .settings import ROOT, Settings
from .store import Store, resolve_db
from .tasks import TaskError, load_task


@dataclass
class Job:
    """One submission of the batch and what became of it."""

    file: Path
    task: str = ""
    state: str = "queued"  # queued, running, done
    where: str = ""
    started: float = 0.0
    wall: float = 0.0
    doc: dict[str, Any] | None = None
    error: str = ""
    submission_id: int | None = None
    used: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.error:
            return "harness error"
        return self.doc["status"] if self.doc else ""


def collect(paths: list[Path]) -> list[Path]:
    """Submission files named directly or found (recursively) in folders."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        elif path.suffix == ".py":
            files.append(path)
    return files


def local_slots(device: str | None, jobs: int | None, pin: bool = True) -> list[dict[str, str]]:
    """One environment per slot: a GPU each (with an equal share of the CPU cores when
    `pin`), or CPU slots."""
    import torch

    if device != "cpu" and torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [g for g in visible.split(",") if g] if visible else [str(i) for i in range(torch.cuda.device_count())]
        return [{"CUDA_VISIBLE_DEVICES": g, "_where": f"GPU {g}",
                 "_cpus": slot_cpus(i, len(ids)) if pin else ""} for i, g in enumerate(ids)]
    return [{"CUDA_VISIBLE_DEVICES": "", "_where": f"CPU slot {i}"} for i in range(max(1, jobs or 1))]


def run_judge(request: dict[str, Any], env_extra: dict[str, str], wall_limit: float) -> dict[str, Any]:
    """Run one evaluation in a judge subprocess; the result document (or an error)."""
    with tempfile.TemporaryDirectory(prefix="harness-batch-") as tmp:
        request = dict(request, out=str(Path(tmp) / "result.json"))
        env = {**os.environ, **{k: v for k, v in env_extra.items() if not k.startswith("_")}}
        env["PYTHONPATH"] = str(ROOT)
        cpus = parse(env_extra.get("_cpus", ""))
        proc = subprocess.Popen([sys.executable, "-m", "harness.remote"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                cwd=ROOT, start_new_session=True, text=True,
                                preexec_fn=(lambda: pin_cpus(cpus)) if cpus else None)
        try:
            out, _ = proc.communicate(json.dumps(request), timeout=wall_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return {"error": f"the judge process ran past {wall_limit:.0f} s and was killed"}
        path = Path(request["out"])
        if not path.exists():
            return {"error": f"the judge process ended without a result (exit {proc.returncode}): "
                             f"{out[-2000:]}"}
        return json.loads(path.read_text())


class Batch:
    """Runs the jobs on slots, records results, keeps the live view current."""

    def __init__(self, files: list[Path], task: str | None, mode: str, settings: Settings,
                 db: str | None, device: str | None, timeout: float | None,
                 config: Path | None, cases: list[str], user: str | None) -> None:
        self.mode = mode
        self.jobs = [Job(f, task or _directive_task(f)) for f in files]
        missing = [j.file.name for j in self.jobs if not j.task]
        if missing:
            raise ValueError(f"no task for {', '.join(missing)}: pass --task or start each file "
                             "with '#!POPCORN leaderboard NAME'")
        self.tasks = {name: load_task(name) for name in sorted({j.task for j in self.jobs})}
        self.settings = settings
        self.store = Store(resolve_db(db, settings.store_path))
        self.boards = {name: self.store.leaderboard(t.name, t.content_hash)
                       for name, t in self.tasks.items()}
        self.device, self.timeout, self.config, self.cases = device, timeout, config, cases
        self.user = user
        self.lock = threading.Lock()

    def request(self, job: Job) -> dict[str, Any]:
        board = self.boards[job.task]
        return {"file": str(job.file.resolve()), "task": str(self.tasks[job.task].root),
                "mode": self.mode, "device": self.device, "timeout": self.timeout,
                "cases": self.cases, "config": str(self.config) if self.config else None,
                "secret": board.secret.hex() if self.mode == "leaderboard" else None}

    def wall_limit(self, job: Job | None = None) -> float:
        tasks = [self.tasks[job.task]] if job else list(self.tasks.values())
        phases = 4 if self.mode == "leaderboard" else 1
        per = self.timeout or max(t.timeout(p, self.settings.default_timeout)
                                  for t in tasks for p in ("test", "benchmark", "ranked"))
        return phases * per + self.settings.worker.start_timeout + 60

    def finish(self, job: Job, doc: dict[str, Any]) -> None:
        """Record one result (in the driver: one writer for the whole batch)."""
        with self.lock:
            job.wall = time.time() - job.started
            job.state = "done"
            if "error" in doc:
                job.error = doc["error"]
                return
            job.doc = doc
            ev = document_to_evaluation(doc)
            who = self.user or job.file.stem
            job.submission_id = record_evaluation(self.store, self.boards[job.task], who, ev,
                                                  self.settings.integrity.refuse_ranking_on)

    def run_local(self, slots: list[dict[str, str]], on_change: Callable[[], None]) -> None:
        todo: queue.Queue[Job] = queue.Queue()
        for job in self.jobs:
            todo.put(job)

        def worker(slot: dict[str, str]) -> None:
            while True:
                try:
                    job = todo.get_nowait()
                except queue.Empty:
                    return
                with self.lock:
                    job.state, job.where, job.started = "running", slot["_where"], time.time()
                    job.used.append(slot["_where"])
                on_change()
                self.finish(job, run_judge(self.request(job), slot, self.wall_limit(job)))
                on_change()

        threads = [threading.Thread(target=worker, args=(s,), daemon=True) for s in slots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def run_ray(self, address: str | None, on_change: Callable[[], None]) -> None:
        from .ray_backend import run_on_ray

        run_on_ray(self, address, on_change)

    def view(self) -> Table:
        tasks = ", ".join(self.tasks)
        table = Table(title=f"Batch: {len(self.jobs)} submissions to {tasks} ({self.mode})",
                      title_justify="left")
        for col in ("submission", "task", "state", "where", "result", "score", "time"):
            table.add_column(col)
        for job in self.jobs:
            score = fmt_ns(job.doc.get("score_ns")) if job.doc else ""
            wall = f"{job.wall:.1f} s" if job.state == "done" else (
                f"{time.time() - job.started:.0f} s" if job.state == "running" else "")
            colour = "green" if job.status == "passed" else "red"
            result = f"[{colour}]{escape(job.status)}[/]" if job.state == "done" else ""
            table.add_row(escape(str(job.file.name)), job.task, job.state, job.where, result,
                          score, wall)
        return table


def _directive_task(path: Path) -> str:
    from .directives import parse_directives

    try:
        return parse_directives(path.read_text()).leaderboard or ""
    except (OSError, UnicodeDecodeError):
        return ""


def run_batch(console: Console, paths: list[Path], task: str | None, mode: str, jobs: int | None,
              backend: str, address: str | None, db: str | None, device: str | None,
              timeout: float | None, config: Path | None, cases: list[str], user: str | None,
              json_path: Path | None) -> int:
    """The `batch` command; exit 0 when every submission passed."""
    files = collect(paths)
    if not files:
        console.print("[red]error:[/] no submission files found")
        return 2
    try:
        settings = Settings.load(config)
        batch = Batch(files, task, mode, settings, db, device, timeout, config, cases, user)
    except (ValueError, TaskError) as exc:
        console.print(f"[red]error:[/] {exc}")
        return 2
    t0 = time.time()
    with Live(batch.view(), console=console, refresh_per_second=4, transient=False) as live:
        def on_change() -> None:
            live.update(batch.view())

        if backend == "ray":
            batch.run_ray(address, on_change)
        else:
            batch.run_local(local_slots(device, jobs, settings.worker.pin_cpus), on_change)
        live.update(batch.view())
    wall = time.time() - t0
    for job in batch.jobs:
        if job.error:
            console.print(f"[red]{escape(job.file.name)}:[/] {escape(job.error)}")
    from .ranking import rank

    for name, t in batch.tasks.items():
        kinds = sorted({j.doc["device"]["ranking_kind"] for j in batch.jobs if j.doc and j.task == name})
        for kind in kinds:
            print_ranked(console, rank(batch.store.entries(t.name, t.content_hash), kind),
                         f"{name} on {kind}")
    console.print(f"{len(files)} submissions in {wall:.1f} s ({backend} backend)")
    if json_path:
        json_path.write_text(json.dumps({
            "tasks": list(batch.tasks), "mode": mode, "backend": backend, "wall_seconds": wall,
            "results": [{"file": str(j.file), "task": j.task, "status": j.status, "where": j.used,
                         "started": j.started, "wall_seconds": j.wall,
                         "score_ns": j.doc.get("score_ns") if j.doc else None,
                         "submission_id": j.submission_id, "error": j.error,
                         "cases": [[c.get("score_ns") for c in p["cases"]] for p in j.doc["phases"]]
                         if j.doc else [],
                         "flags": case_flags(j.doc) if j.doc else [],
                         "device_uuid": j.doc["device"].get("uuid", "") if j.doc else ""}
                        for j in batch.jobs]}, indent=2))
    return 0 if all(j.status == "passed" for j in batch.jobs) else 1

