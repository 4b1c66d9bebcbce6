"""Where a case's slow calls come from: a per-call trace of the harness beside the public
evaluators' own loop, on the same submission and cases, and what the slowest calls had in
common.

    python benchmarks/call_trace.py SUBMISSION --task TASK [--device cuda|cpu] [--runs 1]
        [--public-loop] [--worker-loop] [--worker-sequences] [--harness-config FILE] [--out DIR]
    python benchmarks/call_trace.py --read DIR/trace.json

The harness side is `runner.py submit --mode benchmark` with `timing.trace_calls` on: each
timed sample's event time, the judge's round trip, the worker's own breakdown (launch,
synchronisation, output copy) and both processes' host account around it (context
switches, page faults, garbage collections, the CPU each ran on; see
harness/judging/measure/call_trace.py). The public side (`--public-loop`) is the pmpp_v2
evaluator's benchmark loop in a fresh process, on the same cases: an L2 flush (a 256 MiB
`fill_`), the start event, one call, the end event, a device synchronise, up to 100 calls,
with the same host account per call. `--worker-loop` runs that loop inside the harness's
worker (its sandbox, its process, the inputs the judge shares with it), at the first call
of each case of one more harness run: beside the two, it tells the harness's protocol
from the worker's environment. `--worker-sequences` times, in the worker at each case's
first call, the call after each sequence that can lead up to it (the public fill, the
harness's warm-up, synchronise and GPU sleep; `sequence_times`) on the same inputs every
call: beside the worker loop, it tells those steps from the harness's fresh input slots.

Per case and side it prints the mean, the median, the 95th percentile and the largest, the
slow calls (over SLOW_OVER_MEDIAN times the case's median) and their share of the case's
mean (what they add over the median, over the sum), then the slow calls' features beside
the others'. Results go to OUT/trace.json (the sequences' to OUT/sequences.json); `--read`
prints a saved trace again (and the sequences beside it).
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._load import run_submit  # noqa: E402

# A call is slow where its time is over this many times its case's median.
SLOW_OVER_MEDIAN = 1.5
# The public pmpp_v2 evaluator's loop: at most this many timed calls per case.
PUBLIC_MAX_REPEATS = 100
# --worker-sequences: calls per sequence and case.
SEQUENCE_REPEATS = 20
# Features compared between slow calls and the others: (label, how to read one record).
FEATURES = [
    ("probe", lambda r: float(r.get("probe", False))),
    ("host us", lambda r: r.get("host_ns", 0.0) / 1e3),
    ("lead us", lambda r: r.get("lead_ns", 0.0) / 1e3),
    ("sync us", lambda r: r.get("sync_ns", 0.0) / 1e3),
    ("round trip us", lambda r: r.get("rt", 0.0) / 1e3),
    ("worker csw", lambda r: _usage(r, "worker", "vcsw") + _usage(r, "worker", "ivcsw")),
    ("worker ivcsw", lambda r: _usage(r, "worker", "ivcsw")),
    ("worker gc", lambda r: _usage(r, "worker", "gc")),
    ("worker faults", lambda r: _usage(r, "worker", "minflt")),
    ("worker moved", lambda r: _moved(r, "worker")),
    ("judge ivcsw", lambda r: _usage(r, "judge", "ivcsw")),
    ("same CPU", lambda r: _same_cpu(r)),
    ("early (first 5)", lambda r: float(r.get("index", 99) < 5)),
]


def _usage(record: dict, side: str, key: str) -> float:
    return float((record.get(side) or {}).get(key, 0))


def _moved(record: dict, side: str) -> float:
    usage = record.get(side) or {}
    return float(usage.get("cpu_before", -1) != usage.get("cpu_after", -1))


def _same_cpu(record: dict) -> float:
    """1 where the judge and the worker ended the sample on one CPU."""
    worker, judge = record.get("worker") or {}, record.get("judge") or {}
    return float(worker.get("cpu_after", -1) == judge.get("cpu_after", -2))


# -- the harness's side -------------------------------------------------------------------
def harness_traces(submission: Path, task: str, device: str, run: int, out: Path,
                   settings: Path | None = None) -> list[dict]:
    """Run the harness once with its trace on (and the settings of `settings`, if given);
    per case, its records."""
    import yaml

    chosen = yaml.safe_load(settings.read_text()) or {} if settings else {}
    chosen.setdefault("timing", {})["trace_calls"] = True
    config = out / "trace.yaml"
    config.write_text(yaml.safe_dump(chosen))
    found = []
    doc, proc, wall = run_submit(submission, out / f"harness{run}.json", "--task", task,
                                 "--mode", "benchmark", "--device", device,
                                 "--config", str(config), "--no-record")
    if not doc:
        raise SystemExit(f"the harness wrote no result:\n{proc.stdout[-2000:]}"
                         f"{proc.stderr[-2000:]}")
    for phase in doc["phases"]:
        for case in phase["cases"]:
            trace = (case.get("samples") or {}).get("trace") or []
            records = [dict(r, index=i) for i, r in enumerate(trace)]
            found.append({"side": "harness", "run": run, "case": case["index"],
                          "status": case["status"], "records": records, "wall": wall})
    return found


# -- the public evaluator's loop ----------------------------------------------------------
def public_traces(submission: Path, task: str, device: str, run: int, out: Path) -> list[dict]:
    """The public loop (`_public_loop`) once, in a fresh process."""
    path = out / f"public{run}.json"
    proc = subprocess.run([sys.executable, __file__, "--_loop", str(submission), "--task",
                           task, "--device", device, "--out", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not path.exists():
        raise SystemExit(f"the public loop failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return [dict(case, side="public", run=run) for case in json.loads(path.read_text())]


def public_calls(kernel, data, reps: int, cuda: bool) -> list[dict]:
    """pmpp_v2's benchmark loop on one case's `data`: per call a device synchronise, an L2
    flush (a 256 MiB fill), the start event, the call, the end event and a synchronise;
    each call's event time, host time around the call and round trip (ns) and the host's
    account (context switches, minor faults, collections). Self-contained (its imports
    inside): `--worker-loop` copies its source into a submission."""
    import gc
    import resource
    import time

    import torch

    def usage() -> tuple[int, int, int]:
        ru = resource.getrusage(resource.RUSAGE_THREAD)
        return ru.ru_nvcsw + ru.ru_nivcsw, ru.ru_minflt, sum(s["collections"]
                                                              for s in gc.get_stats())
    records = []
    for i in range(reps):
        before = usage()
        t0 = time.perf_counter_ns()
        if cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dummy = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
            dummy.fill_(42)
            del dummy
            start.record()
        h0 = time.perf_counter_ns()
        output = kernel(data)
        h1 = time.perf_counter_ns()
        ns = float(h1 - h0)
        if cuda:
            end.record()
            torch.cuda.synchronize()
            ns = start.elapsed_time(end) * 1e6
        del output
        after = usage()
        records.append({"index": i, "ns": ns, "host_ns": float(h1 - h0),
                        "rt": float(time.perf_counter_ns() - t0),
                        "worker": {"vcsw": after[0] - before[0], "minflt": after[1] - before[1],
                                   "gc": after[2] - before[2]}})
    return records


def sequence_times(kernel, data, reps: int, cuda: bool) -> dict[str, float]:
    """One case's call timed after each of the sequences that lead to a timed call, `reps`
    times each on the same `data`, in turn: the median time per sequence (µs; the event
    time on a GPU, the host clock on the CPU, where the fill is 8 MiB and nothing waits).
    Told apart by the inputs' reuse, what is left
    of a gap between the harness and the public loop is in these steps: the public
    evaluators' 256 MiB fill right before the start event, or the harness's empty kernel,
    1 MiB warm-up, event synchronise and GPU sleep (worker.py `_timed_on_gpu`).
    Self-contained: `--worker-sequences` copies its source into a submission."""
    import statistics
    import time

    import torch

    device = "cuda" if cuda else "cpu"
    flush = torch.empty((256 if cuda else 8) << 18, dtype=torch.int32, device=device)
    warm = torch.cuda.Event() if cuda else None

    def fill(n: int) -> None:
        scratch = torch.empty(n, dtype=torch.int64, device=device)
        scratch.fill_(42)
        del scratch

    def harness(elements: int, cycles: int) -> None:
        if cuda:
            torch.cuda._sleep(1)
        fill(elements)
        if cuda:
            warm.record()
            warm.synchronize()
            if cycles:
                torch.cuda._sleep(cycles)

    sleep = 200_000  # about 100 µs of GPU sleep on a 2 GHz SM clock: the hidden window
    steps = {"public (256 MiB fill)": lambda: flush.fill_(1),
             "public, synchronised": lambda: (flush.fill_(1), cuda and torch.cuda.synchronize()),
             "harness": lambda: harness(1 << 17, sleep),
             "harness, no GPU sleep": lambda: harness(1 << 17, 0),
             "harness, 256 MiB fill": lambda: harness(flush.numel() // 2, sleep),
             "nothing before": lambda: None}
    found = {}
    for name, before in steps.items():
        times = []
        for _ in range(reps):
            if cuda:
                torch.cuda.synchronize()
                start, end = (torch.cuda.Event(enable_timing=True),
                              torch.cuda.Event(enable_timing=True))
            before()
            if cuda:
                start.record()
            t0 = time.perf_counter_ns()
            kernel(data)
            if cuda:
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) * 1e3)
            else:
                times.append((time.perf_counter_ns() - t0) / 1e3)
        found[name] = statistics.median(times)
    return found


def _public_loop(submission: Path, task: str, device: str, out: Path) -> None:
    """pmpp_v2's `_run_single_benchmark` on every benchmark case, recheck off as in its
    benchmark mode (`public_calls`)."""
    from benchmarks._load import load_submission, load_task_modules

    reference, _, cases = load_task_modules(task)
    kernel = load_submission(submission).custom_kernel
    found = []
    for index, case in enumerate(cases):
        args = {k: v for k, v in case.items() if k != "name"}
        if "device" in inspect.signature(reference.generate_input).parameters:
            args["device"] = device
        data = reference.generate_input(**args)
        kernel(data)  # the obligatory first call (checked publicly; timing is what we trace)
        found.append({"case": index, "status": "passed",
                      "records": public_calls(kernel, data, PUBLIC_MAX_REPEATS, device == "cuda")})
    out.write_text(json.dumps(found))


# -- the public loop, or the sequences, inside the harness's worker ------------------------
_IN_WORKER = """

# call_trace.py --worker-loop / --worker-sequences: {fn} at the first call of each case, in
# the harness's worker on the inputs the harness gives it (keyed by the first input's shape).
_calltrace_inner = custom_kernel
_calltrace_seen = set()


def custom_kernel(data):
    first = data[0] if isinstance(data, (tuple, list)) and data else data
    key = tuple(getattr(first, "shape", ()))
    if key not in _calltrace_seen:
        _calltrace_seen.add(key)
        import json as _json
        import torch as _torch
        found = {fn}(_calltrace_inner, data, {reps}, _torch.cuda.is_available())
        print("{marker} " + _json.dumps(found), flush=True)
    return _calltrace_inner(data)
"""


def in_worker(submission: Path, task: str, device: str, out: Path, fn, reps: int) -> list:
    """`fn(kernel, data, reps, cuda)` inside the harness's worker (sandbox, shared inputs,
    its process): a copy of the submission that runs it at the first call of each case,
    judged once in benchmark mode with the harness runs' settings; per case, what it
    returned."""
    marker = f"CALLTRACE_{fn.__name__.upper()}"
    wrapped = out / submission.name
    wrapped.parent.mkdir(parents=True, exist_ok=True)
    wrapped.write_text(submission.read_text() + "\n\n" + inspect.getsource(fn) + _IN_WORKER
                       .replace("{fn}", fn.__name__).replace("{reps}", str(reps))
                       .replace("{marker}", marker))
    settings = out.parent / "trace.yaml"  # the harness runs' settings (harness_traces), if written
    extra = ["--config", str(settings)] if settings.exists() else []
    doc, proc, _ = run_submit(wrapped, out.with_suffix(".json"), "--task", task,
                              "--mode", "benchmark", "--device", device, "--no-record", *extra)
    stdout = (doc.get("worker_output") or {}).get("stdout", "")
    lines = [line for line in stdout.splitlines() if line.startswith(marker + " ")]
    if not lines:
        raise SystemExit(f"{fn.__name__} in the worker printed nothing:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return [json.loads(line.split(" ", 1)[1]) for line in lines]


def worker_loop_traces(submission: Path, task: str, device: str, run: int, out: Path,
                       reps: int = PUBLIC_MAX_REPEATS) -> list[dict]:
    """The public loop (`public_calls`) inside the harness's worker; per case, its records."""
    found = in_worker(submission, task, device, out / f"worker_loop{run}", public_calls, reps)
    return [{"side": "worker-loop", "run": run, "case": i, "status": "passed", "records": r}
            for i, r in enumerate(found)]


def worker_sequences(submission: Path, task: str, device: str, run: int, out: Path,
                     reps: int = SEQUENCE_REPEATS) -> list[dict]:
    """`sequence_times` inside the harness's worker; per case, each sequence's median."""
    found = in_worker(submission, task, device, out / f"sequences{run}", sequence_times, reps)
    return [{"run": run, "case": i, "median_us": medians} for i, medians in enumerate(found)]


def sequence_table(rows: list[dict]) -> str:
    """The sequences' medians (µs), a line per case and run, a column per sequence."""
    names = list(rows[0]["median_us"]) if rows else []
    lines = ["sequence medians (µs), the same inputs every call, in the harness's worker:",
             "run case " + " | ".join(names)]
    for row in rows:
        lines.append(f"{row['run']:>3} {row['case']:>4} " + " | ".join(
            f"{row['median_us'][n]:>{len(n)}.2f}" for n in names))
    return "\n".join(lines)


# -- what the slow calls had in common ----------------------------------------------------
def slow_share(times: list[float]) -> tuple[int, float]:
    """How many of a case's call times are slow (over SLOW_OVER_MEDIAN times their
    median), and what they add over the median, as a share of the case's sum."""
    if not times:
        return 0, 0.0
    median = statistics.median(times)
    slow = [t for t in times if t > SLOW_OVER_MEDIAN * median]
    return len(slow), sum(t - median for t in slow) / sum(times)


def case_summary(records: list[dict]) -> dict:
    """A case's figures over its scored calls (on a GPU no score reads the probes): mean, median, p95, max (µs), the slow calls and their share of the mean."""
    scored = [r for r in records if r.get("scored", True)]
    times = sorted(r["ns"] for r in scored)
    if not times:
        return {"calls": 0}
    slow, share = slow_share(times)
    return {"calls": len(times), "mean_us": statistics.fmean(times) / 1e3,
            "median_us": statistics.median(times) / 1e3,
            "p95_us": times[int(0.95 * (len(times) - 1))] / 1e3,
            "max_us": times[-1] / 1e3, "slow": slow, "slow_share": share}


def slow_and_others(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """A case's calls over SLOW_OVER_MEDIAN times its median (probes among them, against
    the scored calls' median), and the others."""
    scored = [r["ns"] for r in records if r.get("scored", True)] or [r["ns"] for r in records]
    limit = SLOW_OVER_MEDIAN * statistics.median(scored)
    return [r for r in records if r["ns"] > limit], [r for r in records if r["ns"] <= limit]


def feature_table(traces: list[dict], side: str) -> list[tuple[str, float, float]]:
    """(feature, its mean over the slow calls, over the others) for one side, all cases."""
    slow, others = [], []
    for trace in traces:
        if trace["side"] == side and trace["records"]:
            s, o = slow_and_others(trace["records"])
            slow += s
            others += o
    def mean(read, records: list[dict]) -> float:
        return statistics.fmean(read(r) for r in records) if records else float("nan")

    rows = [(label, mean(read, slow), mean(read, others)) for label, read in FEATURES]
    return [("calls", float(len(slow)), float(len(others))), *rows]


def report(traces: list[dict]) -> str:
    """The printed summary: per case and side, then the features of the slow calls."""
    lines = [f"{'side':<11} {'run':>3} {'case':>4} {'calls':>5} {'mean':>9} {'median':>9} "
             f"{'p95':>9} {'max':>9} {'slow':>4} {'slow share':>10}"]
    for t in sorted(traces, key=lambda t: (t["case"], t["side"], t["run"])):
        s = case_summary(t["records"])
        if not s["calls"]:
            lines.append(f"{t['side']:<11} {t['run']:>3} {t['case']:>4}  no timed call ({t['status']})")
            continue
        lines.append(f"{t['side']:<11} {t['run']:>3} {t['case']:>4} {s['calls']:>5} "
                     f"{s['mean_us']:>9.2f} {s['median_us']:>9.2f} {s['p95_us']:>9.2f} "
                     f"{s['max_us']:>9.2f} {s['slow']:>4} {s['slow_share']:>10.1%}")
    lines.append(f"(µs per call; slow: over {SLOW_OVER_MEDIAN}x the case's median; its share: "
                 "what the slow calls add over the median, over the case's sum)")
    for side in sorted({t["side"] for t in traces}):
        lines.append(f"\n{side}: the slow calls against the others (means per call)")
        for label, slow, others in feature_table(traces, side):
            lines.append(f"  {label:<16} {slow:>10.2f} {others:>10.2f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("submission", nargs="?", type=Path)
    ap.add_argument("--task", default="vectoradd")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--public-loop", action="store_true")
    ap.add_argument("--worker-loop", action="store_true",
                    help="also the public loop inside the harness's worker, on its inputs")
    ap.add_argument("--worker-sequences", action="store_true",
                    help="also the call after each sequence that can lead to it, in the worker")
    ap.add_argument("--harness-config", type=Path,
                    help="more settings for the harness's runs (runner.py --config layout)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--read", type=Path, help="print a saved trace.json again")
    ap.add_argument("--_loop", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._loop:
        return _public_loop(args.submission, args.task, args.device, args.out)
    if args.read:
        print(report(json.loads(args.read.read_text())))
        beside = args.read.with_name("sequences.json")
        if beside.exists():
            print("\n" + sequence_table(json.loads(beside.read_text())))
        return None
    if args.submission is None:
        ap.error("a submission (or --read) is needed")
    out = args.out or Path(tempfile.mkdtemp(prefix="call-trace-"))
    out.mkdir(parents=True, exist_ok=True)
    traces, sequences = [], []
    for run in range(args.runs):  # the two sides alternate
        traces += harness_traces(args.submission, args.task, args.device, run, out,
                                 args.harness_config)
        if args.public_loop:
            traces += public_traces(args.submission, args.task, args.device, run, out)
        if args.worker_loop:
            traces += worker_loop_traces(args.submission, args.task, args.device, run, out)
        if args.worker_sequences:
            sequences += worker_sequences(args.submission, args.task, args.device, run, out)
    (out / "trace.json").write_text(json.dumps(traces))
    print(report(traces))
    if sequences:
        (out / "sequences.json").write_text(json.dumps(sequences))
        print("\n" + sequence_table(sequences))
    print(f"\ndata: {out / 'trace.json'}")
    return None


if __name__ == "__main__":
    main()
