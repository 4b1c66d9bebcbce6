"""Session diagnostic (run 41): what slows a launch in another process than the bare one?
vectoradd's torch submission timed the public way (host time around the call, per-case
medians; event time, means) in a bare process, then with one thing of the harness's
worker added at a time: a busy-polling second process (the judge waiting for a reply), a
second process with its own CUDA context flushing the L2 between samples (the judge's
flush), inputs shared through CUDA IPC from another process, the harness's seccomp filter
installed in this process. Usage: diag_host_worker.py PUBLIC_DIR"""
import os
import statistics
import sys
import time

import torch
import torch.multiprocessing as mp


def loop(kernel, data, n=100):
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


def spinner(stop):
    while not stop.is_set():
        pass


def flusher(stop):
    buf = torch.empty(100 * 2**20, dtype=torch.uint8, device="cuda")
    while not stop.is_set():
        buf.fill_(1)
        torch.cuda.synchronize()
        time.sleep(0.0002)


def holder(sizes, queue, stop):
    sys.path[:0] = [os.environ["PUBLIC"], os.path.dirname(os.environ["PUBLIC"])]
    from reference import generate_input
    queue.put([generate_input(size=s, seed=seed) for s, seed in sizes])
    stop.wait()


def main():
    public = os.path.abspath(sys.argv[1])
    os.environ["PUBLIC"] = public
    sys.path[:0] = [public, os.path.dirname(public)]
    os.chdir(public)
    from reference import generate_input
    from submission import custom_kernel
    sizes = [(1024, 31232), (2048, 4052), (4096, 2146), (8192, 3129), (16384, 54352)]
    local = [generate_input(size=s, seed=seed) for s, seed in sizes]
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    queue = ctx.Queue()
    keeper = ctx.Process(target=holder, args=(sizes, queue, stop), daemon=True)
    keeper.start()
    shared = queue.get()
    for d in local + shared:
        custom_kernel(d)
    torch.cuda.synchronize()

    def show(name, inputs):
        res = [loop(custom_kernel, d) for d in inputs]
        print(f"{name:28s} host µs " + " ".join(f"{h:6.1f}" for h, _ in res)
              + " | event µs " + " ".join(f"{e:6.1f}" for _, e in res), flush=True)

    def beside(target, name):
        flag = ctx.Event()
        p = ctx.Process(target=target, args=(flag,), daemon=True)
        p.start()
        time.sleep(3.0)  # a spawned child imports torch first
        show(name, local)
        flag.set()
        p.join(10)

    for rnd in range(2):
        print(f"== round {rnd}", flush=True)
        show("bare", local)
        beside(spinner, "beside a polling process")
        beside(flusher, "beside a flushing context")
        show("inputs through CUDA IPC", shared)
        show("bare again", local)
    sys.path.insert(0, os.environ["HARNESS_ROOT"])
    from harness.judging.seccomp import NoIpSockets
    NoIpSockets().install()
    print("== after the seccomp filter", flush=True)
    show("seccomp", local)
    show("seccomp, IPC inputs", shared)
    stop.set()


if __name__ == "__main__":
    main()
