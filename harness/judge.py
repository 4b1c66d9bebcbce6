"""The judge: owns seeds, inputs, references and verdicts; drives one worker at a time.

For each case: generate the input, compute the reference, share input slots and output
buffers with the worker once, then per call fill a slot with fresh values, flush the
caches, send the slot number, wait (with a deadline) for the worker's report, and check
the output against the judge's own pristine copy of the input.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from . import results as R
from .checking import all_finite, output_sanity
from .devices import DeviceInfo, Flusher
from .integrity import Calibration, calibration_disturbed, check_clocks, physics_floor
from .phases import PhaseSpec, Progress
from .protocol import ACK, DONE, ERROR, ProtocolError
from .sandbox import WorkerDied, WorkerProcess, WorkerTimeout, become_subreaper
from .seeds import SeedPlan
from .settings import Settings
from .structure import (
    SharedAllocator,
    clone,
    copy_into,
    describe,
    fill_slot,
    make_outputs,
    make_slot,
    nbytes,
    poison,
)
from .tasks import Reference, Task, TaskError
from .timing import StoppingRule, WarmUp, combine, summarize

_STATUS_BY_KIND = {
    "wrong_output": R.FAILED, "exception": R.ERROR, "load_error": R.ERROR,
    "syntax_error": R.ERROR, "import_error": R.ERROR, "missing_entry": R.ERROR,
    "out_of_memory": R.ERROR, "compile_error": R.COMPILE_ERROR, "needs_gpu": R.NEEDS_GPU,
    "cuda_error": R.CUDA_ERROR, "protocol": R.CRASHED,
}
_FATAL = {R.CUDA_ERROR, R.CRASHED, R.TIMED_OUT, R.REJECTED}


class CaseFailure(Exception):
    """Ends a case early with a status and a message."""

    def __init__(self, status: str, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.fatal = status, message, fatal


def load_error_verdict(kind: str, message: str, module: str = "") -> dict[str, Any]:
    """The verdict for a submission that could not be loaded, with a hint."""
    status = _STATUS_BY_KIND.get(kind, R.ERROR)
    titles = {
        "syntax_error": "the submission has a syntax error",
        "import_error": f"the submission imports {module!r}, which is not installed here",
        "missing_entry": "the submission defines no custom_kernel(data)",
        "needs_gpu": "the submission needs a GPU",
    }
    title = titles.get(kind, "the submission failed while loading")
    hint = ""
    if kind == "import_error" and module.split(".")[0] == "aiter":
        hint = ("aiter is AMD's ROCm kernel library (published as 'amd-aiter'); it needs an AMD "
                "GPU with ROCm and cannot run on this machine")
    elif kind == "import_error" and module.split(".")[0] in ("reference", "eval"):
        hint = "submissions cannot import the task's reference or evaluator"
    elif kind == "import_error":
        hint = f"install {module.split('.')[0]!r} where the harness runs, or remove the import"
    return {"status": status, "kind": kind, "title": title, "hint": hint, "message": message}


class Judge:
    """Runs phases of cases against a worker that holds the submission."""

    def __init__(
        self, task: Task, reference: Reference, device: DeviceInfo, settings: Settings,
        submission: Path, worker_staging: Path, secret: bytes | None = None,
        progress: Progress | None = None, clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.task, self.ref, self.device, self.settings = task, reference, device, settings
        self.submission, self.staging, self.secret = submission, worker_staging, secret
        self.progress = progress or Progress()
        self.clock = clock
        self.worker: WorkerProcess | None = None
        self.mailbox = None
        self.mail_seq = 0
        self.restarts = 0
        self.base_calibration: Calibration | None = None
        self.load_error: dict[str, Any] | None = None
        self.flusher = Flusher(device, settings.timing.l2_flush_factor, settings.timing.cpu_flush_bytes)
        self.shm_root = Path(tempfile.mkdtemp(prefix="harness-shm-", dir=_shm_parent()))
        self.worker_output = {"stdout": "", "stderr": ""}
        self.warnings: list[str] = []
        self.stray_pids: list[int] = []
        become_subreaper()
        if device.kind == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False

    # -- worker lifecycle -------------------------------------------------------------
    def start(self, timeout: float) -> bool:
        """Start a worker and load the submission; False (with `load_error`) if it fails."""
        w = WorkerProcess(self.settings.worker, self.device.kind)
        self.worker = w
        w.start()
        w.send({
            "device": self.device.kind, "staging": str(self.staging),
            "submission": self.task.submission_name, "shown_name": self.submission.name,
            "gpu_memory_fraction": self.settings.worker.gpu_memory_fraction,
            "spin_seconds": self.settings.timing.spin_seconds,
            "mailbox": self._open_mailbox(),
            "launch_ahead_cycles": self._ahead_cycles(),
        })
        try:
            ready = w.recv(self.settings.worker.start_timeout)
            if ready.get("event") == ERROR:
                raise CaseFailure(R.CRASHED, ready.get("message", "the worker failed to start"))
            gaps = [self._noop_gap(timeout) for _ in range(self.settings.timing.calibration_calls)]
            self.base_calibration = Calibration.from_gaps(gaps)
            w.send({"op": "load"})
            loaded = w.recv(timeout)
        except (WorkerDied, WorkerTimeout, ProtocolError, CaseFailure) as exc:
            status, message = self._fault(exc)
            self.load_error = {"status": status, "kind": "load", "title":
                               "the submission stopped the worker while loading",
                               "hint": "", "message": message}
            self.stop()
            return False
        if loaded.get("event") == ERROR:
            self.load_error = load_error_verdict(
                loaded.get("kind", "load_error"), str(loaded.get("message", "")),
                str(loaded.get("module", "")),
            )
            self._collect_output()
            self.stop()
            return False
        return True

    def _ahead_cycles(self) -> int:
        us = self.settings.timing.launch_ahead_us
        if us <= 0 or self.device.kind != "cuda":
            return 0
        mhz = self.device.clocks.get("sm_max_mhz") or 2000.0
        return int(us * mhz)

    def _open_mailbox(self) -> str | None:
        if not self.settings.timing.mailbox:
            self.mailbox = None
            return None
        from .protocol import Mailbox

        path = str(self.shm_root / f"mailbox{self.restarts}")
        self.mailbox = Mailbox(path, create=True)
        self.mail_seq = 0
        return path

    def stop(self) -> None:
        if self.worker is None:
            return
        try:
            self.worker.send({"op": "exit"})
        except WorkerDied:
            pass
        self._collect_output()
        self.stray_pids += self.worker.close()
        self.worker = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.shm_root, ignore_errors=True)

    def _collect_output(self) -> None:
        if self.worker is not None:
            out, err = self.worker.output()
            self.worker_output = {"stdout": out, "stderr": err}

    def _fault(self, exc: Exception) -> tuple[str, str]:
        if isinstance(exc, WorkerTimeout):
            return R.TIMED_OUT, f"timed out: {exc}; the worker was killed"
        if isinstance(exc, WorkerDied):
            self._collect_output()
            return R.CRASHED, f"crashed: {exc}"
        if isinstance(exc, ProtocolError):
            return R.REJECTED, f"rejected: {exc}"
        return exc.status, exc.message

    # -- phases ---------------------------------------------------------------------
    def run_phase(self, spec: PhaseSpec) -> R.PhaseResult:
        """Run every case of a phase; a hang ends the phase, a crash only its case."""
        phase = R.PhaseResult(spec.name, spec.seeds)
        self.progress.phase_start(spec)
        deadline = self.clock() + spec.timeout
        stop_reason = ""
        for index, case in enumerate(spec.cases):
            self.progress.case_start(spec, index, case)
            if stop_reason:
                result = R.CaseResult(index, case, R.SKIPPED, stop_reason)
            else:
                result = self._case_or_failure(spec, index, case, deadline)
                if result.status == R.TIMED_OUT:
                    stop_reason = "not run: an earlier case of this phase timed out"
                elif result.status == R.NEEDS_GPU:
                    stop_reason = "not run: the submission needs a GPU"
                elif self.restarts > self.settings.worker.max_restarts:
                    stop_reason = "not run: the worker failed too many times"
            phase.cases.append(result)
            self.progress.case_done(spec, result)
        scores = [c.score_ns for c in phase.cases]
        if spec.timed and phase.passed and all(s is not None for s in scores):
            phase.score_ns = combine(scores, self.task.ranking_by)
        return phase

    def _case_or_failure(self, spec: PhaseSpec, index: int, case: dict, deadline: float) -> R.CaseResult:
        if self.worker is None:
            self.restarts += 1
            if not self.start(max(deadline - self.clock(), 1.0)):
                err = self.load_error or {}
                return R.CaseResult(index, case, err.get("status", R.CRASHED), err.get("message", ""))
        try:
            return self._run_case(spec, index, case, deadline)
        except CaseFailure as exc:
            if exc.fatal or exc.status in _FATAL:
                self.stop()
            return R.CaseResult(index, case, exc.status, exc.message)
        except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
            status, message = self._fault(exc)
            self.stop()
            return R.CaseResult(index, case, status, message)

    # -- one case -------------------------------------------------------------------
    def _run_case(self, spec: PhaseSpec, index: int, case: dict, deadline: float) -> R.CaseResult:
        secret = self.secret if spec.seeds == "secret" else None
        plan = SeedPlan(int(case.get("seed", 0)), secret, stream=spec.name)
        data = self._generate(case, plan, 0)
        try:
            template = self.ref.reference(clone(data))
        except Exception as exc:  # noqa: BLE001 - the task's own code failed
            raise TaskError(f"{self.task.name}: ref_kernel failed on case {case}: {exc!r}") from exc
        finite = all_finite(template)
        alloc = SharedAllocator(Path(tempfile.mkdtemp(dir=self.shm_root)))
        slots = [make_slot(data, alloc) for _ in range(max(1, self.settings.timing.ring_slots))]
        outputs = make_outputs(template, alloc)
        self.worker.send({
            "op": "case", "slots": [alloc.to_wire(s) for s in slots],
            "outputs": alloc.to_wire(outputs), "expected": describe(template),
        })
        self._expect_ack(deadline)
        result = R.CaseResult(index, case, R.PASSED)
        try:
            calibration = self._calibrate(deadline) if spec.timed else None
            self._checked_call(data, slots[0], 0, outputs, finite, deadline, "the first call")
            result.checked_calls = 1
            if spec.timed:
                self._time_case(spec, case, plan, slots, outputs, finite, deadline, calibration,
                                template, result)
        except CaseFailure as exc:
            if not (exc.fatal or exc.status in _FATAL):
                self._release(deadline)
            raise
        self._release(deadline)
        return result

    def _release(self, deadline: float) -> None:
        """Tell the worker to drop the case's buffers (only while it is healthy)."""
        self.worker.send({"op": "release"})
        self._expect_ack(deadline + 30)

    def _generate(self, case: dict, plan: SeedPlan, call: int) -> Any:
        kwargs = dict(case)
        kwargs["seed"] = plan.seed(call)
        try:
            return self.ref.generate(kwargs, self.device.kind)
        except Exception as exc:  # noqa: BLE001 - the task's own code (or the case) failed
            raise TaskError(f"{self.task.name}: generate_input failed on case {case}: "
                            f"{exc!r}") from exc

    def _expect_ack(self, deadline: float) -> None:
        reply = self.worker.recv(max(deadline - self.clock(), 1.0))
        if reply.get("event") not in (ERROR, ACK):
            raise ProtocolError(f"expected an acknowledgement, got {reply.get('event')!r}: "
                                "forged or stray protocol bytes")
        if reply.get("event") == ERROR:
            raise CaseFailure(_STATUS_BY_KIND.get(reply.get("kind"), R.ERROR),
                              str(reply.get("message", "")))

    def _roundtrip(self, message: dict, timeout: float) -> tuple[dict, float]:
        """Flush, send, wait: the worker's reply and the judge's round-trip time (ns)."""
        self.flusher.flush()
        if self.mailbox is not None:
            return self._mail_roundtrip(message, timeout)
        self.mail_seq += 1
        message = dict(message, seq=self.mail_seq)
        t0 = time.perf_counter_ns()
        self.worker.send(message)
        reply = self.worker.recv(timeout, self.settings.timing.spin_seconds)
        t1 = time.perf_counter_ns()
        if reply.get("seq") != self.mail_seq:
            raise ProtocolError("the worker answered out of turn (a reply that was not asked "
                                "for: forged or stray protocol bytes)")
        self.last_reply = reply
        return reply, float(t1 - t0)

    def _mail_roundtrip(self, message: dict, timeout: float) -> tuple[dict, float]:
        """The same round trip through the shared mailbox (no system calls on the way)."""
        from .protocol import Mailbox

        self.mail_seq += 1
        seq, box = self.mail_seq, self.mailbox
        spin_until = time.perf_counter() + self.settings.timing.spin_seconds
        deadline = time.perf_counter() + timeout
        box.wake(seq)  # the worker may be asleep after a long gap: wake it off the clock
        n = 0
        while not box.awake(seq):
            n += 1
            if n % 256 == 0:
                if time.perf_counter() > deadline:
                    raise WorkerTimeout(f"the worker did not answer within {timeout:.3g} s")
                if self.worker.proc.poll() is not None:
                    raise WorkerDied(self.worker.exit_description())
        t0 = time.perf_counter_ns()
        box.request(seq, message["op"], message["slot"])
        n = 0
        while box.reply_seq() != seq:
            n += 1
            if n % 256 == 0:
                now = time.perf_counter()
                if now > deadline:
                    raise WorkerTimeout(f"no answer within {timeout:.3g} s")
                if self.worker.proc.poll() is not None:
                    raise WorkerDied(self.worker.exit_description())
                if now > spin_until:
                    time.sleep(0.0001)
        t1 = time.perf_counter_ns()
        reply = box.reply()
        if reply["status"] == Mailbox.SEE_PIPE:
            reply = self.worker.recv(max(deadline - time.perf_counter(), 1.0))
            if reply.get("event") != ERROR:
                raise ProtocolError("the worker sent an unexpected message on the pipe: "
                                    f"forged or stray protocol bytes ({str(reply)[:200]})")
        else:
            from .protocol import decode, encode

            reply = decode(encode(reply))  # the same validation as a pipe message
        self.last_reply = reply
        return reply, float(t1 - t0)

    def _noop_gap(self, timeout: float) -> float:
        """One no-op call: the judge's round trip minus the reported time."""
        reply, rt = self._roundtrip({"op": "noop", "slot": 0}, timeout)
        if reply.get("event") != DONE:
            raise CaseFailure(R.REJECTED, "the harness's no-op call failed after the "
                              f"submission was imported: {reply.get('message', '')}")
        return rt - float(reply["ns"])

    def _calibrate(self, deadline: float) -> Calibration:
        timeout = max(deadline - self.clock(), 1.0)
        gaps = [self._noop_gap(timeout) for _ in range(self.settings.timing.calibration_calls)]
        return Calibration.from_gaps(gaps)

    def _call(self, data: Any, slot: Any, slot_index: int, outputs: Any, deadline: float) -> tuple[float, float]:
        """One call on fresh data: (reported ns, judge round-trip ns)."""
        fill_slot(slot, data)
        poison(outputs)
        left = deadline - self.clock()
        if left <= 0:
            raise WorkerTimeout("the phase's time limit ran out")
        reply, rt = self._roundtrip({"op": "call", "slot": slot_index}, left)
        if reply.get("event") == ERROR:
            kind = reply.get("kind", "exception")
            status = _STATUS_BY_KIND.get(kind, R.ERROR)
            message = str(reply.get("message", ""))
            if status == R.COMPILE_ERROR:
                self._collect_output()
                message = _compile_reason(message, self.worker_output["stderr"],
                                          str(self.staging / self.task.submission_name),
                                          self.submission.name, self.device.capability or "?")
            elif status == R.NEEDS_GPU:
                message = ("this submission needs a GPU (it launches GPU kernels or asks for "
                           "CUDA), and this run is on the CPU: run it where a GPU is visible\n"
                           + message)
            raise CaseFailure(status, message, fatal=status in _FATAL)
        if reply.get("event") != DONE:
            raise ProtocolError(f"unexpected reply {reply.get('event')!r} to a call")
        return float(reply["ns"]), rt

    def _checked_call(self, data, slot, slot_index, outputs, finite, deadline, what) -> tuple[float, float]:
        ns, rt = self._call(data, slot, slot_index, outputs, deadline)
        problem = output_sanity(outputs, finite)
        if not problem:
            try:
                ok, problem = self.ref.check(data, outputs)
            except Exception as exc:  # noqa: BLE001 - the check met an output it cannot read
                ok, problem = False, f"the check could not read the output: {exc!r}"
            if ok:
                return ns, rt
        raise CaseFailure(R.FAILED, f"{what}: wrong output\n{problem}".rstrip())

    def _time_case(self, spec, case, plan, slots, outputs, finite, deadline, calibration,
                   template, result: R.CaseResult) -> None:
        timing = self.settings.timing
        check = spec.check_all
        ring = len(slots)
        call = 1
        warm = WarmUp(timing, self.clock)
        while not warm.done() and self.clock() < deadline:
            data = self._generate(case, plan, call)
            self._run_one(data, slots[call % ring], call % ring, outputs, finite, deadline,
                          check, f"warm-up call {call}")
            warm.add()
            call += 1
        rule = StoppingRule(timing, self.clock)
        roundtrips, breakdown = [], []
        timing_started = self.clock()
        while not rule.done() and self.clock() < deadline - 0.5:
            data = self._generate(case, plan, call)
            ns, rt = self._run_one(data, slots[call % ring], call % ring, outputs, finite,
                                   deadline, check, f"timed call {call}")
            rule.add(ns)
            roundtrips.append(rt)
            breakdown.append(self.last_reply)
            call += 1
        if not rule.samples:
            raise CaseFailure(R.TIMED_OUT, "no call could be timed within the phase's time limit")
        stats = summarize(rule.samples)
        result.stats = stats.to_dict()
        result.checked_calls += (call - 1) if check else 0
        result.score_ns = stats.mean
        clocks = check_clocks(rule.samples, roundtrips, calibration, self.settings.integrity)
        result.integrity = {"stopped": rule.reason, "clocks": clocks.to_dict(),
                            "timing_seconds": self.clock() - timing_started,
                            "calibration": vars(calibration),
                            "worker_says": _medians(breakdown, roundtrips)}
        disturbed = calibration_disturbed(self.base_calibration, calibration,
                                          self.settings.integrity, self._copy_ns(outputs, template))
        if disturbed:
            result.flags.append(disturbed)
        if clocks.flagged:
            result.flags.append(clocks.message)
            result.score_ns = max(stats.mean, clocks.judge_mean_ns)
        self._apply_floor(case, result)

    def _run_one(self, data, slot, slot_index, outputs, finite, deadline, check, what):
        if check:
            return self._checked_call(data, slot, slot_index, outputs, finite, deadline, what)
        return self._call(data, slot, slot_index, outputs, deadline)

    def _copy_ns(self, outputs: Any, template: Any) -> float:
        """The judge's own time to copy one output: the worker does the same per call."""
        if nbytes(template) == 0:
            return 0.0
        t0 = time.perf_counter_ns()
        copy_into(outputs, template)
        if self.device.kind == "cuda":
            torch.cuda.synchronize()
        return float(time.perf_counter_ns() - t0)

    def _apply_floor(self, case: dict, result: R.CaseResult) -> None:
        work = self.ref.work(case)
        if work is None or self.device.kind != "cuda":
            return
        floor = physics_floor(work, self.device.name, self.task.peak_dtype or "bf16")
        if floor is None:
            warning = (f"no peak rates known for {self.device.name}: the physics floor "
                       "check is off (add it to configs/gpus.yaml)")
            if warning not in self.warnings:
                self.warnings.append(warning)
            return
        result.integrity["floor_ns"] = floor.ns
        result.integrity["speed_of_light_fraction"] = floor.ns / result.score_ns
        if result.score_ns < floor.ns * self.settings.integrity.floor_margin:
            result.status = R.REJECTED
            result.message = (
                f"rejected: a mean of {result.score_ns / 1e3:.3f} µs is below the physical floor "
                f"of {floor.ns / 1e3:.3f} µs on {floor.gpu} (compute {floor.compute_ns / 1e3:.3f} µs, "
                f"memory {floor.memory_ns / 1e3:.3f} µs): the timer cannot be trusted"
            )


def _medians(replies: list[dict], roundtrips: list[float]) -> dict[str, float]:
    """Medians of the worker's own time breakdown (diagnostics only: it is not trusted)."""
    import statistics

    out = {}
    for key in ("host_ns", "sync_ns", "copy_ns", "busy_ns"):
        values = [float(r[key]) for r in replies if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = statistics.median(values)
    busy = [float(r.get("busy_ns", 0)) for r in replies]
    if busy and len(busy) == len(roundtrips):
        out["transport_ns"] = statistics.median(rt - b for rt, b in zip(roundtrips, busy))
    return out


def _compile_reason(message: str, stderr: str, staged: str, shown: str, capability: str) -> str:
    """The compiler's one-line reason, from its diagnostics when it printed any."""
    lines = [line.strip().replace(staged, shown) for line in stderr.splitlines()]
    errors = [line for line in lines if " error: " in line or line.startswith("error:")]
    passes = re.findall(r"Pipeline failed while executing \[`(\w+)`", stderr)
    last = message.strip().splitlines()[-1] if message.strip() else "compilation failed"
    reason = errors[0] if errors else last
    if passes:
        reason += f" (the compiler pass {passes[0]} failed)"
    text = f"a kernel does not compile for this GPU (sm_{capability}): {reason}"
    if "dot_scaled" in stderr + message or (passes and passes[0] == "TritonGPUAccelerateMatmul"):
        text += ("\nhint: block-scaled dots (tl.dot_scaled) with float8_e4m3fn scales, as NVFP4 "
                 "uses, need FP4 tensor cores (sm_100, B200); on other GPUs decode the FP4 "
                 "values in registers and use bf16 dots")
    return f"{text}\n(the exception: {last})"


def _shm_parent() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and shm.stat().st_mode & 0o002 else None
