"""The run folders named for their maker, and the sweep of a dead maker's
(harness/judging/leftovers.py): real processes, real folders."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

from harness.judging import leftovers


def _made_by_a_process_that_ended(parent) -> str:
    code = ("import sys; from harness.judging.leftovers import make_folder; "
            "print(make_folder('worker', sys.argv[1]))")
    out = subprocess.run([sys.executable, "-c", code, str(parent)], capture_output=True,
                         text=True, cwd=ROOT, timeout=60, check=True)
    return out.stdout.strip()


def test_a_folder_is_named_for_its_makers_namespace_and_pid(tmp_path):
    made = leftovers.make_folder("run", tmp_path)
    ns = os.stat("/proc/self/ns/pid").st_ino
    assert made.parent == tmp_path and made.is_dir()
    assert made.name.startswith(f"harness-run-{ns}-{os.getpid()}-")


def test_the_sweep_removes_a_dead_makers_folders_and_nothing_else(tmp_path):
    dead = tmp_path / _made_by_a_process_that_ended(tmp_path)
    (dead / "tmp").mkdir()
    (dead / "tmp" / "big").write_bytes(b"x" * 4096)
    live = leftovers.make_folder("shm", tmp_path)  # this process's: alive
    ns = os.stat("/proc/self/ns/pid").st_ino
    dead_pid = int(dead.name.split("-")[3])
    elsewhere = tmp_path / f"harness-worker-{ns + 1}-{dead_pid}-abc"  # that pid elsewhere
    elsewhere.mkdir()
    unrelated = tmp_path / f"harness-cache-{ns}-{dead_pid}-x"  # not a kind the runs make
    unrelated.mkdir()
    a_file = tmp_path / f"harness-run-{ns}-{dead_pid}-file"
    a_file.write_text("")
    assert leftovers.sweep([tmp_path]) == [dead]
    assert not dead.exists() and live.exists() and elsewhere.exists()
    assert unrelated.exists() and a_file.exists()
