"""Integrity checks the judge makes: two clocks, and the physics floor."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.consts import Status
from harness.durations import micros
from harness.settings import load_gpu_table

# Judge-clock gap (µs) a sample may show beyond the calibration: the CPU's host clock and
# round trips are noisier by an order of magnitude...
GAP_ABS_US = {"cuda": 100, "cpu": 1000}
# ...or this share of the judge's own estimate of a call, whichever is more.
GAP_REL = 0.5
# µs by which a case's calibration may exceed the one made before the submission's import.
CALIBRATION_SLACK_US = {"cuda": 200, "cpu": 2000}
# A two-clock flag seen on fewer samples is checked again on this many: one stall of the
# host in one of two probes flags honest code, while work outside the timed region shows
# on every probe. At least 3, or the low-gap rule would judge on one sample.
CONFIRM_PROBES = 5


@dataclass
class Calibration:
    """The harness's own per-call overhead: judge round trip minus reported time."""

    median_ns: float
    p90_ns: float
    calls: int
    worker_says: dict[str, float] = field(default_factory=dict)  # its breakdown: diagnostics

    @classmethod
    def from_gaps(cls, gaps: list[float],
                  worker_says: dict[str, float] | None = None) -> Calibration:
        """From the no-op calls' gaps (and the medians of the worker's own account of them,
        kept beside the probes' to show where a difference lies; never read by a check)."""
        median, p90 = _median_p90(gaps)
        return cls(median, p90, len(gaps), dict(worker_says or {}))


def _median_p90(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]  # of ten, the second largest: one stall
    return statistics.median(ordered), p90  # does not widen the check


@dataclass
class ClockCheck:
    """The two clocks compared for one case."""

    flagged: bool
    gap_median_ns: float
    gap_p90_ns: float
    expected_gap_ns: float
    allowed_excess_ns: float
    judge_mean_ns: float
    message: str = ""
    gap_low_ns: float = 0.0  # the quarter-quantile gap (the low-gap rule reads it)
    strict_excess_ns: float = 0.0  # the allowance without the calibration's spread
    rule: str = ""  # what flagged it: "median" or "low gaps"

    @property
    def suspect(self) -> bool:
        """Flagged, or its low gap above the allowance without the spread: on few samples,
        a reason to take more (`confirmed_clocks`)."""
        return self.flagged or self.gap_low_ns - self.expected_gap_ns > self.strict_excess_ns

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clock_samples(window_us: float, probes: list, timed: list) -> list:
    """The samples whose two clocks may be compared. Behind a hidden window the judge's
    round trip holds the GPU sleep that the reported time leaves out by design, so only
    probes (no sleep) count there; without a window, every timed sample."""
    return probes if window_us > 0 else timed


def check_clocks(
    reported: list[float], roundtrip: list[float], calibration: Calibration,
    device_kind: str, per: int = 1, low_rule: bool = True,
) -> ClockCheck:
    """Flag work done outside the timed region: a round trip longer than calibrated.

    `reported` and `roundtrip` are per sample (`per` calls each). The judge's estimate of a
    sample's time is its round trip minus the calibrated overhead. The median gap may
    exceed the calibration by the calibration's own spread (three times its p90 above its
    median): a noisy host. But stalls only ever lengthen a round trip, and two stalls among
    the calibration's ten no-ops widen that spread by milliseconds (the CPU machine with
    both cores busy: a 3 ms sleep outside the timed region passed unflagged in 5 of 6
    phases, docs/benchmarks.md). So where there are `CONFIRM_PROBES` samples or more, the
    low gaps are also held to the allowance without the spread: the gap a quarter of the
    samples reach or undercut (not the least one, which one honest sample would set).
    Work outside the timed region lengthens every sample it runs in; noise leaves many
    short. `low_rule=False` holds the median alone (the scored samples behind a window,
    whose sleep the judge can only bound from below).
    """
    gaps = [r - t for r, t in zip(roundtrip, reported)]
    gap = statistics.median(gaps)
    judge = [max(r - calibration.median_ns, 0.0) for r in roundtrip]
    judge_mean = statistics.fmean(judge)
    # The allowance scales with the judge's own estimate of a call (which the submission
    # cannot forge), not with the reported time (which it can).
    spread = max(calibration.p90_ns - calibration.median_ns, 0.0)
    strict = max(GAP_ABS_US[device_kind] * 1e3, GAP_REL * statistics.median(judge))
    allowed = max(strict, 3 * spread)
    excess = gap - calibration.median_ns
    ordered = sorted(gaps)
    low = ordered[math.ceil(len(ordered) / 4) - 1]
    low_rule = (low_rule and len(gaps) >= CONFIRM_PROBES
                and low - calibration.median_ns > strict)
    unit = "per call" if per == 1 else f"per sample of {per} calls"
    message, rule = "", ""
    if excess > allowed:
        rule = "median"
        message = (
            f"the judge's clock saw {micros(excess, 1)} more {unit} than the reported time "
            f"explains (allowed {micros(allowed, 1)}): work may run outside the timed region; "
            f"judge-clock mean {micros(judge_mean)} {unit}"
        )
    elif low_rule:
        rule = "low gaps"
        message = (
            f"the judge's clock saw {micros(low - calibration.median_ns, 1)} or more {unit} "
            f"than the reported time explains on {len(gaps) - ordered.index(low)} of "
            f"{len(gaps)} samples (allowed {micros(strict, 1)}; a noisy calibration allowed "
            f"{micros(allowed, 1)} on the median): work may run outside the timed region; "
            f"judge-clock mean {micros(judge_mean)} {unit}"
        )
    p90 = ordered[min(len(gaps) - 1, int(0.9 * len(gaps)))]
    return ClockCheck(bool(rule), gap, p90, calibration.median_ns, allowed, judge_mean, message,
                      low, strict, rule)


def confirmed_clocks(
    checked: list[dict], per: int, calibration: Calibration, device_kind: str,
    more: Callable[[], dict | None], anyone: Callable[[bool], bool] = bool,
) -> tuple[ClockCheck | None, list[dict]]:
    """The two-clock check on the `checked` samples (replies with the reported `ns` per
    call and the judge's round trip `rt` for `per` calls), and the samples it ran on.

    A flag raised on fewer than `CONFIRM_PROBES` samples is checked again with
    more probes from `more` (None once no time is left): with two probes, one stall of the
    host in one of them is a flag, while work outside the timed region shows on every
    probe and stays flagged. So is a suspect check (`ClockCheck.suspect`: low gaps above
    the allowance without the spread, which the low-gap rule reads only on that many).
    `anyone`: whether more probes are taken, from this judge's wish (for a multi-GPU case's
    rank: whether any rank wishes so, since every rank makes the same calls).
    """
    def check(samples: list[dict]) -> ClockCheck | None:
        if not samples:
            return None
        return check_clocks([float(r["ns"]) * per for r in samples], [r["rt"] for r in samples],
                            calibration, device_kind, per)

    clocks = check(checked)
    if not anyone(clocks is not None and clocks.suspect and len(checked) < CONFIRM_PROBES):
        return clocks, checked
    checked = list(checked)
    while len(checked) < CONFIRM_PROBES:
        reply = more()
        if reply is None:
            break
        checked.append(reply)
    return check(checked), checked


def calibration_disturbed(
    before_import: Calibration, per_case: Calibration, device_kind: str,
    outside_ns: float = 0.0,
) -> str:
    """A reason when the per-case calibration is far above the one made before import.

    The per-case no-op also does a sample's work outside the timed region (copying its
    outputs, refreshing its inputs' CPU tensors); `outside_ns` is the judge's own time
    for that work.
    """
    excess = per_case.median_ns - before_import.median_ns
    spread = max(before_import.p90_ns - before_import.median_ns, 0.0)
    if excess > CALIBRATION_SLACK_US[device_kind] * 1e3 + 3 * outside_ns + 3 * spread:
        return (
            f"the harness's own overhead grew by {micros(excess, 0)} after the submission "
            "was imported (something slows the harness's no-op calls)"
        )
    return ""


def noise_flagged(integrity: dict[str, Any]) -> list[str]:
    """The checks that flagged a timed case (from its `integrity` record) and that a slow
    spell of the host can trip in honest code: the two clocks, on the probes or on the
    scored samples, a calibration above the one made before the import. The others (a thread left running, a fill the submission's memory kept
    out, the physics floor) say what the submission does, not how fast the host ran."""
    checks = ("clocks", "scored_clocks")
    names = [name for name in checks if (integrity.get(name) or {}).get("flagged")]
    if integrity.get("calibration_disturbed"):
        names.append("calibration_disturbed")
    return names


def retry_reason(result: Any) -> list[str]:
    """The noise checks that flagged a passed case, where each of its flags is one of them
    (each adds one): such a case is timed again (`sampling.NOISE_RETRIES`). None where
    another flag says what the submission does: that one stands as it is."""
    checks = noise_flagged(result.integrity)
    if not checks or result.status != Status.PASSED or len(result.flags) != len(checks):
        return []
    return checks


def hidden_ns(integrity: dict[str, Any], per: int) -> float:
    """Per call: the most that a flagged two-clock check of the case saw beyond what it
    expected, the work it read as off the clock."""
    seen = [check["gap_median_ns"] - check["expected_gap_ns"]
            for check in (integrity.get(name) or {} for name in ("clocks", "scored_clocks"))
            if check.get("flagged")]
    return max(seen, default=0.0) / per


def moved_into_the_clock(flagged: Any, again: Any, per: int) -> str:
    """A reason, where a case timed again after a flag shows the flagged work inside the
    timed region instead: its calls' median event time rose by half or more of what the
    flag saw off the clock, by a quarter of its own, and by more than a call's whole host
    time (the worker's clock around a call, on either attempt). A slow spell of the host
    reaches the event times only through the host time they hold (launches the window
    does not hide, a call that waits for the GPU; on the CPU, all of it), so it cannot
    raise them by more; a submission that hid GPU work until a flag, then turned honest
    once it saw the case timed again, moves that work there. Its first attempt's flags
    then stand. Not a barrier to a better score (the retry is checked as any attempt,
    and an honest one scores honestly), only to a clean record: a submission that turns
    partly honest, or pads its first attempt, evades it."""
    hidden = hidden_ns(flagged.integrity, per)
    before = (flagged.stats or {}).get("median")
    after = (again.stats or {}).get("median")
    if hidden <= 0 or before is None or after is None:
        return ""
    rise = after - before
    host = max(flagged.host_launch_ns or 0.0, again.host_launch_ns or 0.0)
    if rise < 0.5 * hidden or rise < 0.25 * before or rise <= host:
        return ""
    return (f"timed again after a flag, the calls' own time rose from {before / 1e3:.2f} to "
            f"{micros(after)} per call, half or more of the {micros(hidden, 1)} the "
            "flag saw outside the timed region: the work moved into it, so the first "
            "attempt's flags stand")


def attempt_record(case_result: Any, checks: list[str]) -> dict[str, Any]:
    """What an attempt of a timed case that is timed again leaves in the record
    (`integrity.retried`): its flags, score, statistics, the checks' figures and its
    timing loop's seconds."""
    integrity = case_result.integrity
    return {"flagged_by": checks, "flags": list(case_result.flags),
            "score_ns": case_result.score_ns, "stats": case_result.stats,
            "checked_calls": case_result.checked_calls,
            **{name: integrity[name] for name in ("clocks", "scored_clocks", "calibration",
                                                  "worker_says", "timing_seconds")
               if name in integrity}}


@dataclass
class Floor:
    """The speed-of-light time of a case on a GPU."""

    ns: float
    compute_ns: float
    memory_ns: float
    gpu: str


def find_gpu(name: str, table: dict[str, dict[str, Any]] | None = None) -> tuple[str, dict] | None:
    """The table entry whose key appears in the device name (longest key first)."""
    table = table if table is not None else load_gpu_table()
    upper = name.upper()
    for key in sorted(table, key=len, reverse=True):
        if key.upper() in upper:
            return key, table[key]
    return None


def physics_floor(
    work: dict[str, float], device_name: str, dtype: str, table: dict | None = None
) -> Floor | None:
    """FLOPs over the peak rate or bytes over bandwidth, whichever is larger."""
    found = find_gpu(device_name, table)
    if found is None:
        return None
    key, entry = found
    rate = float(entry["tflops"].get(dtype, max(entry["tflops"].values()))) * 1e12
    compute = float(work.get("flops", 0)) / rate * 1e9
    memory = float(work.get("bytes", 0)) / (float(entry["bandwidth_tbs"]) * 1e12) * 1e9
    return Floor(max(compute, memory), compute, memory, key)


def clock_note(case: dict, reading: dict, ratio: float) -> tuple[dict, str]:
    """The SM clock as a case's timed calls ended, and a warning when it was throttled.

    `reading` is one of `devices.ClockReading` (empty when unreadable)."""
    if not reading:
        return {}, ""
    record = {"end": reading.get("sm_mhz"), "max": reading.get("sm_max_mhz"),
              "power_w": reading.get("power_w"), "temp_c": reading.get("temp_c")}
    top, end = reading.get("sm_max_mhz"), reading.get("sm_mhz")
    if top and end and end < ratio * top:
        return record, (f"the SM clock was {end:.0f} MHz (max {top:.0f}) at the end of the timed "
                        f"calls of case {case}: the GPU throttled, so its times may be slow")
    return record, ""
