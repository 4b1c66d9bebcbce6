"""The address-space cap (harness/judging/sandbox/memory_cap.py), each case in a child process:
the cap is the process's own and cannot be undone."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

_SELF = """
import resource
from harness.judging.sandbox.memory_cap import cap_self, mapped_bytes
assert cap_self(0) is None
assert resource.getrlimit(resource.RLIMIT_AS) == (resource.RLIM_INFINITY,) * 2
before = mapped_bytes()
cap = cap_self(256 << 20)
print(cap - before, resource.getrlimit(resource.RLIMIT_AS) == (cap, cap))
kept = bytearray(96 << 20)  # within the cap
try:
    bytearray(512 << 20)
except MemoryError:
    print("refused")
try:
    resource.setrlimit(resource.RLIMIT_AS, (cap * 2, cap * 2))
except ValueError:
    print("kept")
"""

_LOWER = """
import resource
from harness.judging.sandbox.memory_cap import cap_self, mapped_bytes, whole_process_cap
low = mapped_bytes() + (64 << 20)
resource.setrlimit(resource.RLIMIT_AS, (low, resource.RLIM_INFINITY))  # ulimit -S -v
print(cap_self(1 << 30) == low, resource.getrlimit(resource.RLIMIT_AS) == (low, low))
print(whole_process_cap(0) is None, whole_process_cap(1 << 30) == low)
"""


def _child(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=True).stdout.split()


def test_the_cap_is_what_the_process_maps_now_plus_the_setting_and_stays():
    room, exact, refused, kept = _child(_SELF)
    assert (256 << 20) <= int(room) < (256 << 20) + (8 << 20)  # the read itself maps a little
    assert exact == "True" and refused == "refused" and kept == "kept"


def test_an_organisers_lower_limit_is_kept_never_raised():
    assert _child(_LOWER) == ["True", "True", "True", "True"]
