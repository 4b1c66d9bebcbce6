"""Other processes on the judge's GPU (harness/judging/measure/gpu_share.py): read with a
fake driver list on the CPU, named in the record and the report, the flags they can cause
made notes, and a ranked run made beside them not recorded; on a GPU, beside a real one."""

import io
import json
import subprocess
import sys
import time

import pytest
from conftest import ROOT, gpu

from harness.consts import ExitCode, Mark, Status
from harness.execution.protocol import Judged
from harness.judging.measure import gpu_share
from harness.judging.measure.gpu_share import ShareWatch, others, parse_compute_apps
from harness.judging.sandbox.procfs import family
from harness.results.admission import shared_gpu_refusal
from harness.results.document import CaseResult, Evaluation, PhaseResult, case_notes

CLOCKS = ("the judge's clock saw 364.1 µs more per call than the reported time explains "
          "(allowed 5.0 µs): work may run outside the timed region; judge-clock mean 390.00 µs "
          "per call")
THREAD = ("a thread running the submission's code was still alive after 3 of 40 timed "
          "samples had returned: work could go on outside the timed region")


def test_nvidia_smi_s_list_is_read():
    text = "4242, 2048\n  77 , [N/A]\n\nNo running processes found\nx, 1\n"
    assert parse_compute_apps(text) == [(4242, 2048.0), (77, None)]
    assert parse_compute_apps("") == []


def test_the_judge_s_family_is_not_another_process():
    """The judge (10), its worker (11) and what they started (12), and the processes that
    started the judge (5, 1); not a sibling (20) or another tree (30)."""
    table = {1: (0, 1), 5: (1, 5), 10: (5, 10), 11: (10, 11), 12: (11, 12), 20: (5, 20),
             30: (1, 30)}
    assert family(10, table) == {1, 5, 10, 11, 12}
    ours = family(10, table)
    assert others([(10, 500.0), (11, 700.0), (20, 2048.0), (30, 1.5)], ours) == (
        2, 2049.5, [20, 30])
    assert others([(10, 500.0), (20, None)], ours) == (1, None, [20])  # memory unknown
    assert others([(10, 500.0), (11, 700.0)], ours) == (0, 0.0, [])
    assert others([], ours) == (0, 0.0, [])


def test_another_pid_namespace_is_counted_by_the_gpu_files_we_hold():
    """The driver's numbers are the host's: none names ours. Ours holding the GPU open are
    two (judge, worker): of three listed, one is another's; its memory is not known."""
    ours = {10, 11, 12}
    holds = lambda pid: pid in (10, 11)  # noqa: E731
    assert others([(9001, 500.0), (9002, 700.0), (9003, 2048.0)], ours, holds) == (1, None, [])
    assert others([(9001, 500.0), (9002, 700.0)], ours, holds) == (0, None, [])


def _watch(*lists):
    """A watch over a fake driver whose successive lists are `lists` (None: unreadable);
    the judge is 10 and its worker 11."""
    answers = iter(lists)
    return ShareWatch(lambda: next(answers), root=10, ours=lambda root: {10, 11},
                      holds=lambda pid: True)


def _flagged_case(*flags: str) -> CaseResult:
    case = CaseResult(0, {"size": 64}, Status.PASSED, score_ns=390_000.0, flags=list(flags))
    case.integrity["clocks"] = {"flagged": CLOCKS in flags, "message": CLOCKS}
    if THREAD in flags:
        case.integrity["threads_after_calls"] = 3
    return case


def test_flags_of_a_case_timed_beside_another_process_are_notes():
    watch = _watch([(10, 500.0), (11, 700.0)], [(10, 500.0), (11, 700.0), (20, 2048.0)])
    before = watch.look("start of the benchmark phase")
    assert before.processes == 0
    case = _flagged_case(CLOCKS)
    watch.after_case("benchmark", case, before)
    assert case.flags == []  # not suspicion of the submission...
    assert case.integrity["gpu_shared"] == {"processes": 1, "memory_mib": 2048.0,
                                            "flags": [CLOCKS]}  # ...kept in the record
    (note,) = case_notes(case.integrity)
    assert note.startswith("GPU shared (with 1 other process while this case was timed)")
    assert note.endswith(CLOCKS)
    assert watch.summary() == {"processes": 1, "memory_mib": 2048.0, "seen": [
        {"when": "after benchmark case 0", "processes": 1, "memory_mib": 2048.0, "pids": [20]}]}


def test_the_look_before_a_case_counts_too_and_a_thread_flag_stands():
    watch = _watch([(10, 1.0), (20, 2.0)], [(10, 1.0)])
    before = watch.look("start")
    case = _flagged_case(CLOCKS, THREAD)
    watch.after_case("benchmark", case, before)
    assert case.flags == [CLOCKS, THREAD]  # not every flag is one a busy GPU trips
    assert case.integrity["gpu_shared"] == {"processes": 1, "memory_mib": 2.0}


def test_a_free_gpu_changes_nothing_and_an_unreadable_list_is_said():
    watch = _watch([(10, 1.0)], [(10, 1.0), (11, 1.0)], None)
    case = _flagged_case(CLOCKS)
    watch.after_case("benchmark", case, watch.look("start"))
    assert case.flags == [CLOCKS] and "gpu_shared" not in case.integrity
    assert watch.summary() is None and not watch.unreadable
    assert watch.look("later") is None and watch.unreadable
    assert ShareWatch.for_device("cpu", "").look("start") is None  # nothing to read


def test_a_ranked_run_on_a_shared_gpu_is_refused_a_record_unless_allowed():
    shared = {"processes": 2, "memory_mib": None, "seen": []}
    refused = shared_gpu_refusal(shared, "leaderboard", False)
    assert refused.startswith("not recorded: the GPU was shared with 2 other processes")
    assert "--allow-shared-gpu" in refused
    assert shared_gpu_refusal(shared, "leaderboard", True) == ""
    assert shared_gpu_refusal(shared, "benchmark", False) == ""
    assert shared_gpu_refusal(None, "leaderboard", False) == ""
    assert "2 other processes used it" in gpu_share.describe(shared)


def _shared_evaluation() -> Evaluation:
    case = CaseResult(0, {"size": 64, "seed": 1}, Status.PASSED, score_ns=6_000.0,
                      stats={"calls": 10})
    case.integrity["gpu_shared"] = {"processes": 1, "memory_mib": 512.0, "flags": [CLOCKS]}
    return Evaluation(task={"name": "vectoradd", "ranking_by": "geom", "content_hash": "x"},
                      submission={"name": "add.py", "sha256": "0" * 64},
                      device={"kind": "cuda", "name": "NVIDIA H200", "chosen_by": "default",
                              "capability": "90", "sm_count": 132, "l2_bytes": 0,
                              "memory_bytes": 0, "clocks": {}, "software": {},
                              "ranking_kind": "H200"},
                      mode="leaderboard", started="", phases=[PhaseResult(
                          "benchmark", "public", [case], 6_000.0)],
                      warnings=[gpu_share.describe({"processes": 1, "memory_mib": 512.0})],
                      gpu_shared={"processes": 1, "memory_mib": 512.0, "seen": []},
                      harness={"containment": {"level": "full", "missing": []}})


def test_submit_on_a_shared_gpu_reports_and_refuses_to_record():
    """The report names the sharing and prints the excused flag as a note; the run is not
    recorded, and the exit code is that of a refused record (2)."""
    from harness.frontends import submit
    from harness.frontends.console import make_console
    from harness.options import RunOptions
    from harness.settings import Settings

    class Recorder:
        recorded = False

        def record(self, ev, decision):
            Recorder.recorded = True

    out = io.StringIO()
    opts = RunOptions(file=ROOT / "submissions" / "vectoradd" / "add_torch.py")
    code = submit._record_and_show(make_console(out, {}), opts, Settings.load(), Recorder(),
                                   _shared_evaluation())
    text = out.getvalue()
    assert code == ExitCode.USAGE and not Recorder.recorded
    assert "warning: the GPU was shared: 1 other process used it during this run" in text
    assert "note (benchmark case 0): GPU shared (with 1 other process" in text
    assert "flag (" not in text
    assert "not recorded: the GPU was shared with 1 other process" in text


@pytest.mark.slow
def test_the_record_command_refuses_a_shared_ranked_run_unless_allowed(cli, tmp_path):
    from harness.results.admission import Policy, admit

    document = tmp_path / "shared.json"
    doc = _shared_evaluation().to_dict()
    assert admit(doc, Policy(allow_shared_gpu=True)).mark == Mark.OK  # excused: no suspicion
    doc["task"] = {"name": "vectoradd", "path": "", "content_hash": "x", "ranking_by": "geom"}
    doc["submission"] |= {"file": "add.py", "sha256": "0" * 64, "code": "", "directives": {}}
    document.write_text(json.dumps(doc))
    refused = cli("record", str(document), want_json=False)
    assert refused.rc == 2 and "refused" in refused.out and "--allow-shared-gpu" in refused.out
    assert "recorded" not in refused.out.replace("not recorded", "")
    allowed = cli("record", str(document), "--allow-shared-gpu", want_json=False)
    assert allowed.rc == 0 and "recorded" in allowed.out, allowed.out


def test_batch_does_not_record_a_shared_ranked_run():
    import threading
    from pathlib import Path

    from harness.frontends.batch import Batch, Job
    from harness.results.admission import Policy

    batch = Batch.__new__(Batch)
    batch.mode, batch.lock = "leaderboard", threading.Lock()
    batch.policy = Policy()
    doc = _shared_evaluation().to_dict()
    job = Job(Path("add.py"), "vectoradd", started=time.time())
    batch.finish(job, Judged(doc))
    assert job.error.startswith("not recorded: the GPU was shared") and job.submission_id is None


BURN = """import sys, torch
x = torch.randn(8192, 8192, device="cuda")
y = x @ x
torch.cuda.synchronize()
print("burning", flush=True)
while True:
    y = x @ x
"""


@gpu
def test_an_honest_run_beside_a_gpu_burner_is_named_shared_not_suspicious(cli):
    """Beside another process's matmul loop on the same GPU: the run says the GPU was
    shared (count and memory), nothing is held against the submission, and the ranked run
    is not recorded unless allowed; allowed, it is recorded as ok."""
    burner = subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE, text=True)
    try:
        assert burner.stdout.readline().strip() == "burning"
        args = ("submit", "submissions/vectoradd/add_torch.py", "--mode", "leaderboard",
                "--user", "honest")
        r = cli(*args)
        assert r.doc["gpu_shared"]["processes"] >= 1, r.doc["gpu_shared"]
        assert r.doc["gpu_shared"]["memory_mib"] is None or r.doc["gpu_shared"]["memory_mib"] > 0
        pids = r.doc["gpu_shared"]["seen"][0]["pids"]
        assert not pids or burner.pid in pids, pids  # no pids: another PID namespace's
        assert "the GPU was shared" in r.out
        assert all(not c["flags"] for p in r.doc["phases"] for c in p["cases"]), r.out
        assert r.rc == ExitCode.USAGE and "not recorded: the GPU was shared" in r.out, r.out
        assert not r.doc["record"]
        allowed = cli(*args, "--allow-shared-gpu")
        assert allowed.rc == 0, allowed.out
        board = json.loads(subprocess.run(
            [sys.executable, str(ROOT / "runner.py"), "leaderboard", "vectoradd", "--json",
             "--db", str(cli.db)], capture_output=True, text=True, cwd=ROOT).stdout)
        rows = [row for rows in board["devices"].values() for row in rows]
        assert [row["status"] for row in rows if row["user"] == "honest"] == [Mark.OK], rows
    finally:
        burner.kill()
        burner.wait()


@gpu
def test_the_side_stream_cheat_alone_is_still_flagged(cli):
    """On a GPU nobody else uses: nothing is excused, and the side-stream cheat is held
    against the submission as before (the screen's flag; the two clocks or its time)."""
    r = cli("submit", str(ROOT / "tests" / "adversarial" / "side_stream.py"), "--task",
            "vectoradd", "--case", "size: 256; seed: 1", "--user", "side")
    assert r.doc["gpu_shared"] is None, r.doc["gpu_shared"]
    assert not any("gpu_shared" in c["integrity"] for p in r.doc["phases"] for c in p["cases"])
    assert r.rc in (0, 1) and r.doc["record"]["submission_id"], r.out
    board = json.loads(subprocess.run(
        [sys.executable, str(ROOT / "runner.py"), "leaderboard", "vectoradd", "--json", "--db",
         str(cli.db)], capture_output=True, text=True, cwd=ROOT).stdout)
    assert all(row["status"] == Mark.SUSPICIOUS for rows in board["devices"].values()
               for row in rows if row["user"] == "side"), board
    for phase in (p for p in r.doc["phases"] if p["name"] == "benchmark"):
        for c in phase["cases"]:
            judge = c["integrity"]["clocks"]["judge_mean_ns"]
            flagged = any("outside the timed region" in f for f in c["flags"])
            assert flagged or c["score_ns"] >= 0.75 * judge, (c["score_ns"], judge)


def test_without_nvml_or_nvidia_smi_the_list_is_unreadable(monkeypatch):
    """No pynvml and no nvidia-smi on the PATH: each look says it could not read."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", "/nonexistent")
    watch = ShareWatch.for_device("cuda", "GPU-0")
    assert watch.look("start") is None and watch.unreadable


def test_a_server_slot_does_not_record_a_shared_ranked_run_unless_allowed():
    """The contest server's worker slot (one per GPU) gets the judge's document back: a
    ranked run another program shared the GPU with is no verdict to record."""
    from harness.options import RunOptions
    from harness.server.slots import Judging
    from harness.settings import ServerSettings, Settings

    def slot(**options) -> Judging:
        return Judging("unused", RunOptions(**options), Settings.load(), ServerSettings(),
                       print)

    doc = _shared_evaluation().to_dict()
    refused = slot().admitted(doc, None, "alice", records=True)
    assert refused["error"].startswith("not recorded: the GPU was shared with 1 other process")
    assert refused["verdict"] is None
    allowed = slot(allow_shared_gpu=True).admitted(doc, None, "alice", records=True)
    assert allowed["error"] is None and allowed["record"] is not None
    unranked_mode = slot().admitted(doc | {"mode": "benchmark"}, None, "alice", records=False)
    assert unranked_mode["error"] is None and unranked_mode["record"] is None