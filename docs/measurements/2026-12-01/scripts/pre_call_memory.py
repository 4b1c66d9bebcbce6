"""Where does mxfp4 Triton's constant 1 µs per call under the harness come from?

Every parity run reads mxfp4_mm triton_dot_scaled's calls about 1 µs longer under the
harness than under amd_202602/eval.py (runs 20-80; per-run ratio 1.036-1.055 over the 6
runs of the record), whatever the case's length. Run 81 (`pre_call_idle.py`) found that
the worker's pre-call order, timed in one bare process, reads what the public order reads:
the offset comes from what one bare process lacks. This adds those differences one at a
time, in one process and a helper process standing for the judge, the variants of a round
in a shuffled order:

  public             randn(16000, 1024, 1024), then start; inputs in torch's memory
  torch              the worker's order (an L2 flush of 2x the L2 here, sleep 1 cycle, a
                     1 MiB fill, synchronize, a 1 ms GPU sleep, then start); torch's memory
  torch_fresh        the same, the inputs a ring of 4 copies (a fresh copy each call, as
                     the judge's fresh inputs each sample)
  arena_local        the inputs in a CUDA VMM arena made in this process (the harness's
                     layout: 512-byte aligned, packed)
  arena_child        the inputs in an arena the helper made and exported (an fd), mapped
                     here: as the worker maps the judge's
  arena_child_fresh  a ring of 4 copies in the helper's arenas
  child_flush        torch's memory; the L2 flush made by the helper, in its own CUDA
                     context, as the judge flushes (the worker then: sleep 1 cycle, 1 MiB
                     fill, synchronize, 1 ms sleep, start)
  worker_like        arena_child_fresh and child_flush together
  child_own_flush    child_flush, then the worker's own L2-sized fill in place of the 1 MiB
                     one (run 83's candidate, `timing.warm: flush`: the helper's flush stays)
  worker_fixed       worker_like with the same own fill (run 84: neither restores the
                     public level)
  child_rehearse     child_flush, then the submission's call once on another copy of the
                     inputs (in this process's context), then the own L2-sized fill: does
                     the call's own state (code, translations) cold after the switch to
                     the helper's context and back make the 1 µs? (run 85)
  child_rehearse_1m  the same with the 1 MiB fill (the rehearsal's inputs stay in the L2)

The helper's context exists through every variant (the public and torch ones too: run 81
is the one-process baseline); the fresh rings are written once, where the judge rewrites
its inputs from its own context before every sample; arenas are sized to the inputs (the
judge's are 64 MiB or more).

    python docs/measurements/2026-12-01/scripts/pre_call_memory.py --rounds 150 --cases 0 2 4 --out DIR
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
from multiprocessing.reduction import recv_handle, send_handle
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
TASK = ROOT / "tasks" / "mxfp4_mm"
SUB = ROOT / "submissions" / "mxfp4_mm" / "triton_dot_scaled.py"
RING = 4

from harness.judging.sharing import _ALIGN as ALIGN  # noqa: E402  (the judge's alignment)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pre_call_idle import _module, timed_call, variant_rows  # noqa: E402  (run 81's script)


def helper(conn) -> None:
    """The judge's stand-in: its own CUDA context; makes arenas and flushes the L2."""
    import torch as t

    from harness.judging.cuda_vmm import Arena

    arenas = []
    flush = t.empty(2 * t.cuda.get_device_properties(0).L2_cache_size // 4,
                    dtype=t.float32, device="cuda")
    while True:
        op, arg = conn.recv()
        if op == "arena":
            arenas.append(Arena.create(0, arg))
            arenas[-1].view(t, 0, arg, t.uint8, (arg,), (1,)).zero_()
            t.cuda.synchronize()
            conn.send(arenas[-1].size)
            send_handle(conn, arenas[-1].export_fd(), 0)  # the pid is unused on Unix
        elif op == "flush":
            flush.zero_()
            t.cuda.synchronize()
            conn.send("ok")
        else:
            return


def packed(data, arena) -> object:
    """A copy of `data`'s CUDA tensors laid out in `arena` as the judge lays them out."""
    from harness.judging.structure import map_tensors

    used = 0

    def place(t: torch.Tensor) -> torch.Tensor:
        nonlocal used
        start = -(-used // ALIGN) * ALIGN
        nbytes = _span(t)
        used = start + nbytes
        out = arena.view(torch, start, nbytes, t.dtype, tuple(t.shape), tuple(t.stride()))
        out.copy_(t)
        return out

    return map_tensors(data, place)


def _span(t: torch.Tensor) -> int:
    """Bytes a strided layout spans (at least one element), as the judge counts them."""
    from harness.judging.sharing import _extent

    return _extent(t.shape, tuple(t.stride()), t.element_size())


def extent(data) -> int:
    """Bytes an arena needs for `packed(data)`."""
    from harness.judging.structure import tensors

    return sum(_span(t) + ALIGN for t in tensors(data)) + ALIGN


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--cases", type=int, nargs="+", default=[0, 2, 4])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--variants", nargs="+", default=None, help="these only (default all)")
    args = parser.parse_args()

    from harness.judging.cuda_vmm import Arena

    ctx = mp.get_context("spawn")
    mine, theirs = ctx.Pipe()
    child = ctx.Process(target=helper, args=(theirs,), daemon=True)
    child.start()
    theirs.close()  # the helper's end: a helper that dies then fails a recv here, not hangs it

    sys.path[:0] = [str(TASK), str(TASK.parent)]  # task.py, then tasks/utils.py
    reference = _module("reference", TASK / "reference.py")
    submission = _module("submission", SUB)
    cases = yaml.safe_load((TASK / "task.yml").read_text())["benchmarks"]

    dev = torch.device("cuda")
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4,
                        dtype=torch.float32, device=dev)
    mini = torch.empty(1 << 18, dtype=torch.float32, device=dev)  # 1 MiB
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    per_us = 20_000_000 / (start.elapsed_time(end) * 1e3)

    def child_arena(nbytes: int):
        mine.send(("arena", nbytes))
        size = mine.recv()
        return Arena.open(0, recv_handle(mine), size)

    def public() -> None:
        dummy = torch.randn((16000, 1024, 1024), device=dev)
        del dummy

    def worker_order(flush_here: bool, own_fill: bool = False, rehearse=None) -> None:
        if flush_here:
            flush.zero_()
        else:
            mine.send(("flush", None))
            mine.recv()
        if rehearse is not None:
            submission.custom_kernel(rehearse)
        torch.cuda._sleep(1)
        (flush if own_fill else mini).fill_(1.0)
        torch.cuda.synchronize()
        torch.cuda._sleep(int(1000 * per_us))

    report = {"sleep_cycles_per_us": per_us, "device": torch.cuda.get_device_name(0),
              "cases": {}}
    rng = random.Random(1)
    for index in args.cases:
        data = reference.generate_input(**cases[index])
        submission.custom_kernel(data)  # compile and warm
        size = extent(data)
        other = tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in data)
        local = Arena.create(0, size)
        inputs = {
            "torch": [data],
            "torch_fresh": [tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in data)
                            for _ in range(RING)],
            "arena_local": [packed(data, local)],
            "arena_child": [packed(data, child_arena(size))],
            "arena_child_fresh": [packed(data, child_arena(size)) for _ in range(RING)],
        }
        variants = {  # name: (pre-call work, inputs)
            "public": (public, "torch"), "torch": (lambda: worker_order(True), "torch"),
            "torch_fresh": (lambda: worker_order(True), "torch_fresh"),
            "arena_local": (lambda: worker_order(True), "arena_local"),
            "arena_child": (lambda: worker_order(True), "arena_child"),
            "arena_child_fresh": (lambda: worker_order(True), "arena_child_fresh"),
            "child_flush": (lambda: worker_order(False), "torch"),
            "worker_like": (lambda: worker_order(False), "arena_child_fresh"),
            "child_own_flush": (lambda: worker_order(False, True), "torch"),
            "worker_fixed": (lambda: worker_order(False, True), "arena_child_fresh"),
            "child_rehearse": (lambda: worker_order(False, True, other), "torch"),
            "child_rehearse_1m": (lambda: worker_order(False, False, other), "torch"),
        }
        if args.variants:
            variants = {k: v for k, v in variants.items() if k in args.variants}
        expected = submission.custom_kernel(data)
        for which, ring in inputs.items():  # every copy computes what the original does
            if not all(torch.equal(submission.custom_kernel(d), expected) for d in ring):
                print(f"warning: case {index}: {which}'s inputs give another output")
        torch.cuda.synchronize()
        times: dict[str, list[float]] = {name: [] for name in variants}
        for r in range(args.rounds):
            order = list(variants)
            rng.shuffle(order)
            for name in order:
                pre, which = variants[name]
                ring = inputs[which]
                times[name].append(timed_call(pre, submission.custom_kernel,
                                              ring[r % len(ring)], start, end))
        rows = variant_rows(f"case {index} {cases[index]}", times, 18)
        report["cases"][str(index)] = {"args": cases[index], "variants": rows}
        del inputs
    mine.send(("exit", None))
    child.join(timeout=30)
    print(f"sleep cycles per µs {per_us:.1f}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "pre_call_memory.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
