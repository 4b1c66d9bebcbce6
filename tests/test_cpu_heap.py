"""The CPU worker's heap touched up front (harness/judging/worker/cpu_heap.py): outputs that
would land on fresh pages, a page fault each, reuse touched ones instead."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from harness.judging.worker import cpu_heap

glibc = pytest.mark.skipif(cpu_heap._glibc() is None, reason="the C library is not glibc")

# Two 2 MiB outputs alive per sample and a small tensor kept between samples: without the
# touched heap each sample's blocks move up the heap onto fresh pages; with it, they stay on
# touched ones for these 60 samples (the climb reaches its end after about 120).
PATTERN = """
import resource, sys
import torch
from harness.judging.worker.cpu_heap import touch_heap

touched = touch_heap() if sys.argv[1] == "touch" else 0
a = torch.ones(1024, 1024, dtype=torch.float16)
b = torch.ones_like(a)
kept, faults = [], 0
for i in range(60):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    outs = [a + b, a + b]
    if i >= 5:
        faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    kept.append(torch.empty(100))
    del outs
print(touched, faults)
"""

# A submission that counts the page faults of its own output's allocation, call by call.
COUNTING = """
import resource

def custom_kernel(data):
    a, b = data
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = a + b
    print("faults", resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, flush=True)
    return out
"""


def _pattern(mode: str) -> tuple[int, int]:
    proc = subprocess.run([sys.executable, "-c", PATTERN, mode], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=True)
    touched, faults = proc.stdout.split()[-2:]
    return int(touched), int(faults)


@pytest.mark.slow
@glibc
def test_outputs_reuse_the_touched_heap_where_they_would_fault_without_it():
    if _pattern("none")[1] < 10 * 512:  # fresh 2 MiB blocks: 512 faults each (4 KiB pages)
        pytest.skip("this host's heap does not fault 4 KiB pages on this pattern (huge pages?)")
    touched, faults = _pattern("touch")
    assert touched == cpu_heap.HEAP_BYTES
    assert faults < 512  # not one fresh block after the first samples


def test_the_touched_heap_is_a_share_of_a_capped_allowance():
    assert cpu_heap.heap_size(0) == cpu_heap.HEAP_BYTES  # no cap
    assert cpu_heap.heap_size(16 << 30) == cpu_heap.HEAP_BYTES
    assert cpu_heap.heap_size(256 << 20) == 64 << 20
    assert cpu_heap.touch_heap(cpu_heap.heap_size(32 << 20)) == 0  # 8 MiB: less than a block


def test_nothing_is_touched_without_glibc(monkeypatch):
    monkeypatch.setattr(cpu_heap, "_glibc", lambda: None)
    assert cpu_heap.touch_heap() == 0


@glibc
@pytest.mark.slow
def test_a_cpu_benchmark_run_allocates_its_outputs_without_page_faults(cli, tmp_path):
    sub = tmp_path / "counting.py"
    sub.write_text(COUNTING)
    r = cli("submit", str(sub), "--task", "vectoradd", "--device", "cpu", "--mode",
            "benchmark", "--no-record", "--case", "size: 1024; seed: 1")
    assert r.rc == 0, r.out
    assert r.doc["harness"]["cpu_heap_bytes"] == cpu_heap.HEAP_BYTES
    faults = [int(line.split()[1]) for line in r.doc["worker_output"]["stdout"].splitlines()
              if line.startswith("faults ")]
    assert len(faults) >= 10, r.doc["worker_output"]
    assert sum(f >= 512 for f in faults[3:]) == 0, faults  # the first calls may fault
