"""`runner.py warm` (harness/execution/warm_host.py), a real host process and real
commands: `submit` borrows a template from it (no import of torch of its own) and passes
as without it; a command whose environment differs, another user, or a changed checkout
is refused and starts its own; a command killed mid-job takes its judge with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from warmkit import Host

from harness.execution import warm_host
from harness.judging.sandbox.procfs import JUDGE_NAME, name_of

pytestmark = pytest.mark.xdist_group("warm_host")
ADD = "submissions/vectoradd/add_torch.py"
HANG = "tests/submissions/vectoradd/hang.py"


@pytest.fixture(scope="module")
def host():
    running = Host()
    yield running
    path = running.path
    running.proc.send_signal(signal.SIGTERM)
    running.proc.wait(timeout=30)
    assert not path.exists()  # the host removes its socket as it ends
    running.stop()


def _submit(host: Host, tmp_path: Path, file: str = ADD, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "runner.py", "submit", file, "--task", "vectoradd", "--mode", "test",
         "--device", "cpu", "--json", str(tmp_path / "out.json")],
        cwd=ROOT, env={**os.environ, "HARNESS_DB": str(tmp_path / "r.db"), **host.env(**env)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow  # a host, and commands judged through it
def test_submit_borrows_a_template_and_passes_as_without_one(host, tmp_path):
    proc = _submit(host, tmp_path)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "PASSED" in out, out
    assert f"lent a template to pid {proc.pid}" in host.text()
    # and without the host, the same verdict
    r = run_cli("submit", ADD, "--task", "vectoradd", "--mode", "test", "--device", "cpu",
                env={warm_host.ENV: "off", "HARNESS_DB": str(tmp_path / "r.db")})
    assert r.rc == 0 and "PASSED" in r.out


@pytest.mark.slow
def test_another_environment_is_refused_and_runs_on_its_own_template(host, tmp_path):
    proc = _submit(host, tmp_path, TORCH_SHOW_CPP_STACKTRACES="1")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "PASSED" in out, out
    assert (f"refused pid {proc.pid}: another environment (TORCH_SHOW_CPP_STACKTRACES)"
            in host.text())


@pytest.mark.slow
def test_a_command_killed_mid_job_takes_its_judge_with_it(host, tmp_path):
    proc = _submit(host, tmp_path, file=HANG)
    deadline = time.monotonic() + 60
    judges: list[int] = []
    while not judges:
        assert time.monotonic() < deadline and proc.poll() is None
        judges = [p for p in _descendants(host.proc.pid) if name_of(p) == JUDGE_NAME]
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while any(name_of(p) == JUDGE_NAME for p in _descendants(host.proc.pid)):
        assert time.monotonic() < deadline, "the judge outlived its command"
        time.sleep(0.1)
    assert host.proc.poll() is None  # the host goes on


@pytest.mark.slow
def test_a_second_host_on_the_same_socket_is_refused_and_the_first_goes_on(host, tmp_path):
    second = run_cli("warm", "--socket", str(host.path), env={warm_host.ENV: "off"})
    assert second.rc == 2 and "a host listens on" in second.out, second.out
    proc = _submit(host, tmp_path)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and f"lent a template to pid {proc.pid}" in host.text(), out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_another_user_gets_nothing(host):
    """Another user cannot reach the host's folder, let alone borrow a template."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.environ[warm_host.ENV] = str(host.path)
            code = 0 if warm_host.borrow(dict(os.environ)) is None else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_what_is_refused():
    own = {"root": str(ROOT), "code": warm_host.fingerprint(),
           "env": {"PATH": "/bin", "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "0"}}
    same = {**own, "env": {**own["env"], "CUDA_VISIBLE_DEVICES": ""}}  # read at first use
    assert warm_host._refusal(same, own) == ""
    assert warm_host._refusal({**own, "root": "/elsewhere"}, own) == "another project folder"
    assert "changed since the host started" in warm_host._refusal({**own, "code": "0"}, own)
    assert warm_host._refusal({**own, "env": {**own["env"], "PATH": "/usr/bin"}}, own) == (
        "another environment (PATH)")
    assert warm_host._refusal({**own, "env": {"PYTHONPATH": str(ROOT)}}, own) == (
        "another environment (PATH)")  # one the host has, missing


def test_no_host_and_off_lend_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(warm_host.ENV, str(tmp_path / "none.sock"))
    assert warm_host.borrow({}) is None
    monkeypatch.setenv(warm_host.ENV, "off")
    assert warm_host.socket_path() is None and warm_host.borrow({}) is None


def _descendants(pid: int) -> list[int]:
    table: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            table.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        kids = table.get(todo.pop(), [])
        found += kids
        todo += kids
    return found
