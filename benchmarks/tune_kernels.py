"""Sweep the block shapes of the Triton example submissions on the GPU, in-process.

For every configuration: check each benchmark case against the reference, then time it
with triton.testing.do_bench (L2 flushed, median). Prints a table and the best
configuration per task. Run on the GPU machine:

    python benchmarks/tune_kernels.py [nvfp4|mxfp4] [--quick]
"""

from __future__ import annotations

import sys

import torch
import triton.testing
from _load import ROOT, load_submission, load_task_modules

from harness.scores import geomean

torch.backends.cuda.matmul.allow_tf32 = False


def sweep(task: str, sub_path: str, configs, apply):
    ref, _, benches = load_task_modules(task)
    from harness.judging.worker.structure import clone

    sub = load_submission(ROOT / sub_path)
    inputs = [ref.generate_input(**b, device="cuda") for b in benches]
    best = None
    for cfg in configs:
        apply(sub, cfg)
        times, ok = [], True
        for data in inputs:
            try:
                out = sub.custom_kernel(clone(data))
                torch.cuda.synchronize()
                good, msg = ref.check_implementation(data, out)
            except Exception as exc:  # noqa: BLE001 - a config may not compile
                good, msg = False, f"{type(exc).__name__}: {str(exc)[:120]}"
            if not good:
                print(f"{task} {cfg}: FAIL {msg.splitlines()[0] if msg else ''}")
                ok = False
                break
            work = clone(data)
            times.append(triton.testing.do_bench(lambda w=work: sub.custom_kernel(w), warmup=25,
                                                 rep=100, return_mode="median") * 1e3)
        if ok:
            g = geomean(times)
            print(f"{task} {cfg}: " + " ".join(f"{t:8.2f}" for t in times) + f"  geo {g:8.2f} us",
                  flush=True)
            if best is None or g < best[0]:
                best = (g, cfg, times)
        torch.cuda.empty_cache()
    print(f"BEST {task}: {best}")
    return best


NV_GRID = [(128, 128, 128, 8, 3), (64, 128, 128, 4, 3), (128, 256, 128, 8, 3),
           (64, 256, 128, 8, 3), (128, 128, 64, 8, 4), (128, 128, 256, 8, 2),
           (64, 128, 256, 4, 2), (128, 64, 128, 4, 3), (256, 128, 128, 8, 3),
           (128, 256, 64, 8, 4), (64, 64, 256, 4, 3)]


def nvfp4(quick: bool, path: str = "submissions/nvfp4_group_gemm/triton_hopper.py"):
    def apply(sub, cfg):
        sub.BLOCK_M, sub.BLOCK_N, sub.BLOCK_K, sub.NUM_WARPS, sub.NUM_STAGES = cfg

    return sweep("nvfp4_group_gemm", path, NV_GRID[:3] if quick else NV_GRID, apply)


def mxfp4(quick: bool):
    def apply(sub, cfg):
        fused, override = cfg
        sub.FUSED, sub.OVERRIDE = fused, override

    shapes = [(16, 64, 256, 4, 3), (16, 128, 256, 4, 3), (32, 64, 256, 4, 3), (16, 32, 256, 4, 3),
              (64, 64, 128, 4, 3), (16, 64, 512, 4, 2), (32, 128, 128, 4, 3), (64, 128, 256, 8, 3),
              (16, 128, 512, 8, 2), (16, 256, 256, 8, 3)]
    grid = [(False, None), (True, None)] + [(False, c) for c in shapes]
    return sweep("mxfp4_mm", "submissions/mxfp4_mm/triton_dot_scaled.py",
                 grid[:4] if quick else grid, apply)


def launch_overhead(task: str, sub_path: str, n: int = 200):
    """Host time of custom_kernel without synchronizing: the launch cost per call."""
    import time

    ref, _, benches = load_task_modules(task)
    from harness.judging.worker.structure import clone

    sub = load_submission(ROOT / sub_path)
    data = clone(ref.generate_input(**benches[0], device="cuda"))
    sub.custom_kernel(data)
    torch.cuda.synchronize()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        sub.custom_kernel(data)
        samples.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    samples.sort()
    print(f"launch overhead {task}: median {samples[n // 2]:.1f} us, p10 {samples[n // 10]:.1f} us")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "all"
    quick = "--quick" in sys.argv
    if which in ("all", "nvfp4"):
        nvfp4(quick)
    if which in ("all", "mxfp4"):
        mxfp4(quick)
    if which in ("all", "overhead"):
        launch_overhead("mxfp4_mm", "submissions/mxfp4_mm/triton_dot_scaled.py")
        launch_overhead("nvfp4_group_gemm", "submissions/nvfp4_group_gemm/triton_hopper.py")
