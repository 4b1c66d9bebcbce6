"""Does the state of the host before a sample slow the 15 calls of host work behind it?
(CPU machine, runs 28-32 in docs/benchmarks.md: nvfp4 triton_hopper case 3.)

One sample is 15 calls of triton_hopper's host work (rows of data_ptr(), torch.tensor, a
slice copy), after: nothing (warm); a 13 MB copy of CPU memory (the worker's refresh of
its private CPU inputs, 15 x the plain-layout scales of case 3); a 2 ms sleep; both; and
each followed by a 1 ms busy loop (is it the clock or the caches?). 300 interleaved
rounds; mean and median per call.

    python docs/measurements/2026-11-30/scripts/cpu_cold_host.py
"""
import statistics
import time

import torch

torch.set_num_threads(1)
ts = [torch.empty(64) for _ in range(10)]
host = torch.empty((8, 10), dtype=torch.int64)
big_src = torch.randn(13 * (1 << 20) // 4)
big_dst = torch.empty_like(big_src)
def snippet():
    rows = []
    first = 0
    for i in range(2):
        a, b, c, d, e = ts[5*i:5*i+5]
        rows.append([a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), e.data_ptr(), 128, 4096, 1536, first, 32])
        first += 64
    host[:len(rows)] = torch.tensor(rows, dtype=torch.int64)
    return host[:len(rows)].clone()
def sample(refresh, pause, spin=0):
    if refresh:
        big_dst.copy_(big_src)
    if pause:
        time.sleep(pause)
    if spin:
        end = time.perf_counter_ns() + spin
        while time.perf_counter_ns() < end:
            pass
    t0 = time.perf_counter_ns()
    for _ in range(15):
        snippet()
    return (time.perf_counter_ns() - t0) / 15
for _ in range(200):
    sample(False, 0)
res = {k: [] for k in ["warm", "refresh", "pause", "refresh+pause", "pause+spin", "refresh+spin"]}
for _ in range(300):
    for k in res:
        res[k].append(sample("refresh" in k, 0.002 if "pause" in k else 0, 1_000_000 if "spin" in k else 0))
for k, v in res.items():
    print(f"{k:14s} mean {statistics.fmean(v)/1e3:.2f} us  median {statistics.median(v)/1e3:.2f} us")
