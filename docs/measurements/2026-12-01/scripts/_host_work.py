"""The host work of nvfp4 triton_hopper's case-3 call, for the CPU-only measurements of
this folder (cpu_map.py, cpu_refresh_thread.py, cpu_spinning_neighbour.py): per call,
rows of data_ptr() and sizes for two groups, a torch.tensor of them copied into a small
host table, and a slice of that table copied out."""
import time
from typing import Callable

import torch


def host_work() -> Callable[[], torch.Tensor]:
    """One call's host work, on tensors made once here."""
    ts = [torch.empty(64) for _ in range(10)]
    host = torch.empty((8, 10), dtype=torch.int64)

    def call() -> torch.Tensor:
        rows, first = [], 0
        for i in range(2):
            a, b, c, d, e = ts[5 * i:5 * i + 5]
            rows.append([a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), e.data_ptr(),
                         128, 4096, 1536, first, 32])
            first += 64
        host[:len(rows)] = torch.tensor(rows, dtype=torch.int64)
        return host[:len(rows)].clone()

    return call


def per_call_ns(call: Callable[[], object], calls: int = 15) -> float:
    """One sample: `calls` calls back to back; the mean per call (ns)."""
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        call()
    return (time.perf_counter_ns() - t0) / calls
