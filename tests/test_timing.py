import math
from dataclasses import replace

import pytest

from harness.judging.measure.timing import (
    MIN_AHEAD_US,
    MIN_SAMPLES,
    StoppingRule,
    WarmUp,
    ahead_cycles,
    hidden_window_us,
    summarize,
)
from harness.settings import Settings, TimingSettings


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def settings(**kw) -> TimingSettings:
    base = dict(min_calls=10, min_seconds=0.5, max_seconds=5.0, max_calls=1000, target_rse=0.01)
    base.update(kw)
    return replace(Settings.load().timing, **base)


def test_summarize_statistics():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s.calls == 4 and s.mean == 2.5 and s.median == 2.5
    assert s.best == 1.0 and s.worst == 4.0
    assert s.std == pytest.approx(1.2909944)
    assert s.stderr == pytest.approx(1.2909944 / 2)
    assert s.rse == pytest.approx(s.stderr / 2.5)


def test_summarize_single_sample_has_infinite_error():
    s = summarize([5.0])
    assert s.std == 0 and math.isinf(s.stderr)


def test_stops_when_precise_after_minimums():
    clock = FakeClock()
    rule = StoppingRule(settings(), clock, "cuda")
    for _ in range(9):
        rule.add(100.0)
        clock.now += 0.1
    assert not rule.done()  # 9 calls: below min_calls even though precise
    rule.add(100.0)
    assert rule.done() and "relative standard error" in rule.reason


def test_waits_for_minimum_time():
    clock = FakeClock()
    rule = StoppingRule(settings(min_seconds=1.0), clock, "cuda")
    for _ in range(50):
        rule.add(100.0)
    clock.now = 0.9
    assert not rule.done()
    clock.now = 1.0
    assert rule.done()


def test_noisy_samples_run_to_the_time_budget():
    clock = FakeClock()
    rule = StoppingRule(settings(target_rse=1e-6), clock, "cuda")
    for i in range(200):
        rule.add(100.0 if i % 2 else 300.0)
        clock.now += 0.01
    assert not rule.done()
    clock.now = 5.0
    assert rule.done() and "budget" in rule.reason


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
def test_the_budget_waits_for_the_least_number_of_samples(kind):
    """Samples that each outlast the budget (nvfp4's torch_dequant cases, a second of the
    judge's work apiece) are still scored on the device's `MIN_SAMPLES` of them."""
    clock = FakeClock()
    rule = StoppingRule(settings(target_rse=1e-9, max_seconds=1.0), clock, kind)
    for i in range(MIN_SAMPLES[kind] - 1):
        rule.add(100.0 + i)
        clock.now += 1.2
        assert not rule.done()
    rule.add(104.0)
    assert rule.done() and "budget" in rule.reason


def test_max_calls_bound():
    clock = FakeClock()
    rule = StoppingRule(settings(max_calls=20, target_rse=1e-9, min_seconds=100), clock, "cuda")
    for i in range(20):
        rule.add(float(i + 1))
    assert rule.done() and "20 calls" in rule.reason


def test_rse_matches_summary():
    clock = FakeClock()
    rule = StoppingRule(settings(), clock, "cuda")
    samples = [10.0, 12.0, 9.0, 11.0, 10.5]
    for x in samples:
        rule.add(x)
    assert rule.rse() == pytest.approx(summarize(samples).rse)


def test_warm_up_by_time_budget_with_minimum_calls():
    clock = FakeClock()
    warm = WarmUp(settings(warmup_seconds=0.2), clock, "cuda")
    cpu = WarmUp(settings(warmup_seconds=0.2), clock, "cpu")
    warm.add()
    cpu.add()
    clock.now = 1.0
    assert not warm.done()  # time is up but only one call of the three
    assert cpu.done()  # one call warms up on the CPU
    warm.add()
    warm.add()
    assert warm.done()


def test_warm_up_counts_calls_not_samples():
    """One sample of 15 calls (nvfp4_group_gemm) is enough warm-up calls on its own."""
    clock = FakeClock()
    warm = WarmUp(settings(warmup_seconds=0.2), clock, "cuda")
    warm.add(2)
    clock.now = 1.0
    assert not warm.done()  # two calls of the three
    warm.add(15)
    assert warm.done()
    fresh = WarmUp(settings(warmup_seconds=0.2), clock, "cuda")
    fresh.add(15)
    assert not fresh.done()  # enough calls, but the time budget has not passed


def test_hidden_window_follows_the_task_then_the_default():
    timing = settings()
    assert hidden_window_us(timing, {}, "cuda") == timing.hidden_window_us
    assert hidden_window_us(timing, {"hidden_window_us": 20000}, "cuda") == 20000
    assert hidden_window_us(timing, {"hidden_window_us": 20000}, "cpu") == 0
    counted = settings(host_launch="counted")
    assert hidden_window_us(counted, {"hidden_window_us": 20000}, "cuda") == 0


def test_gpu_sleep_covers_the_launch_but_never_exceeds_the_window():
    mhz = 2000.0
    # a window up to the floor is slept whole, whatever the recent launches: one launch
    # slower than the last ones is hidden as the contest's flush hides it
    floor = MIN_AHEAD_US
    assert ahead_cycles(100, 10_000, 1, mhz) == int(100 * mhz)
    assert ahead_cycles(floor, 10_000, 1, mhz) == int(floor * mhz)  # the floor's length
    # a floor of 50 µs wins over the launch's 1.5 x 10 + 20 = 35 µs
    assert ahead_cycles(100, 10_000, 1, mhz, 50) == int(50 * mhz)
    # a long window: sized from the sample's launch (fifteen calls of 100 µs), at least the floor
    assert ahead_cycles(20000, 100_000, 15, mhz, 1000) == int((1.5 * 1500 + 20) * mhz)
    assert ahead_cycles(20000, 10_000, 15, mhz, 1000) == int(1000 * mhz)  # 245 µs: the floor
    # a host time past the window is hidden only up to the window, as in the contest
    assert ahead_cycles(100, 1_000_000, 1, mhz) == int(100 * mhz)
    assert ahead_cycles(20000, 10_000_000, 15, mhz) == int(20000 * mhz)
    assert ahead_cycles(0, 10_000, 1, mhz) == 0


def test_laps_charge_each_step_its_own_time_and_add_repeats():
    from harness.judging.measure.timing import Laps

    clock = FakeClock()
    laps = Laps(clock)
    clock.now += 0.5
    laps.lap("inputs")
    clock.now += 2.0
    laps.lap("timing")
    clock.now += 0.25
    laps.lap("inputs")
    assert laps.parts == {"inputs": 0.75, "timing": 2.0}


def test_host_launch_is_read_on_probes_where_there_are_any():
    """Behind a hidden window a call that waits for the GPU also waits out the sleep: its
    host time is read on the probes (no sleep), and on every sample without probes."""
    from harness.judging.measure.timing import host_launch_ns

    hidden = [{"host_ns": 20e6}, {"host_ns": 21e6}, {"host_ns": 19e6}]
    probes = [{"host_ns": 90e3}, {"host_ns": 110e3}]
    assert host_launch_ns(probes, hidden + probes) == 100e3
    assert host_launch_ns([], hidden) == 20e6
    assert host_launch_ns([], []) is None


def test_long_samples_are_those_past_a_multiple_of_the_median():
    from harness.judging.measure.timing import long_samples

    assert long_samples([], 4, 0.05) is None
    assert long_samples([6.0, 6.5, 24.0, 7.0], 4, 0.05) is None  # 24.0 is 3.6x the median (6.75)
    out = long_samples([6.0] * 9 + [60.0], 4, 0.05)
    assert out["count"] == 1 and out["longest_ns"] == 60.0 and out["limit_ns"] == 24.0
    assert out["adds_ns"] == pytest.approx(5.4) and "note" in out  # 11.4 against 6.0
    assert "note" not in long_samples([6.0] * 9 + [60.0], 4, 0.5)  # 47% of the mean < 50%
