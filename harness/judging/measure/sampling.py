"""One case's samples, as the judge takes them: the no-op calibration, one sample (fresh
inputs made, the previous sample's calls rehearsed untimed, the inputs written, one round
trip, every output checked), warm-up, the timed samples with their
hidden window and probes, the two-clock check and the physics floor.

`Sampling` is the timing itself, kept apart from the judge (harness.judging.judge) that
owns it: it works on the judge's state through `SamplingHost` (the worker's channel, the
flusher, the reference, the settings, the clock) and keeps only the clock reading of the
case it timed last.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.consts import Status
from harness.durations import micros
from harness.judging import needs
from harness.judging.checking import output_sanity
from harness.judging.measure.call_trace import HostUsage, finite_number, sample_record
from harness.judging.measure.devices import ClockReading, DeviceInfo, Flusher
from harness.judging.measure.integrity import (
    CONFIRM_PROBES,
    Calibration,
    ClockCheck,
    attempt_record,
    calibration_disturbed,
    check_clocks,
    clock_samples,
    confirmed_clocks,
    moved_into_the_clock,
    physics_floor,
    retry_reason,
)
from harness.judging.measure.timing import (
    Laps,
    Stats,
    StoppingRule,
    WarmUp,
    ahead_cycles,
    hidden_window_us,
    host_launch_ns,
    long_samples,
    summarize,
)
from harness.judging.needs import Need, TaskNeeds
from harness.judging.phases import Progress
from harness.judging.sandbox.sandbox import WorkerDied, WorkerTimeout
from harness.judging.seeds import SeedPlan
from harness.judging.verdicts import (
    FATAL,
    STATUS_BY_KIND,
    CaseFailure,
    Where,
    out_of_memory,
)
from harness.judging.worker.buffers import CaseBuffers, OutputLayout
from harness.judging.worker.channel import Channel
from harness.judging.worker.protocol import Event, ProtocolError
from harness.judging.worker.structure import (
    InputLayoutError,
    copy_into,
    fill_slot,
    nbytes,
    poison,
    tensors,
)
from harness.loading.task_folder import Reference, Task, TaskError
from harness.results.document import CaseResult
from harness.settings import Settings

# No-op calls per timed case for the two-clock check's calibration (fewer on the CPU,
# where each is slow)...
CALIBRATION_CALLS = {"cuda": 40, "cpu": 10}
# ...but past this many, no more than CALIBRATION_SECONDS of them: a no-op does a sample's
# work outside the timed region, which takes tens of milliseconds on some cases.
CALIBRATION_MIN_CALLS = 10
CALIBRATION_SECONDS = 0.25
# Every this-many-th timed sample hides no launch (a probe, not scored): the two clocks
# are compared on these.
PROBE_EVERY = 4
# The SM clock (MHz) the hidden window is converted at where the device reports no
# maximum: about the top clock of current data-centre GPUs.
SM_MHZ_UNKNOWN = 2000.0
# Another sample starts only where one as long as the longest so far ends this long (s)
# before the phase's deadline: the case's checks and result still fit.
DEADLINE_MARGIN_SECONDS = 0.5
# A case is timed again only where this many times its first attempt's time (calibration
# included), and RETRY_EXTRA_SECONDS more, are left: a slower retry still ends in time.
RETRY_ROOM = 3
RETRY_EXTRA_SECONDS = 1.0
# Times a case flagged only by checks that a slow spell of the host can trip is timed
# again (`retry_reason`): on the H200, honest cases were flagged once and cleared by it.
NOISE_RETRIES = 1
# GPU runs: the judge times the scored samples' GPU sleep itself (`_scored_clocks`), which
# holds the sleep's allowance to SLEEP_SLACK_MEASURED instead of SLEEP_SLACK (the cheat
# corpus's sleep_slack.py is caught by it).
SLEEP_MEASURED = True
# The share a GPU sleep may outlast its cycles at the SM's maximum clock (a sleep lasts
# 7-14% longer where the SM runs slower)...
SLEEP_SLACK = 0.25
# ...the share allowed over the sleep the judge timed itself, or over the drift of its two
# timings where that is more (the SM clock moved), up to SLEEP_DRIFT_MAX.
SLEEP_SLACK_MEASURED = 0.02
SLEEP_DRIFT_MAX = 0.05


class SamplingHost(Protocol):
    """What `Sampling` needs of the judge (harness.judging.judge.Judge)."""

    settings: Settings
    task: Task  # its name, its `timing` section, its `peak_dtype`
    device: DeviceInfo  # kind, name, clocks; synchronize, sleep_ns_per_cycle, clock_reading,
    # release_cached
    ref: Reference  # check and work
    flusher: Flusher
    channel: Channel  # the current worker's: a fresh one after a restart
    progress: Progress
    base_calibration: Calibration | None  # the no-ops before the submission was imported
    warnings: list[str]  # the run's warnings, added to
    clock: Callable[[], float]  # seconds

    def generate(self, case: dict, plan: SeedPlan, call: int) -> Any:
        """The inputs of call number `call` of `case`."""

    def together(self, wants: bool) -> bool:
        """A decision of the timing (one more sample, another attempt) as the judge takes
        it: `wants` itself, or, for a multi-GPU case's rank, whether every rank wants it."""

    def explain_compile_error(self, message: str) -> str:
        """A compile error's message, with what the compiler said in the worker."""

    def where(self) -> Where:
        """The machine and the submission's text, which a failure's verdict reads."""

    def task_failure(self, exc: Exception, what: str) -> TaskError | TaskNeeds:
        """What the task's own code failing with `exc` means (harness.judging.needs)."""


@dataclass
class CaseRun:
    """One case as it is sampled: the case, its seeds, its shared buffers, the phase's
    deadline (the judge's clock) and the laps of the case's wall time."""

    case: dict
    plan: SeedPlan
    box: CaseBuffers
    deadline: float
    laps: Laps


@dataclass
class _Attempt:
    """One attempt at timing a case: what it starts from, and its samples as taken."""

    calibration: Calibration
    window: float  # the hidden window (µs); 0: none
    call: int  # the number of the next call
    hosts: deque  # the worker's recent host times per call (ns): the sleep's length
    longest: float = 0.0  # the longest sample so far (s, the judge's clock, rehearsal included)
    rule: StoppingRule | None = None
    started: float = 0.0  # the judge's clock as the timed samples began
    sleep_before: float | None = None  # the judge's timing of the sleep (SLEEP_MEASURED)
    timed: list[dict] = field(default_factory=list)  # the scored samples
    probes: list[dict] = field(default_factory=list)
    replies: list[dict] = field(default_factory=list)  # every timed sample, probes too
    trace: list[dict] = field(default_factory=list)  # with timing.trace_calls (call_trace.py)

    def took(self, reply: dict) -> None:
        """Keep what a sample says about the next ones: its host time and its length."""
        self.hosts.append(float(reply.get("host_ns", 0.0)))
        self.longest = max(self.longest, reply["wall"])


class Sampling:
    """The sampling half of the judge (see the module's docstring)."""

    def __init__(self, judge: SamplingHost) -> None:
        self.judge = judge
        self.clock_reading: ClockReading | None = None  # the last timed case's, not collected
        # the judge's host around each round trip, where samples are traced
        self.usage = HostUsage() if judge.settings.timing.trace_calls else None

    # -- what the judge asks ------------------------------------------------------------
    def calibrate_before_import(self, timeout: float) -> Calibration:
        """The pre-import calibration: `CALIBRATION_CALLS` no-ops, no submission code yet."""
        calls = CALIBRATION_CALLS[self.judge.device.kind]
        return calibration_of([self._noop_gap(timeout) for _ in range(calls)])

    def calibrate(self, deadline: float) -> Calibration:
        """The case's no-op gaps: `CALIBRATION_CALLS` of them, or, once
        `CALIBRATION_SECONDS` have passed, no more than `CALIBRATION_MIN_CALLS`."""
        most, clock = CALIBRATION_CALLS[self.judge.device.kind], self.judge.clock
        started = clock()
        timeout = max(deadline - started, 1.0)
        replies: list[dict] = []
        while len(replies) < most and (
                len(replies) < CALIBRATION_MIN_CALLS
                or clock() - started < CALIBRATION_SECONDS):
            replies.append(self._noop_gap(timeout))
        return calibration_of(replies)

    def take_clock_reading(self) -> ClockReading | None:
        """The clock reading started as the last case's timed calls ended, handed over."""
        reading, self.clock_reading = self.clock_reading, None
        return reading

    def drop_clock_reading(self) -> None:
        """Stop the clock reading started as a case's timed calls ended (`_time_case`),
        where no result of it is wanted: another case, or the same case timed again
        (nvidia-smi would still run through its calibration)."""
        if self.clock_reading is not None:
            self.clock_reading.cancel()
            self.clock_reading = None

    # -- the hidden window ----------------------------------------------------------------
    def _window_us(self) -> float:
        j = self.judge
        return hidden_window_us(j.settings.timing, j.task.timing, j.device.kind)

    def _sm_mhz(self) -> float:
        """The SM clock the hidden window is converted at (its maximum)."""
        return self.judge.device.clocks.get("sm_max_mhz") or SM_MHZ_UNKNOWN

    def _ahead(self, at: _Attempt, calls: int) -> int:
        """The GPU sleep (cycles) before a scored sample's start event (`ahead_cycles`)."""
        return ahead_cycles(at.window, max(at.hosts), calls, self._sm_mhz())

    # -- round trips --------------------------------------------------------------------
    def _roundtrip(self, message: dict, timeout: float) -> tuple[dict, float]:
        """Flush, send, wait: the worker's reply and the judge's round-trip time (ns)."""
        self.judge.flusher.flush()
        return self.judge.channel.roundtrip(message, timeout)

    def _left(self, deadline: float) -> float:
        """Seconds left before `deadline`; past it, the phase's time limit ran out."""
        left = deadline - self.judge.clock()
        if left <= 0:
            raise WorkerTimeout("the phase's time limit ran out")
        return left

    def _noop_gap(self, timeout: float) -> dict:
        """One no-op call: the worker's reply, with the judge's round trip (`rt`, ns)."""
        reply, rt = self._roundtrip({"op": "noop", "slot": 0}, timeout)
        if reply.get("event") != Event.DONE:
            raise CaseFailure(Status.REJECTED, "the harness's no-op call failed after the "
                              f"submission was imported: {reply.get('message', '')}")
        return dict(reply, rt=rt)

    # -- one sample -----------------------------------------------------------------------
    def sample(self, run: CaseRun, call: int, ahead: int, what: str, first: Any = None,
               relayout: bool = True) -> dict:
        """One sample: fresh inputs in the next `per` slots, one round trip, every output
        checked. The worker's reply, with the judge's round trip (`rt`, ns) added.

        The worker first runs the previous sample's calls again (`_rehearse`), before the
        fresh inputs are written: it never runs while they are in place, except in the
        timed calls."""
        began = self.judge.clock()
        box, per = run.box, run.box.per
        ring = len(box.slots)
        start = call % ring
        fresh = [(start + j) % ring for j in range(per)]
        inputs = [first if (first is not None and j == 0)
                  else self.judge.generate(run.case, run.plan, call + j) for j in range(per)]
        previous = self._rehearsed_slot(box, call)
        if previous is not None:
            self._rehearse(previous, self._left(run.deadline))
        self._write_inputs(box, fresh, inputs)
        for k in fresh:
            poison(box.outputs[k])
        used = self.usage.now() if self.usage is not None else None
        reply, rt = self._roundtrip({"op": "call", "slot": start, "ahead": ahead},
                                    self._left(run.deadline))
        if used is not None:
            reply = dict(reply, judge_trace=self.usage.since(used), began=began)
        self.judge.progress.call_done()  # after the round trip: outside every clock
        if reply.get("event") == Event.ERROR:
            self._call_failure(reply, relayout=relayout and first is not None)
        if reply.get("event") != Event.DONE:
            raise ProtocolError(f"unexpected reply {reply.get('event')!r} to a call")
        for k, data in zip(fresh, inputs):
            self._check_output(data, box.outputs[k], box.finite, what)
        return dict(reply, rt=rt, wall=self.judge.clock() - began)

    @staticmethod
    def _rehearsed_slot(box: CaseBuffers, call: int) -> int | None:
        """The first slot of the previous sample, which the rehearsal runs again before
        sample `call`; None for a case's first sample."""
        per, ring = box.per, len(box.slots)
        if call < per:
            return None
        if ring < 2 * per:  # the judge shares two samples' worth of slots (judge.py)
            raise RuntimeError(f"harness bug: {ring} input slots cannot hold a rehearsal "
                               f"of {per} calls beside {per} fresh inputs")
        return (call - per) % ring

    def _write_inputs(self, box: CaseBuffers, fresh: list[int], inputs: list[Any]) -> None:
        """Write a sample's inputs into its slots `fresh`."""
        for k, data in zip(fresh, inputs):
            try:
                fill_slot(box.slots[k], data)
            except InputLayoutError as exc:
                raise TaskError(f"{self.judge.task.name}: {exc}; the harness shares input "
                                "buffers once per case") from exc

    def _rehearse(self, slot: int, timeout: float) -> None:
        """The previous sample's calls again, in the worker (`Worker._rehearse`): off every
        clock, outputs not checked. Its slots hold inputs already timed and checked,
        rewritten before they are timed again; the slots of the sample to come still hold
        inputs already checked too."""
        self._untimed({"op": "rehearse", "slot": slot}, timeout,
                      "in the untimed rehearsal of the previous sample's calls")

    def _untimed(self, message: dict, timeout: float, where: str) -> float:
        """A request off the two-clock check (its round trip, ns, returned); its failure is
        the verdict of a call, said to be `where`."""
        try:
            reply, rt = self.judge.channel.roundtrip(message, timeout)
        except (WorkerTimeout, WorkerDied) as exc:
            raise type(exc)(f"{where}: {exc}") from exc
        if reply.get("event") == Event.ERROR:
            reply = dict(reply, message=f"{where}: {reply.get('message', '')}")
            self._call_failure(reply, relayout=False)
        if reply.get("event") != Event.DONE:
            raise ProtocolError(f"unexpected reply {reply.get('event')!r} to {message['op']!r}")
        return rt

    def _call_failure(self, reply: dict, relayout: bool) -> None:
        """Raise the verdict of a call the worker reported as failed."""
        kind = reply.get("kind", "exception")
        message = str(reply.get("message", ""))
        if kind == "output_layout" and relayout:
            raise OutputLayout(message, reply.get("layout"))
        status = STATUS_BY_KIND.get(kind, Status.ERROR)
        need = (self._need(message) if status in (Status.NEEDS_GPU, Status.COMPILE_ERROR,
                                                  Status.ERROR) else None)
        if need is not None:
            status, message = need.status, f"the submission {need.title}: {need.hint}\n{message}"
        elif status == Status.COMPILE_ERROR:
            message = self.judge.explain_compile_error(message)
        raise CaseFailure(status, message, fatal=status in FATAL)

    def _need(self, message: str) -> Need | None:
        """What a failed call says this machine lacks (harness.judging.needs), if anything."""
        where = self.judge.where()
        return needs.of_failure(message, where.device, where.capability, where.source)

    def _check_output(self, data: Any, output: Any, finite: bool, what: str) -> None:
        problem = output_sanity(output, finite)
        if not problem:
            try:
                ok, problem = self.judge.ref.check(data, output)
                self.judge.device.release_cached()  # what the check freed, for the worker
            except Exception as exc:  # noqa: BLE001 - the check met an output it cannot read
                if out_of_memory(exc):  # the judge's own memory: Judge._starved
                    raise
                lacking = self.judge.task_failure(exc, "check_implementation failed")
                if isinstance(lacking, TaskNeeds):  # the check itself needs a GPU, say
                    raise lacking from exc
                ok, problem = False, f"the check could not read the output: {exc!r}"
            if ok:
                return
        raise CaseFailure(Status.FAILED, f"{what}: wrong output\n{problem}".rstrip())

    # -- a timed case -----------------------------------------------------------------------
    def time_case(self, run: CaseRun, calibration: Calibration, first: dict,
                  result: CaseResult) -> CaseResult:
        """Time the case (`_time_case`); where its only flags come from checks that a slow
        spell of the host can trip (`retry_reason`), time it again, up to
        `NOISE_RETRIES` times, each with a fresh calibration and the inputs of
        calls not made yet (a result kept from an earlier attempt answers none of them).
        The last attempt stands, every check on it as on the first; the earlier ones are
        kept in its record (`integrity.retried`). Work outside the timed region shows on
        every attempt; a host that slowed down after the case's calibration does not (honest
        cases were flagged where the worker's own code ran 2-3x slower than in the
        calibration just before). A submission that turns honest once it sees
        the case timed again moves the flagged work into its event times: the flags then
        stand (`moved_into_the_clock`). A retry is made only where three attempts' time,
        calibration included, is left before the phase's deadline."""
        clock = self.judge.clock
        began = clock() - run.laps.parts.get("calibration", 0.0)
        call = self._time_case(run, calibration, first, result)
        earlier: list[dict] = []
        for _ in range(NOISE_RETRIES):
            checks = retry_reason(result)
            took = clock() - began
            if not self.judge.together(
                    bool(checks) and run.deadline - clock() >= RETRY_ROOM * took + RETRY_EXTRA_SECONDS):
                break
            earlier.append(attempt_record(result, checks))
            self.drop_clock_reading()
            began = clock()
            flagged, result = result, CaseResult(
                result.index, result.case, Status.PASSED, checked_calls=result.checked_calls,
                wall_parts=run.laps.parts, profile=result.profile)
            calibration = self.calibrate(run.deadline)
            run.laps.lap("calibration")
            call = self._time_case(run, calibration, first, result, call)
            moved = moved_into_the_clock(flagged, result, run.box.per)
            if moved:
                result.flags = [*flagged.flags, moved, *result.flags]
            if not self.judge.together(not moved):  # every rank stops where one moved
                break
        if earlier:
            result.integrity["retried"] = earlier
        return result

    def _time_case(self, run: CaseRun, calibration: Calibration, first: dict,
                   result: CaseResult, start: int | None = None) -> int:
        """Warm up, then time samples until the stopping rule says enough, from call
        `start` on (default: the one after the first sample's; the inputs of each call are
        drawn for its number); the number of the call after the last is returned.

        Most samples hide the host's launch behind a GPU sleep as long as the contest's
        window (the score); every `PROBE_EVERY`-th sample does not (a probe): the judge's
        two-clock check runs on probes, where the event time must account for the whole
        round trip, so work hidden from the events shows there.
        """
        per = run.box.per
        at = _Attempt(calibration, self._window_us(), per if start is None else start,
                      deque([float(first.get("host_ns", 0.0))], maxlen=8))
        begun = at.call
        self._warm_up(run, at)
        run.laps.lap("warm_up")
        self._take_samples(run, at)
        run.laps.lap("timing")
        # the clock as the timed calls end (GPU runs), collected later
        self.clock_reading = self.judge.device.clock_reading()
        if not at.rule.samples:
            raise CaseFailure(Status.TIMED_OUT, "no call could be timed within the phase's time limit")
        stats = summarize(at.rule.samples)
        clocks, checked = confirmed_clocks(clock_samples(at.window, at.probes, at.timed), per,
                                           calibration, self.judge.device.kind,
                                           lambda: self._one_more_probe(run, at),
                                           lambda wants: not self.judge.together(not wants))
        result.checked_calls += at.call - begun
        self._record(result, at, stats, clocks, checked, per)
        self._note_the_workers_account(result, at, clocks)
        self._check_clocks(result, at, stats, clocks, run.box)
        self._apply_floor(run.case, result)
        run.laps.lap("checks")  # statistics, the clocks and the floor, the judge's copy timing
        return at.call

    def _warm_up(self, run: CaseRun, at: _Attempt) -> None:
        """The warm-up samples (`WarmUp`), then, with `SLEEP_MEASURED`, the GPU
        sleep's length as the timed samples start."""
        clock, per = self.judge.clock, run.box.per
        warm = WarmUp(self.judge.settings.timing, clock, self.judge.device.kind)
        while self.judge.together(not warm.done() and clock() < run.deadline):
            at.took(self.sample(run, at.call, self._ahead(at, per), f"warm-up call {at.call}"))
            warm.add(per)
            at.call += per
        # SLEEP_MEASURED: the sleep's length as the timed samples start (and end)
        if self._measures_sleep() and at.window > 0:
            at.sleep_before = self.judge.device.sleep_ns_per_cycle(self._ahead(at, per))

    def _take_samples(self, run: CaseRun, at: _Attempt) -> None:
        """The timed samples, scored and probes, until the stopping rule says enough or the
        next would not end before the phase's deadline."""
        timing, clock, per = self.judge.settings.timing, self.judge.clock, run.box.per
        at.rule = StoppingRule(timing, clock, self.judge.device.kind)
        every = PROBE_EVERY if at.window > 0 else 1
        at.started = clock()
        n = 0
        while self.judge.together(not at.rule.done() and clock() + at.longest
                                  < run.deadline - DEADLINE_MARGIN_SECONDS):
            probe = every > 0 and n % every == every - 1
            ahead = 0 if probe else self._ahead(at, per)
            reply = self.sample(run, at.call, ahead, f"timed call {at.call}")
            reply["ahead"] = ahead  # the GPU sleep it was sent (the judge's own figure)
            at.took(reply)
            at.replies.append(reply)
            scored = not probe or every == 1
            if self.usage is not None:
                at.trace.append(sample_record(reply, at.call, probe, scored, at.started))
            if probe:
                at.probes.append(reply)
            if scored:
                at.rule.add(float(reply["ns"]))
                at.timed.append(reply)
            at.call += per
            n += 1
        if self.judge.together(at.window > 0 and not at.probes and bool(at.rule.samples)
                               and clock() + at.longest < run.deadline - DEADLINE_MARGIN_SECONDS):
            # Long samples (15 grouped GEMMs, say) can satisfy the stopping rule before the
            # PROBE_EVERY-th sample: every case still gets one probe, because the clocks
            # are compared only where no GPU sleep hides the launch (a hidden window is
            # on the judge's clock but, by design, not in the reported time).
            at.probes.append(self.sample(run, at.call, 0, f"timed call {at.call}"))
            at.call += per

    def _one_more_probe(self, run: CaseRun, at: _Attempt) -> dict | None:
        """One more probe for a flag seen on few samples (off the score), where two of
        the longest round trips so far still fit before the phase's deadline."""
        if not self.judge.together(
                self.judge.clock() + 2 * at.longest < run.deadline - DEADLINE_MARGIN_SECONDS):
            return None
        reply = self.sample(run, at.call, 0, f"confirming call {at.call}")
        at.call += run.box.per
        return reply

    def _record(self, result: CaseResult, at: _Attempt, stats: Stats,
                clocks: ClockCheck | None, checked: list[dict], per: int) -> None:
        """The attempt's figures in the case's result: the statistics, the samples and the
        integrity record that the checks after it add to."""
        result.stats = stats.to_dict()
        # In the order taken: the score's samples (event time per call) and, beside each,
        # the worker's own clock around its calls (its account: a diagnostic).
        # (to 0.1 ns: a leaderboard document holds a few thousand of them)
        result.samples = {"ns": [round(x, 1) for x in at.rule.samples],
                          "host_ns": [round(_number_or_zero(r.get("host_ns")), 1)
                                      for r in at.timed]}
        if at.trace:  # every timed sample, probes too, in the order taken
            result.samples["trace"] = at.trace
        result.score_ns = stats.mean
        result.host_launch_ns = host_launch_ns(at.probes, at.replies)
        result.integrity = {"stopped": at.rule.reason,
                            "clocks": clocks.to_dict() if clocks else
                            {"applied": False, "reason": "no probe sample within the time limit"},
                            "timing_seconds": self.judge.clock() - at.started,
                            "calibration": vars(at.calibration),
                            "hidden_window_us": at.window, "calls_per_sample": per,
                            "clock_samples": len(checked), "worker_says": _medians(checked)}

    def _note_the_workers_account(self, result: CaseResult, at: _Attempt,
                                  clocks: ClockCheck | None) -> None:
        """What the worker said of its samples: threads left running, long samples, the
        warm-up it could not allocate, the launch the probes count."""
        replies, window = at.replies, at.window
        lingering = sum(1 for r in replies if _number_or_zero(r.get("threads")) > 0)
        if lingering:  # the worker's account; the static screen's threads rule is the other
            result.integrity["threads_after_calls"] = lingering
            result.flags.append(
                f"a thread running the submission's code was still alive after {lingering} of "
                f"{len(replies)} timed samples had returned: work could go on outside the timed "
                "region")
        long = long_samples(at.rule.samples, window_us=window)
        if long:
            if clocks is not None and clocks.flagged:
                long.pop("note", None)  # the score is the judge's clock there, not the mean
            result.integrity["long_samples"] = long
        unwarmed = sum(1 for r in replies if r.get("unwarmed"))
        if unwarmed:  # the warm-up's 1 MiB was not free (the submission holds the memory)
            result.integrity["unwarmed_samples"] = unwarmed
        if window > 0 and at.probes:
            result.integrity["launch_counted"] = summarize(
                [float(r["ns"]) for r in at.probes]).to_dict()

    def _check_clocks(self, result: CaseResult, at: _Attempt, stats: Stats,
                      clocks: ClockCheck | None, box: CaseBuffers) -> None:
        """The checks that compare the judge's clock with the worker's: the calibration,
        the two clocks on probes and on scored samples. A flagged case is scored on the
        judge's clock."""
        per, kind = box.per, self.judge.device.kind
        base = self.judge.base_calibration
        disturbed = calibration_disturbed(base, at.calibration, kind, self._outside_ns(box))
        if disturbed:
            result.flags.append(disturbed)
            result.integrity["calibration_disturbed"] = True
        if clocks is not None and clocks.flagged:
            result.flags.append(clocks.message)
            result.score_ns = max(stats.mean, clocks.judge_mean_ns / per)
        scored = self._scored_clocks(at, per)
        if scored is not None:
            check, slack_ns, sleep = scored
            result.integrity["scored_clocks"] = dict(check.to_dict(), sleep=sleep)
            if check.flagged:  # scored with the sleep at its nominal length: no slack
                result.flags.append(check.message)
                result.score_ns = max(result.score_ns, (check.judge_mean_ns + slack_ns) / per)

    def _scored_clocks(self, at: _Attempt, per: int,
                       ) -> tuple[ClockCheck, float, dict[str, Any]] | None:
        """The two clocks on the scored samples, behind a hidden window. Probes alone do
        not suffice: the worker learns whether a sample is a probe (its sleep is 0) before
        any clock starts, so work done on the others only, outside the timed region, would
        never show there. Their round trip is taken less their GPU sleep: the length the
        judge set (`ahead` cycles at the SM's maximum clock, a lower bound) and
        `SLEEP_SLACK` of it more (a sleep lasts 7-14% longer where the SM is
        slower), so that neither the sleep nor the allowance's share of it
        reads as work. The median rule only. None without a window or with too few. With
        the mean slack (ns) taken off (a flagged case is scored with the nominal sleep)
        and the sleep's figures.

        With `SLEEP_MEASURED` the judge times the sleep itself, in its own
        context (the SM clock is the GPU's, one for every context), as the timed samples
        start (`sleep_before`) and as they end, and takes the shorter (other work on the
        GPU only lengthens a sleep of cycles), never below the maximum clock's figure. Its
        slack is `SLEEP_SLACK_MEASURED`, or the two timings' drift where that is
        more (the SM clock moved), never more than `SLEEP_DRIFT_MAX`: work on the
        GPU that lengthens one timing buys no more; and never laxer than the rule above."""
        scored = [r for r in at.timed if r.get("ahead")]
        if len(scored) < CONFIRM_PROBES:
            return None
        rate = at_max = 1e3 / self._sm_mhz()  # ns per cycle
        slack = SLEEP_SLACK
        sleep: dict[str, Any] = {"at_max_clock_ns_per_cycle": at_max, "measured": False}
        if at.sleep_before is not None:
            cycles = int(statistics.median(r["ahead"] for r in scored))
            after = self.judge.device.sleep_ns_per_cycle(cycles)
            low, high = sorted((at.sleep_before, after))
            drift = high / low - 1
            slack = min(max(SLEEP_SLACK_MEASURED, drift), SLEEP_DRIFT_MAX)
            laxest = at_max * (1 + SLEEP_SLACK) / (1 + slack)
            rate = min(max(at_max, low), laxest)
            sleep |= {"timed_before_ns_per_cycle": at.sleep_before,
                      "timed_after_ns_per_cycle": after, "drift": drift, "measured": True}
        nominal = [r["ahead"] * rate for r in scored]
        check = check_clocks([float(r["ns"]) * per for r in scored],
                             [r["rt"] - (1 + slack) * s for r, s in zip(scored, nominal)],
                             at.calibration, self.judge.device.kind, per, low_rule=False)
        if check.flagged:
            check.message = f"on the scored samples (their GPU sleep left out): {check.message}"
        sleep |= {"ns_per_cycle": rate, "slack": slack}
        return check, slack * statistics.fmean(nominal), sleep

    def _measures_sleep(self) -> bool:
        """Whether the judge times the scored samples' sleep (`SLEEP_MEASURED`,
        GPU runs)."""
        return SLEEP_MEASURED and self.judge.device.kind == "cuda"

    def _outside_ns(self, box: CaseBuffers) -> float:
        """The judge's own time for what a worker does outside the timed region of one
        sample: copy `per` outputs and, on a GPU run, refresh the CPU tensors of `per`
        input slots (see Worker._private_host). The per-case no-op does the same."""
        copies = nbytes(box.template) > 0
        cuda = self.judge.device.kind == "cuda"
        t0 = self.judge.clock()
        for k in range(box.per):
            slot = k % len(box.slots)
            if copies:
                copy_into(box.outputs[slot], box.template)
            if cuda:
                for t in tensors(box.slots[slot]):
                    if t.device.type == "cpu":
                        t.clone()
        self.judge.device.synchronize()
        return (self.judge.clock() - t0) * 1e9

    def _apply_floor(self, case: dict, result: CaseResult) -> None:
        j = self.judge
        work = j.ref.work(case)
        if work is None or j.device.kind != "cuda":
            return
        floor = physics_floor(work, j.device.name, j.task.peak_dtype or "bf16")
        if floor is None:
            warning = (f"no peak rates known for {j.device.name}: the physics floor "
                       "check is off (add it to configs/gpus.yaml)")
            if warning not in j.warnings:
                j.warnings.append(warning)
            return
        result.integrity["floor_ns"] = floor.ns
        result.integrity["speed_of_light_fraction"] = floor.ns / result.score_ns
        if result.score_ns < floor.ns:
            result.status = Status.REJECTED
            result.message = (
                f"rejected: a mean of {micros(result.score_ns, 3)} is below the physical floor "
                f"of {micros(floor.ns, 3)} on {floor.gpu} (compute {micros(floor.compute_ns, 3)}, "
                f"memory {micros(floor.memory_ns, 3)}): the timer cannot be trusted"
            )


def _number_or_zero(value: Any) -> float:
    """A number the worker reported, 0 where it sent none or something else."""
    return finite_number(value) or 0.0


def calibration_of(replies: list[dict]) -> Calibration:
    """The calibration made by no-op calls (`Sampling._noop_gap`'s replies): their gaps,
    and the worker's own account of them beside (diagnostics)."""
    return Calibration.from_gaps([r["rt"] - float(r["ns"]) for r in replies], _medians(replies))


def _medians(replies: list[dict]) -> dict[str, float]:
    """Medians of the worker's own time breakdown (diagnostics only: it is not trusted)."""
    out = {}
    for key in ("host_ns", "sync_ns", "copy_ns", "busy_ns", "pre_ns", "lead_ns"):
        values = [_number_or_zero(r[key]) for r in replies if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = statistics.median(values)
    pairs = [(r["rt"], _number_or_zero(r.get("busy_ns"))) for r in replies]
    if pairs:
        out["transport_ns"] = statistics.median(rt - b for rt, b in pairs)
    return out
