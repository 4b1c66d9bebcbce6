"""The judge's sampling half (harness/judging/measure/sampling.py), with a fake clock and fake
no-op calls."""

from __future__ import annotations

import pytest

from harness.judging.measure.sampling import CALIBRATION_MIN_CALLS, Sampling
from harness.settings import Settings


class FakeJudge(Sampling):
    """Just what `_calibrate` uses: settings, the device, a clock, and no-op calls that
    take `noop_seconds` of that clock each."""

    def __init__(self, noop_seconds: float, device: str = "cuda") -> None:
        from types import SimpleNamespace

        self.settings = Settings.load().for_device(device)
        self.device = SimpleNamespace(kind=device)
        self.now, self.noop_seconds, self.noops = 100.0, noop_seconds, 0

    def clock(self) -> float:
        return self.now

    def _noop_gap(self, timeout: float, box=None, plain=None) -> dict:
        self.noops += 1
        self.now += self.noop_seconds
        return {"ns": 0.0, "rt": 50_000.0 + self.noops}  # the gap: 50 µs and a little


def test_light_no_ops_calibrate_with_every_call():
    judge = FakeJudge(noop_seconds=0.0005)  # vectoradd: 40 take 20 ms
    calibration = judge._calibrate(deadline=200.0)
    assert judge.noops == calibration.calls == 40


def test_heavy_no_ops_stop_at_the_minimum_after_the_time_budget():
    judge = FakeJudge(noop_seconds=0.03)  # nvfp4's case 0 (25 ms): 40 would take 1 s
    calibration = judge._calibrate(deadline=200.0)
    assert judge.noops == calibration.calls == CALIBRATION_MIN_CALLS
    assert calibration.median_ns == pytest.approx(50_005.5)


def test_middling_no_ops_stop_once_the_budget_is_spent():
    judge = FakeJudge(noop_seconds=0.011)
    judge._calibrate(deadline=200.0)
    assert judge.noops == 23  # the first past 0.25 s of 11 ms no-ops


def test_the_cpu_calibrates_with_ten_calls():
    judge = FakeJudge(noop_seconds=0.001, device="cpu")
    judge._calibrate(deadline=200.0)
    assert judge.noops == 10


class OrderJudge(Sampling):
    """Just what `_sample` uses, each step written to a log: inputs made, the worker's
    rehearsal and call, slots filled, outputs checked."""

    def __init__(self, settings: Settings, device: str = "cpu") -> None:
        from types import SimpleNamespace

        from harness.judging.worker.protocol import Event

        self.settings, self.log, self.now = settings, [], 0.0
        self.task = SimpleNamespace(name="t")
        self.device = SimpleNamespace(kind=device)
        self.keys: list[int] = []
        self.unwoken: list[str] = []  # the requests sent without the wake handshake
        log, keys, unwoken = self.log, self.keys, self.unwoken

        class Channel:
            def roundtrip(self, message: dict, timeout: float, wake: bool = True):
                log.append(f"{message['op']} {message['slot']}" + (" key" if message.get("key") else ""))
                keys.append(message.get("key", 0))
                if not wake:
                    unwoken.append(message["op"])
                return {"event": Event.DONE, "ns": 1.0}, 2.0

        self.channel = Channel()
        self.flusher = SimpleNamespace(flush=lambda: log.append("flush"))
        self.progress = SimpleNamespace(call_done=lambda: None)

    def clock(self) -> float:
        return self.now

    def _generate(self, case, plan, call):
        self.log.append(f"make {call}")
        return call

    def _check_output(self, data, output, finite, what) -> None:
        self.log.append(f"check {data}")


def _sample_log(monkeypatch, rehearse: bool, call: int, per: int = 2, ring: int = 4) -> list[str]:
    from types import SimpleNamespace

    from harness.judging.measure import sampling

    settings = Settings.load()
    settings.timing.rehearse = rehearse
    judge = OrderJudge(settings)
    monkeypatch.setattr(sampling, "fill_slot", lambda slot, data: judge.log.append(f"fill {slot} {data}"))
    monkeypatch.setattr(sampling, "poison", lambda output: None)
    box = SimpleNamespace(per=per, slots=list(range(ring)), outputs=[None] * ring, finite=True)
    judge._sample(box, {}, None, call, 0, 100.0, "timed call")
    return judge.log


def test_the_rehearsal_comes_before_the_fresh_inputs_are_written(monkeypatch):
    """timing.rehearse, the early order (the CPU's): the previous sample's slots are run
    again before this sample's inputs reach their slots, so the submission never runs,
    untimed, with them in place."""
    assert _sample_log(monkeypatch, True, 2) == [
        "make 2", "make 3", "rehearse 0", "fill 2 2", "fill 3 3", "flush", "call 2",
        "check 2", "check 3"]


@pytest.mark.parametrize("per,ring,call,steps", [
    (1, 2, 3, ["make 3", "rehearse 0", "fill 1 3", "flush", "call 1", "check 3"]),
    (2, 5, 6, ["make 6", "make 7", "rehearse 4", "fill 1 6", "fill 2 7", "flush", "call 1",
               "check 6", "check 7"]),
])
def test_the_rehearsed_slots_wrap_around_the_ring(monkeypatch, per, ring, call, steps):
    """One call per sample (two slots), and a ring larger than two samples' worth: the
    rehearsal starts at the previous sample's first slot,
    around the ring."""
    assert _sample_log(monkeypatch, True, call, per, ring) == steps


def test_a_ring_too_small_for_a_rehearsal_is_the_harnesss_error(monkeypatch):
    with pytest.raises(RuntimeError, match="harness bug"):
        _sample_log(monkeypatch, True, 3, per=3, ring=4)


@pytest.mark.parametrize("rehearse,call", [(True, 0), (False, 2)])
def test_no_rehearsal_for_a_cases_first_sample_or_when_off(monkeypatch, rehearse, call):
    log = _sample_log(monkeypatch, rehearse, call)
    assert not any(step.startswith("rehearse") for step in log)
    assert log[-3:-2] == [f"call {call % 4}"]


def _late_log(monkeypatch, device: str = "cuda", call: int = 2, prepare=None):
    """_sample with timing.rehearse_late, real slots (a gapped int64 slice and a bool among
    them, laid out as the judge lays them out: the input's strides kept): the log, what
    the slots hold once the call is sent, what the checks read and the keys sent.
    `prepare(judge, box)` runs just before the sample."""
    from types import SimpleNamespace

    import torch

    from harness.judging.measure import sampling
    from harness.judging.worker.structure import twin

    settings = Settings.load()
    settings.timing.rehearse_late = True
    judge = OrderJudge(settings, device)
    made, at_call, checked = {}, {}, []

    def generate(case, plan, i):
        judge.log.append(f"make {i}")
        made[i] = (torch.arange(64, dtype=torch.float32) + i,
                   torch.arange(15, dtype=torch.int64).reshape(3, 5)[:, 1:4] * i,
                   torch.arange(9) % (i + 1) == 0)
        return made[i]

    def check(data, output, finite, what):
        judge.log.append("check")
        checked.append(data)

    box = SimpleNamespace(per=2, outputs=[None] * 4, finite=True,
                          slots=[twin(generate(None, None, 0)) for _ in range(4)])
    judge.log.clear()
    roundtrip = judge.channel.roundtrip

    def seen_at_call(message, timeout, wake=True):
        if message["op"] == "call":
            at_call.update({k: tuple(t.clone() for t in box.slots[k]) for k in (2, 3)})
        return roundtrip(message, timeout, wake)

    judge.channel.roundtrip = seen_at_call
    judge._generate, judge._check_output = generate, check
    monkeypatch.setattr(sampling, "poison", lambda output: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)  # a "GPU" run of CPU tensors
    if prepare is not None:
        prepare(judge, box)
    judge.last = judge._sample(box, {}, None, call, 0, 100.0, "timed call")
    return judge, made, at_call, checked, box


def test_the_late_rehearsal_runs_after_masked_inputs_and_the_judges_flush(monkeypatch):
    """timing.rehearse_late on a GPU run: the fresh inputs reach their slots masked, the
    judge flushes, then the rehearsal, then a request of its own brings the key (the
    worker unmasks and flushes, on no clock), then the call, with no flush of the judge's
    after the rehearsal. Unmasked with the key as the worker unmasks (the sample's
    slot tensors in order, as bytes), the slots hold the inputs, gaps and bools too; the
    checks read the inputs themselves, never masked."""
    import torch

    from harness.judging.measure.masking import draw_device, xor_mask

    judge, made, at_call, checked, box = _late_log(monkeypatch)
    assert judge.log == ["make 2", "make 3", "flush", "rehearse 0", "unmask 2 key", "call 2",
                         "check", "check"]
    key = judge.keys[1]
    assert key > 0 and judge.keys[0] == judge.keys[2] == 0  # only the unmasking brings it
    # the unmasking and the call follow the worker's last answer at once: no wake
    # handshake, so a worker slow to take them up does so on the judge's clock
    assert judge.unwoken == ["unmask", "call"]
    assert judge.last["unmask_rt"] == 2.0  # its round trip, for check_unmasking
    assert judge.last["mask_ns"] > 0  # the judge's own masking, timed
    assert not any(torch.equal(a, b) for a, b in zip(at_call[2][:2], made[2][:2]))
    # drawn where the judge draws it (on a GPU machine, on the GPU: draw_device)
    xor_mask((t for k in (2, 3) for t in box.slots[k]), key, draw_on=draw_device())
    for k in (2, 3):
        assert all(torch.equal(a, b) for a, b in zip(box.slots[k], made[k]))
        assert box.slots[k][1].stride() == made[k][1].stride()  # the layout kept
    assert all(torch.equal(a, b) for a, b in zip(checked[0], made[2]))


def test_a_late_no_op_is_made_as_a_late_sample(monkeypatch):
    """timing.rehearse_late: a calibration no-op masks its slots and the judge flushes,
    then an untimed no-op brings the GPU back to the worker's context (where a sample has
    its rehearsal), then the unmasking request with the key, then the timed no-op with no
    flush of the judge's before it; before a case (no slots), the same without the
    masking."""
    from types import SimpleNamespace

    import torch

    settings = Settings.load()
    settings.timing.rehearse_late = True
    judge = OrderJudge(settings, "cuda")
    slots = [(torch.arange(8.0),), (torch.arange(8.0) * 2,)]
    box = SimpleNamespace(per=1, slots=slots)
    reply = judge._noop_gap(1.0, box)
    assert reply["rt"] - reply["ns"] == 1.0
    assert judge.log == ["flush", "noop 0", "unmask 0 key", "noop 0"]
    assert judge.keys[0] == judge.keys[2] == 0 and judge.keys[1] > 0
    assert judge.unwoken == ["unmask", "noop"] and reply["unmask_rt"] == 2.0
    assert not torch.equal(slots[0][0], torch.arange(8.0))  # masked for the worker to unmask
    assert torch.equal(slots[1][0], torch.arange(8.0) * 2)  # not the no-op's slot
    judge.log.clear()
    judge._noop_gap(1.0)
    assert judge.log == ["flush", "noop 0", "unmask 0 key", "noop 0"]


def test_cpu_side_inputs_unmasked_are_written_after_the_rehearsal(monkeypatch):
    """timing.mask_cpu_inputs false: the late order masks the GPU tensors only (here the
    float tensor stands for one); the CPU-side ones keep their old bytes through the
    rehearsal, are written plainly after it and before the unmasking request, and the
    judge's timed masking covers the masked ones alone (the worker unmasks the same)."""
    import torch

    from harness.judging.measure.masking import draw_device, xor_mask

    seen = {}

    def prepare(judge, box):
        judge.settings.timing.mask_cpu_inputs = False
        monkeypatch.setattr(type(judge), "_masks", lambda self, t: t.dtype == torch.float32)
        for slot in box.slots:  # old bytes: the inputs of call 7
            for t, old in zip(slot, (torch.arange(64.0) + 7,
                                     torch.arange(15).reshape(3, 5)[:, 1:4] * 7,
                                     torch.arange(9) % 8 == 0)):
                t.copy_(old)
        roundtrip = judge.channel.roundtrip

        def look(message, timeout, wake=True):
            if message["op"] in ("rehearse", "unmask"):
                seen[message["op"]] = [tuple(t.clone() for t in box.slots[k]) for k in (2, 3)]
            return roundtrip(message, timeout, wake)

        judge.channel.roundtrip = look

    judge, made, at_call, checked, box = _late_log(monkeypatch, prepare=prepare)
    assert judge.log == ["make 2", "make 3", "flush", "rehearse 0", "unmask 2 key", "call 2",
                         "check", "check"]
    for j, k in enumerate((2, 3)):
        old, fresh = seen["rehearse"][j], seen["unmask"][j]
        assert torch.equal(old[1], torch.arange(15).reshape(3, 5)[:, 1:4] * 7)  # not yet
        assert torch.equal(old[2], torch.arange(9) % 8 == 0)
        assert not torch.equal(old[0], made[k][0])  # masked through the rehearsal
        assert torch.equal(fresh[1], made[k][1]) and torch.equal(fresh[2], made[k][2])
    xor_mask((box.slots[k][0] for k in (2, 3)), judge.keys[1],  # the worker's unmasking
             draw_on=draw_device())
    for k in (2, 3):
        assert all(torch.equal(a, b) for a, b in zip(box.slots[k], made[k]))


def test_a_late_no_op_writes_the_unmasked_cpu_inputs_back_after_its_rehearsal(monkeypatch):
    """timing.mask_cpu_inputs false, a late calibration: each no-op masks the GPU tensors
    of its slots and, after the untimed no-op, writes the CPU-side ones back from copies
    taken once before the calibration's clock starts (the bytes a sample would write),
    then the unmasking request."""
    from types import SimpleNamespace

    import torch

    from harness.judging.measure import sampling

    settings = Settings.load()
    settings.timing.rehearse_late, settings.timing.mask_cpu_inputs = True, False
    judge = OrderJudge(settings, "cuda")
    monkeypatch.setattr(OrderJudge, "_masks", lambda self, t: t.dtype == torch.float32)
    copy = sampling.copy_spans

    def logged(dst, src):
        judge.log.append("write")
        copy(dst, src)

    monkeypatch.setattr(sampling, "copy_spans", logged)
    slots = [(torch.arange(8.0), torch.arange(6))]
    box = SimpleNamespace(per=1, slots=slots)
    monkeypatch.setitem(sampling.CALIBRATION_CALLS, "cuda", 2)
    roundtrip, at_unmask = judge.channel.roundtrip, []

    def spoil(message, timeout, wake=True):
        if message["op"] == "noop" and judge.log[-1:] == ["flush"]:  # the untimed no-op
            slots[0][1].fill_(-1)  # other bytes, as a sample's slot holds before its write
        if message["op"] == "unmask":
            at_unmask.append(slots[0][1].clone())
        return roundtrip(message, timeout, wake)

    judge.channel.roundtrip = spoil
    judge._calibrate(100.0, box)
    assert judge.log == ["write"] + ["flush", "noop 0", "write", "unmask 0 key", "noop 0"] * 2
    assert len(at_unmask) == 2 and all(torch.equal(t, torch.arange(6)) for t in at_unmask)
    assert not torch.equal(slots[0][0], torch.arange(8.0))  # masked, for the worker
    monkeypatch.setattr(OrderJudge, "_masks", sampling.Sampling._masks)  # CPU tensors all
    assert len(judge._plain_copies(box)[0]) == 2
    settings.timing.mask_cpu_inputs = True
    assert judge._plain_copies(box) is None  # every tensor masked: nothing to write


@pytest.mark.parametrize("device,override,late,measured", [
    ("cuda", "", True, True),     # the GPU's defaults: the late order, the sleep timed
    ("cpu", "", False, False),    # the same settings on the CPU: neither applies
    ("cuda", "timing:\n  rehearse_late: false\nintegrity:\n  sleep_measured: false\n",
     False, False)])              # an organiser's config gives the early order back
def test_the_gpu_defaults_apply_on_the_gpu_only(tmp_path, device, override, late, measured):
    """timing.rehearse_late and integrity.sleep_measured are on by default (runs 99-103)
    and apply to GPU runs only; a config turns either off."""
    extra = None
    if override:
        extra = tmp_path / "early.yaml"
        extra.write_text(override)
    judge = OrderJudge(Settings.load(extra).for_device(device), device)
    assert judge._late() is late and judge._measures_sleep() is measured
    assert bool(judge._mask_key()) is late


def test_the_late_rehearsal_is_off_on_the_cpu(monkeypatch):
    """On the CPU: the early order, the inputs written as they are, no key."""
    import torch

    judge, made, at_call, checked, box = _late_log(monkeypatch, "cpu")
    assert judge.log == ["make 2", "make 3", "rehearse 0", "flush", "call 2", "check", "check"]
    assert judge.unwoken == []
    assert all(torch.equal(a, b) for a, b in zip(at_call[2], made[2])) and judge.keys == [0, 0]


def test_a_rehearsal_that_times_out_says_so():
    from harness.judging.sandbox.sandbox import WorkerTimeout

    judge = OrderJudge(Settings.load())

    class Silent:
        def roundtrip(self, message: dict, timeout: float, wake: bool = True):
            raise WorkerTimeout(f"no answer within {timeout:g} s")

    judge.channel = Silent()
    with pytest.raises(WorkerTimeout, match=r"untimed rehearsal .* no answer within 3 s"):
        judge._rehearse(0, 3.0)
    with pytest.raises(WorkerTimeout, match=r"unmasked the fresh inputs .* within 3 s"):
        judge._unmask(0, 5, 3.0)


def test_a_failed_unmasking_is_the_verdict_of_a_call():
    """The worker could not unmask (out of memory for the key stream: the submission keeps
    the GPU's memory full): the case fails as a call out of memory would, and says where."""
    from harness.consts import Status
    from harness.judging.verdicts import CaseFailure
    from harness.judging.worker.protocol import Event

    judge = OrderJudge(Settings.load())

    class Full:
        def roundtrip(self, message: dict, timeout: float, wake: bool = True):
            return {"event": Event.ERROR, "kind": "out_of_memory", "message": "OOM"}, 1.0

    judge.channel = Full()
    with pytest.raises(CaseFailure) as failure:
        judge._unmask(0, 5, 3.0)
    assert failure.value.status == Status.ERROR  # as a call out of memory (verdicts.py)
    assert "unmasked the fresh inputs (timing.rehearse_late): OOM" in str(failure.value)


class SlowSamples(Sampling):
    """Just what `_time_case` uses, on the CPU, with no window (every sample counts and is
    checked on both clocks): samples that each take `seconds` of a fake clock, and fail
    as the worker's channel would when one runs past the phase's deadline."""

    def __init__(self, seconds: float, settings: Settings) -> None:
        from types import SimpleNamespace

        from harness.judging.measure.integrity import Calibration

        self.settings, self.now, self.seconds, self.samples = settings, 0.0, seconds, 0
        self.device = SimpleNamespace(kind="cpu")
        self.clock_reading = None
        self.base_calibration = Calibration.from_gaps([50_000.0] * 10)

    def clock(self) -> float:
        return self.now

    def _window_us(self) -> float:
        return 0.0

    def _fill_bytes(self) -> int:
        return 0

    def _ahead_cycles(self, window_us, host_ns, calls) -> int:
        return 0

    def _outside_ns(self, box) -> float:
        return 0.0


    def _apply_floor(self, case, result) -> None:
        pass

    def _sample(self, box, case, plan, call, ahead, deadline, what, first=None, relayout=True):
        from harness.judging.sandbox.sandbox import WorkerTimeout

        if self.now + self.seconds > deadline:
            raise WorkerTimeout("no answer within the phase's time limit")
        self.now += self.seconds
        self.samples += 1
        return {"event": "done", "ns": 1_000_000.0, "rt": 1_050_000.0, "host_ns": 1.0,
                "wall": self.seconds}


def test_long_samples_stop_before_the_deadline_not_past_it(monkeypatch):
    """Samples of 1.2 s (a rehearsal and 15 heavy calls, say) with MIN_SAMPLES asking for
    more than fit: timing stops where the next sample would not end before the phase's
    deadline, and the case keeps the samples it has (a flat 0.5 s margin let the last one
    start at 3.6 s and time out at the 4.2 s deadline, losing the case)."""
    from types import SimpleNamespace

    from harness.consts import Status
    from harness.judging.measure import timing
    from harness.judging.measure.integrity import Calibration
    from harness.judging.measure.timing import Laps
    from harness.results.document import CaseResult

    settings = Settings.load().for_device("cpu")
    settings.timing.max_seconds = 1.0
    monkeypatch.setitem(timing.MIN_SAMPLES, "cpu", 5)
    judge = SlowSamples(1.2, settings)
    box = SimpleNamespace(per=1)
    result = CaseResult(0, {}, Status.PASSED)
    judge._time_case(None, {}, None, box, 4.2, Calibration.from_gaps([50_000.0] * 10),
                     {"host_ns": 1.0}, result, Laps(judge.clock))
    assert judge.now <= 4.2 and result.score_ns == 1_000_000.0
    assert result.stats["calls"] == judge.samples - 1  # all but the warm-up's


class StalledSamples(SlowSamples):
    """SlowSamples whose worker reports sample `k` (from 0, warm-up included) as `ns[k]`,
    its own clock as k."""

    def __init__(self, ns: list[float], settings: Settings) -> None:
        super().__init__(0.01, settings)
        self.ns = ns

    def _sample(self, box, case, plan, call, ahead, deadline, what, first=None, relayout=True):
        reply = super()._sample(box, case, plan, call, ahead, deadline, what, first, relayout)
        k = self.samples - 1
        return reply | {"ns": self.ns[k], "rt": self.ns[k] + 50_000.0, "host_ns": float(k)}


class UnfilledSamples(StalledSamples):
    """StalledSamples with the contest's fill set, whose worker could not allocate it on
    the samples in `unfilled` (from 0, warm-up included)."""

    def __init__(self, ns: list[float], settings: Settings, unfilled: set[int]) -> None:
        super().__init__(ns, settings)
        self.unfilled = unfilled

    def _fill_bytes(self) -> int:
        return 1 << 28

    def _sample(self, box, case, plan, call, ahead, deadline, what, first=None, relayout=True):
        reply = super()._sample(box, case, plan, call, ahead, deadline, what, first, relayout)
        return reply | ({"unfilled": True} if self.samples - 1 in self.unfilled else {})


def _timed(ns: list[float], max_calls: int = 20, judge=None, calibration=None):
    from types import SimpleNamespace

    from harness.consts import Status
    from harness.judging.measure.integrity import Calibration
    from harness.judging.measure.timing import Laps
    from harness.results.document import CaseResult

    settings = Settings.load().for_device("cpu")  # one warm-up call (WARMUP_MIN_CALLS)
    settings.timing.warmup_seconds = 0.0
    settings.timing.max_calls, settings.timing.target_rse = max_calls, 0.0
    judge = judge(settings) if callable(judge) else StalledSamples(ns, settings)
    result = CaseResult(0, {}, Status.PASSED)
    judge._time_case(None, {}, None, SimpleNamespace(per=1), 1000.0,
                     calibration or Calibration.from_gaps([50_000.0] * 10), {"host_ns": 1.0},
                     result, Laps(judge.clock))
    return result


class UnmaskedSamples(StalledSamples):
    """StalledSamples whose every sample came with an unmasking round trip of `unmask_ns`
    (timing.rehearse_late)."""

    unmask_ns = 0.0

    def _sample(self, box, case, plan, call, ahead, deadline, what, first=None, relayout=True):
        reply = super()._sample(box, case, plan, call, ahead, deadline, what, first, relayout)
        return reply | {"unmask_rt": self.unmask_ns, "mask_ns": 50_000.0}


@pytest.mark.parametrize("unmask_us,flagged", [(300.0, False), (1000.0, True)])
def test_the_cases_unmasking_is_checked_against_the_judges_expectation(unmask_us, flagged):
    """The case's samples' unmasking round trips against the pre-import no-ops' (150 µs)
    plus the judge's own XOR (50 µs): recorded in `integrity.unmasking`, flagged beyond
    integrity.unmask_allowance_us; the case's no-ops, however slow, widen nothing."""
    from harness.judging.measure.integrity import Calibration

    class Judge(UnmaskedSamples):
        unmask_ns = unmask_us * 1e3

        def __init__(self, ns, settings):
            super().__init__(ns, settings)
            self.base_calibration = Calibration.from_gaps([50_000.0] * 10,
                                                          unmask_rts=[150_000.0] * 10)

    result = _timed([6_000.0] * 21, judge=lambda settings: Judge([6_000.0] * 21, settings),
                    calibration=Calibration.from_gaps([50_000.0] * 10,
                                                      unmask_rts=[unmask_us * 1e3] * 10))
    unmasking = result.integrity["unmasking"]
    assert unmasking["flagged"] is flagged and unmasking["samples"] == result.stats["calls"]
    assert unmasking["median_ns"] == unmask_us * 1e3 and unmasking["expected_ns"] == 200_000.0
    assert unmasking["judge_xor_ns"] == 50_000.0
    assert unmasking["case_calibration_ns"] == unmask_us * 1e3
    assert any("to unmask its fresh inputs" in f for f in result.flags) is flagged


def test_the_workers_account_cannot_break_the_judge():
    """The worker's breakdown is its own account (over the pipe, any JSON number): an
    integer too large for a float, or a bool, reads as 0 in the medians, never an error."""
    from harness.judging.measure.sampling import _medians

    replies = [{"rt": 10.0, "pre_ns": 10**400, "busy_ns": 10**400, "lead_ns": True},
               {"rt": 12.0, "pre_ns": 4.0, "busy_ns": 2.0}]
    says = _medians(replies)
    assert says["pre_ns"] == 2.0 and says["busy_ns"] == 1.0 and says["lead_ns"] == 0.0
    assert says["transport_ns"] == 10.0


class WindowSamples(StalledSamples):
    """StalledSamples behind a 100 µs window (1980 MHz: 198000 cycles a scored sample,
    none on the probes, every 4th): the worker's round trip holds the sleep it was sent,
    stretched by `stretch` (an SM below its maximum clock), and `hidden` ns of work on
    the scored samples only (it knows a probe by its zero sleep)."""

    stretch, hidden = 1.0, 0.0

    def __init__(self, ns: list[float], settings: Settings) -> None:
        from types import SimpleNamespace

        super().__init__(ns, settings)
        self.device = SimpleNamespace(kind="cpu", clocks={"sm_max_mhz": 1980.0})

    def _window_us(self) -> float:
        return 100.0

    def _ahead_cycles(self, window_us, host_ns, calls) -> int:
        return 198_000

    def _sample(self, box, case, plan, call, ahead, deadline, what, first=None, relayout=True):
        reply = super()._sample(box, case, plan, call, ahead, deadline, what, first, relayout)
        if ahead:
            reply["rt"] += ahead / 1980.0 * 1e3 * self.stretch + self.hidden
        return reply


@pytest.mark.parametrize("stretch,hidden,flagged", [
    (1.0, 0.0, False), (1.14, 0.0, False), (1.3, 0.0, False),  # the SM at 0.77 of its max
    (1.0, 1_500_000.0, True)])  # CPU: 1 ms allowed
def test_scored_samples_behind_a_window_are_on_both_clocks(stretch, hidden, flagged):
    """Behind a window the probes carry the two-clock check, but a worker knows a probe
    by its zero sleep before any clock starts: work done on the scored samples only must
    show too. Their sleep (the judge's own figure, and integrity.sleep_slack more) is left
    out of the round trip; a sleep 14% longer than its cycles say (the SM below its
    maximum clock) is honest."""
    judge = type("Judge", (WindowSamples,), {"stretch": stretch, "hidden": hidden})
    ns = [6_000.0] * 41
    result = _timed(ns, max_calls=30, judge=lambda settings: judge(ns, settings))
    scored = result.integrity["scored_clocks"]
    assert scored["flagged"] is flagged, scored
    assert (result.integrity["clocks"]["flagged"]) is False  # the probes saw nothing
    assert any("on the scored samples" in f for f in result.flags) is flagged
    if flagged:  # the judge's clock, the sleep left out: the hidden work is in the score
        assert result.score_ns == pytest.approx(6_000.0 + hidden, rel=0.005)


def test_no_scored_clocks_where_the_contests_fill_replaces_the_sleep():
    """timing.window_fill_bytes: the fill hides the launch, not a sleep of `ahead` cycles,
    and its length is not the judge's figure (0.85-0.9 ms on an L4 against a 100 µs
    window): the scored samples' clocks are not compared rather than misjudged."""
    class Filled(WindowSamples):
        def _fill_bytes(self) -> int:
            return 1 << 28

    ns = [6_000.0] * 41
    result = _timed(ns, max_calls=30, judge=lambda settings: Filled(ns, settings))
    assert "scored_clocks" not in result.integrity


class SpellSamples(StalledSamples):
    """StalledSamples on a host that runs slowly for a spell: the judge's round trip is
    `extra` ns longer until the judge has calibrated `spell` times more (for ever where
    None); the calls made and the calibrations taken are kept."""

    extra, spell = 2_000_000.0, None

    def __init__(self, ns: list[float], settings: Settings) -> None:
        from types import SimpleNamespace

        super().__init__(ns, settings)
        self.calls, self.calibrations, self.cancelled = [], 0, 0
        # as a GPU run's nvidia-smi reading, started when the first attempt's calls end
        self.clock_reading = SimpleNamespace(cancel=self._cancel)

    def _cancel(self) -> None:
        self.cancelled += 1

    def _sample(self, box, case, plan, call, ahead, deadline, what, first=None, relayout=True):
        reply = super()._sample(box, case, plan, call, ahead, deadline, what, first, relayout)
        self.calls.append(call)
        slow = self.spell is None or self.calibrations < self.spell
        return reply | ({"rt": reply["rt"] + self.extra} if slow else {})

    def _calibrate(self, deadline, box=None):
        from harness.judging.measure.integrity import Calibration

        self.calibrations += 1
        return Calibration.from_gaps([50_000.0] * 10)


def _retried(judge_class, retries: int = 1, deadline: float = 1000.0):
    from types import SimpleNamespace

    from harness.consts import Status
    from harness.judging.measure.integrity import Calibration
    from harness.judging.measure.timing import Laps
    from harness.results.document import CaseResult

    settings = Settings.load().for_device("cpu")  # one warm-up call (WARMUP_MIN_CALLS)
    settings.timing.warmup_seconds = 0.0
    settings.timing.max_calls, settings.timing.target_rse = 20, 0.0
    settings.integrity.noise_retries = retries
    judge = judge_class([6_000.0] * 200, settings)
    result = judge._time_retrying(None, {}, None, SimpleNamespace(per=1), deadline,
                                  Calibration.from_gaps([50_000.0] * 10), {"host_ns": 1.0},
                                  CaseResult(0, {}, Status.PASSED), Laps(judge.clock))
    return judge, result


def test_a_case_flagged_in_a_slow_spell_of_the_host_is_timed_again():
    """The host slows down after the case's calibration (2 ms more per round trip on the
    first attempt's samples): the two clocks flag it, and the case is timed again with a
    fresh calibration on calls not made before (fresh inputs); the retry is clean and
    stands, the first attempt kept in the record and in the report's notes."""
    from harness.results.document import case_notes

    judge, result = _retried(type("Spell", (SpellSamples,), {"spell": 1}))
    assert result.flags == [] and result.score_ns == 6_000.0
    (first,) = result.integrity["retried"]
    assert first["flagged_by"] == ["clocks"] and first["clocks"]["flagged"]
    assert any("outside the timed region" in f for f in first["flags"])
    assert first["timing_seconds"] > 0 and result.integrity["timing_seconds"] > 0  # each its own
    assert judge.calibrations == 1 and judge.cancelled == 1  # no nvidia-smi through it
    assert len(set(judge.calls)) == len(judge.calls)  # no call's inputs drawn twice
    assert result.checked_calls == len(judge.calls)
    (note,) = case_notes(result.integrity)
    assert note.startswith("attempt 1 was flagged by the two clocks on the probes")


def test_a_case_flagged_on_every_attempt_stays_flagged():
    """Work outside the timed region shows on every attempt: the last one stands, flagged
    and scored on the judge's clock; integrity.noise_retries bounds the attempts."""
    judge, result = _retried(SpellSamples, retries=2)
    assert any("outside the timed region" in f for f in result.flags)
    assert result.score_ns == pytest.approx(2_006_000.0, rel=0.01)  # round trip less no-op
    assert len(result.integrity["retried"]) == 2 and judge.calibrations == 2


@pytest.mark.parametrize("retries,deadline,retried", [
    (0, 1000.0, False), (1, 1.4, False), (1, 1.6, True)])
def test_no_retry_when_off_or_without_the_time_for_it(retries, deadline, retried):
    """noise_retries: 0 keeps the flag at once; so does a phase deadline with less than
    three attempts' time and a second left (each sample here takes 0.01 s of the fake
    clock: the first attempt 0.12 s, so a retry needs 1.36 s left after it)."""
    judge, result = _retried(SpellSamples, retries=retries, deadline=deadline)
    assert result.flags and ("retried" in result.integrity) is retried
    assert judge.calibrations == int(retried)


def test_a_case_with_a_flag_of_what_the_submission_does_is_not_timed_again():
    """A thread left running (or a fill kept out, or the physics floor) says what the
    submission does: a case flagged so, beside a noise check, keeps every flag and is not
    timed again (a clean retry used to drop it)."""
    class Lingering(SpellSamples):
        spell = 1

        def _sample(self, *args, **kwargs):
            return super()._sample(*args, **kwargs) | {"threads": 1}

    judge, result = _retried(Lingering)
    assert judge.calibrations == 0 and "retried" not in result.integrity
    assert any("thread" in f for f in result.flags)
    assert any("outside the timed region" in f for f in result.flags)


def test_a_slow_host_on_the_retry_does_not_read_as_work_moved_into_the_clock():
    """A slow host lengthens the events through the host time they hold (launches the
    window does not hide; on the CPU, all of it): an honest host-bound retry whose calls
    rose to 1.5 ms, its host time to 1.6 ms, stands clean, though the rise is over half
    of the 2 ms the first attempt's flag saw."""
    class SlowRetry(SpellSamples):
        spell = 1

        def _sample(self, *args, **kwargs):
            reply = super()._sample(*args, **kwargs)
            if self.calibrations < self.spell:
                return reply
            return reply | {"ns": 1_500_000.0, "rt": 1_550_000.0, "host_ns": 1_600_000.0}

    judge, result = _retried(SlowRetry)
    assert judge.calibrations == 1 and result.flags == []
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


def test_a_rejected_or_unmasking_flagged_case_is_judged_by_its_record():
    """retry_reason: a case the floor rejected is not timed again; one flagged by the
    unmasking alone is, and what the unmasking saw counts as the hidden work."""
    from harness.consts import Status
    from harness.judging.measure.integrity import hidden_ns, retry_reason
    from harness.results.document import CaseResult

    unmasking = {"unmasking": {"flagged": True, "median_ns": 900_000.0, "expected_ns": 200_000.0}}
    assert retry_reason(CaseResult(0, {}, Status.PASSED, flags=["u"], integrity=unmasking)) == [
        "unmasking"]
    assert retry_reason(CaseResult(0, {}, Status.REJECTED, flags=["u"], integrity=unmasking)) == []
    assert hidden_ns(unmasking, per=2) == pytest.approx(350_000.0)


def test_work_moved_into_the_timed_region_on_a_retry_keeps_the_flags():
    """A submission that hides 2 ms a call off the clock until a flag, then turns honest
    once the case is timed again (its calls now 2 ms longer on the events): a slow host
    lengthens the judge's clock, not the events, so the first attempt's flags stand."""
    class Turncoat(SpellSamples):
        spell = 1

        def _sample(self, *args, **kwargs):
            reply = super()._sample(*args, **kwargs)
            if self.calibrations >= self.spell:  # honest now: the work on the events
                reply = reply | {"ns": reply["ns"] + self.extra, "rt": reply["rt"] + self.extra}
            return reply

    judge, result = _retried(Turncoat)
    assert judge.calibrations == 1 and len(result.integrity["retried"]) == 1
    assert any("the work moved into it" in f for f in result.flags)
    assert any("outside the timed region" in f for f in result.flags)  # the first's
    assert result.score_ns == pytest.approx(2_006_000.0, rel=0.01)


def test_only_the_checks_that_host_noise_can_trip_are_retried():
    from harness.judging.measure.integrity import noise_flagged

    assert noise_flagged({"clocks": {"flagged": True}, "scored_clocks": {"flagged": False},
                          "unmasking": {"flagged": True}}) == ["clocks", "unmasking"]
    assert noise_flagged({"calibration_disturbed": True}) == ["calibration_disturbed"]
    # a thread left running, a fill kept out, the physics floor: what the submission does
    assert noise_flagged({"threads_after_calls": 3, "unfilled_samples": 2,
                          "clocks": {"flagged": False}}) == []


def test_settings_refuse_negative_noise_retries(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("integrity:\n  noise_retries: -1\n")
    with pytest.raises(ValueError, match="noise_retries"):
        Settings.load(config)


class LongSleepSamples(WindowSamples):
    """WindowSamples behind a 20 ms window slept whole (nvfp4's and mxfp4's, where a call
    that waits for the GPU stretches its sleep to the window), on a GPU whose sleep the
    judge can time (`_sleep_ns_per_cycle`: the stretches in `timed`, one per timing, as
    the samples start and end; the worker's sleeps run `stretch` longer)."""

    measured, timed = True, None

    def __init__(self, ns: list[float], settings: Settings) -> None:
        super().__init__(ns, settings)
        self.timed_sleeps = []

    def _window_us(self) -> float:
        return 20_000.0

    def _ahead_cycles(self, window_us, host_ns, calls) -> int:
        return 39_600_000

    def _measures_sleep(self) -> bool:
        return self.measured

    def _sleep_ns_per_cycle(self, cycles: int) -> float:
        stretch = (self.timed or (self.stretch, self.stretch))[len(self.timed_sleeps)]
        self.timed_sleeps.append(cycles)
        return stretch * 1e3 / 1980.0


def _long_sleep(measured, stretch, hidden, timed=None):
    judge = type("Judge", (LongSleepSamples,), {"stretch": stretch, "hidden": hidden,
                                                "measured": measured, "timed": timed})
    ns = [6_000.0] * 41
    made = []
    result = _timed(ns, max_calls=30, judge=lambda settings: made.append(judge(ns, settings))
                    or made[-1])
    return made[0], result.integrity["scored_clocks"]


@pytest.mark.parametrize("measured,stretch,hidden,flagged", [
    (False, 1.0, 3_000_000.0, False),  # a quarter of 20 ms is slack: 3 ms hide in it
    (True, 1.0, 3_000_000.0, True),    # the judge's own timing of the sleep leaves 0.4 ms
    (True, 1.0, 1_500_000.0, True),
    (True, 1.14, 0.0, False),          # an SM below its maximum clock stays honest
    (True, 1.14, 1_500_000.0, True)])
def test_a_sleep_the_judge_times_itself_leaves_little_room(measured, stretch, hidden, flagged):
    """integrity.sleep_measured: the judge times the scored samples' sleep in its own
    context (the SM clock is the GPU's) as they start and as they end, and takes
    sleep_slack_measured (2%) of it, not a quarter of its cycles at the maximum clock: work
    off the clock on scored samples only no longer fits in the slack of a 20 ms sleep
    (CPU settings here: 1 ms allowed)."""
    judge, scored = _long_sleep(measured, stretch, hidden)
    assert scored["flagged"] is flagged, scored
    assert scored["sleep"]["measured"] is measured
    assert scored["sleep"]["slack"] == (0.02 if measured else 0.25)
    assert judge.timed_sleeps == ([39_600_000] * 2 if measured else [])
    if measured:
        assert scored["sleep"]["ns_per_cycle"] == pytest.approx(stretch * 1e3 / 1980.0)


def test_no_sleep_is_timed_where_the_contests_fill_replaces_it():
    """timing.window_fill_bytes: the fill's length is not the judge's figure, so the scored
    samples' clocks are not compared, and the judge times no sleep of its own for them."""
    judge = type("Judge", (LongSleepSamples,), {"stretch": 1.0, "hidden": 0.0,
                                                "_fill_bytes": lambda self: 1 << 28})
    ns = [6_000.0] * 41
    made = []
    result = _timed(ns, max_calls=30, judge=lambda settings: made.append(judge(ns, settings))
                    or made[-1])
    assert made[0].timed_sleeps == [] and "scored_clocks" not in result.integrity


@pytest.mark.parametrize("timed,rate,slack", [
    ((0.9, 0.9), 1.0, 0.02),          # never below the maximum clock's figure
    ((1.5, 1.5), 1.25 / 1.02, 0.02),  # never laxer than a quarter at the maximum clock
    ((1.00, 1.01), 1.0, 0.02),        # the shorter of the two
    ((1.0, 1.03), 1.0, 0.03),         # the SM clock moved: the drift is the slack...
    ((1.0, 1.5), 1.0, 0.05)])         # ...up to sleep_drift_max, whatever lengthened one
def test_the_judges_timing_of_the_sleep_is_bounded(timed, rate, slack):
    """The measured rate is bounded on both sides, and so is its slack: a submission that
    keeps the GPU busy while the judge times the sleep lengthens that timing only, which
    buys it at most integrity.sleep_drift_max (5%), not the quarter rule."""
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
