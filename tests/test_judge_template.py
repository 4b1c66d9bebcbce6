"""Judges forked from a slot's warm template (harness/execution/judge_template.py), with
real processes on the CPU: each job gets a judge of its own, a template or judge that dies
costs one job at most, and the template never holds a request's secret."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.execution.judge_process import run_judge
from harness.execution.judge_template import JudgeTemplate
from harness.execution.protocol import Failure, Judged, JudgeRequest, Unjudged
from harness.options import RunOptions
from harness.settings import ROOT

ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"
SEGFAULT = ROOT / "tests" / "submissions" / "vectoradd" / "segfault.py"
LEAVES_STATE = ROOT / "tests" / "submissions" / "isolation" / "leaves_state.py"
CPU = {"CUDA_VISIBLE_DEVICES": ""}

pytestmark = [pytest.mark.slow,  # real templates, judges and workers
              pytest.mark.xdist_group("judge")]


def _request(mode="test", secret=None, wall=300.0, env=CPU, file=ADD) -> JudgeRequest:
    options = RunOptions(file=file, task="vectoradd", mode=mode, device="cpu", timeout=30,
                         secret=secret)
    return JudgeRequest(options, env, wall)


# Appended to a submission: its first case (size 1) kills its worker, so that the later
# cases run in a second worker; every worker says whether it is a fork (it has the
# judge's modules) or a new interpreter. The pauses (s) come before the crash and before
# each later call.
CRASH_FIRST = '''
import ctypes as _ctypes, sys as _sys, time as _time
print("worker: " + ("forked" if "harness.execution.judge_template" in _sys.modules
                    else "new interpreter"), flush=True)
_first_kernel = custom_kernel
_PAUSE_FIRST, _PAUSE_LATER = {first}, {later}


def custom_kernel(data):
    if data[0].numel() == 1:
        _time.sleep(_PAUSE_FIRST)
        _ctypes.string_at(0xDEAD00000000, 64)
    _time.sleep(_PAUSE_LATER)
    return _first_kernel(data)
'''


def crashing_first(folder: Path, base: Path = ADD, first: float = 0.0,
                   later: float = 0.0) -> Path:
    """`base` with CRASH_FIRST appended, as a file in `folder`."""
    file = folder / f"crash_first_{base.stem}.py"
    file.write_text(base.read_text() + CRASH_FIRST.format(first=first, later=later))
    return file


def _statuses(doc: dict) -> list[str]:
    return [c["status"] for p in doc["phases"] for c in p["cases"]]


class _Watcher(threading.Thread):
    """Notes the pid of every judge the template forks, until the template it watches ends
    or `stop()` (a test ends it: no thread of it outlives the test, whose process runs
    other tests after it)."""

    def __init__(self, template: JudgeTemplate, seen: list[int]) -> None:
        super().__init__(daemon=True)
        self.template, self.seen, self.done = template, seen, threading.Event()

    def run(self) -> None:
        template = self.template
        while not self.done.is_set() and (template.proc is None or template.proc.poll() is None):
            if template.proc is not None:
                for pid in _children_of(template.proc.pid):
                    if pid not in self.seen:
                        self.seen.append(pid)
            self.done.wait(0.01)

    def stop(self) -> None:
        self.done.set()
        self.join(5)


def _judge_pid(template: JudgeTemplate, seen: list[int]) -> _Watcher:
    """Note the pid of every judge the template forks while the watcher runs."""
    watcher = _Watcher(template, seen)
    watcher.start()
    return watcher


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def test_each_job_gets_a_judge_of_its_own_forked_from_one_template():
    """Three jobs on one template: each judged, by three different judge processes, all
    children of the one template, which outlives them; none left once it is closed."""
    template = JudgeTemplate()
    seen: list[int] = []
    try:
        first = run_judge(_request(), template)
        assert isinstance(first, Judged) and first.document["status"] == "passed", first
        template_pid = template.proc.pid
        watcher = _judge_pid(template, seen)
        for _ in range(2):
            again = run_judge(_request(), template)
            assert isinstance(again, Judged) and again.document["status"] == "passed", again
        assert template.proc.pid == template_pid
        assert len(set(seen)) >= 2 and template_pid not in seen
    finally:
        template.close()
        watcher.stop()
    assert not _children_of(template_pid)


def test_a_killed_judge_is_unjudged_and_a_killed_template_is_started_again():
    """SIGKILL to a forked judge mid-job: the job is Unjudged for the machine (it may run
    again) and the next job is judged; SIGKILL to the template between jobs: the next job
    is judged by a new template, and mid-job its judge dies with it (Unjudged for the
    machine); past its wall limit, a forked judge is killed; a
    submission that kills its own (forked) worker is its verdict, and the next passes."""
    template = JudgeTemplate()
    watchers: list[_Watcher] = []
    try:
        assert isinstance(run_judge(_request(), template), Judged)
        seen: list[int] = []
        watcher = _judge_pid(template, seen)
        watchers.append(watcher)
        killer = threading.Thread(target=_kill_first, args=(seen,), daemon=True)
        killer.start()
        killed = run_judge(_request(mode="benchmark"), template)
        killer.join(30)
        assert isinstance(killed, Unjudged) and killed.failure == Failure.MACHINE, killed
        assert "ended without a result" in killed.reason and killed.retry
        assert isinstance(run_judge(_request(), template), Judged)

        old = template.proc.pid
        os.kill(old, signal.SIGKILL)
        template.proc.wait()
        watcher.join(5)
        assert isinstance(run_judge(_request(), template), Judged)
        assert template.proc.pid != old

        seen.clear()  # the template killed mid-job: its judge dies with it
        watchers.append(_judge_pid(template, seen))
        mid = threading.Thread(target=_kill_first, args=([template.proc.pid],), daemon=True)
        mid.start()
        gone = run_judge(_request(mode="benchmark"), template)
        mid.join(30)
        assert isinstance(gone, Unjudged) and gone.failure == Failure.MACHINE, gone
        assert seen and _all_gone(seen, 10)
        assert isinstance(run_judge(_request(), template), Judged)

        late = run_judge(_request(wall=0.3), template)
        assert isinstance(late, Unjudged) and "ran past" in late.reason, late
        assert isinstance(run_judge(_request(), template), Judged)

        crashed = run_judge(_request(file=SEGFAULT), template)  # it kills its own worker
        assert isinstance(crashed, Judged) and crashed.document["status"] == "crashed"
        after = run_judge(_request(), template)
        assert isinstance(after, Judged) and after.document["status"] == "passed", after
    finally:
        template.close()
        for watcher in watchers:
            watcher.stop()


def _all_gone(pids: list[int], seconds: float) -> bool:
    """Whether every process of `pids` is gone (or a zombie) within `seconds`."""
    from harness.judging.sandbox.procfs import stat_fields

    deadline = time.monotonic() + seconds
    while any(stat_fields(p)[:1] not in ([], ["Z"]) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _kill_first(seen: list[int]) -> None:
    deadline = time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    if seen:
        time.sleep(0.3)
        os.kill(seen[0], signal.SIGKILL)


def test_the_template_never_holds_a_leaderboard_secret_or_the_slots_secrets():
    """A job whose request carries a leaderboard secret (every mode's request carries it
    where given), from a slot whose environment holds a signing key and a database
    password: judged, its worker a fork (no second import of torch), and nowhere in the
    template's memory (the judges, and the workers forked from them, are copies of it) is
    any of them; what a worker may see (CUDA_VISIBLE_DEVICES) is there."""
    secret = os.urandom(24)
    held = secret.hex().encode()  # noqa: F841 - this process's copy, for the scan's check
    slot_secrets = {"HARNESS_SIGNING_KEY": "signing-" + os.urandom(8).hex(),
                    "PGPASSWORD": "password-" + os.urandom(8).hex()}
    template = JudgeTemplate()
    try:
        result = run_judge(_request(secret=secret, env={**CPU, **slot_secrets}), template)
        assert isinstance(result, Judged) and result.document["status"] == "passed", result
        assert template.env["CUDA_VISIBLE_DEVICES"] == ""
        assert not set(slot_secrets) & set(template.env)
        memory = _readable_memory(template.proc.pid)
        assert len(memory) > 1 << 20  # the scan read the template's heap
        for form in (secret, secret.hex().encode(), *(v.encode() for v in slot_secrets.values())):
            assert not any(form in chunk for chunk in memory.chunks), form
        # the scan finds it where it is: in this process, which holds the request
        assert any(secret.hex().encode() in c for c in _readable_memory(os.getpid()).chunks)
    finally:
        template.close()


class _Memory:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def __len__(self) -> int:
        return sum(len(c) for c in self.chunks)


def _readable_memory(pid: int) -> _Memory:
    """The process's writable private mappings (heap, anonymous), read through /proc."""
    memory = _Memory()
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if not re.match(r"rw.p", fields[1]) or end - start > 1 << 30:
                continue
            try:
                mem.seek(start)
                memory.chunks.append(mem.read(end - start))
            except OSError:
                continue
    return memory


def test_a_submission_sees_nothing_of_the_one_before_it_on_the_same_slot(tmp_path):
    """Two submissions, one after the other on one slot's template, each in a worker forked
    from its judge: each checks for, then leaves, every kind of state it can (a module in
    sys.modules, a global and a monkey-patched function of torch, an environment variable,
    files in its folder, its temporary folder and its home, torch's default dtype,
    deterministic algorithms, mkldnn; on a GPU tf32 and the current stream), and fails if
    it finds any: both pass. The file checks that it sees what it leaves. What each worker
    inherited is frozen out of the garbage collector's walks."""
    twin = tmp_path / "leaves_state_twin.py"
    twin.write_text(LEAVES_STATE.read_text())
    template = JudgeTemplate()
    try:
        for file in (LEAVES_STATE, twin, LEAVES_STATE):
            result = run_judge(_request(file=file), template)
            assert isinstance(result, Judged), result
            doc = result.document
            assert doc["status"] == "passed", [c["message"] for p in doc["phases"]
                                               for c in p["cases"]]
            assert "worker: forked" in doc["worker_output"]["stdout"]
            frozen = int(doc["worker_output"]["stdout"].split("frozen=")[1].split()[0])
            assert frozen > 10_000  # torch's and the harness's objects, never walked
            assert doc["harness"]["forked_worker"] is True
    finally:
        template.close()


@pytest.mark.skipif(__import__("harness.judging.sandbox.landlock", fromlist=["probe"]).probe().level
                    != "full", reason="needs Landlock ABI 6 or later (full containment)")
@pytest.mark.parametrize("name", ["write_outside", "read_judge_memory", "connect_socket",
                                  "child_attacks", "read_secret"])
@pytest.mark.parametrize("later", [False, True], ids=["first", "later"])
def test_a_forked_worker_is_contained_and_reports_what_it_refused(tmp_path, name, later):
    """The containment attacks (tests/containment/) in a worker forked from its judge, as
    test_containment.py runs them in new interpreters, and (`later`: the first worker
    crashed on the first case) in the next worker, a fork of the judge's zygote: full
    containment, nothing escapes (no connection accepted, no file planted, the judge's
    memory, environment and the database's secret unread), and the audit hook that a new
    interpreter's sitecustomize installs reports the refusals."""
    import socket

    from test_containment import materialize

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    db = tmp_path / "results.db"
    db.write_text("SECRET-" + os.urandom(8).hex())
    attack = materialize(name, tmp_path, server.getsockname()[1], db)
    attack = crashing_first(tmp_path, attack) if later else attack
    template = JudgeTemplate()
    try:
        result = run_judge(_request(file=attack), template)
    finally:
        template.close()
    assert isinstance(result, Judged), result
    doc = result.document
    assert doc["harness"]["containment"]["level"] == "full"
    assert doc["harness"]["forked_worker"] is True
    stdout = doc["worker_output"]["stdout"]  # the last worker's
    assert "ESCAPED 0" in stdout, stdout
    if later:
        assert _statuses(doc)[0] == "crashed" and "worker: forked" in stdout, stdout
    for leak in ("JUDGE_ENV", "JUDGE_MEM", "SECRET-"):
        assert leak not in stdout
    refused = [w for w in doc["warnings"] if w.startswith("the sandbox refused")]
    assert refused, doc["warnings"]
    with pytest.raises(BlockingIOError):
        server.accept()
    server.close()
    for planted in ("PLANTED_BY_SUBMISSION", "PLANTED_BY_CHILD"):
        assert not (ROOT / planted).exists()


def test_a_template_started_ahead_serves_the_first_job():
    """`start_soon` with the environment a request's judges get (`template_env_of`, as a
    server's slot starts it): the first job is forked from that very template, not from a
    second one started for it."""
    from harness.execution.judge_process import template_env_of

    template = JudgeTemplate()
    try:
        template.start_soon(template_env_of(_request()))
        started = template.proc.pid
        result = run_judge(_request(), template)
        assert isinstance(result, Judged) and result.document["status"] == "passed", result
        assert template.proc.pid == started
        assert result.document["harness"]["forked_worker"] is True
    finally:
        template.close()


def test_python_variables_meant_for_workers_start_no_judge_interpreter(monkeypatch):
    """An organiser's `worker.env_pass` may name Python's own start-up variables for the
    workers (PYTHONMALLOC, say): a judge's or template's interpreter starts without them,
    under one variable that no worker sees, and has them back once it runs."""
    from harness.execution.judge_template import WITHHELD, interpreter_env, restore_withheld
    from harness.judging.sandbox.sandbox import passes

    env = {"PATH": "/bin", "PYTHONPATH": "/p", "PYTHONMALLOC": "malloc",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONFAULTHANDLER": "1"}
    started = interpreter_env(env)
    assert started["PYTHONPATH"] == "/p" and started["PYTHONDONTWRITEBYTECODE"] == "1"
    assert "PYTHONMALLOC" not in started and "PYTHONFAULTHANDLER" not in started
    assert not passes(WITHHELD, ["PYTHON*", "HARNESS_*"])  # never a worker's
    monkeypatch.setattr(os, "environ", dict(started))
    restore_withheld()
    assert os.environ == env
    assert interpreter_env({"PATH": "/bin"}) == {"PATH": "/bin"}  # nothing held: no variable


def test_a_cpu_slots_template_does_not_import_triton():
    """Triton is preloaded where the machine has a GPU only: a submission loaded in a
    CPU slot's forked worker finds it not imported (it returns wrong values otherwise)."""
    template = JudgeTemplate()
    try:
        result = run_judge(_request(file=ROOT / "tests" / "submissions" / "vectoradd" /
                                    "sees_preloaded_triton.py"), template)
    finally:
        template.close()
    assert isinstance(result, Judged) and result.document["harness"]["forked_worker"] is True
    assert result.document["status"] == "passed", result.document["status"]
