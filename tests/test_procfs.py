"""harness/judging/sandbox/procfs.py: the fields of /proc/PID/stat, read from real processes."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.judging.sandbox.procfs import start_ticks, stat_fields

# A command name with a space and parentheses in it, as any process may give itself.
_NAMED = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(15, b'a) b (c', 0, 0, 0); "
          "print('named', flush=True); time.sleep(60)")


def test_the_fields_after_the_command_name():
    fields = stat_fields()
    assert fields[0] in ("R", "S") and int(fields[1]) == os.getppid()
    assert int(fields[2]) == os.getpgrp() and stat_fields(os.getpid())[1:3] == fields[1:3]


def test_a_command_name_with_parentheses_does_not_shift_them():
    child = subprocess.Popen([sys.executable, "-c", _NAMED], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "named"
        assert open(f"/proc/{child.pid}/comm").read().strip() == "a) b (c"
        assert int(stat_fields(child.pid)[1]) == os.getpid()
        assert start_ticks(child.pid) >= start_ticks()  # it started after this process
    finally:
        child.kill()
        child.wait()


def test_no_such_process():
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    pid = int(ended.stdout)
    assert stat_fields(pid) == [] and start_ticks(pid) is None
