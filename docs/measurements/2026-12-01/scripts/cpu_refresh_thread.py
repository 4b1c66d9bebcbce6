"""Does the worker's refresh of its private CPU inputs (case 3 of nvfp4: 30 tensors, 13 MB
in all) slow the 15 calls of host work behind it less when a helper thread does the copy?
(CPU machine; nvfp4 triton_hopper case 3, docs/benchmarks.md.)

One sample is 15 calls of triton_hopper's host work (rows of data_ptr(), torch.tensor, a
slice copy) after: nothing (warm); the refresh on this thread; the refresh on a helper
thread, waited for; the helper thread's wake-up alone. 300 interleaved rounds.

    python docs/measurements/2026-12-01/scripts/cpu_refresh_thread.py
"""
import statistics
import threading

import torch
from _host_work import host_work, per_call_ns

torch.set_num_threads(1)
snippet = host_work()
pairs = [(torch.randn(13 * (1 << 20) // 4 // 30), None) for _ in range(30)]
pairs = [(s, torch.empty_like(s)) for s, _ in pairs]


def refresh():
    for src, dst in pairs:
        dst.copy_(src)


class Helper:
    def __init__(self):
        self.go, self.done, self.job = threading.Event(), threading.Event(), None
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            self.go.wait()
            self.go.clear()
            if self.job:
                self.job()
            self.done.set()

    def run(self, job):
        self.job = job
        self.done.clear()
        self.go.set()
        self.done.wait()


helper = Helper()


def sample(kind):
    if kind == "refresh":
        refresh()
    elif kind == "refresh-thread":
        helper.run(refresh)
    elif kind == "thread-only":
        helper.run(None)
    return per_call_ns(snippet)


for _ in range(200):
    sample("warm")
res = {k: [] for k in ["warm", "refresh", "refresh-thread", "thread-only"]}
for _ in range(300):
    for k in res:
        res[k].append(sample(k))
for k, v in res.items():
    print(f"{k:15s} mean {statistics.fmean(v)/1e3:.2f} us  median {statistics.median(v)/1e3:.2f} us")
