"""One admission policy (harness/results/admission.py), asked by every route: the same
documents through admit() itself, `submit`'s recording, `batch`, `runner.py record` and the
contest server's slot give the same decision, and each route records exactly what
admission lets in, marked and refused a rank as it says."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT

from harness.consts import Mark, Status
from harness.execution.protocol import Judged
from harness.frontends.console import make_console
from harness.options import RunOptions
from harness.results.admission import Outcome, Policy, admit
from harness.results.document import CaseResult, Evaluation, PhaseResult
from harness.settings import Settings
from harness.storage.store import Store

ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"
FULL = {"level": "full", "abi": 5, "enforced": [], "missing": []}
PARTIAL = {"level": "partial", "abi": 2, "enforced": [], "missing": ["scope"]}
OFF = {"level": "off", "abi": None, "enforced": [], "missing": ["landlock"]}


def evaluation(mode: str = "leaderboard", containment: dict = FULL, flags: tuple = (),
               screen: tuple = (), load_error: dict | None = None, shared: bool = False,
               evaluator: bool = False) -> Evaluation:
    """A judged document as the judge writes it, varied where a row asks."""
    case = CaseResult(0, {"size": 64, "seed": 1}, Status.PASSED, score_ns=6_000.0,
                      stats={"calls": 10}, flags=list(flags))
    seeds = ("public", "secret") if mode == "leaderboard" else ("public",)
    harness = {"version": "test", "containment": containment}
    if evaluator:
        harness["evaluator"] = {"kind": "the task's own evaluator", "main": "eval.py"}
    return Evaluation(
        task={"name": "vectoradd", "path": "", "content_hash": "admission", "ranking_by": "geom"},
        submission={"file": "add.py", "name": "add.py", "sha256": "0" * 64,
                    "code": ADD.read_text(), "directives": {}},
        device={"kind": "cpu", "name": "CPU", "chosen_by": "default", "capability": "",
                "sm_count": 0, "l2_bytes": 0, "memory_bytes": 0, "clocks": {}, "software": {},
                "ranking_kind": "CPU"},
        mode=mode, started="2026-12-06T00:00:00+00:00", ended="2026-12-06T00:00:01+00:00",
        phases=[PhaseResult("benchmark", s, [replace(case)], 6_000.0) for s in seeds],
        load_error=load_error, screen=list(screen), harness=harness,
        gpu_shared={"processes": 1, "memory_mib": 512.0, "seen": []} if shared else None)


WORKER_START = {"status": "crashed", "kind": "worker_start", "title": "the worker could not "
                "start (before the submission was loaded)", "hint": "", "message": "no fork"}
TASK_NEEDS = {"status": "needs a GPU", "kind": "task_needs", "title": "the task needs a GPU",
              "hint": "", "message": "generate_input: no CUDA"}
HARD = {"rule": "patches-timing", "severity": "hard", "line": 1, "excerpt": "x",
        "explanation": "replaces a timer"}
FLAG = {"rule": "threads", "severity": "flag", "line": 1, "excerpt": "x",
        "explanation": "starts a thread"}
GUARDS = {"rule": "OUTPUT_REPLAY_CACHE", "severity": "high", "line": 0, "excerpt": "",
          "explanation": "direct return from cache[...]", "by": "kernelguard"}

# name: (the document, the policy's flags, the outcome, the mark when recorded)
ROWS = {
    "full containment": (evaluation(), {}, Outcome.RANKED, Mark.OK),
    "partial containment": (evaluation(containment=PARTIAL), {}, Outcome.NOT_RECORDED, None),
    "partial, allowed": (evaluation(containment=PARTIAL), {"allow_partial_containment": True},
                         Outcome.RANKED, Mark.OK),
    "containment off": (evaluation(containment=OFF), {}, Outcome.NOT_RECORDED, None),
    "off in benchmark mode": (evaluation("benchmark", OFF), {}, Outcome.RANKED, Mark.OK),
    "shared GPU": (evaluation(shared=True), {}, Outcome.NOT_RECORDED, None),
    "shared GPU, allowed": (evaluation(shared=True), {"allow_shared_gpu": True},
                            Outcome.RANKED, Mark.OK),
    "shared GPU in test mode": (evaluation("test", shared=True), {}, Outcome.RANKED, Mark.OK),
    "an integrity flag": (evaluation(flags=("two clocks differ",)), {}, Outcome.RANKED,
                          Mark.SUSPICIOUS),
    "a screen flag": (evaluation(screen=(FLAG,)), {}, Outcome.RANKED, Mark.SUSPICIOUS),
    "a refused screen rule": (evaluation(screen=(HARD,)), {}, Outcome.UNRANKED,
                              Mark.SUSPICIOUS),
    "a second opinion, not counted": (evaluation(screen=(GUARDS,)), {}, Outcome.RANKED,
                                      Mark.OK),
    "the task's own evaluator": (evaluation(evaluator=True), {}, Outcome.UNRANKED, Mark.OK),
    "the worker never started": (evaluation(load_error=WORKER_START), {}, Outcome.NOT_JUDGED,
                                 None),
    "the task cannot run here": (evaluation(load_error=TASK_NEEDS), {}, Outcome.NOT_JUDGED,
                                 None),
    "profile mode": (evaluation("profile"), {}, Outcome.NOT_RECORDED, None),
}
POLICY = Policy(refuse_ranking_on=("hard",))


def policy_of(flags: dict) -> Policy:
    return replace(POLICY, **flags)


def recorded(db: Path) -> list[dict]:
    store = Store(f"sqlite:///{db}")
    try:
        return store.entries("vectoradd")
    finally:
        store.close()


@pytest.mark.parametrize("name", ROWS)
def test_admit(name):
    ev, flags, outcome, mark = ROWS[name]
    decision = admit(ev.to_dict(), policy_of(flags))
    assert decision.outcome == outcome, decision
    assert decision.recorded == (mark is not None)
    if decision.recorded:
        assert decision.mark == mark
    else:
        assert decision.reason
    assert admit({"error": "the judge process died"}, POLICY).outcome == Outcome.NOT_JUDGED


def _submit(ev: Evaluation, flags: dict, db: Path) -> None:
    from harness.frontends.submit import _record_and_show
    from harness.results.recording import Recorder

    store = Store(f"sqlite:///{db}")
    recorder = Recorder(store, store.leaderboard("vectoradd", "admission"), "alice")
    opts = RunOptions(file=ADD, mode=ev.mode, **flags)
    settings = Settings.load()
    settings.integrity.refuse_ranking_on = list(POLICY.refuse_ranking_on)
    try:
        _record_and_show(make_console(io.StringIO(), {}), opts, settings, recorder, ev)
    finally:
        store.close()


def _batch(ev: Evaluation, flags: dict, db: Path) -> None:
    from harness.frontends.batch import Batch, Job

    settings = Settings.load()
    settings.integrity.refuse_ranking_on = list(POLICY.refuse_ranking_on)
    batch = Batch([ADD], RunOptions(file=ADD, task="vectoradd", mode=ev.mode, db=str(db),
                                    **flags), settings)
    batch.boards["vectoradd"] = batch.store.leaderboard("vectoradd", "admission")
    try:
        batch.finish(Job(ADD, "vectoradd", started=0.0), Judged(ev.to_dict()))
    finally:
        batch.store.close()


def _record(ev: Evaluation, flags: dict, db: Path) -> None:
    from harness.frontends.browse import record

    path = db.with_suffix(".json")
    path.write_text(json.dumps(ev.to_dict()))
    policy = Policy.of(Settings.load(), flags.get("allow_partial_containment", False),
                       flags.get("allow_shared_gpu", False))
    record(make_console(io.StringIO(), {}), [path], "alice", str(db), 1, policy)


def _server(ev: Evaluation, flags: dict, db: Path) -> None:
    from harness.server.slots import Judging
    from harness.settings import ServerSettings

    settings = Settings.load()
    settings.integrity.refuse_ranking_on = list(POLICY.refuse_ranking_on)
    judging = Judging(f"sqlite:///{db}", RunOptions(**flags), settings, ServerSettings(), print)
    store = Store(f"sqlite:///{db}")
    try:
        result = judging.admitted(ev.to_dict(), store.leaderboard("vectoradd", "admission"),
                                  "alice", records=True)
        if result.get("record") is not None:  # as JobQueue.finish does
            result["record"](store)
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("route", [_submit, _batch, _record, _server],
                         ids=["submit", "batch", "record", "server"])
def test_every_route_records_what_admission_lets_in(route, tmp_path):
    for k, (name, (ev, flags, outcome, mark)) in enumerate(ROWS.items()):
        db = tmp_path / f"{k}.db"
        Store(f"sqlite:///{db}").close()
        route(ev, flags, db)
        rows = recorded(db)
        assert len(rows) == (1 if mark is not None else 0), (name, rows)
        if rows:
            assert rows[0]["status"] == mark, name
            assert (rows[0]["refused"] is not None) == (outcome == Outcome.UNRANKED), name
