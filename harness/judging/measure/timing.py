"""Statistics of timed calls and the rule that decides when to stop timing.

Pure logic: the clock is passed in, so tests drive it with a fake one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from harness.durations import micros
from harness.settings import TimingSettings

# Warm-up calls at least, whatever the time budget; one on the CPU, where calls are slow.
WARMUP_MIN_CALLS = {"cuda": 3, "cpu": 1}
# Samples the time budget never stops short of (the phase's time limit still does); on the
# CPU the public evaluators' least number of repeats, so that local runs stay quick.
MIN_SAMPLES = {"cuda": 5, "cpu": 3}
# A scored sample above this many times the case's median counts as long.
LONG_SAMPLE_FACTOR = 4
# The report notes long samples where they add this share of the mean or more.
LONG_SAMPLE_NOTE = 0.05
# Judge and worker poll (not sleep) this long for a message (s); never on the CPU, where a
# polling judge would take the worker's core.
SPIN_SECONDS = {"cuda": 0.05, "cpu": 0.0}
# A hidden window up to this long (µs) is slept whole before every sample, as the
# contest's flush lasts it whole; a longer one is sized from the recent launches.
MIN_AHEAD_US = 1000.0
# A sized sleep covers this many times the recent launches' host time...
AHEAD_MARGIN = 1.5
# ...and this much more (µs): a launch a little slower than the recent ones still hides.
AHEAD_EXTRA_US = 20.0


@dataclass
class Stats:
    """Summary of one case's timed calls, in nanoseconds."""

    calls: int
    mean: float
    std: float
    stderr: float
    median: float
    best: float
    worst: float

    @property
    def rse(self) -> float:
        """Relative standard error of the mean."""
        return self.stderr / self.mean if self.mean > 0 else math.inf

    def to_dict(self) -> dict[str, float]:
        return asdict(self) | {"rse": self.rse}


def summarize(samples: list[float]) -> Stats:
    """Mean, spread and extremes of `samples` (at least one)."""
    if not samples:
        raise ValueError("no samples")
    n = len(samples)
    mean = statistics.fmean(samples)
    std = statistics.stdev(samples) if n > 1 else 0.0
    return Stats(
        calls=n,
        mean=mean,
        std=std,
        stderr=std / math.sqrt(n) if n > 1 else math.inf,
        median=statistics.median(samples),
        best=min(samples),
        worst=max(samples),
    )


def long_samples(samples: list[float], factor: float = LONG_SAMPLE_FACTOR,
                 note_share: float = LONG_SAMPLE_NOTE,
                 window_us: float = 0.0) -> dict[str, Any] | None:
    """The samples above `factor` times the median, and what they add to the mean; with a
    `note` for the report where they add `note_share` of the mean or more (`window_us`: the
    hidden window, named in the note where there is one).

    The score is the mean, as in the contests, so on a call of a few microseconds one
    sample whose launch outlasted the hidden window (or whose host stalled) moves it far:
    vectoradd Triton's smallest case read medians of 6.4-6.7 µs and means of up to 11.3 µs.
    None when no sample is that long."""
    if not samples:
        return None
    median = statistics.median(samples)
    short = [s for s in samples if s <= median * factor]
    count = len(samples) - len(short)
    if not count or not short:
        return None
    mean = statistics.fmean(samples)
    adds = mean - statistics.fmean(short)
    out: dict[str, Any] = {"count": count, "longest_ns": max(samples),
                           "limit_ns": median * factor, "adds_ns": adds}
    if mean > 0 and adds >= note_share * mean:
        causes = (f"a launch that outlasted the {window_us:g} µs hidden window, a stall of "
                  "the host or of the submission" if window_us > 0 else
                  "a stall of the host or of the submission")
        out["note"] = (f"{count} of {len(samples)} samples took over {factor:g}x the median "
                       f"({micros(median)}; the longest {micros(max(samples), 1)}) and "
                       f"add {micros(adds)} ({adds / mean:.0%}) to the mean, which is the "
                       f"score, as in the contests ({causes} reads so): run it again to see "
                       "if it recurs")
    return out


class StoppingRule:
    """Time until the mean is precise enough, within call and wall-time bounds.

    Stops when, with at least `min_calls` samples and `min_seconds` elapsed, the relative
    standard error is below `target_rse`; or at `max_calls`; or at `max_seconds`, once
    there are `MIN_SAMPLES` of the device's samples (a case whose samples each cost the
    judge a second of input making and checking would otherwise be scored on two or three).
    """

    def __init__(self, settings: TimingSettings, clock: Callable[[], float],
                 device_kind: str) -> None:
        self.settings = settings
        self.clock = clock
        self.min_samples = MIN_SAMPLES[device_kind]
        self.start = clock()
        self.samples: list[float] = []
        self._sum = 0.0
        self._sumsq = 0.0
        self.reason = ""

    def add(self, sample: float) -> None:
        self.samples.append(sample)
        self._sum += sample
        self._sumsq += sample * sample

    def rse(self) -> float:
        n = len(self.samples)
        if n < 2 or self._sum <= 0:
            return math.inf
        mean = self._sum / n
        var = max(self._sumsq / n - mean * mean, 0.0) * n / (n - 1)
        return math.sqrt(var / n) / mean

    def done(self) -> bool:
        """True once timing should stop; `reason` then says why."""
        s, n = self.settings, len(self.samples)
        elapsed = self.clock() - self.start
        if n >= s.max_calls:
            self.reason = f"reached {s.max_calls} calls"
        elif elapsed >= s.max_seconds and n >= self.min_samples:
            self.reason = f"reached the {s.max_seconds:g} s budget"
        elif n >= s.min_calls and elapsed >= s.min_seconds and self.rse() <= s.target_rse:
            self.reason = f"relative standard error {self.rse():.2%} <= {s.target_rse:.2%}"
        else:
            return False
        return True


def host_launch_ns(probes: list[dict], samples: list[dict]) -> float | None:
    """A case's host launch time per call: the median over its probes (samples behind no
    GPU sleep), where a call that waits for the GPU waits only for its own work, not for
    the hidden window's sleep; over every sample when there is no probe."""
    for replies in (probes, samples):
        hosts = [float(r["host_ns"]) for r in replies if r.get("host_ns") is not None]
        if hosts:
            return statistics.median(hosts)
    return None


class Laps:
    """Seconds spent per named step of some work, from a clock (what a case's wall time
    is made of: inputs, sharing, calibration, the first call, warm-up, timing, ...)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.last = clock()
        self.parts: dict[str, float] = {}

    def lap(self, name: str) -> None:
        """Charge the time since the last lap to `name` (added up if it comes again)."""
        now = self.clock()
        self.parts[name] = self.parts.get(name, 0.0) + (now - self.last)
        self.last = now


class WarmUp:
    """Warm up by time budget (after the first call), with a minimum number of calls.

    Calls, not samples: a sample of 15 calls on 15 inputs (nvfp4_group_gemm) counts 15,
    so a task with many calls per sample whose sample outlasts the time budget warms up
    with one sample, as its contest's evaluator warms up with its one checked pass over
    the inputs."""

    def __init__(self, settings: TimingSettings, clock: Callable[[], float],
                 device_kind: str) -> None:
        self.settings = settings
        self.clock = clock
        self.min_calls = WARMUP_MIN_CALLS[device_kind]
        self.start = clock()
        self.calls = 0

    def add(self, calls: int = 1) -> None:
        """Count `calls` more warm-up calls (one sample's)."""
        self.calls += calls

    def done(self) -> bool:
        enough = self.calls >= self.min_calls
        return enough and self.clock() - self.start >= self.settings.warmup_seconds


def hidden_window_us(timing: TimingSettings, task_timing: dict, device_kind: str) -> float:
    """How much host launch time a sample may hide (µs): the task's contest's window, or
    the default one; none on the CPU or when the settings count launch time."""
    if timing.host_launch == "counted" or device_kind != "cuda":
        return 0.0
    return float(task_timing.get("hidden_window_us", timing.hidden_window_us))


def ahead_cycles(window_us: float, host_ns: float, calls: int, sm_mhz: float,
                 floor_us: float = MIN_AHEAD_US) -> int:
    """GPU sleep (SM cycles) before the start event: the whole window where it is no
    longer than `floor_us`; past that, long enough to hide the host's launch of one sample
    of `calls` calls (`host_ns` per call, from the worker's recent samples, with a margin),
    at least `floor_us` and never longer than the window. A short window is slept whole,
    as the contest's flush lasts it whole: a sleep sized from recent launches counted a
    launch that took longer once (a slow Python call, a page fault), which the contest
    hides. A long one (the 20 ms of the nvfp4 and mxfp4 contests) is not slept whole
    before every sample, which would cost its length each time. A submission that reports
    a long host time only makes its own evaluation slower: what is hidden is bounded by
    the window."""
    if window_us <= 0:
        return 0
    sized = AHEAD_MARGIN * calls * host_ns / 1e3 + AHEAD_EXTRA_US
    return int(min(window_us, max(floor_us, sized)) * sm_mhz)
