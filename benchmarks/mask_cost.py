"""What masking nvfp4_group_gemm's CPU-side inputs costs, and what it leaves for the call.

Under the late order (`timing.rehearse_late`, the GPU default) the judge writes a sample's
inputs XORed with a key stream and the worker XORs them back just before the call
(`harness.judging.measure.masking.xor_mask`); nvfp4's CPU-side inputs (its plain-layout scale
factors, some 227 MB a sample of 15 calls on the largest case) are masked too unless
`timing.mask_cpu_inputs: false`, which has the judge write them plainly instead. This
times, in one process, on one sample's CPU-side inputs of a benchmark case, laid out as
the harness lays them (files in a shared-memory folder, mapped):

  draw       the key stream alone (drawn on the GPU and copied into the process's kept
             page-locked buffer, as the product does on a GPU; SHAKE-256 on the CPU)
  xor_mask   one side's whole masking (`xor_mask`: the draw and the XOR)
  draw_fresh, xor_mask_fresh   the same with the stream copied into fresh pageable memory
             each time (`HostStream(reuse=False)`: what the product did before the kept
             buffer)
  copy_after_unmask   the call's use of those inputs right after the worker's unmasking:
             each scale tensor `.to(device)`, as torch_dequant does (host clock, the
             device synchronized), all 15 calls' worth
  copy_after_write    the same right after a plain write of the same bytes (`copy_` from a
             pristine copy: the judge's writing with `mask_cpu_inputs: false`, here in
             this process)
  copy_again          the same once more with nothing in between

alternating per round. What it can show: whether the copies read slower after the
unmasking than after a plain write (then the masking leaves the call a cost, and the
mechanism is in the unmasking: its stream's fresh host buffer, the XOR's threads, what it
leaves in the caches), and how the masking's own cost (draw, XOR) splits.

    python benchmarks/mask_cost.py [--device cuda|cpu] [--rounds 5] [--case 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch
from _load import load_task_modules

from harness.judging.measure import masking
from harness.judging.worker.sharing import SharedAllocator

CALLS_PER_SAMPLE = 15  # tasks/nvfp4_group_gemm/task.yml's timing.calls_per_sample


def sample_inputs(case: int, device: str, folder: Path) -> list[torch.Tensor]:
    """The CPU-side inputs of one sample of benchmark `case`: every call's scale factors,
    placed in `folder` by the harness's own allocator (a mapped file each, their layout
    kept), as the judge places them."""
    ref, _, benchmarks = load_task_modules("nvfp4_group_gemm")
    spec = {k: v for k, v in benchmarks[case].items() if k != "seed"}
    shared = SharedAllocator(folder)
    tensors = []
    for call in range(CALLS_PER_SAMPLE):
        _, sf_plain, _, _ = ref.generate_input(**spec, seed=1000 + call, device=device)
        for t in (t for pair in sf_plain for t in pair):
            tensors.append(shared.empty_like_strided(t).copy_(t))
    return tensors


def timed(fn: Callable[[], Any], device: str) -> float:
    """Seconds `fn` takes, the device synchronized before and after."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def measure(device: str, rounds: int, case: int) -> dict[str, Any]:
    """Medians (ms) of each measure over `rounds` alternating rounds, and every round's."""
    draw_on = masking.draw_device() if device == "cuda" else None
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        tensors = sample_inputs(case, device, Path(d))
        pristine = [t.clone() for t in tensors]
        nbytes = sum(t.numel() * t.element_size() for t in tensors)

        def copies() -> None:
            for t in tensors:
                t[:, :, 0].to(device) if device == "cuda" else t[:, :, 0].clone()

        def write() -> None:
            for t, p in zip(tensors, pristine):
                t.copy_(p)

        cpu = torch.device("cpu")
        fresh = masking.HostStream(reuse=False)
        measures: dict[str, list[float]] = {k: [] for k in (
            "draw", "draw_fresh", "xor_mask", "xor_mask_fresh", "copy_after_unmask",
            "copy_after_write", "copy_again")}
        copies()  # the first copies warm the path
        masking._stream(0, cpu, nbytes, masking._TORCH, draw_on)  # and the kept buffer
        for r in range(rounds):
            key = 12345 + r
            measures["draw"].append(timed(lambda: masking._stream(
                key, cpu, nbytes, masking._TORCH, draw_on), device))
            measures["draw_fresh"].append(timed(lambda: masking._stream(
                key, cpu, nbytes, masking._TORCH, draw_on, fresh), device))
            masking.xor_mask(tensors, key, draw_on=draw_on)  # a masking and its unmasking,
            measures["xor_mask_fresh"].append(timed(  # the old way
                lambda: masking.xor_mask(tensors, key, draw_on=draw_on, host=fresh), device))
            masking.xor_mask(tensors, key, draw_on=draw_on)  # the judge's masking
            measures["xor_mask"].append(timed(
                lambda: masking.xor_mask(tensors, key, draw_on=draw_on), device))  # unmasking
            measures["copy_after_unmask"].append(timed(copies, device))
            if not all(torch.equal(t.view(torch.uint8), q.view(torch.uint8))
                       for t, q in zip(tensors, pristine)):
                raise SystemExit(f"round {r + 1}: the unmasking did not give the bytes back")
            write()
            measures["copy_after_write"].append(timed(copies, device))
            measures["copy_again"].append(timed(copies, device))
    return {"device": device, "case": case, "bytes": nbytes, "tensors": len(tensors),
            "rounds": rounds,
            "median_ms": {k: statistics.median(v) * 1e3 for k, v in measures.items()},
            "runs_ms": {k: [x * 1e3 for x in v] for k, v in measures.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--case", type=int, default=0, help="benchmark case of nvfp4_group_gemm")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no GPU here")
    result = measure(args.device, args.rounds, args.case)
    print(f"nvfp4_group_gemm case {args.case}, {result['tensors']} CPU-side tensors, "
          f"{result['bytes'] / 2**20:.1f} MiB a sample, {args.device}, {args.rounds} rounds")
    for name, ms in result["median_ms"].items():
        runs = " ".join(f"{x:.1f}" for x in result["runs_ms"][name])
        print(f"  {name:18s} {ms:9.2f} ms  ({runs})")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
