"""Session diagnostic (runs 39-40): how long the host takes to launch vectoradd's torch
submission in a bare process timed the public way, unpinned and pinned to one of five
CPUs in turn (the machine is a KVM guest of 16 vCPUs); printed as per-case medians of the
host time around the call and means of the event time. Usage: diag_host_vectoradd.py PUBLIC_DIR"""
import os
import statistics
import sys
import time


def loop(torch, kernel, data, n=100):
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


def main():
    public = os.path.abspath(sys.argv[1])
    sys.path[:0] = [public, os.path.dirname(public)]
    os.chdir(public)
    import torch
    from reference import generate_input
    from submission import custom_kernel
    sizes = [(1024, 31232), (2048, 4052), (4096, 2146), (8192, 3129), (16384, 54352)]
    inputs = [generate_input(size=s, seed=seed) for s, seed in sizes]
    for d in inputs:
        custom_kernel(d)
    torch.cuda.synchronize()
    everything = set(range(os.cpu_count()))
    variants = [("unpinned", None)] + [(f"pinned to cpu {c}", c) for c in (0, 3, 7, 11, 15)]
    for rnd in range(2):
        for name, cpu in variants:
            os.sched_setaffinity(0, {cpu} if cpu is not None else everything)
            res = [loop(torch, custom_kernel, d) for d in inputs]
            print(f"round {rnd} {name:18s} host µs " + " ".join(f"{h:6.1f}" for h, _ in res)
                  + " | event µs " + " ".join(f"{e:6.1f}" for _, e in res), flush=True)


if __name__ == "__main__":
    main()
