"""A judge process's live progress, relayed to the process that started it.

The judge writes each event of its `Progress` (harness/judging/phases.py) as a line of JSON
to a file its request names (`ProgressWriter`); a thread of the caller reads the lines as
they come and calls the caller's own `Progress` with them (`ProgressRelay`): a live view
of a run judged in another process, as of one judged in this one. Calls are counted and
written at most every `CALL_EVERY` seconds, so that the judge's loop between calls stays
cheap. The file is the caller's, in its run folder: no worker can reach it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import IO, Any

from harness.judging.phases import PhaseSpec, Progress
from harness.results.document import CaseResult

CALL_EVERY = 0.1  # seconds between two counts of calls written by the judge
POLL_SECONDS = 0.05  # how often the caller looks for new lines


class ProgressWriter(Progress):
    """The judge's side: each event a line of the file at `path`."""

    def __init__(self, path: str | Path) -> None:
        self.file: IO[str] = open(path, "a", buffering=1, encoding="utf-8")
        self.calls, self.written = 0, 0.0

    def phase_start(self, spec: PhaseSpec) -> None:
        self._put({"event": "phase", "name": spec.name, "seeds": spec.seeds,
                   "timeout": spec.timeout, "cases": len(spec.cases), "timed": spec.timed})

    def case_start(self, spec: PhaseSpec, index: int, case: dict[str, Any]) -> None:
        self.calls = 0
        self._put({"event": "case", "index": index, "case": case})

    def call_done(self) -> None:
        self.calls += 1
        now = time.monotonic()
        if now - self.written >= CALL_EVERY:
            self.written = now
            self._put({"event": "calls", "count": self.calls})

    def case_done(self, spec: PhaseSpec, result: CaseResult) -> None:
        self._put({"event": "done", "index": result.index, "status": result.status})

    def close(self) -> None:
        self.file.close()

    def _put(self, event: dict[str, Any]) -> None:
        self.file.write(json.dumps(event, default=str) + "\n")


class ProgressRelay:
    """The caller's side: while its `with` block runs, a thread reads the file at `path`
    (made by the judge, maybe later) and calls `progress` with each event in turn; the
    lines written before the block ends are all relayed when it does."""

    def __init__(self, path: Path, progress: Progress) -> None:
        self.path, self.progress = path, progress
        self.spec: PhaseSpec | None = None
        self.case: dict[str, Any] = {}
        self.calls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._file: IO[str] | None = None
        self._partial = ""

    def __enter__(self) -> ProgressRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()  # what came between the thread's last look and the end
        if self._file is not None:
            self._file.close()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self._read()

    def _read(self) -> None:
        if self._file is None:
            try:
                self._file = open(self.path, encoding="utf-8")
            except FileNotFoundError:
                return
        text = self._partial + self._file.read()
        *lines, self._partial = text.split("\n")  # a line being written waits for its end
        for line in lines:
            if line:
                self._relay(json.loads(line))

    def _relay(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "phase":
            self.spec = PhaseSpec(event["name"], event["seeds"], [{}] * event["cases"],
                                  event["timed"], event["timeout"])
            self.progress.phase_start(self.spec)
        elif self.spec is None:
            return  # a case event before its phase: not written by a judge
        elif kind == "case":
            self.case, self.calls = event["case"], 0
            self.progress.case_start(self.spec, event["index"], self.case)
        elif kind == "calls":
            for _ in range(max(event["count"] - self.calls, 0)):
                self.progress.call_done()
            self.calls = max(self.calls, event["count"])
        elif kind == "done":
            self.progress.case_done(self.spec, CaseResult(event["index"], self.case,
                                                          event["status"]))
