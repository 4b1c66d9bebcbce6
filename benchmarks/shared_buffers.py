"""Do the harness's shared GPU buffers, or its protocol around a call, slow a kernel down?

    python benchmarks/shared_buffers.py [--sizes 1024,4096,16384] [--reps 40] [--out FILE]

The harness's inputs (and, for tasks whose inputs hold the output tensor, the output) live
in arenas the judge allocates through the driver's virtual-memory API and the worker maps
(harness/judging/worker/cuda_vmm.py); the public evaluators' live in torch's own
allocations. On one H100 the 16384² vectoradd case read 16-20% slower under the harness
than under the public evaluator, and the worker's launches took longer than the public
process's (docs/benchmarks.md, "Slow calls on the H100"). This script separates the
suspects in one process, on fp16 `C[...] = A + B` and `torch.add(A, B, out=C)` per size:

- the memory: A, B and C from torch, from an arena as the judge makes one, from an arena
  whose addresses are reserved at a 1 GiB alignment, and inputs or output alone shared;
- the protocol: each timed after the public pmpp_v2 flush (a 256 MiB fill), and after the
  harness's (the judge's flush and synchronise, the worker's 1 MiB warm fill and event
  wait, the 100 µs GPU sleep before the start event);
- the host: each launch's host time, with and without the worker's audit hook
  (harness/judging/sandbox/refusals.py), and the audit events one launch raises.

Medians of `--reps` calls, in µs. Needs a GPU; results also go to FILE as JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The harness's GPU sleep before the start event for vectoradd (100 µs at 1980 MHz).
SLEEP_CYCLES = 198_000
VARIANTS = ("torch", "shared", "shared_1g", "inputs_shared", "output_shared")


def arena_tensor(torch, shape: tuple[int, int], align: int = 0):
    """An fp16 tensor over an arena made as the judge makes one (`Arena.create`), or with
    its addresses reserved at `align` bytes."""
    from harness.judging.worker import cuda_vmm as vmm

    nbytes = shape[0] * shape[1] * 2
    if not align:
        arena = vmm.Arena.create(0, nbytes)
    else:
        lib, step = vmm._driver(), vmm.granularity(0)
        size = max(step, -(-nbytes // step) * step)
        handle, ptr = ctypes.c_uint64(), ctypes.c_uint64()
        vmm._check(lib, lib.cuMemCreate(ctypes.byref(handle), size,
                                        ctypes.byref(vmm._prop(0)), 0), "cuMemCreate")
        vmm._check(lib, lib.cuMemAddressReserve(ctypes.byref(ptr), size, align, 0, 0),
                   "cuMemAddressReserve")
        vmm._check(lib, lib.cuMemMap(ptr.value, size, 0, handle.value, 0), "cuMemMap")
        access = vmm._AccessDesc(vmm._Location(vmm._ON_DEVICE, 0), vmm._READ_WRITE)
        vmm._check(lib, lib.cuMemSetAccess(ptr.value, size, ctypes.byref(access), 1),
                   "cuMemSetAccess")
        arena = vmm.Arena(0, size, handle.value, ptr.value)
    return arena.view(torch, 0, nbytes, torch.float16, shape, (shape[1], 1))


def buffers(torch, variant: str, n: int) -> tuple:
    """A, B and C of one variant, filled with random values."""
    def make(shared: bool, align: int = 0):
        t = (arena_tensor(torch, (n, n), align) if shared
             else torch.empty((n, n), device="cuda", dtype=torch.float16))
        return t.copy_(torch.randn((n, n), device="cuda", dtype=torch.float16))

    ins = variant in ("shared", "shared_1g", "inputs_shared")
    out = variant in ("shared", "shared_1g", "output_shared")
    align = 1 << 30 if variant == "shared_1g" else 0
    return make(ins, align), make(ins, align), make(out, align)


def public_flush(torch) -> None:
    dummy = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
    dummy.fill_(42)
    del dummy


def timed(torch, fn, reps: int, protocol: str, judge_flush) -> tuple[float, float]:
    """Median event time and host time (µs) of `fn` behind the public flush or the
    harness's protocol."""
    times, hosts = [], []
    warm = torch.cuda.Event()
    for _ in range(reps):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if protocol == "public":
            public_flush(torch)
        else:
            judge_flush.zero_()
            torch.cuda.synchronize()
            torch.cuda._sleep(1)
            scratch = torch.empty(1 << 17, dtype=torch.int64, device="cuda")
            scratch.fill_(42)
            del scratch
            warm.record()
            warm.synchronize()
            torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        h0 = time.perf_counter_ns()
        fn()
        h1 = time.perf_counter_ns()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
        hosts.append((h1 - h0) / 1e3)
    return statistics.median(times), statistics.median(hosts)


def memory_table(torch, sizes: list[int], reps: int) -> list[dict]:
    judge_flush = torch.empty(100 << 18, dtype=torch.int32, device="cuda")  # 100 MiB
    rows = []
    for n in sizes:
        for variant in VARIANTS:
            a, b, c = buffers(torch, variant, n)
            for _ in range(3):
                c[...] = a + b
            row = {"n": n, "variant": variant}
            ops = (("setitem", lambda a=a, b=b, c=c: c.__setitem__(Ellipsis, a + b)),
                   ("add_out", lambda a=a, b=b, c=c: torch.add(a, b, out=c)))
            for op, fn in ops:
                for protocol in ("public", "harness"):
                    row[f"{op}_{protocol}_us"], row[f"{op}_{protocol}_host_us"] = timed(
                        torch, fn, reps, protocol, judge_flush)
            rows.append(row)
            print(f"n={n:6d} {variant:14s} " + " ".join(
                f"{k[:-3]} {v:8.2f}" for k, v in row.items() if k.endswith("_us")), flush=True)
            del a, b, c
            torch.cuda.empty_cache()
    return rows


def host_table(torch) -> dict:
    """Host µs per launch (median of 2000) of a torch op and a Triton kernel, before and
    after the worker's audit hook is added, and the audit events of one launch of each."""
    import triton
    import triton.language as tl

    @triton.jit
    def add(a, b, c, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(c + i, tl.load(a + i, mask=i < n) + tl.load(b + i, mask=i < n), mask=i < n)

    a = torch.randn((1024, 1024), device="cuda", dtype=torch.float16)
    b, c = torch.randn_like(a), torch.empty_like(a)
    launches = {"torch": lambda: c.__setitem__(Ellipsis, a + b),
                "triton": lambda: add[(triton.cdiv(a.numel(), 1024),)](a, b, c, a.numel(),
                                                                        BLOCK=1024)}

    def host(fn) -> float:
        xs = []
        for i in range(2000):
            h0 = time.perf_counter_ns()
            fn()
            xs.append(time.perf_counter_ns() - h0)
            if i % 50 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        return statistics.median(xs) / 1e3

    for fn in launches.values():
        fn()
    out = {f"{name}_host_us": host(fn) for name, fn in launches.items()}
    from harness.judging.sandbox.refusals import _Hook

    sys.addaudithook(_Hook(["/usr", "/opt"], ["/tmp"], True))
    out |= {f"{name}_host_with_hook_us": host(fn) for name, fn in launches.items()}
    seen: Counter = Counter()
    counting = [False]
    sys.addaudithook(lambda event, args: counting[0] and seen.update([event]))
    counting[0] = True
    for fn in launches.values():
        fn()
    counting[0] = False
    out["audit_events_per_launch_pair"] = dict(seen)
    print(json.dumps(out), flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,4096,16384")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("shared_buffers.py needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.cuda.set_device(0)
    print(torch.cuda.get_device_name(0), torch.__version__, flush=True)
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "memory": memory_table(torch, [int(s) for s in args.sizes.split(",")], args.reps),
              "host": host_table(torch)}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
