"""Why does nvfp4 triton_hopper's case 3 read 13-19% higher under the harness? (for the next run)

Runs 28-32 ruled out the judge's polling, a worker gone cold between samples and the
sandbox's cost to host Python; run 14 (4 s per case, about 35 samples) read 1.21 too, so
the number of samples is unlikely. The case is host-bound: each call waits for the
previous call's copy of its pointer table. What is left differs on the GPU side. This
times the submission on case 3 the way the public evaluator does (15 inputs, a 20 ms
window before the start event, 15 calls back to back, mean per call), in one process,
under variants that each add one thing the harness does, interleaved over rounds:

  public   the same 15 inputs in every repeat, nothing else on the GPU;
  fresh    the 15 inputs' GPU tensors rewritten before every repeat (the judge writes
           fresh inputs into the same buffers between samples);
  refresh  their CPU tensors (the plain-layout scales, 13 MB for the 15 inputs) copied
           before every repeat, as the worker refreshes its private copies from the
           shared slots: on the CPU machine a 13 MB copy before 15 calls of this
           submission's host work made them 21-33% slower (`benchmarks.md`, runs 28-32);
  context  another process holds an idle CUDA context on the GPU (the judge's);
  all      fresh, refresh and context together.

    python docs/measurements/2026-11-30/scripts/diag_case3.py [--rounds 6] [--repeats 60]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[4]
TASK = ROOT / "tasks" / "nvfp4_group_gemm"
CASE = {"g": 2, "m": [128, 384], "n": [4096, 4096], "k": [1536, 1536], "seed": 1111}
HOLDER = ("import sys, torch; torch.cuda.init(); x = torch.empty(1 << 20, device='cuda'); "
          "torch.cuda.synchronize(); print('ready', flush=True); sys.stdin.read()")


def _load(path: Path, name: str):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _refill(data, fresh) -> None:
    """Copy `fresh`'s tensors into `data`'s, in place (the judge's refill of a slot)."""
    if isinstance(data, torch.Tensor):
        data.copy_(fresh)
    elif isinstance(data, (list, tuple)):
        for a, b in zip(data, fresh):
            _refill(a, b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    sys.path.insert(0, str(TASK.parent))  # utils.py (task.yml: ../utils.py)
    ref = _load(TASK / "reference.py", "reference")
    sub = _load(ROOT / "submissions" / "nvfp4_group_gemm" / "triton_hopper.py", "submission")
    window = int(20e-3 * 1980e6)  # 20 ms of GPU sleep at the H200's top SM clock

    def inputs(seed: int) -> list:
        return [ref.generate_input(**dict(CASE, seed=seed + 42 * i)) for i in range(15)]

    data = inputs(1111)
    spares = [inputs(5000 + 97 * r) for r in range(4)]
    for d in data:  # compile and check once
        out = sub.custom_kernel(d)
        ok, message = ref.check_implementation(d, out)
        assert ok, message
    torch.cuda.synchronize()

    cpu = [t for d in data for pair in d[1] for t in pair]  # the plain-layout scales
    cpu_copies = [t.clone() for t in cpu]

    def timed(fresh: bool, refresh: bool) -> float:
        per_call = []
        for r in range(args.repeats):
            if fresh:
                for d, s in zip(data, spares[r % len(spares)]):
                    _refill(d, s)
            torch.cuda.synchronize()
            if refresh:  # as Worker._run before a sample: after the judge's work is done
                for mine, shared in zip(cpu, cpu_copies):
                    mine.copy_(shared)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(window)
            start.record()
            for d in data:
                sub.custom_kernel(d)
            end.record()
            torch.cuda.synchronize()
            per_call.append(start.elapsed_time(end) * 1e3 / len(data))
        return statistics.fmean(per_call)

    results: dict[str, list[float]] = {"public": [], "fresh": [], "refresh": [], "context": [],
                                       "all": []}
    for _ in range(args.rounds):
        for name in results:
            holder = None
            if name in ("context", "all"):
                holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True)
                holder.stdout.readline()
            try:
                results[name].append(timed(fresh=name in ("fresh", "all"),
                                           refresh=name in ("refresh", "all")))
            finally:
                if holder is not None:
                    holder.stdin.close()
                    holder.wait(timeout=60)
            time.sleep(0.2)
    for name, means in results.items():
        print(f"{name:8s} per call: median {statistics.median(means):7.1f} µs, rounds "
              + ", ".join(f"{m:.1f}" for m in means))


if __name__ == "__main__":
    main()
