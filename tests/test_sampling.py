"""The judge's sampling half (harness/judging/measure/sampling.py), driven through what it
needs of the judge (`SamplingHost`) with fakes: a fake clock, a fake device, a fake worker
at the other end of the channel."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.consts import Status
from harness.judging.measure import sampling, timing
from harness.judging.measure.integrity import Calibration
from harness.judging.measure.sampling import CALIBRATION_MIN_CALLS, CaseRun, Sampling
from harness.judging.measure.timing import Laps
from harness.judging.phases import Progress
from harness.judging.sandbox.sandbox import WorkerTimeout
from harness.judging.worker.protocol import Event
from harness.results.document import CaseResult
from harness.settings import Settings

SM_MHZ = 1980.0  # the fake device's SM clock at its maximum


class FakeClock:
    """The judge's clock (seconds), moved only by the fakes."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeDevice:
    """A run device with no GPU behind it: `kind` as given, its SM at most 1980 MHz.
    Waiting for it costs `sync_seconds` of the fake clock; its GPU sleep, timed by the
    judge, runs `sleeps[i]` times its cycles at the maximum clock on the i-th timing
    (`stretch` where `sleeps` is None), and the cycles asked are kept in `timed_sleeps`;
    the clock readings it starts count their cancellations in `cancelled`."""

    name, capability, uuid = "fake GPU", "", ""

    def __init__(self, kind: str = "cpu", clock: FakeClock | None = None,
                 sleeps: tuple[float, ...] | None = None, stretch: float = 1.0) -> None:
        self.kind, self.clock, self.sleeps, self.stretch = kind, clock, sleeps, stretch
        self.clocks = {"sm_max_mhz": SM_MHZ}
        self.sync_seconds = 0.0
        self.timed_sleeps: list[int] = []
        self.cancelled = 0

    def synchronize(self) -> None:
        if self.clock is not None:
            self.clock.now += self.sync_seconds

    def release_cached(self) -> bool:  # no allocator cache to give back
        return False

    def sleep_ns_per_cycle(self, cycles: int) -> float:
        stretch = (self.sleeps or (self.stretch,) * 2)[len(self.timed_sleeps)]
        self.timed_sleeps.append(cycles)
        return stretch * 1e3 / SM_MHZ

    def clock_reading(self) -> SimpleNamespace:
        return SimpleNamespace(cancel=self._cancel)

    def _cancel(self) -> None:
        self.cancelled += 1


class FakeWorker:
    """The worker at the channel's other end, on the fake clock. A sample (`call`) takes
    `seconds` and reports `ns` (or `ns[k]` for its k-th sample, warm-up included) with its
    host time as k; the judge's round trip is the event time, `gap_ns` more, the GPU sleep
    it was sent (`ahead` cycles at 1980 MHz, `stretch` longer) and, on samples with a
    sleep, `hidden` ns of work (the last of `ns` stands for the samples past its end). A
    sample past the time left fails as the channel does.
    Other requests take no time: a no-op's round trip is `gap_ns`. Runs of no-ops
    (calibrations) are counted in `calibrations`."""

    stretch, hidden, gap_ns = 1.0, 0.0, 50_000.0
    host_ns: float | None = None  # the host time it reports (None: k)

    def __init__(self, clock: FakeClock, ns: float | list[float] = 1_000_000.0,
                 seconds: float = 0.01) -> None:
        self.clock, self.ns, self.seconds = clock, ns, seconds
        self.samples = self.calibrations = 0
        self.ops: list[str] = []

    def roundtrip(self, message: dict, timeout: float) -> tuple[dict, float]:
        op = message["op"]
        if op == "noop" and self.ops[-1:] != ["noop"]:
            self.calibrations += 1
        self.ops.append(op)
        if op != "call":
            return {"event": Event.DONE, "ns": 0.0}, self.gap_ns if op == "noop" else 0.0
        if self.seconds > timeout:
            raise WorkerTimeout("no answer within the phase's time limit")
        self.clock.now += self.seconds
        self.samples += 1
        return self.answer(self.samples - 1, message.get("ahead", 0))

    def answer(self, k: int, ahead: int) -> tuple[dict, float]:
        """The reply to the k-th sample and the judge's round trip (ns)."""
        ns = self.ns[min(k, len(self.ns) - 1)] if isinstance(self.ns, list) else self.ns
        rt = ns + self.gap_ns
        if ahead:
            rt += ahead / SM_MHZ * 1e3 * self.stretch + self.hidden
        host = float(k) if self.host_ns is None else self.host_ns
        return {"event": Event.DONE, "ns": ns, "host_ns": host}, rt


class FakeHost:
    """What Sampling needs of the judge (`SamplingHost`), faked: the settings, a task with
    its `timing` section, a fake device and worker on one fake clock, a reference whose
    check passes, a flush written to `log`; the calls whose inputs were made in `made`."""

    def __init__(self, settings: Settings, device: str = "cpu",
                 task_timing: dict | None = None) -> None:
        self.clock = FakeClock()
        self.log: list[str] = []
        self.made: list[int] = []
        self.settings = settings
        self.task = SimpleNamespace(name="t", timing=dict(task_timing or {}), peak_dtype=None)
        self.device = FakeDevice(device, self.clock)
        self.ref = SimpleNamespace(check=self.check, work=lambda case: None)
        self.flusher = SimpleNamespace(flush=lambda: self.log.append("flush"))
        self.channel = FakeWorker(self.clock)
        self.progress = Progress()
        self.base_calibration = Calibration.from_gaps([50_000.0] * 10)
        self.warnings: list[str] = []

    def generate(self, case: dict, plan, call: int):
        self.made.append(call)
        return ()

    def check(self, data, output) -> tuple[bool, str]:
        return True, ""

    def together(self, wants: bool) -> bool:  # one GPU: its own decision
        return wants

    def explain_compile_error(self, message: str) -> str:
        return message


def _box(per: int = 1, ring: int = 2, slots: list | None = None) -> SimpleNamespace:
    """A case's buffers as Sampling reads them: `ring` slots (empty inputs unless given),
    no outputs to check."""
    slots = slots if slots is not None else [() for _ in range(ring)]
    return SimpleNamespace(per=per, slots=slots, outputs=[None] * len(slots), finite=True,
                           template=None)


def _run(host: FakeHost, box, deadline: float) -> CaseRun:
    return CaseRun({}, None, box, deadline, Laps(host.clock))


# -- the calibration ---------------------------------------------------------------------
def _calibrated(noop_seconds: float, device: str = "cuda"):
    """A case's calibration on no-ops that each take `noop_seconds` of the fake clock (the
    early order: one no-op each)."""
    settings = Settings.load().for_device(device)
    host = FakeHost(settings, device)
    noop = host.channel.roundtrip

    def slow_noop(message, timeout):
        host.clock.now += noop_seconds
        reply, rt = noop(message, timeout)
        return reply, rt + host.channel.ops.count("noop")  # the gap: 50 µs and a little

    host.channel.roundtrip = slow_noop
    calibration = Sampling(host).calibrate(deadline=200.0)
    return host.channel.ops.count("noop"), calibration, host.settings


def test_light_no_ops_calibrate_with_every_call():
    noops, calibration, _ = _calibrated(0.0005)  # vectoradd: 40 take 20 ms
    assert noops == calibration.calls == 40


def test_heavy_no_ops_stop_at_the_minimum_after_the_time_budget():
    noops, calibration, _ = _calibrated(0.03)  # nvfp4's case 0 (25 ms): 40 would take 1 s
    assert noops == calibration.calls == CALIBRATION_MIN_CALLS
    assert calibration.median_ns == pytest.approx(50_005.5)


def test_middling_no_ops_stop_once_the_budget_is_spent():
    noops, _, _ = _calibrated(0.011)
    assert noops == 23  # the first past 0.25 s of 11 ms no-ops


def test_the_cpu_calibrates_with_ten_calls():
    noops, _, _ = _calibrated(0.001, "cpu")
    assert noops == 10


# -- the order of one sample ---------------------------------------------------------------
class LogChannel:
    """A worker that answers every request at once (event time 1 ns, round trip 2 ns),
    each request written to the host's log (`op slot`)."""

    def __init__(self, host: OrderHost) -> None:
        self.host = host

    def roundtrip(self, message: dict, timeout: float):
        self.host.log.append(f"{message['op']} {message['slot']}")
        return {"event": Event.DONE, "ns": 1.0}, 2.0


class OrderHost(FakeHost):
    """FakeHost whose every step goes to its log: inputs made (the call's number as its
    input), the worker's requests, the flush, outputs checked."""

    def __init__(self, settings: Settings, device: str = "cpu") -> None:
        super().__init__(settings, device)
        self.channel = LogChannel(self)

    def generate(self, case, plan, call):
        self.log.append(f"make {call}")
        return call

    def check(self, data, output):
        self.log.append(f"check {data}")
        return True, ""


def _sample_log(monkeypatch, call: int, per: int = 2, ring: int = 4,
                device: str = "cpu") -> list[str]:
    settings = Settings.load().for_device(device)
    host = OrderHost(settings, device)
    monkeypatch.setattr(sampling, "fill_slot", lambda slot, data: host.log.append(f"fill {slot} {data}"))
    monkeypatch.setattr(sampling, "poison", lambda output: None)
    box = _box(per, slots=list(range(ring)))
    Sampling(host).sample(_run(host, box, 100.0), call, 0, "timed call")
    return host.log


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_rehearsal_comes_before_the_fresh_inputs_are_written(monkeypatch, device):
    """The previous sample's slots are run again before this sample's inputs reach their
    slots, so the submission never runs, untimed, with them in place (GPU runs alike)."""
    assert _sample_log(monkeypatch, 2, device=device) == [
        "make 2", "make 3", "rehearse 0", "fill 2 2", "fill 3 3", "flush", "call 2",
        "check 2", "check 3"]


@pytest.mark.parametrize("per,ring,call,steps", [
    (1, 2, 3, ["make 3", "rehearse 0", "fill 1 3", "flush", "call 1", "check 3"]),
    (2, 5, 6, ["make 6", "make 7", "rehearse 4", "fill 1 6", "fill 2 7", "flush", "call 1",
               "check 6", "check 7"]),
])
def test_the_rehearsed_slots_wrap_around_the_ring(monkeypatch, per, ring, call, steps):
    """One call per sample (two slots), and a ring larger than two samples' worth: the
    rehearsal starts at the previous sample's first slot, around the ring."""
    assert _sample_log(monkeypatch, call, per, ring) == steps


def test_a_ring_too_small_for_a_rehearsal_is_the_harnesss_error(monkeypatch):
    with pytest.raises(RuntimeError, match="harness bug"):
        _sample_log(monkeypatch, 3, per=3, ring=4)


def test_no_rehearsal_for_a_cases_first_sample(monkeypatch):
    log = _sample_log(monkeypatch, 0)
    assert not any(step.startswith("rehearse") for step in log)
    assert log[-3:-2] == ["call 0"]


@pytest.mark.parametrize("device,measured", [("cuda", True), ("cpu", False)])
def test_the_judge_times_the_sleep_on_the_gpu_only(device, measured):
    """SLEEP_MEASURED applies to GPU runs only."""
    judge = Sampling(OrderHost(Settings.load().for_device(device), device))
    assert judge._measures_sleep() is measured


class Silent:
    """A worker that never answers."""

    def roundtrip(self, message: dict, timeout: float):
        raise WorkerTimeout(f"no answer within {timeout:g} s")


def test_a_rehearsal_that_times_out_says_so():
    host = OrderHost(Settings.load())
    host.channel = Silent()
    with pytest.raises(WorkerTimeout, match=r"untimed rehearsal .* no answer within 3 s"):
        Sampling(host).sample(_run(host, _box(2, slots=list(range(4))), 3.0), 2, 0, "call")


@pytest.fixture(autouse=True)
def engine_constants(monkeypatch):
    """The engine constants that the helpers below set (NOISE_RETRIES, SLEEP_MEASURED),
    put back after each test."""
    monkeypatch.setattr(sampling, "NOISE_RETRIES", sampling.NOISE_RETRIES)
    monkeypatch.setattr(sampling, "SLEEP_MEASURED", sampling.SLEEP_MEASURED)


def _cpu_settings(max_calls: int = 20, retries: int = 0) -> Settings:
    """The CPU's settings with the least warm-up (WARMUP_MIN_CALLS), no early stop on the
    spread, and `retries` noise retries (for this test: `engine_constants`)."""
    settings = Settings.load().for_device("cpu")
    settings.timing.warmup_seconds = 0.0
    settings.timing.max_calls, settings.timing.target_rse = max_calls, 0.0
    sampling.NOISE_RETRIES = retries
    return settings


def _windowed(settings: Settings, window_us: float = 100.0, **task_timing) -> FakeHost:
    """A host on a "GPU" (the fake device) whose task hides `window_us` of launch: the
    judge's own timing of the sleep off (for this test: `engine_constants`)."""
    sampling.SLEEP_MEASURED = False
    return FakeHost(settings, "cuda", {"hidden_window_us": window_us, **task_timing})


def _time(host: FakeHost, deadline: float = 1000.0, calibration: Calibration | None = None,
          box=None) -> CaseResult:
    """Time a case (one call a sample) on the host's fake worker, as the judge does once
    its first call passed; the result."""
    result = CaseResult(0, {}, Status.PASSED)
    return Sampling(host).time_case(_run(host, box or _box(), deadline),
                                    calibration or Calibration.from_gaps([50_000.0] * 10),
                                    {"host_ns": 1.0}, result)


def test_long_samples_stop_before_the_deadline_not_past_it(monkeypatch):
    """Samples of 1.2 s (a rehearsal and 15 heavy calls, say) with MIN_SAMPLES asking for
    more than fit: timing stops where the next sample would not end before the phase's
    deadline, and the case keeps the samples it has (a flat 0.5 s margin let the last one
    start at 3.6 s and time out at the 4.2 s deadline, losing the case)."""
    settings = Settings.load().for_device("cpu")
    settings.timing.max_seconds = 1.0
    monkeypatch.setitem(timing.MIN_SAMPLES, "cpu", 5)
    host = FakeHost(settings)
    host.channel.seconds = 1.2
    result = _time(host, deadline=4.2)
    assert host.clock.now <= 4.2 and result.score_ns == 1_000_000.0
    assert result.stats["calls"] == host.channel.samples - 1  # all but the warm-up's


def test_the_workers_account_cannot_break_the_judge():
    """The worker's breakdown is its own account (over the pipe, any JSON number): an
    integer too large for a float, or a bool, reads as 0 in the medians, never an error."""
    from harness.judging.measure.sampling import _medians

    replies = [{"rt": 10.0, "pre_ns": 10**400, "busy_ns": 10**400, "lead_ns": True},
               {"rt": 12.0, "pre_ns": 4.0, "busy_ns": 2.0}]
    says = _medians(replies)
    assert says["pre_ns"] == 2.0 and says["busy_ns"] == 1.0 and says["lead_ns"] == 0.0
    assert says["transport_ns"] == 10.0


def _behind_a_window(stretch: float, hidden: float, **task_timing) -> CaseResult:
    """A case behind a 100 µs window (1980 MHz: 198000 cycles a scored sample, none on the
    probes, every 4th): the worker's round trip holds the sleep it was sent, stretched by
    `stretch` (an SM below its maximum clock), and `hidden` ns of work on the scored
    samples only (it knows a probe by its zero sleep)."""
    host = _windowed(_cpu_settings(max_calls=30), **task_timing)
    host.channel.ns, host.channel.stretch, host.channel.hidden = [6_000.0] * 41, stretch, hidden
    return _time(host)


@pytest.mark.parametrize("stretch,hidden,flagged", [
    (1.0, 0.0, False), (1.14, 0.0, False), (1.3, 0.0, False),  # the SM at 0.77 of its max
    (1.0, 1_500_000.0, True)])  # a GPU allows 100 µs
def test_scored_samples_behind_a_window_are_on_both_clocks(stretch, hidden, flagged):
    """Behind a window the probes carry the two-clock check, but a worker knows a probe
    by its zero sleep before any clock starts: work done on the scored samples only must
    show too. Their sleep (the judge's own figure, and SLEEP_SLACK more) is left
    out of the round trip; a sleep 14% longer than its cycles say (the SM below its
    maximum clock) is honest."""
    result = _behind_a_window(stretch, hidden)
    scored = result.integrity["scored_clocks"]
    assert scored["flagged"] is flagged, scored
    assert (result.integrity["clocks"]["flagged"]) is False  # the probes saw nothing
    assert any("on the scored samples" in f for f in result.flags) is flagged
    if flagged:  # the judge's clock, the sleep left out: the hidden work is in the score
        assert result.score_ns == pytest.approx(6_000.0 + hidden, rel=0.005)


class SpellWorker(FakeWorker):
    """A FakeWorker (6 µs calls) on a host that runs slowly for a spell: the judge's round
    trip is `extra` ns longer until the judge has calibrated `spell` times (for ever where
    None)."""

    extra, spell = 2_000_000.0, None

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock, [6_000.0] * 200)

    def answer(self, k, ahead):
        reply, rt = super().answer(k, ahead)
        slow = self.spell is None or self.calibrations < self.spell
        return reply, rt + (self.extra if slow else 0.0)


def _retried(worker_class, retries: int = 1, deadline: float = 1000.0):
    """A case timed with `retries` noise retries on `worker_class`: the host and the result."""
    host = FakeHost(_cpu_settings(retries=retries))
    host.channel = worker_class(host.clock)
    return host, _time(host, deadline)


def test_a_case_flagged_in_a_slow_spell_of_the_host_is_timed_again():
    """The host slows down after the case's calibration (2 ms more per round trip on the
    first attempt's samples): the two clocks flag it, and the case is timed again with a
    fresh calibration on calls not made before (fresh inputs); the retry is clean and
    stands, the first attempt kept in the record and in the report's notes."""
    from harness.results.document import case_notes

    host, result = _retried(type("Spell", (SpellWorker,), {"spell": 1}))
    assert result.flags == [] and result.score_ns == 6_000.0
    (first,) = result.integrity["retried"]
    assert first["flagged_by"] == ["clocks"] and first["clocks"]["flagged"]
    assert any("outside the timed region" in f for f in first["flags"])
    assert first["timing_seconds"] > 0 and result.integrity["timing_seconds"] > 0  # each its own
    assert host.channel.calibrations == 1 and host.device.cancelled == 1  # no nvidia-smi through it
    assert len(set(host.made)) == len(host.made)  # no call's inputs drawn twice
    assert result.checked_calls == len(host.made)
    (note,) = case_notes(result.integrity)
    assert note.startswith("attempt 1 was flagged by the two clocks on the probes")


def test_a_case_flagged_on_every_attempt_stays_flagged():
    """Work outside the timed region shows on every attempt: the last one stands, flagged
    and scored on the judge's clock; NOISE_RETRIES bounds the attempts."""
    host, result = _retried(SpellWorker, retries=2)
    assert any("outside the timed region" in f for f in result.flags)
    assert result.score_ns == pytest.approx(2_006_000.0, rel=0.01)  # round trip less no-op
    assert len(result.integrity["retried"]) == 2 and host.channel.calibrations == 2


@pytest.mark.parametrize("retries,deadline,retried", [
    (0, 1000.0, False), (1, 1.4, False), (1, 1.6, True)])
def test_no_retry_when_off_or_without_the_time_for_it(retries, deadline, retried):
    """NOISE_RETRIES 0 keeps the flag at once; so does a phase deadline with less than
    three attempts' time and a second left (each sample here takes 0.01 s of the fake
    clock: the first attempt 0.12 s, so a retry needs 1.36 s left after it)."""
    host, result = _retried(SpellWorker, retries=retries, deadline=deadline)
    assert result.flags and ("retried" in result.integrity) is retried
    assert host.channel.calibrations == int(retried)


def test_a_case_with_a_flag_of_what_the_submission_does_is_not_timed_again():
    """A thread left running (or a fill kept out, or the physics floor) says what the
    submission does: a case flagged so, beside a noise check, keeps every flag and is not
    timed again (a clean retry used to drop it)."""
    class Lingering(SpellWorker):
        spell = 1

        def answer(self, k, ahead):
            reply, rt = super().answer(k, ahead)
            return reply | {"threads": 1}, rt

    host, result = _retried(Lingering)
    assert host.channel.calibrations == 0 and "retried" not in result.integrity
    assert any("thread" in f for f in result.flags)
    assert any("outside the timed region" in f for f in result.flags)


def test_a_slow_host_on_the_retry_does_not_read_as_work_moved_into_the_clock():
    """A slow host lengthens the events through the host time they hold (launches the
    window does not hide; on the CPU, all of it): an honest host-bound retry whose calls
    rose to 1.5 ms, its host time to 1.6 ms, stands clean, though the rise is over half
    of the 2 ms the first attempt's flag saw."""
    class SlowRetry(SpellWorker):
        spell = 1

        def answer(self, k, ahead):
            reply, rt = super().answer(k, ahead)
            if self.calibrations < self.spell:
                return reply, rt
            return reply | {"ns": 1_500_000.0, "host_ns": 1_600_000.0}, 1_550_000.0

    host, result = _retried(SlowRetry)
    assert host.channel.calibrations == 1 and result.flags == []
    assert result.stats["median"] == pytest.approx(1_500_000.0)


def test_work_moved_into_the_clock_is_read_per_call():
    """With calls_per_sample 4 the flag's gap is per sample, the event time per call: a
    turn to honest of 2 ms a call (8 ms a sample) is read as such."""
    from harness.consts import Status
    from harness.judging.measure.integrity import moved_into_the_clock
    from harness.results.document import CaseResult

    flagged = CaseResult(0, {}, Status.PASSED, stats={"median": 6_000.0},
                         integrity={"clocks": {"flagged": True, "gap_median_ns": 8_050_000.0,
                                               "expected_gap_ns": 50_000.0}})
    honest = CaseResult(0, {}, Status.PASSED, stats={"median": 2_006_000.0})
    assert moved_into_the_clock(flagged, honest, per=4)
    # a rise of a quarter of the hidden work per call is not half of it
    partly = CaseResult(0, {}, Status.PASSED, stats={"median": 506_000.0})
    assert not moved_into_the_clock(flagged, partly, per=4)


def test_a_rejected_or_scored_clocks_flagged_case_is_judged_by_its_record():
    """retry_reason: a case the floor rejected is not timed again; one flagged by the
    scored samples' clocks alone is, and what they saw counts as the hidden work."""
    from harness.consts import Status
    from harness.judging.measure.integrity import hidden_ns, retry_reason
    from harness.results.document import CaseResult

    scored = {"scored_clocks": {"flagged": True, "gap_median_ns": 900_000.0,
                                "expected_gap_ns": 200_000.0}}
    assert retry_reason(CaseResult(0, {}, Status.PASSED, flags=["u"], integrity=scored)) == [
        "scored_clocks"]
    assert retry_reason(CaseResult(0, {}, Status.REJECTED, flags=["u"], integrity=scored)) == []
    assert hidden_ns(scored, per=2) == pytest.approx(350_000.0)


def test_work_moved_into_the_timed_region_on_a_retry_keeps_the_flags():
    """A submission that hides 2 ms a call off the clock until a flag, then turns honest
    once the case is timed again (its calls now 2 ms longer on the events): a slow host
    lengthens the judge's clock, not the events, so the first attempt's flags stand."""
    class Turncoat(SpellWorker):
        spell = 1

        def answer(self, k, ahead):
            reply, rt = super().answer(k, ahead)
            if self.calibrations >= self.spell:  # honest now: the work on the events
                reply, rt = reply | {"ns": reply["ns"] + self.extra}, rt + self.extra
            return reply, rt

    host, result = _retried(Turncoat)
    assert host.channel.calibrations == 1 and len(result.integrity["retried"]) == 1
    assert any("the work moved into it" in f for f in result.flags)
    assert any("outside the timed region" in f for f in result.flags)  # the first's
    assert result.score_ns == pytest.approx(2_006_000.0, rel=0.01)


def test_only_the_checks_that_host_noise_can_trip_are_retried():
    from harness.judging.measure.integrity import noise_flagged

    assert noise_flagged({"clocks": {"flagged": True},
                          "scored_clocks": {"flagged": False}}) == ["clocks"]
    assert noise_flagged({"calibration_disturbed": True}) == ["calibration_disturbed"]
    # a thread left running, a fill kept out, the physics floor: what the submission does
    assert noise_flagged({"threads_after_calls": 3,
                          "clocks": {"flagged": False}}) == []


def _long_sleep(measured: bool, stretch: float, hidden: float, timed=None,
                window_us: float = 20_000.0, **task_timing):
    """A case behind a 20 ms window slept whole (nvfp4's and mxfp4's, where a call that
    waits for the GPU stretches its sleep to the window: its host time, 14 ms, sizes the
    sleep to the whole window), on a GPU whose sleep the judge can time (`timed`: the
    stretches of its two timings, as the samples start and end; the worker's sleeps run
    `stretch` longer): the device and the scored clocks' record."""
    host = _windowed(_cpu_settings(max_calls=30), window_us, **task_timing)
    sampling.SLEEP_MEASURED = measured
    host.device.sleeps, host.device.stretch = timed, stretch
    host.channel.ns, host.channel.stretch, host.channel.hidden = [6_000.0] * 41, stretch, hidden
    host.channel.host_ns = 14_000_000.0
    result = _time(host)
    return host.device, result.integrity.get("scored_clocks")


@pytest.mark.parametrize("measured,stretch,hidden,flagged", [
    (False, 1.0, 3_000_000.0, False),  # a quarter of 20 ms is slack: 3 ms hide in it
    (True, 1.0, 3_000_000.0, True),    # the judge's own timing of the sleep leaves 0.4 ms
    (True, 1.0, 1_500_000.0, True),
    (True, 1.14, 0.0, False),          # an SM below its maximum clock stays honest
    (True, 1.14, 1_500_000.0, True)])
def test_a_sleep_the_judge_times_itself_leaves_little_room(measured, stretch, hidden, flagged):
    """SLEEP_MEASURED: the judge times the scored samples' sleep in its own
    context (the SM clock is the GPU's) as they start and as they end, and takes
    SLEEP_SLACK_MEASURED (2%) of it, not a quarter of its cycles at the maximum clock: work
    off the clock on scored samples only no longer fits in the slack of a 20 ms sleep
    (a GPU allows 100 µs)."""
    device, scored = _long_sleep(measured, stretch, hidden)
    assert scored["flagged"] is flagged, scored
    assert scored["sleep"]["measured"] is measured
    assert scored["sleep"]["slack"] == (0.02 if measured else 0.25)
    assert device.timed_sleeps == ([39_600_000] * 2 if measured else [])
    if measured:
        assert scored["sleep"]["ns_per_cycle"] == pytest.approx(stretch * 1e3 / 1980.0)


@pytest.mark.parametrize("timed,rate,slack", [
    ((0.9, 0.9), 1.0, 0.02),          # never below the maximum clock's figure
    ((1.5, 1.5), 1.25 / 1.02, 0.02),  # never laxer than a quarter at the maximum clock
    ((1.00, 1.01), 1.0, 0.02),        # the shorter of the two
    ((1.0, 1.03), 1.0, 0.03),         # the SM clock moved: the drift is the slack...
    ((1.0, 1.5), 1.0, 0.05)])         # ...up to SLEEP_DRIFT_MAX, whatever lengthened one
def test_the_judges_timing_of_the_sleep_is_bounded(timed, rate, slack):
    """The measured rate is bounded on both sides, and so is its slack: a submission that
    keeps the GPU busy while the judge times the sleep lengthens that timing only, which
    buys it at most SLEEP_DRIFT_MAX (5%), not the quarter rule."""
    _, scored = _long_sleep(True, 1.0, 0.0, timed=timed)
    sleep = scored["sleep"]
    assert sleep["measured"] is True and not scored["flagged"]
    at_max = 1e3 / 1980.0
    assert sleep["ns_per_cycle"] == pytest.approx(rate * at_max)
    assert sleep["slack"] == pytest.approx(slack)
    assert sleep["timed_before_ns_per_cycle"] == pytest.approx(timed[0] * at_max)
    assert sleep["timed_after_ns_per_cycle"] == pytest.approx(timed[1] * at_max)


def test_a_disturbed_timing_of_the_sleep_leaves_hidden_work_flagged():
    """One of the judge's two timings lengthened by half (other GPU work meanwhile): 3 ms
    hidden behind a 20 ms sleep is still flagged (5% of it is 1 ms)."""
    _, scored = _long_sleep(True, 1.0, 3_000_000.0, timed=(1.5, 1.0))
    assert scored["flagged"] and scored["sleep"]["slack"] == pytest.approx(0.05)
