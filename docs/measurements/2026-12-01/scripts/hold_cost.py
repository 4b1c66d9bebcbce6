"""What cpus.Hold.apply costs on the GPU machine, in a process with CUDA, torch's CPU
threads and a Triton kernel started (the threads a worker has): mean per call over 2000
calls when nothing changed, its parts, and the number of threads listed."""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from harness.judging.cpus import Hold, hold_plan, threads  # noqa: E402


@triton.jit
def _add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)


def per_call_us(fn, n: int = 2000) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / n / 1e3


x = torch.randn(1 << 20, device="cuda")
out = torch.empty_like(x)
_add[(1024,)](x, x, out, x.numel(), BLOCK=1024)
torch.randn(512, 512).matmul(torch.randn(512, 512))  # torch's CPU pool
torch.cuda.synchronize()
cpu, others = hold_plan(os.sched_getaffinity(0))
hold = Hold(cpu, others)
first = time.perf_counter_ns(); hold.apply(); first = (time.perf_counter_ns() - first) / 1e3
print(f"threads {len(threads())}; held CPU {cpu}; first apply {first:.1f} us")
print(f"apply, nothing changed: {per_call_us(hold.apply):.1f} us")
print(f"  sched_getaffinity(0): {per_call_us(lambda: os.sched_getaffinity(0)):.1f} us")
print(f"  listing /proc/self/task: {per_call_us(threads):.1f} us")
