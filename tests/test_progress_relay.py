"""harness/execution/progress_relay.py: a judge process's live progress, relayed to its
caller's `Progress` as it comes."""

from __future__ import annotations

import threading

import pytest

from harness.execution.progress_relay import ProgressRelay, ProgressWriter
from harness.judging.phases import PhaseSpec, Progress
from harness.results.document import CaseResult


class Recorder(Progress):
    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.calls = 0
        self.seen = threading.Event()

    def phase_start(self, spec):
        self.events.append(("phase", spec.name, spec.seeds, len(spec.cases), spec.timeout))

    def case_start(self, spec, index, case):
        self.events.append(("case", spec.name, index, case))
        self.seen.set()

    def call_done(self):
        self.calls += 1

    def case_done(self, spec, result):
        self.events.append(("done", spec.name, result.index, result.status, self.calls))


def test_events_reach_the_callers_progress_in_order_while_the_judge_runs(tmp_path):
    path = tmp_path / "progress.jsonl"
    spec = PhaseSpec("benchmarks", "public", [{"size": 8}, {"size": 16}], True, 60.0)
    seen = Recorder()
    with ProgressRelay(path, seen):  # the file is made later, by the judge
        writer = ProgressWriter(path)
        writer.phase_start(spec)
        writer.case_start(spec, 0, {"size": 8})
        assert seen.seen.wait(10)  # relayed while the block still runs
        for _ in range(3):
            writer.call_done()
        writer.written = 0.0  # the count is written at most every CALL_EVERY seconds
        writer.call_done()
        writer.case_done(spec, CaseResult(0, {"size": 8}, "passed"))
        writer.case_start(spec, 1, {"size": 16})
        writer.case_done(spec, CaseResult(1, {"size": 16}, "failed"))
        writer.close()
    assert seen.events == [("phase", "benchmarks", "public", 2, 60.0),
                           ("case", "benchmarks", 0, {"size": 8}),
                           ("done", "benchmarks", 0, "passed", 4),
                           ("case", "benchmarks", 1, {"size": 16}),
                           ("done", "benchmarks", 1, "failed", 4)]


def test_a_line_cut_in_the_middle_waits_for_its_end(tmp_path):
    path = tmp_path / "progress.jsonl"
    seen = Recorder()
    relay = ProgressRelay(path, seen)
    path.write_text('{"event": "phase", "name": "tests", "seeds": "public", "timeout": 1, '
                    '"cases": 1, "tim')
    relay._read()
    assert seen.events == []
    with open(path, "a") as f:
        f.write('ed": false}\n')
    relay._read()
    assert seen.events == [("phase", "tests", "public", 1, 1)]


@pytest.mark.slow
@pytest.mark.xdist_group("judge")
def test_a_judge_process_relays_its_cases_to_the_caller():
    """A real judge process, forked from a template: every case of the test phase reaches
    the caller, started and done, before run_judge returns."""
    from harness.execution.judge_process import run_judge
    from harness.execution.judge_template import JudgeTemplate
    from harness.execution.protocol import Judged, JudgeRequest
    from harness.options import RunOptions
    from harness.settings import ROOT

    options = RunOptions(file=ROOT / "submissions" / "vectoradd" / "add_torch.py",
                         task="vectoradd", mode="test", device="cpu", timeout=60)
    seen = Recorder()
    template = JudgeTemplate()
    try:
        result = run_judge(JudgeRequest(options, {"CUDA_VISIBLE_DEVICES": ""}, 300), template,
                           seen)
    finally:
        template.close()
    assert isinstance(result, Judged), result
    cases = result.document["phases"][0]["cases"]
    assert seen.events[0][:2] == ("phase", result.document["phases"][0]["name"])
    assert seen.events[0][3] == len(cases)
    assert [e[2] for e in seen.events if e[0] == "done"] == [c["index"] for c in cases]
    assert [e[3] for e in seen.events if e[0] == "done"] == [c["status"] for c in cases]
