"""harness/execution/stopping.py and sandbox.die_with_parent: a judge stopped from outside
(SIGTERM: a CI job's time limit; SIGKILL) leaves no worker running the submission, and a
batch stopped so leaves no judge. Real processes, found in /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import BAD, ROOT, Run, run_cli

from harness.execution.stopping import EXIT_CODE, stop_on_sigterm
from harness.judging.sandbox.procfs import JUDGE_NAME, TEMPLATE_NAME, WORKER_NAME

ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"

HANG = BAD / "hang.py"  # a call that never returns: its worker would spin for ever


def _named(root: int, name: str) -> list[int]:
    """The live processes below `root`, however deep, named `name` (/proc/PID/comm): the
    harness's judges and workers, started from scratch or forked from a template."""
    from harness.judging.sandbox.procfs import family, name_of, stat_fields

    return [p for p in family(root) - {root}
            if name_of(p) == name and stat_fields(p)[:1] not in (["Z"], [])]


def _children(pid: int, marker: str) -> list[int]:
    """The live child processes of `pid` whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and marker in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(predicate, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return predicate()


def _left_alive(pids: list[int], seconds: float) -> list[int]:
    """Those of `pids` still alive after waiting up to `seconds` for all to end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


def _start(*args: str, tmp_path: Path) -> subprocess.Popen:
    (tmp_path / "temp").mkdir(exist_ok=True)  # the run's temporary folder: what it leaves
    env = dict(os.environ, HARNESS_DB=str(tmp_path / "stop.db"), TMPDIR=str(tmp_path / "temp"))
    return subprocess.Popen([sys.executable, str(ROOT / "runner.py"), *args], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_sigterm_raises_system_exit_in_the_main_thread():
    previous = signal.getsignal(signal.SIGTERM)
    try:
        stop_on_sigterm()
        with pytest.raises(SystemExit) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs at the next bytecode
        assert stopped.value.code == EXIT_CODE == 143
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a second one ends it
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_submit_leaves_no_worker_running(tmp_path, sig):
    """SIGTERM: the command stops its judge, which cleans up on its way out (exit 143,
    says so); SIGKILL leaves them no cleanup, and the judge's template, the judge and its
    worker die in turn (PR_SET_PDEATHSIG)."""
    runner = _start("submit", str(HANG), "--task", "vectoradd", "--device", "cpu",
                    "--mode", "test", "--timeout", "120", tmp_path=tmp_path)
    try:
        workers = _wait_for(lambda: _named(runner.pid, WORKER_NAME), 90)
        assert workers, "no worker started"
        judges = _named(runner.pid, JUDGE_NAME)
        time.sleep(3)  # the worker imports and starts the hanging call
        runner.send_signal(sig)
        out, _ = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    if sig == signal.SIGTERM:
        assert runner.returncode == EXIT_CODE, out
        assert "stopped by SIGTERM" in out and "Traceback" not in out, out
    assert not _left_alive(workers + judges, 15), "a worker or judge outlived the command"
    left = [f for pid in [runner.pid, *judges] for f in _run_folders(tmp_path, pid)]
    if sig == signal.SIGTERM:
        assert left == [], "cleaned up on the way out"
    else:  # no way out: the next evaluation under this user removes them
        assert any("harness-worker-" in p.name for p in left), left
        r = _submit("--no-record", env={"TMPDIR": str(tmp_path / "temp")})
        assert r.rc == 0 and not any(p.exists() for p in left), r.out
        assert list((tmp_path / "temp").glob("harness-*")) == []  # nothing of either run


def _run_folders(tmp_path: Path, pid: int) -> list[Path]:
    """The run folders that the process `pid` made (leftovers.py names them for it), in the
    test's temporary folder and in /dev/shm."""
    return [p for place in (tmp_path / "temp", Path("/dev/shm"))
            for p in place.glob(f"harness-*-*-{pid}-*")]


@pytest.mark.slow
def test_a_stopped_batch_leaves_no_judge_running(tmp_path):
    """SIGTERM to the batch driver: each running judge process is stopped (and stops its
    worker), no queued submission starts, the driver says so and exits 143."""
    folder = tmp_path / "subs"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"hang_{name}.py").write_text(HANG.read_text())
    driver = _start("batch", str(folder), "--task", "vectoradd", "--device", "cpu", "--jobs", "2",
                    "--mode", "test", "--timeout", "120", tmp_path=tmp_path)
    try:
        # Found below the driver, however deep, both at one moment: a judge seen before
        # its worker starts may have ended meanwhile, its job judged by another.
        workers = _wait_for(lambda: (lambda w: w if len(w) == 2 else [])(
            _named(driver.pid, WORKER_NAME)), 150)
        assert len(workers) == 2, "two workers did not start"
        judges = _named(driver.pid, JUDGE_NAME)
        assert len(judges) == 2, "two judges are not running"
        time.sleep(3)
        driver.send_signal(signal.SIGTERM)
        out, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == EXIT_CODE, out
    assert "stopped:" in out and "2 running evaluation(s) ended" in out, out
    assert not _left_alive(judges + workers, 15), out
    # the slots' templates die with the driver's threads (PR_SET_PDEATHSIG), a moment later
    assert _wait_for(lambda: not _named(os.getpid(), JUDGE_NAME)
                     and not _named(os.getpid(), TEMPLATE_NAME), 15), out


BUFFERED = {"PYTHONUNBUFFERED": None}  # as a pipe normally is: a missing flush loses text


def test_exit_now_flushes_what_is_buffered_and_keeps_the_code():
    """`submit` ends with exit_now (no interpreter teardown): what the command printed and
    left in the buffers still reaches a pipe, and the exit code is the command's."""
    code = ("import sys, atexit; from harness.execution.stopping import exit_now; "
            "atexit.register(lambda: print('teardown ran')); "
            "sys.stdout.write('x' * 100); sys.stderr.write('e' * 50); exit_now(3)")
    env = {k: v for k, v in os.environ.items() if k not in BUFFERED}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=env)
    assert done.returncode == 3
    assert done.stdout == "x" * 100  # flushed (less than a buffer), no teardown after it
    assert done.stderr == "e" * 50


def _submit(*args: str, file: Path = ADD, python: tuple[str, ...] = (),
            json_path: Path | None = None, env: dict | None = None) -> Run:
    """`runner.py submit FILE` on vectoradd's tests on the CPU, its streams buffered (and
    `env` beside)."""
    return run_cli("submit", str(file), "--task", "vectoradd", "--mode", "test", "--device",
                   "cpu", *args, json_path=json_path, env={**BUFFERED, **(env or {})},
                   python=python, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("submission, code", [("add_torch.py", 0), ("wrong", 1)])
def test_submit_exits_with_its_verdicts_code_and_a_whole_report(tmp_path, submission, code):
    """A submit through exit_now: the table's last lines and the JSON are all there, the
    exit code is the verdict's, whether it passed or failed."""
    sub = ROOT / "submissions" / "vectoradd" / submission
    if submission == "wrong":
        sub = tmp_path / "wrong.py"
        sub.write_text("from task import input_t, output_t\n\n\n"
                       "def custom_kernel(data: input_t) -> output_t:\n    a, b = data\n"
                       "    return a - b\n")
    done = _submit("--no-record", file=sub, json_path=tmp_path / "r.json")
    assert done.rc == code, done.out
    lines = done.out.splitlines()
    assert f"exit code {code})" in lines[-2] and lines[-1].startswith("time: start-up")
    assert done.doc["exit_code"] == code


@pytest.mark.slow
def test_a_recorded_submit_leaves_the_database_whole_in_its_file(tmp_path):
    """The process ends without a teardown, so the database is closed before: SQLite folds
    its write-ahead log into the file, and a copy of the file alone holds the record."""
    import shutil
    import sqlite3

    db = tmp_path / "results.db"
    done = _submit("--record", "--db", str(db), "--user", "alice")
    assert done.rc == 0, done.out
    assert not Path(f"{db}-wal").exists()
    copy = tmp_path / "copy" / "results.db"
    copy.parent.mkdir()
    shutil.copy(db, copy)  # the file alone, as a backup would take it
    conn = sqlite3.connect(copy)
    try:
        assert conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == 1
    finally:
        conn.close()


@pytest.mark.slow
def test_a_profiled_submit_exits_the_ordinary_way_and_the_profile_is_written(tmp_path):
    """Under a profiler exit_now leaves by sys.exit, so that cProfile writes its file."""
    prof = tmp_path / "judge.prof"
    done = _submit("--no-record", python=("-m", "cProfile", "-o", str(prof)))
    assert done.rc == 0, done.out
    assert prof.exists() and prof.stat().st_size > 0
