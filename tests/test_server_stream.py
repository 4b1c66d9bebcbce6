"""harness/server/stream.py: the events of a job as popcorn-cli's streaming submission reads
them, on fake jobs, a fake clock and a profile document's shape."""

from __future__ import annotations

import base64
import io
import json
import zipfile

from harness.server import stream
from harness.storage.queue import Job


def job(status: str, doc: dict | None = None, mode: str = "profile",
        error: str | None = None) -> Job:
    return Job(id=1, user_name="alice", task="vectoradd", mode=mode, gpu="H200", file_name="a.py",
               code="", status=status, created_at="", created_ts=0.0, error=error,
               result=json.dumps(doc) if doc else None)


def parse(events: list[str]) -> list[tuple[str, dict]]:
    """Each event as popcorn-cli splits it: on a blank line, then `event:` and `data:`."""
    out = []
    for text in events:
        assert text.endswith("\n\n")
        lines = dict(line.split(":", 1) for line in text.strip().splitlines())
        out.append((lines["event"].strip(), json.loads(lines["data"])))
    return out


def profile_doc(tmp_path) -> dict:
    report = tmp_path / "a-vectoradd-case0.ncu-rep"
    report.write_bytes(b"NCU" * 100)
    kernel = {"name": "_add", "duration_ns": 4096.0, "sm_throughput_pct": 4.09,
              "dram_throughput_pct": 21.48, "achieved_occupancy_pct": 19.73,
              "registers_per_thread": 26.0, "findings": [{"rule": "AchievedOccupancy"}]}
    return {"passed": True, "exit_code": 0, "worker_output": {"stdout": "hello\n", "stderr": "oops\n"},
            "phases": [{"name": "profile", "seeds": "public", "cases": [
                {"case": {"size": 1024, "seed": 7}, "status": "passed", "message": "",
                 "score_ns": 1792.0,
                 "profile": {"tool": "torch.profiler", "rows": [
                     {"name": "_add", "calls": 5, "total_ns": 8960.0, "mean_ns": 1792.0}],
                     "ncu": {"report": str(report), "kernels": [kernel]}}}]}]}


def test_status_is_said_when_it_changes_and_as_a_heartbeat_then_the_result(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "report_text", lambda doc: "REPORT")
    now = [0.0]
    states = iter([(job("queued"), "queued: position 2 of 2"),
                   (job("queued"), "queued: position 2 of 2"),
                   (job("queued"), "queued: position 1 of 1"), (job("running"), "running"),
                   (job("running"), "running"), (job("running"), "running"),
                   (job("done", profile_doc(tmp_path)), "running")])

    def sleep(seconds: float) -> None:
        now[0] += 10 * seconds  # ten seconds a poll: the heartbeat falls due on the third

    events = parse(list(stream.job_events(lambda: next(states), lambda d: d, sleep,
                                          lambda: now[0])))
    assert [e for e, _ in events] == ["status"] * 4 + ["result"]
    assert [d["message"] for _, d in events[:4]] == [
        "queued: position 2 of 2", "queued: position 1 of 1", "running", "running"]
    result = events[-1][1]
    run = result["results"][0]["runs"]["profile.0"]
    assert result["reports"] == ["REPORT"] and run["run"]["stdout"] == "hello\n"
    assert run["run"]["stderr"] == "oops\n"  # strings, as popcorn-cli reads them
    assert run["profile"]["profiler"] == "Nsight Compute, torch.profiler"


def test_an_unjudged_job_or_a_deleted_one_ends_in_an_error_event():
    failed = job("failed", error="its workers kept dying")
    events = parse(list(stream.job_events(lambda: (failed, "running"), lambda d: d)))
    assert events == [("error", {"detail": "its workers kept dying", "status_code": 500})]
    events = parse(list(stream.job_events(lambda: (None, "running"), lambda d: d)))
    assert events == [("error", {"detail": "the submission was deleted", "status_code": 404})]


def test_the_cases_reports_and_the_ncu_reports_go_under_popcorn_clis_keys(tmp_path):
    doc = profile_doc(tmp_path)
    result = stream.case_reports(doc)
    assert result["benchmark-count"] == 1 and result["benchmark.0.spec"] == "size: 1024; seed: 7"
    text = base64.b64decode(result["benchmark.0.report"]).decode()
    assert "_add" in text and "1.79 µs" in text and "DRAM 21.48%" in text
    assert "AchievedOccupancy" in text
    traced = zipfile.ZipFile(io.BytesIO(base64.b64decode(stream.trace(doc)["trace"])))
    assert traced.namelist() == ["a-vectoradd-case0.ncu-rep"]
    assert traced.read("a-vectoradd-case0.ncu-rep") == b"NCU" * 100


def test_no_trace_without_reports_here_or_beyond_the_limit(tmp_path, monkeypatch):
    doc = profile_doc(tmp_path)
    monkeypatch.setattr(stream, "TRACE_LIMIT_BYTES", 10)
    assert stream.trace(doc) == {}
    monkeypatch.setattr(stream, "TRACE_LIMIT_BYTES", 1 << 20)
    for case in doc["phases"][0]["cases"]:
        case["profile"]["ncu"]["report"] = str(tmp_path / "gone.ncu-rep")
    assert stream.trace(doc) == {}


def test_other_modes_go_under_their_own_key_without_a_profile(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "report_text", lambda doc: "REPORT")
    payload = stream.result_payload(job("done", mode="test"), {"passed": False, "phases": []})
    assert payload["results"] == [{"runs": {"test": {"run": {
        "success": False, "exit_code": None, "stdout": "", "stderr": "",
        "result": {"benchmark-count": 0}}}}}]
