"""The judge: owns seeds, inputs, references and verdicts; drives one worker at a time.

For each case: generate the input, compute the reference, share input slots and output
buffers with the worker once, then per call fill a slot with fresh values, flush the
caches, send the slot number, wait (with a deadline) for the worker's report, and check
the output against the judge's own pristine copy of the input.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.consts import Status
from harness.judging.buffers import CaseBuffers, OutputLayout
from harness.judging.channel import Channel
from harness.judging.checking import all_finite, output_sanity
from harness.judging.cpus import CpuPlan, allowed_now, pin, plan
from harness.judging.cuda_vmm import CudaVmmError
from harness.judging.devices import ClockReading, DeviceInfo, Flusher
from harness.judging.head_start import shm_folder
from harness.judging.integrity import (
    Calibration,
    calibration_disturbed,
    check_clocks,
    clock_note,
    clock_samples,
    physics_floor,
)
from harness.judging.phases import PhaseSpec, Progress
from harness.judging.protocol import Event, ProtocolError
from harness.judging.sandbox import WorkerDied, WorkerProcess, WorkerTimeout, become_subreaper
from harness.judging.seeds import SeedPlan
from harness.judging.sharing import SharedAllocator
from harness.judging.structure import (
    InputLayoutError,
    clone,
    copy_into,
    describe,
    fill_slot,
    layout_template,
    make_slot,
    nbytes,
    poison,
    tensors,
)
from harness.judging.timing import (
    Laps,
    StoppingRule,
    WarmUp,
    ahead_cycles,
    combine,
    hidden_window_us,
    host_launch_ns,
    summarize,
)
from harness.judging.verdicts import (
    FATAL,
    STATUS_BY_KIND,
    CaseFailure,
    compile_reason,
    load_error_verdict,
)
from harness.loading.task_folder import Reference, Task, TaskError
from harness.results.document import CaseResult, PhaseResult
from harness.settings import Settings


class Judge:
    """Runs phases of cases against a worker that holds the submission."""

    def __init__(
        self, task: Task, reference: Reference, device: DeviceInfo, settings: Settings,
        submission: Path, worker_staging: Path, secret: bytes | None = None,
        progress: Progress | None = None, clock: Callable[[], float] = time.perf_counter,
        started: WorkerProcess | None = None, shm_root: Path | None = None,
    ) -> None:
        """`started`: a worker already starting (head_start.py) with `worker_staging` and
        `shm_root` in its sandbox's rules; the first `start` uses it instead of a new one."""
        self.task, self.ref, self.device, self.settings = task, reference, device, settings
        self.submission, self.staging, self.secret = submission, worker_staging, secret
        self.progress = progress or Progress()
        self.clock = clock
        self.worker: WorkerProcess | None = None
        self.channel: Channel | None = None
        self.restarts = 0
        self.base_calibration: Calibration | None = None
        self.load_error: dict[str, Any] | None = None
        self.flusher = Flusher(device, settings.timing.l2_flush_factor, settings.timing.cpu_flush_bytes)
        self.shm_root = shm_root or shm_folder()
        self._started = started
        self.worker_output = {"stdout": "", "stderr": ""}
        self.warnings: list[str] = []
        self.stray_pids: list[int] = []
        self.containment = None  # the sandbox's report (harness.judging.landlock.Report)
        self.clock_reading: ClockReading | None = None
        self.cpus: CpuPlan | None = None
        self._cpus_before: set[int] | None = None
        become_subreaper()
        self._pin_cpus()
        if device.kind == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False

    def _pin_cpus(self) -> None:
        """With `worker.pin_cpus`, give the worker a physical core of its own and the judge
        the others (see harness.judging.cpus; off by default: no gain measured on the H200 VM)."""
        allowed = allowed_now()
        if not (self.settings.worker.pin_cpus and allowed):
            return
        self.cpus = plan(allowed)
        if self.cpus is not None:
            self._cpus_before = allowed
            pin(self.cpus.judge)

    # -- worker lifecycle -------------------------------------------------------------
    def start(self, timeout: float, warm_case: dict | None = None) -> bool:
        """Start a worker and load the submission; False (with `load_error`) if it fails.

        On a GPU run with `worker.warm_reference`, the judge runs the task's own code on
        `warm_case` while the worker starts, so that its one-off costs overlap the
        worker's start-up instead of adding to the first case."""
        w, self._started = self._started, None
        if w is None or self.cpus is not None:
            if w is not None:
                w.close()  # started before the judge chose the worker's core
            w = WorkerProcess(self.settings.worker, self.device.kind,
                              cpus=self.cpus.worker if self.cpus else None,
                              readable=[self.staging], writable=[self.shm_root])
            w.start()
        self.worker = w
        self.containment = w.containment
        w.send({
            "device": self.device.kind, "staging": str(self.staging),
            "submission": self.task.submission_name, "shown_name": self.submission.name,
            "gpu_memory_fraction": self.settings.worker.gpu_memory_fraction,
            "spin_seconds": self.settings.timing.spin_seconds,
            "mailbox": self._open_channel(w),
            "sync": self.settings.timing.sync,
            "warm": self.settings.timing.warm,
            "gc_freeze": self.settings.worker.gc_freeze,
        })
        if warm_case is not None and self.settings.worker.warm_reference \
                and self.device.kind == "cuda":
            self.ref.warm(warm_case, self.device.kind)
        try:
            ready = w.recv(self.settings.worker.start_timeout)
            if ready.get("event") == Event.ERROR:
                raise CaseFailure(Status.CRASHED, ready.get("message", "the worker failed to start"))
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
        if loaded.get("event") == Event.ERROR:
            self.load_error = load_error_verdict(
                loaded.get("kind", "load_error"), str(loaded.get("message", "")),
                str(loaded.get("module", "")),
            )
            self._collect_output()
            self.stop()
            return False
        return True

    def _window_us(self) -> float:
        return hidden_window_us(self.settings.timing, self.task.timing, self.device.kind)

    def _ahead_cycles(self, window_us: float, host_ns: float, calls: int) -> int:
        return ahead_cycles(window_us, host_ns, calls, self.device.clocks.get("sm_max_mhz") or 2000.0)

    def _open_channel(self, worker: WorkerProcess) -> str | None:
        path = str(self.shm_root / f"mailbox{self.restarts}")
        self.channel = Channel(worker, path if self.settings.timing.mailbox else None,
                               self.settings.timing.spin_seconds)
        return self.channel.mailbox_path

    def stop(self) -> None:
        # A clock reading still running is the judge's own child: end it before the
        # worker's strays are killed, or it would be counted as one of them.
        self._drop_clock_reading()
        if self._started is not None:  # a head start no phase came to use
            self._started.close()
            self._started = None
        if self.worker is None:
            return
        try:
            self.worker.send({"op": "exit"})
        except WorkerDied:
            pass
        self._collect_output()
        self.stray_pids += self.worker.close()
        if self.channel is not None:
            self.channel.close()
        self.worker = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.shm_root, ignore_errors=True)
        if self._cpus_before is not None:  # the process outlives this evaluation
            pin(self._cpus_before)
            self._cpus_before = None

    def _collect_output(self) -> None:
        if self.worker is not None:
            out, err = self.worker.output()
            self.worker_output = {"stdout": out, "stderr": err}

    def _fault(self, exc: Exception) -> tuple[str, str]:
        if isinstance(exc, WorkerTimeout):
            return Status.TIMED_OUT, f"timed out: {exc}; the worker was killed"
        if isinstance(exc, WorkerDied):
            self._collect_output()
            return Status.CRASHED, f"crashed: {exc}"
        if isinstance(exc, ProtocolError):
            return Status.REJECTED, f"rejected: {exc}"
        return exc.status, exc.message

    # -- phases ---------------------------------------------------------------------
    def run_phase(self, spec: PhaseSpec) -> PhaseResult:
        """Run every case of a phase; a hang ends the phase, a crash only its case."""
        phase = PhaseResult(spec.name, spec.seeds)
        self.progress.phase_start(spec)
        phase_started = self.clock()
        deadline = phase_started + spec.timeout
        stop_reason = ""
        for index, case in enumerate(spec.cases):
            self.progress.case_start(spec, index, case)
            if stop_reason:
                result = CaseResult(index, case, Status.SKIPPED, stop_reason)
            else:
                case_started = self.clock()
                result = self._case_or_failure(spec, index, case, deadline)
                result.wall_seconds = self.clock() - case_started
                if result.status == Status.TIMED_OUT:
                    stop_reason = "not run: an earlier case of this phase timed out"
                elif result.status == Status.NEEDS_GPU:
                    stop_reason = "not run: the submission needs a GPU"
                elif self.restarts > self.settings.worker.max_restarts:
                    stop_reason = "not run: the worker failed too many times"
            phase.cases.append(result)
            self.progress.case_done(spec, result)
        scores = [c.score_ns for c in phase.cases]
        if spec.timed and phase.passed and all(s is not None for s in scores):
            phase.score_ns = combine(scores, self.task.ranking_by)
        phase.wall_seconds = self.clock() - phase_started
        return phase

    def _case_or_failure(self, spec: PhaseSpec, index: int, case: dict, deadline: float) -> CaseResult:
        if self.worker is None:
            self.restarts += 1
            if not self.start(max(deadline - self.clock(), 1.0)):
                err = self.load_error or {}
                return CaseResult(index, case, err.get("status", Status.CRASHED), err.get("message", ""))
        try:
            return self._run_case(spec, index, case, deadline)
        except CaseFailure as exc:
            if exc.fatal or exc.status in FATAL:
                self.stop()
            return CaseResult(index, case, exc.status, exc.message)
        except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
            status, message = self._fault(exc)
            self.stop()
            return CaseResult(index, case, status, message)
        except CudaVmmError as exc:  # the machine's fault, not the submission's
            self.stop()
            return CaseResult(index, case, Status.CRASHED, (
                f"the harness could not share the case's GPU buffers with the worker: {exc}. "
                "The GPU may be full (other processes on it), or its driver may lack CUDA's "
                "virtual-memory API; run it again where the GPU is free."))

    # -- one case -------------------------------------------------------------------
    def _run_case(self, spec: PhaseSpec, index: int, case: dict, deadline: float) -> CaseResult:
        self._drop_clock_reading()  # never another case's reading
        laps = Laps(self.clock)
        secret = self.secret if spec.seeds == "secret" else None
        plan = SeedPlan(int(case.get("seed", 0)), secret, stream=spec.name)
        data = self._generate(case, plan, 0)
        try:
            template = self.ref.reference(clone(data))
        except Exception as exc:  # noqa: BLE001 - the task's own code failed
            raise TaskError(f"{self.task.name}: ref_kernel failed on case {case}: {exc!r}") from exc
        laps.lap("inputs")
        per = max(1, int(self.task.timing.get("calls_per_sample", 1))) if spec.timed else 1
        ring = max(self.settings.timing.ring_slots, per)
        alloc = SharedAllocator(Path(tempfile.mkdtemp(dir=self.shm_root)))
        slots = [make_slot(data, alloc) for _ in range(ring)]
        box = CaseBuffers(alloc, slots, template, all_finite(template), per)
        self._share(alloc, {
            "op": "case", "slots": [alloc.to_wire(s) for s in slots],
            "outputs": box.wire_outputs(), "expected": describe(template),
            "calls_per_sample": per,
        })
        self._expect_ack(deadline)
        laps.lap("sharing")
        result = CaseResult(index, case, Status.PASSED, wall_parts=laps.parts)
        try:
            calibration = self._calibrate(deadline) if spec.timed else None
            laps.lap("calibration")
            first = self._first_call(box, case, plan, data, deadline)
            laps.lap("first_call")
            result.checked_calls = per
            if spec.profile:
                self._profile_case(index, case, plan, box.slots, deadline, result)
                laps.lap("profile")
            if spec.timed:
                self._time_case(spec, case, plan, box, deadline, calibration, first, result, laps)
        except CaseFailure as exc:
            if not (exc.fatal or exc.status in FATAL):
                self._release(deadline)
            raise
        self._release(deadline)
        laps.lap("release")
        self._note_clocks(case, result)
        laps.lap("clock_reading")
        return result

    def _first_call(self, box: CaseBuffers, case: dict, plan: SeedPlan, data: Any,
                    deadline: float) -> dict:
        """The first (checked, untimed) sample. An output laid out unlike the reference
        (another dtype or shape) is not wrong in itself: the task's check decides. The
        judge then shares buffers of the submission's layout and calls again."""
        try:
            return self._sample(box, case, plan, 0, 0, deadline, "the first call", first=data)
        except OutputLayout as layout:
            limit = max(4 * nbytes(box.template), 64 << 20)
            template = layout_template(layout.layout, self.device.kind, limit)
            if template is None:
                raise CaseFailure(Status.FAILED, f"the first call: wrong output\n{layout}") from None
            box.relayout(template)
            self._share(box.alloc, {"op": "outputs", "outputs": box.wire_outputs(),
                                    "expected": describe(template)})
            self._expect_ack(deadline)
            return self._sample(box, case, plan, 0, 0, deadline, "the first call", first=data,
                                relayout=False)

    def _share(self, alloc: SharedAllocator, message: dict) -> None:
        """Send a message naming shared buffers, with the descriptors of new GPU arenas."""
        notices, fds = alloc.pending()
        self.worker.send(dict(message, arenas=notices), fds)
        alloc.forget_fds()

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
        if reply.get("event") not in (Event.ERROR, Event.ACK):
            raise ProtocolError(f"expected an acknowledgement, got {reply.get('event')!r}: "
                                "forged or stray protocol bytes")
        if reply.get("event") == Event.ERROR:
            raise CaseFailure(STATUS_BY_KIND.get(reply.get("kind"), Status.ERROR),
                              str(reply.get("message", "")))

    def _roundtrip(self, message: dict, timeout: float) -> tuple[dict, float]:
        """Flush, send, wait: the worker's reply and the judge's round-trip time (ns)."""
        self.flusher.flush()
        return self.channel.roundtrip(message, timeout)

    def _noop_gap(self, timeout: float) -> float:
        """One no-op call: the judge's round trip minus the reported time."""
        reply, rt = self._roundtrip({"op": "noop", "slot": 0}, timeout)
        if reply.get("event") != Event.DONE:
            raise CaseFailure(Status.REJECTED, "the harness's no-op call failed after the "
                              f"submission was imported: {reply.get('message', '')}")
        return rt - float(reply["ns"])

    def _calibrate(self, deadline: float) -> Calibration:
        timeout = max(deadline - self.clock(), 1.0)
        gaps = [self._noop_gap(timeout) for _ in range(self.settings.timing.calibration_calls)]
        return Calibration.from_gaps(gaps)

    def _sample(self, box: CaseBuffers, case: dict, plan: SeedPlan, call: int, ahead: int,
                deadline: float, what: str, first: Any = None, relayout: bool = True) -> dict:
        """One sample: fresh inputs in the next `per` slots, one round trip, every output
        checked. The worker's reply, with the judge's round trip (`rt`, ns) added."""
        per, ring = box.per, len(box.slots)
        start = call % ring
        inputs = []
        for j in range(per):
            k = (start + j) % ring
            data = first if (first is not None and j == 0) else self._generate(case, plan, call + j)
            try:
                fill_slot(box.slots[k], data)
            except InputLayoutError as exc:
                raise TaskError(f"{self.task.name}: {exc}; the harness shares input buffers "
                                "once per case") from exc
            poison(box.outputs[k])
            inputs.append((k, data))
        left = deadline - self.clock()
        if left <= 0:
            raise WorkerTimeout("the phase's time limit ran out")
        reply, rt = self._roundtrip({"op": "call", "slot": start, "ahead": ahead}, left)
        self.progress.call_done()  # after the round trip: outside every clock
        if reply.get("event") == Event.ERROR:
            self._call_failure(reply, relayout=relayout and first is not None)
        if reply.get("event") != Event.DONE:
            raise ProtocolError(f"unexpected reply {reply.get('event')!r} to a call")
        for k, data in inputs:
            self._check_output(data, box.outputs[k], box.finite, what)
        return dict(reply, rt=rt)

    def _call_failure(self, reply: dict, relayout: bool) -> None:
        """Raise the verdict of a call the worker reported as failed."""
        kind = reply.get("kind", "exception")
        message = str(reply.get("message", ""))
        if kind == "output_layout" and relayout:
            raise OutputLayout(message, reply.get("layout"))
        status = STATUS_BY_KIND.get(kind, Status.ERROR)
        if status == Status.COMPILE_ERROR:
            self._collect_output()
            message = compile_reason(message, self.worker_output["stderr"],
                                     str(self.staging / self.task.submission_name),
                                     self.submission.name, self.device.capability or "?")
        elif status == Status.NEEDS_GPU:
            message = ("this submission needs a GPU (it launches GPU kernels or asks for "
                       "CUDA), and this run is on the CPU: run it where a GPU is visible\n"
                       + message)
        raise CaseFailure(status, message, fatal=status in FATAL)

    def _check_output(self, data: Any, output: Any, finite: bool, what: str) -> None:
        problem = output_sanity(output, finite)
        if not problem:
            try:
                ok, problem = self.ref.check(data, output)
            except Exception as exc:  # noqa: BLE001 - the check met an output it cannot read
                ok, problem = False, f"the check could not read the output: {exc!r}"
            if ok:
                return
        raise CaseFailure(Status.FAILED, f"{what}: wrong output\n{problem}".rstrip())

    def _time_case(self, spec: PhaseSpec, case: dict, plan: SeedPlan, box: CaseBuffers,
                   deadline: float, calibration: Calibration, first: dict,
                   result: CaseResult, laps: Laps) -> None:
        """Warm up, then time samples until the stopping rule says enough.

        Most samples hide the host's launch behind a GPU sleep as long as the contest's
        window (the score); every `probe_every`-th sample does not (a probe): the judge's
        two-clock check runs on probes, where the event time must account for the whole
        round trip, so work hidden from the events shows there.
        """
        timing, per = self.settings.timing, box.per
        window = self._window_us()
        hosts = deque([float(first.get("host_ns", 0.0))], maxlen=8)
        call = per
        warm = WarmUp(timing, self.clock)
        while not warm.done() and self.clock() < deadline:
            reply = self._sample(box, case, plan, call, self._ahead_cycles(window, max(hosts), per),
                                 deadline, f"warm-up call {call}")
            hosts.append(float(reply.get("host_ns", 0.0)))
            warm.add(per)
            call += per
        laps.lap("warm_up")
        rule = StoppingRule(timing, self.clock)
        timed, probes, replies = [], [], []
        every = timing.probe_every if window > 0 else 1
        timing_started = self.clock()
        n = 0
        while not rule.done() and self.clock() < deadline - 0.5:
            probe = every > 0 and n % every == every - 1
            ahead = 0 if probe else self._ahead_cycles(window, max(hosts), per)
            reply = self._sample(box, case, plan, call, ahead, deadline, f"timed call {call}")
            hosts.append(float(reply.get("host_ns", 0.0)))
            replies.append(reply)
            if probe:
                probes.append(reply)
            if not probe or every == 1:
                rule.add(float(reply["ns"]))
                timed.append(reply)
            call += per
            n += 1
        if window > 0 and not probes and rule.samples and self.clock() < deadline - 0.5:
            # Long samples (15 grouped GEMMs, say) can satisfy the stopping rule before the
            # probe_every-th sample: every case still gets one probe, because the clocks
            # are compared only where no GPU sleep hides the launch (a hidden window is
            # on the judge's clock but, by design, not in the reported time).
            probes.append(self._sample(box, case, plan, call, 0, deadline, f"timed call {call}"))
            call += per
        laps.lap("timing")
        if self.device.kind == "cuda":  # the clock as the timed calls end, collected later
            self.clock_reading = ClockReading(self.device.uuid or None)
        if not rule.samples:
            raise CaseFailure(Status.TIMED_OUT, "no call could be timed within the phase's time limit")
        stats = summarize(rule.samples)
        result.stats = stats.to_dict()
        result.checked_calls += call - per
        result.score_ns = stats.mean
        result.host_launch_ns = host_launch_ns(probes, replies)
        checked = clock_samples(window, probes, timed)
        clocks = check_clocks([float(r["ns"]) * per for r in checked], [r["rt"] for r in checked],
                              calibration, self.settings.integrity) if checked else None
        result.integrity = {"stopped": rule.reason,
                            "clocks": clocks.to_dict() if clocks else
                            {"applied": False, "reason": "no probe sample within the time limit"},
                            "timing_seconds": self.clock() - timing_started,
                            "calibration": vars(calibration),
                            "hidden_window_us": window, "calls_per_sample": per,
                            "worker_says": _medians(checked)}
        if window > 0 and probes:
            result.integrity["launch_counted"] = summarize([float(r["ns"]) for r in probes]).to_dict()
        disturbed = calibration_disturbed(self.base_calibration, calibration,
                                          self.settings.integrity,
                                          self._outside_ns(box))
        if disturbed:
            result.flags.append(disturbed)
        if clocks is not None and clocks.flagged:
            result.flags.append(clocks.message)
            result.score_ns = max(stats.mean, clocks.judge_mean_ns / per)
        self._apply_floor(case, result)
        laps.lap("checks")  # statistics, the clocks and the floor, the judge's copy timing

    def _drop_clock_reading(self) -> None:
        if self.clock_reading is not None:
            self.clock_reading.cancel()
            self.clock_reading = None

    def _note_clocks(self, case: dict, result: CaseResult) -> None:
        """Store the SM clock read as the case's timed calls ended; warn if it throttled."""
        reading, self.clock_reading = self.clock_reading, None
        if reading is None:
            return
        record, warning = clock_note(case, reading.result(), self.settings.timing.throttle_ratio)
        if record:
            result.integrity["sm_mhz"] = record
        if warning:
            self.warnings.append(warning)

    def _outside_ns(self, box: CaseBuffers) -> float:
        """The judge's own time for what a worker does outside the timed region of one
        sample: copy `per` outputs and, on a GPU run, refresh the CPU tensors of `per`
        input slots (see Worker._private_host). The per-case no-op does the same."""
        copies = nbytes(box.template) > 0
        t0 = time.perf_counter_ns()
        for k in range(box.per):
            slot = k % len(box.slots)
            if copies:
                copy_into(box.outputs[slot], box.template)
            if self.device.kind == "cuda":
                for t in tensors(box.slots[slot]):
                    if t.device.type == "cpu":
                        t.clone()
        if self.device.kind == "cuda":
            torch.cuda.synchronize()
        return float(time.perf_counter_ns() - t0)

    def _apply_floor(self, case: dict, result: CaseResult) -> None:
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
            result.status = Status.REJECTED
            result.message = (
                f"rejected: a mean of {result.score_ns / 1e3:.3f} µs is below the physical floor "
                f"of {floor.ns / 1e3:.3f} µs on {floor.gpu} (compute {floor.compute_ns / 1e3:.3f} µs, "
                f"memory {floor.memory_ns / 1e3:.3f} µs): the timer cannot be trusted"
            )

    # -- --mode profile ----------------------------------------------------------------
    def _profile_case(self, index: int, case: dict, plan: SeedPlan, slots: list, deadline: float,
                      result: CaseResult) -> None:
        """After the checked first call: a few calls under the PyTorch profiler in the worker
        (harness.judging.profiling), then under Nsight Compute where `ncu` is installed."""
        from harness.judging import ncu, profiling

        settings = self.settings.profile
        for i, slot in enumerate(slots):
            fill_slot(slot, self._generate(case, plan, i + 1))
        self.worker.send({"op": "profile", "calls": settings.calls, "rows": settings.rows})
        reply = self.worker.recv(max(deadline - self.clock(), 1.0))
        if reply.get("event") == Event.ERROR:
            raise CaseFailure(STATUS_BY_KIND.get(reply.get("kind"), Status.ERROR),
                              f"a profiled call failed\n{reply.get('message', '')}".rstrip())
        if reply.get("event") != Event.PROFILE:
            raise ProtocolError(f"expected a profile, got {reply.get('event')!r}")
        try:
            result.profile = profiling.clean(reply.get("profile"), settings.rows)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from exc
        if self.device.kind != "cuda" or not settings.ncu:
            return
        from harness.judging.sandbox import worker_env

        target = ncu.target_args(self.task.root, self.staging, self.task.submission_name,
                                 dict(case, seed=plan.seed(1)), settings.ncu_calls, self.device.kind)
        report = ncu.report_path(Path(settings.reports_dir), self.submission.name,
                                 self.task.name, index)
        result.profile["ncu"] = ncu.profile_case(
            ncu.find_ncu(), report, settings.ncu_launch_count, target,
            worker_env(self.shm_root, self.device.kind), max(deadline - self.clock(), 30.0))


def _medians(replies: list[dict]) -> dict[str, float]:
    """Medians of the worker's own time breakdown (diagnostics only: it is not trusted)."""
    out = {}
    for key in ("host_ns", "sync_ns", "copy_ns", "busy_ns"):
        values = [float(r[key]) for r in replies if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = statistics.median(values)
    pairs = [(r["rt"], float(r.get("busy_ns", 0))) for r in replies]
    if pairs:
        out["transport_ns"] = statistics.median(rt - b for rt, b in pairs)
    return out
