"""Session diagnostic (run 43): a vectoradd submission (the public torch one's call) that
first measures, in whatever process imports it, the host time of that call on its own
tensors (median of 200), the time of a pure-Python loop (median of 50), and prints the
process's speculation, seccomp and CPU lines of /proc/self/status. Run as a submission
through the harness, and directly (`python probe_vectoradd.py`) as the bare reference."""
import statistics
import time

import torch


def _probe() -> None:
    keep = ("Speculation", "Seccomp", "NoNewPrivs", "Cpus_allowed_list", "SpeculationIndirect")
    lines = [ln.strip() for ln in open("/proc/self/status") if ln.startswith(keep)]
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    o = torch.empty_like(a)
    for _ in range(20):
        o[...] = a + b
    torch.cuda.synchronize()
    hosts = []
    for _ in range(200):
        t0 = time.perf_counter_ns()
        o[...] = a + b
        hosts.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
    loops = []
    for _ in range(50):
        t0 = time.perf_counter_ns()
        sum(range(20000))
        loops.append(time.perf_counter_ns() - t0)
    print(f"PROBE call {statistics.median(hosts) / 1e3:.1f} µs, python loop "
          f"{statistics.median(loops) / 1e3:.1f} µs; " + "; ".join(lines), flush=True)


_probe()


def custom_kernel(data):
    A, B, output = data
    output[...] = A + B
    return output
