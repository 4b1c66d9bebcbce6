"""The run folders named for their maker, and the sweep of a dead maker's
(harness/judging/sandbox/leftovers.py): real processes, real folders."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from harness.judging.sandbox import leftovers


def _made_by_a_process_that_ended(parent) -> str:
    code = ("import sys; from harness.judging.sandbox.leftovers import make_folder; "
            "print(make_folder('worker', sys.argv[1]))")
    out = subprocess.run([sys.executable, "-c", code, str(parent)], capture_output=True,
                         text=True, cwd=ROOT, timeout=60, check=True)
    return out.stdout.strip()


def test_a_folder_is_named_for_its_machine_namespace_and_pid(tmp_path):
    made = leftovers.make_folder("run", tmp_path)
    assert made.parent == tmp_path and made.is_dir()
    assert made.name.startswith(f"harness-run-{leftovers.host_key()}-{os.getpid()}-")


def test_the_sweep_removes_a_dead_makers_folders_and_nothing_else(tmp_path):
    dead = tmp_path / _made_by_a_process_that_ended(tmp_path)
    (dead / "tmp").mkdir()
    (dead / "tmp" / "big").write_bytes(b"x" * 4096)
    (dead / "harness").symlink_to(ROOT / "harness")  # as a worker's scratch links to it
    live = leftovers.make_folder("shm", tmp_path)  # this process's: alive
    key, dead_pid = leftovers.host_key(), int(dead.name.split("-")[3])
    kept = [
        tmp_path / f"harness-worker-{'0' * 12}-{dead_pid}-x",  # another machine's pid
        tmp_path / f"harness-cache-{key}-{dead_pid}-x",  # not a kind the runs make
        tmp_path / f"harness-run-{key}-9999999999-x",  # no such pid on any machine
    ]
    for folder in kept:
        folder.mkdir()
    a_file = tmp_path / f"harness-run-{key}-{dead_pid}-file"
    a_file.write_text("")
    a_link = tmp_path / f"harness-run-{key}-{dead_pid}-link"
    a_link.symlink_to(live)
    assert leftovers.sweep([tmp_path]) == [dead]
    assert not dead.exists() and (ROOT / "harness" / "__init__.py").exists()
    assert live.exists() and all(folder.exists() for folder in kept)
    assert a_file.exists() and a_link.is_symlink()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_folder_is_kept(tmp_path):
    dead = tmp_path / _made_by_a_process_that_ended(tmp_path)
    os.chown(dead, 12345, 12345)
    assert leftovers.sweep([tmp_path]) == [] and dead.exists()


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not between fork and exec
_LAST_CAP = int(open("/proc/sys/kernel/cap_last_cap").read())


def _without_capabilities() -> None:
    """In a child before exec: as root, empty the capability bounding set, so that the
    exec'd process (uid 0 still) meets the folders' permission bits as any owner does."""
    if os.geteuid() == 0:
        for cap in range(_LAST_CAP + 1):
            _PRCTL(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP


def test_a_folder_whose_worker_took_its_rights_away_is_removed(tmp_path):
    """A submission may chmod folders in its scratch to 000; its owner (no root rights)
    cannot then list or empty them, and plain removal leaves them: the sweep gives the
    rights back and removes the folder."""
    dead = tmp_path / _made_by_a_process_that_ended(tmp_path)
    control = tmp_path / "control"
    for top in (dead, control):
        (top / "locked" / "inner").mkdir(parents=True)
        (top / "locked" / "inner" / "file").write_text("x")
        os.chmod(top / "locked" / "inner", 0)
        os.chmod(top / "locked", 0)
    code = ("import re, shutil, sys; from pathlib import Path; "
            "from harness.judging.sandbox.leftovers import sweep; "
            "eff = int(re.search(r'CapEff:\\s*(\\w+)', open('/proc/self/status').read()).group(1), 16); "
            "eff & 2 and sys.exit(7); "  # CAP_DAC_OVERRIDE still held (an inheritable set kept)
            "shutil.rmtree(sys.argv[2], ignore_errors=True); "
            "print(Path(sys.argv[2]).exists(), sweep([Path(sys.argv[1])]))")
    try:
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(control)],
                             capture_output=True, text=True, cwd=ROOT, timeout=60,
                             preexec_fn=_without_capabilities)
        if out.returncode == 7:
            pytest.skip("this host gives root back CAP_DAC_OVERRIDE at exec (inheritable set)")
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[0] == "True"  # plain removal could not do it
        assert not dead.exists() and str(dead) in out.stdout
    finally:
        for folder in (control / "locked", control / "locked" / "inner"):
            if folder.exists():
                os.chmod(folder, 0o700)


def test_a_zombie_is_no_living_maker():
    """A process killed and not yet reaped (as under a container init that reaps nothing)
    can no longer use its folders."""
    import time

    child = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 30
        while "Z" not in open(f"/proc/{child.pid}/stat").read().rpartition(")")[2].split()[:1]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert leftovers.alive(child.pid) is False
        assert leftovers.alive(os.getpid()) is True
    finally:
        child.wait()
    assert leftovers.alive(child.pid) is False


def test_the_sweep_never_fails_an_evaluation(monkeypatch):
    monkeypatch.setattr(leftovers, "_swept", False)
    monkeypatch.setattr(leftovers, "sweep", lambda: 1 / 0)
    assert leftovers.sweep_once() == []
