"""Does the worker's sandbox slow host Python? (CPU machine, runs 28-32 in docs/benchmarks.md)

Times a loop of nvfp4 triton_hopper's host work (rows of data_ptr(), torch.tensor, a slice
copy) in a plain child process and in a child under the worker's whole sandbox (Landlock,
seccomp, rlimits, the audit hook, through harness.judging.sandbox.contain), three
alternating rounds; median and best of 15 timings of 2000 calls each.

    python docs/measurements/2026-11-30/scripts/cpu_sandbox_host.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def bench(label: str) -> None:
    import torch

    torch.set_num_threads(1)
    ts = [torch.empty(64) for _ in range(10)]
    host = torch.empty((8, 10), dtype=torch.int64)

    def snippet() -> None:
        rows, first = [], 0
        for i in range(2):
            a, b, c, d, e = ts[5 * i:5 * i + 5]
            rows.append([a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), e.data_ptr(),
                         128, 4096, 1536, first, 32])
            first += 64
        host[:len(rows)] = torch.tensor(rows, dtype=torch.int64)
        host[:len(rows)].clone()

    for _ in range(2000):
        snippet()
    times = []
    for _ in range(15):
        t0 = time.perf_counter_ns()
        for _ in range(2000):
            snippet()
        times.append((time.perf_counter_ns() - t0) / 2000)
    times.sort()
    hooked = "harness.judging.refusals" in sys.modules
    print(f"{label:9s} median {times[7] / 1e3:.2f} µs, best {times[0] / 1e3:.2f} µs "
          f"(audit hook installed: {hooked})")


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from harness.judging.sandbox import contain
    from harness.settings import Settings

    worker = Settings.load().for_device("cpu").worker
    here = Path(__file__).resolve()
    for _ in range(3):
        subprocess.run([sys.executable, str(here), "plain"], check=True,
                       env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        scratch = Path(tempfile.mkdtemp())
        env, limits, report = contain(worker, "cpu", scratch, [here.parent], [])
        try:
            subprocess.run([sys.executable, str(here), "sandboxed"], env=env, cwd=scratch,
                           preexec_fn=limits.apply, check=True)
        finally:
            limits.close()
        print("sandbox:", report.level)


if __name__ == "__main__":
    bench(sys.argv[1]) if len(sys.argv) > 1 else main()
