"""Session diagnostic (run 47): runs 38-46 read the harness worker's host time around
vectoradd's torch call at 2-4x a bare process's in some evaluations and not in others
(per evaluation, across its cases). Does it follow where the worker and the judge run?
Every call records its own host time (the public submission's work) and the CPUs that
this process and its parent (the judge) last ran on (/proc/PID/stat, field 39); after
each case's calls it prints the median host time per pair of CPUs. Run without the
sandbox (the judge's /proc entry is then readable)."""
import os
import statistics
import time
from collections import defaultdict

_by: dict = defaultdict(lambda: defaultdict(list))
_parent = os.getppid()


def _cpu(pid) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def custom_kernel(data):
    A, B, output = data
    t0 = time.perf_counter_ns()
    output[...] = A + B
    host = (time.perf_counter_ns() - t0) / 1e3
    mine, judge = _cpu("self"), _cpu(_parent)
    size = A.shape[0]
    _by[size][(mine, judge)].append(host)
    n = sum(len(v) for v in _by[size].values())
    if n % 100 == 0:
        parts = sorted(_by[size].items(), key=lambda kv: -len(kv[1]))[:6]
        print(f"PROBE {size} after {n} calls: " + "; ".join(
            f"cpu {m}/judge {j}: {statistics.median(v):.1f} µs x{len(v)}" for (m, j), v in parts),
            flush=True)
    return output
