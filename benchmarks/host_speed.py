"""Does the worker run a submission's host code slower than a bare process does?

Host-bound code is where the harness and the public evaluators part most: nvfp4_group_gemm's
torch_dequant example (its score is its host's speed) and vectoradd's Triton launches (with
the hidden window at the public evaluator's length the harness read 7-13% higher). This
compares the same host-bound `custom_kernel` timed

  bare     in a fresh process of its own, as a contest's evaluator: the inputs made by the
           task's reference, the caches cooled before every call as the harness cools
           them on this device (the L2 flush on a GPU, `CPU_FLUSH_BYTES` on the
           CPU), the call timed with the host clock (CPU) or events (GPU); the mean;
  harness  `runner.py submit --mode benchmark` (the score: the mean), under settings
           variants: the defaults; without the sandbox (Landlock, the audit hook,
           the seccomp filter),

alternating, `--rounds` times, on the submission kinds below (benchmarks/tasks/empty_call,
whose check wants the input back):

  dispatch  2000 small torch operators on a 16-element tensor (the dispatcher's path)
  python    a pure-Python loop (calls, dicts, attribute reads): the interpreter alone
  triton    300 launches of a one-block Triton kernel on memory the call allocates (GPU
            only): the launch path that vectoradd's Triton example takes once a call (its
            smallest case, 6.5 µs on the GPU, is where slower launches in the worker
            would show). Both sides wait for the GPU before the start event, but
            the harness hides up to its window (100 µs) of the call's host time, about 1%
  triton_input  the same launches reading the call's input: in the harness that is the
            judge's memory mapped into the worker (`cuda_vmm`), in the bare process an
            ordinary allocation. Triton's launcher asks the driver about every pointer
            argument (`cuPointerGetAttribute`) on every launch; this tells whether that
            costs more on mapped memory

    python benchmarks/host_speed.py [--rounds 3] [--device cpu|cuda] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _load import ROOT, run_submit

TASK = ROOT / "benchmarks" / "tasks" / "empty_call"

KINDS = {
    "dispatch": '''
import torch


def custom_kernel(data):
    x = data[0]
    y = x[:4]
    for _ in range(2000):
        y = torch.add(y, 1.0)
    return x.clone()
''',
    "python": '''
class _Box:
    def __init__(self, v):
        self.v = v


def _step(box, table, i):
    table[i & 63] = box.v + i
    box.v = table.get((i * 7) & 63, 0) & 0xFFFF
    return box


def custom_kernel(data):
    box, table = _Box(1), {}
    for i in range(20000):
        box = _step(box, table, i)
    return data[0].clone()
''',
    "triton": '''
import triton
import triton.language as tl


@triton.jit
def _add_one(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask) + 1, mask=mask)


def custom_kernel(data):
    x = data[0]
    y = x[:4].clone()
    src = SOURCE(x, y)
    for _ in range(300):
        _add_one[(1,)](src, y, 4, BLOCK=16)
    return x.clone()
''',
}
KINDS["triton_input"] = KINDS["triton"].replace("SOURCE(x, y)", "x")
KINDS["triton"] = KINDS["triton"].replace("SOURCE(x, y)", "y")
GPU_ONLY_KINDS = {"triton", "triton_input"}  # Triton compiles for the GPU

VARIANTS = {
    "default": "",
    "no_sandbox": "worker:\n  sandbox: off\n",
}
GPU_ONLY_VARIANTS: set[str] = set()  # variants that only a GPU run can take

BARE = r'''
import json, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[6]]  # the task's reference, then tasks/utils.py
import torch
from reference import generate_input
import importlib.util
spec = importlib.util.spec_from_file_location("submission", sys.argv[2])
sub = importlib.util.module_from_spec(spec); spec.loader.exec_module(sub)
device, calls, flush_bytes = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
data = generate_input(size=16, seed=2, device=device)
cool = torch.empty(flush_bytes // 4, dtype=torch.int32, device=device)
for _ in range(3):
    sub.custom_kernel(data)
times = []
for _ in range(calls):
    cool.zero_()
    if device == "cuda":
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); sub.custom_kernel(data); e.record(); e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    else:
        t0 = time.perf_counter_ns(); sub.custom_kernel(data)
        times.append((time.perf_counter_ns() - t0) / 1e3)
print(json.dumps(times))
'''


def _on(device: str, names: dict, gpu_only: set[str]) -> list[str]:
    return [n for n in names if device == "cuda" or n not in gpu_only]


def kinds_for(device: str) -> list[str]:
    """The submission kinds a device runs by default (Triton's only on the GPU)."""
    return _on(device, KINDS, GPU_ONLY_KINDS)


def bare(staged: Path, submission: Path, device: str, calls: int, flush_bytes: int) -> float:
    """Mean µs per call in a fresh process of its own."""
    proc = subprocess.run([sys.executable, "-c", BARE, str(staged), str(submission), device,
                           str(calls), str(flush_bytes), str(ROOT / "tasks")],
                          capture_output=True, text=True, check=True)
    return statistics.fmean(json.loads(proc.stdout.strip().splitlines()[-1]))


def harness(submission: Path, device: str, config: Path | None, tmp: Path) -> float:
    """The harness's score (µs) for the case."""
    args = ["--task", str(TASK), "--mode", "benchmark", "--device", device, "--no-record"]
    if config is not None:
        args += ["--config", str(config)]
    doc, proc, _ = run_submit(submission, tmp / "result.json", *args)
    try:
        case = doc["phases"][-1]["cases"][0]
        return float(case["score_ns"]) / 1e3
    except (KeyError, IndexError, TypeError) as error:
        raise SystemExit(
            f"harness run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        ) from error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--calls", type=int, default=200, help="bare calls per round")
    parser.add_argument("--kinds", nargs="+", default=None, choices=list(KINDS),
                        help="default: every kind the device runs")
    parser.add_argument("--variants", nargs="+", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import yaml

    from harness.judging.measure.devices import CPU_FLUSH_BYTES, L2_FLUSH_FACTOR

    flush = (CPU_FLUSH_BYTES if args.device == "cpu"
             else L2_FLUSH_FACTOR * 50 * (1 << 20))  # about the judge's L2 flush on an H200
    variants = args.variants or _on(args.device, VARIANTS, GPU_ONLY_VARIANTS)
    kinds = args.kinds or kinds_for(args.device)
    refused = sorted(set(kinds) - set(kinds_for(args.device)))
    if refused:
        parser.error(f"{', '.join(refused)}: GPU only")
    tmp = Path(tempfile.mkdtemp(prefix="host-speed-"))
    configs: dict[str, Path | None] = {}
    for name in variants:
        if VARIANTS[name]:
            configs[name] = tmp / f"{name}.yaml"
            configs[name].write_text(VARIANTS[name])
            yaml.safe_load(VARIANTS[name])
        else:
            configs[name] = None
    report: dict = {"device": args.device, "rounds": args.rounds, "kinds": {}}
    for kind in kinds:
        sub = tmp / f"{kind}.py"
        sub.write_text(KINDS[kind])
        got: dict[str, list[float]] = {"bare": []} | {v: [] for v in variants}
        for r in range(args.rounds):
            got["bare"].append(bare(TASK, sub, args.device, args.calls, flush))
            for name in variants:
                got[name].append(harness(sub, args.device, configs[name], tmp))
            print(f"{kind} round {r + 1}: " + " ".join(f"{k} {v[-1]:.1f}" for k, v in got.items()),
                  flush=True)
            if args.out:  # every round kept as it comes: a cut keeps what ran
                report["kinds"][kind] = {"runs_us": got}
                args.out.write_text(json.dumps(report, indent=2))
        base = statistics.median(got["bare"])
        rows = {k: {"median_us": statistics.median(v), "runs_us": v,
                    "ratio_to_bare": statistics.median(v) / base} for k, v in got.items()}
        report["kinds"][kind] = rows
        print(f"{kind}: " + "; ".join(f"{k} {row['median_us']:.1f} µs ({row['ratio_to_bare']:.3f})"
                                      for k, row in rows.items()))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
