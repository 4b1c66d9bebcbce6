"""popcorn-cli's streaming submission, the route its profile mode takes: the job's progress as
server-sent events, then its result in the shape `submit_solution_streaming` reads
(github.com/gpu-mode/popcorn-cli, src/service/mod.rs).

The stream sends `status` events (`{"message": ...}`) while the job waits and runs, then one
`result` event: `results[0].runs[KEY]` with `run.stdout` (what the submission printed),
`run.result` (per case its spec and a base64 text report: `benchmark-count`,
`benchmark.I.spec`, `benchmark.I.report`) and, in profile mode under KEY `profile.0`,
`profile` (the profiler's name and, as `trace`, a base64 zip of the case's Nsight Compute
reports, which popcorn-cli saves); `reports` holds the whole report as a local run prints it.
A job that ended without a result document sends an `error` event instead.
"""

from __future__ import annotations

import base64
import io
import json
import math
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness.durations import readable
from harness.loading.cases import format_case
from harness.storage.queue import DONE, FAILED, Job

POLL_SECONDS = 1.0  # how often the stream looks at its job
# Streams open at once: each holds a thread of the web server while its job waits and
# runs, so the server's pool is larger by a margin (harness/web/serving.py) and a stream
# past this many is refused (503, try again) rather than starving the pages and uploads.
MAX_STREAMS = 16
HEARTBEAT_SECONDS = 15.0  # a status event at least this often, so that no proxy drops the stream
TRACE_LIMIT_BYTES = 32 << 20  # Nsight Compute reports beyond this in all stay on the server


class Streams:
    """The count of open streams, bounded by `MAX_STREAMS`."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.slots = threading.BoundedSemaphore(limit)

    def opened(self) -> bool:
        """Take a place for one stream; False where all are taken."""
        return self.slots.acquire(blocking=False)

    def given_back(self) -> None:
        """Give back a place taken for a stream that never opened (its upload refused)."""
        self.slots.release()

    def held(self, events: Iterator[str]) -> Iterator[str]:
        """`events`, the place given back when they end or the client goes."""
        try:
            yield from events
        finally:
            self.given_back()


def event(name: str, data: Any) -> str:
    """One server-sent event."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def job_events(read: Callable[[], tuple[Job | None, str]], public: Callable[[dict], dict],
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> Iterator[str]:
    """The events of one job: `read` gives the job (None once deleted) and where it stands
    in words; `public` makes its document fit for its submitter (secret seeds out)."""
    said, last = None, -math.inf
    while True:
        job, where = read()
        if job is None:
            yield event("error", {"detail": "the submission was deleted", "status_code": 404})
            return
        if job.status in (DONE, FAILED):
            break
        if where != said or clock() - last >= HEARTBEAT_SECONDS:
            yield event("status", {"message": where})
            said, last = where, clock()
        sleep(POLL_SECONDS)
    doc = job.document()
    if doc is None:
        yield event("error", {"detail": job.error or "the submission was not judged",
                              "status_code": 500})
        return
    yield event("result", result_payload(job, public(doc)))


def result_payload(job: Job, doc: dict[str, Any]) -> dict[str, Any]:
    """The `result` event's data for a judged job."""
    report = report_text(doc)
    output = doc.get("worker_output") or {}
    run = {"success": bool(doc.get("passed")), "exit_code": doc.get("exit_code"),
           "stdout": str(output.get("stdout") or ""), "stderr": str(output.get("stderr") or ""),
           "result": case_reports(doc)}
    entry: dict[str, Any] = {"run": run}
    if job.mode == "profile":
        entry["profile"] = {"profiler": profiler_name(doc), **trace(doc)}
    return {"results": [{"runs": {"profile.0" if job.mode == "profile" else job.mode: entry}}],
            "reports": [report]}


def report_text(doc: dict[str, Any]) -> str:
    """The report a local run of the same document prints, as plain text."""
    from rich.console import Console

    from harness.results.document import document_to_evaluation
    from harness.views.report import print_evaluation

    out = io.StringIO()
    print_evaluation(Console(file=out, width=100, color_system=None, highlight=False),
                     document_to_evaluation(doc))
    return out.getvalue()


def _cases(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The cases of the document's last phase (profile mode has one)."""
    phases = doc.get("phases") or []
    return phases[-1]["cases"] if phases else []


def case_reports(doc: dict[str, Any]) -> dict[str, Any]:
    """Per case its spec and a base64 text report, under popcorn-cli's keys."""
    cases = _cases(doc)
    out: dict[str, Any] = {"benchmark-count": len(cases)}
    for i, case in enumerate(cases):
        out[f"benchmark.{i}.spec"] = format_case(case.get("case", {}))
        out[f"benchmark.{i}.report"] = base64.b64encode(case_text(case).encode()).decode()
    return out


def case_text(case: dict[str, Any]) -> str:
    """One case as text: its status, the profiler's rows and Nsight Compute's kernels."""
    lines = [f"{case.get('status', '?')}: {case.get('message') or readable(case.get('score_ns'))}"]
    profile = case.get("profile") or {}
    for row in profile.get("rows", []):
        lines.append(f"  {row['name'][:60]:60} {row['calls']:>6} calls  "
                     f"mean {readable(row.get('mean_ns'))}")
    ncu = profile.get("ncu") or {}
    for k in ncu.get("kernels", []):
        top = (k.get("findings") or [{}])[0].get("rule", "-")
        lines.append(f"  ncu {k['name'][:40]}: {readable(k.get('duration_ns'))}, SM "
                     f"{k.get('sm_throughput_pct')}%, DRAM {k.get('dram_throughput_pct')}%, "
                     f"occupancy {k.get('achieved_occupancy_pct')}%, registers "
                     f"{k.get('registers_per_thread')}, top finding {top}")
    if ncu.get("error"):
        lines.append(f"  ncu: {ncu['error']}")
    return "\n".join(lines) + "\n"


def profiler_name(doc: dict[str, Any]) -> str:
    """The profilers that ran: the PyTorch profiler, and Nsight Compute where it did."""
    profiles = [c.get("profile") or {} for c in _cases(doc)]
    tools = {p.get("tool") for p in profiles if p.get("tool")}
    if any((p.get("ncu") or {}).get("kernels") for p in profiles):
        tools.add("Nsight Compute")
    return ", ".join(sorted(tools)) or "none"


def trace(doc: dict[str, Any]) -> dict[str, str]:
    """`{"trace": base64 zip}` of the cases' Nsight Compute reports still on this machine,
    within TRACE_LIMIT_BYTES; {} where there are none."""
    reports = [Path(r) for c in _cases(doc)
               if (r := ((c.get("profile") or {}).get("ncu") or {}).get("report"))]
    reports = [r for r in reports if r.is_file()]
    if not reports or sum(r.stat().st_size for r in reports) > TRACE_LIMIT_BYTES:
        return {}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for r in reports:
            zf.write(r, r.name)
    return {"trace": base64.b64encode(buf.getvalue()).decode()}
