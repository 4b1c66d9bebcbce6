"""Session diagnostic (run 45): run 44 read vectoradd's torch call at 20-31 µs of host time
in the harness's worker when called 200 times in a row, but 33-121 µs one call per
sample. A judge and a worker reduced to their rhythm: the judge process prepares (or
not) GPU work in its own context, then signals through shared memory and polls for the
answer; the worker polls, runs the harness's sequence before the start event (an empty
kernel, an event waited for, a GPU sleep of 100 µs or none), times one call (host time,
event time) and answers. Variants: the judge flushes the L2 in its context and
synchronizes before signalling (the harness); the worker flushes in its own context
instead; nobody flushes. Per variant, the worker's median host time and mean event time
for the 1024² and 4096² adds. Usage: diag_two_process.py PUBLIC_DIR"""
import multiprocessing as mp
import os
import statistics
import sys
import time

N = 200


def worker(public, go, done, variant, ahead_us, q):
    sys.path[:0] = [public, os.path.dirname(public)]
    import torch
    from reference import generate_input
    from submission import custom_kernel
    data = [generate_input(size=s, seed=1) for s in (1024, 4096)]
    for d in data:
        custom_kernel(d)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm = torch.cuda.Event()
    buf = torch.empty(100 * 2**20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    q.put("ready")
    out = {}
    for k, d in enumerate(data):
        hosts, events = [], []
        for i in range(N):
            target = k * N + i + 1
            while go.value != target:
                pass
            if variant == "worker flushes":
                buf.zero_()
            torch.cuda._sleep(1)
            warm.record()
            warm.synchronize()
            if ahead_us:
                torch.cuda._sleep(int(ahead_us * 1980))
            s.record()
            t0 = time.perf_counter_ns()
            o = custom_kernel(d)
            t1 = time.perf_counter_ns()
            e.record()
            torch.cuda.synchronize()
            hosts.append((t1 - t0) / 1e3)
            events.append(s.elapsed_time(e) * 1e3)
            del o
            done.value = target
        out[k] = (statistics.median(hosts), statistics.fmean(events))
    q.put(out)


def run(public, variant, ahead_us):
    import torch
    ctx = mp.get_context("spawn")
    go, done = ctx.Value("l", 0, lock=False), ctx.Value("l", 0, lock=False)
    q = ctx.Queue()
    w = ctx.Process(target=worker, args=(public, go, done, variant, ahead_us, q), daemon=True)
    w.start()
    q.get()
    for k in range(2):
        go.value, done.value = k * N, k * N
        buf = torch.empty(100 * 2**20, dtype=torch.uint8, device="cuda")
        for i in range(N):
            if variant == "judge flushes":
                buf.zero_()
                torch.cuda.synchronize()
            go.value = k * N + i + 1
            while done.value != k * N + i + 1:
                pass
    res = q.get()
    w.join(10)
    print(f"{variant:16s} ahead {ahead_us:3d} µs: host µs {res[0][0]:6.1f} {res[1][0]:6.1f}"
          f" | event µs {res[0][1]:6.1f} {res[1][1]:6.1f}", flush=True)


def main():
    public = os.path.abspath(sys.argv[1])
    import torch
    torch.cuda.init()
    for rnd in range(2):
        for variant in ("judge flushes", "worker flushes", "no flush"):
            for ahead in (100, 0):
                run(public, variant, ahead)


if __name__ == "__main__":
    main()
