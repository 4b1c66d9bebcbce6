"""Session diagnostic (run 42): run 41 found none of the worker's surroundings (a polling
process, a second context flushing, CUDA IPC inputs, the seccomp filter) slowing the host
time of vectoradd's torch call in a bare process. Left: the worker's inputs and outputs
live in the judge's shared GPU arenas (cuda_vmm.py: driver VMM mappings wrapped by
torch.as_tensor), and the worker's sequence before the start event (an empty kernel, an
event waited for, a GPU sleep) differs from the public flush. Timed the public way or the
worker's way, with inputs in torch's own memory or in an arena; per-case medians of the
host time around the call, means of the event time. Usage: diag_host_arena.py PUBLIC_DIR"""
import os
import statistics
import sys
import time

import torch


def public_way(kernel, data, n=100):
    hosts, events = [], []
    for _ in range(n):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dummy = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
        dummy.fill_(42)
        del dummy
        s.record()
        t0 = time.perf_counter_ns()
        out = kernel(data)
        t1 = time.perf_counter_ns()
        e.record()
        torch.cuda.synchronize()
        hosts.append((t1 - t0) / 1e3)
        events.append(s.elapsed_time(e) * 1e3)
        del out
    return statistics.median(hosts), statistics.fmean(events)


def worker_way(kernel, data, n=100, ahead=int(100 * 1980)):
    hosts, events = [], []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm = torch.cuda.Event()
    flush = torch.empty(100 * 2**20, dtype=torch.uint8, device="cuda")
    for _ in range(n):
        flush.fill_(1)
        torch.cuda.synchronize()
        torch.cuda._sleep(1)
        warm.record()
        warm.synchronize()
        torch.cuda._sleep(ahead)
        s.record()
        t0 = time.perf_counter_ns()
        out = kernel(data)
        t1 = time.perf_counter_ns()
        e.record()
        torch.cuda.synchronize()
        hosts.append((t1 - t0) / 1e3)
        events.append(s.elapsed_time(e) * 1e3)
        del out
    return statistics.median(hosts), statistics.fmean(events)


def in_arena(Arena, inputs):
    """The same tensors copied into one arena each (as the judge's shared buffers)."""
    out = []
    for tensors in inputs:
        views = []
        for t in tensors:
            arena = Arena.create(0, t.numel() * t.element_size())
            v = arena.view(torch, 0, t.numel() * t.element_size(), t.dtype, tuple(t.shape), t.stride())
            v.copy_(t)
            views.append(v)
        out.append(tuple(views))
    return out


def main():
    public = os.path.abspath(sys.argv[1])
    sys.path[:0] = [public, os.path.dirname(public)]
    os.chdir(public)
    from reference import generate_input
    from submission import custom_kernel
    sys.path.insert(0, os.environ["HARNESS_ROOT"])
    from harness.judging.cuda_vmm import Arena
    sizes = [(1024, 31232), (2048, 4052), (4096, 2146), (8192, 3129), (16384, 54352)]
    local = [generate_input(size=s, seed=seed) for s, seed in sizes]
    arena = in_arena(Arena, local)
    for d in local + arena:
        custom_kernel(d)
    torch.cuda.synchronize()

    def show(name, how, inputs):
        res = [how(custom_kernel, d) for d in inputs]
        print(f"{name:32s} host µs " + " ".join(f"{h:6.1f}" for h, _ in res)
              + " | event µs " + " ".join(f"{e:6.1f}" for _, e in res), flush=True)

    for rnd in range(2):
        print(f"== round {rnd}", flush=True)
        show("public way, torch memory", public_way, local)
        show("public way, arena", public_way, arena)
        show("worker way, torch memory", worker_way, local)
        show("worker way, arena", worker_way, arena)
    torch.cuda.set_per_process_memory_fraction(0.9)
    print("== memory fraction 0.9", flush=True)
    show("public way, torch memory", public_way, local)
    show("worker way, arena", worker_way, arena)


if __name__ == "__main__":
    main()
