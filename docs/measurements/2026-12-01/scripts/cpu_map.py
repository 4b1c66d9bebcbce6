"""Is every CPU of this machine equally fast for a call's host work? (nvfp4 triton_hopper
case 3's host work read 69-128 µs a call in the worker, one level per evaluation, against
61-75 µs in every public run: does it depend on the CPU the worker lands on?)

This process moves itself to each CPU in turn, three passes, and times samples of 15
calls of the submission's host work there (rows of data_ptr(), torch.tensor, a slice
copy, as cpu_cold_host.py). Prints the median per call on each CPU, the machine's
interrupt counts per CPU (from /proc/interrupts) and the time the hypervisor took each
CPU away while this process ran there (steal, from /proc/stat; a guest thread's own CPU
clock may count stolen time as its own, so "CPU time equals wall time" does not rule it
out).

    python docs/measurements/2026-12-01/scripts/cpu_map.py
"""
import os
import statistics

import torch
from _host_work import host_work, per_call_ns


def interrupts() -> list[int]:
    """Interrupts served per CPU since boot (all sources), in CPU order."""
    try:
        lines = open("/proc/interrupts").read().splitlines()
    except OSError:
        return []
    ncpu = len(lines[0].split())
    totals = [0] * ncpu
    for line in lines[1:]:
        fields = line.split()[1:1 + ncpu]
        for i, f in enumerate(fields):
            if f.isdigit():
                totals[i] += int(f)
    return totals


def steal_ticks() -> dict[int, int]:
    """Steal time per CPU since boot (USER_HZ ticks), from /proc/stat."""
    out = {}
    try:
        for line in open("/proc/stat"):
            f = line.split()
            if f and f[0].startswith("cpu") and f[0] != "cpu" and len(f) > 8:
                out[int(f[0][3:])] = int(f[8])
    except OSError:
        pass
    return out


def main() -> None:
    torch.set_num_threads(1)
    snippet = host_work()

    cpus = sorted(os.sched_getaffinity(0))
    per_cpu = {c: [] for c in cpus}
    stolen = {c: 0 for c in cpus}
    before = interrupts()
    for _ in range(3):
        for c in cpus:
            os.sched_setaffinity(0, {c})
            for _ in range(20):
                snippet()
            s0 = steal_ticks().get(c, 0)
            for _ in range(60):
                per_cpu[c].append(per_call_ns(snippet))
            stolen[c] += steal_ticks().get(c, 0) - s0
    after = interrupts()
    os.sched_setaffinity(0, set(cpus))
    for c in cpus:
        irq = (after[c] - before[c]) if c < len(after) and c < len(before) else -1
        print(f"cpu {c:3d}: median {statistics.median(per_cpu[c]) / 1e3:6.2f} us, "
              f"q1-q3 {statistics.quantiles(per_cpu[c], n=4)[0] / 1e3:6.2f}-"
              f"{statistics.quantiles(per_cpu[c], n=4)[2] / 1e3:6.2f} us; "
              f"interrupts meanwhile {irq}, steal {stolen[c]} ticks")
    print("steal since boot per CPU (ticks): " + " ".join(
        f"{c}:{t}" for c, t in sorted(steal_ticks().items())))


if __name__ == "__main__":
    main()
