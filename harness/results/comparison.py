"""Is B faster than A? Paired runs read together (`runner.py compare`; docs/compare.md).

A and B run in turn, each run in a fresh worker, in pairs of adjacent runs (A B, B A, A B,
...). The unit is a pair's ratio of B's case mean to A's: per case, and the geometric mean
over the cases. An interval for the ratio is Student's t-interval on the logs of the pairs'
ratios: the runs move with the host's speed minutes apart (views/repeats.py), and two
adjacent runs share most of that drift, which the ratio cancels; with 3 to 10 pairs the
t-interval's width says how little a few runs tell (a bootstrap over so few would not).

The command looks at the interval after every pair past a minimum; an interim look stops
only on a 99.9% interval, the last on 95% (Haybittle and Peto's rule), so that the looks
together are wrong about as often as one 95% interval would be.

Pure logic: no processes, no printing.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass

from harness.scores import combine

CONFIDENCE = 0.95  # the interval reported, and the last look's
INTERIM_CONFIDENCE = 0.999  # an earlier look stops only where this interval settles


@dataclass(frozen=True)
class Interval:
    """A ratio of B's time to A's, with the bounds of its confidence interval."""

    ratio: float
    low: float
    high: float

    def excludes_one(self) -> bool:
        """Whether the interval says which of the two is faster."""
        return self.high < 1.0 or self.low > 1.0

    def within(self, threshold: float | None) -> bool:
        """Whether the whole interval lies within 1 ± `threshold` (never, without one)."""
        return threshold is not None and 1 - threshold <= self.low and self.high <= 1 + threshold

    def settles(self, threshold: float | None) -> bool:
        """Whether the interval answers the question: it excludes 1, or it lies within
        the threshold."""
        return self.excludes_one() or self.within(threshold)

    def to_list(self) -> list[float]:
        return [self.low, self.high]


@dataclass(frozen=True)
class Comparison:
    """Per case and over the cases (their geometric mean): B's time over A's."""

    cases: list[Interval]
    geomean: Interval
    pairs: int


@functools.cache  # a few (confidence, df) pairs, asked at every look
def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student t quantile: |T| < t with probability `confidence`, for `df`
    degrees of freedom (a whole number, 1 or more)."""
    if not 0 < confidence < 1 or df < 1:
        raise ValueError(f"no t quantile for confidence {confidence}, df {df}")
    low, high = 0.0, math.pi / 2  # bisection on theta = atan(t / sqrt(df)): bounded
    for _ in range(200):
        mid = (low + high) / 2
        if _t_two_sided(mid, df) < confidence:
            low = mid
        else:
            high = mid
    return math.sqrt(df) * math.tan((low + high) / 2)


def _t_two_sided(theta: float, df: int) -> float:
    """P(|T| < sqrt(df) tan(theta)) for Student's t with `df` degrees of freedom, in closed
    form (Abramowitz and Stegun 26.7.3 and 26.7.4)."""
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):  # (1·3···(2k-1)) / (2·4···2k) cos^(2k)
            term *= c * c * (2 * k - 1) / (2 * k)
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = c, c
    for k in range(1, (df - 1) // 2):  # (2·4···2k) / (3·5···(2k+1)) cos^(2k+1)
        term *= c * c * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + s * total)


def ratio_interval(ratios: list[float], confidence: float = CONFIDENCE) -> Interval:
    """The geometric mean of paired ratios, with the t-interval of their logs (two or more
    ratios, each above 0)."""
    if len(ratios) < 2:
        raise ValueError("an interval needs two pairs or more")
    if min(ratios) <= 0:
        raise ValueError(f"a ratio of times must be above 0, not {min(ratios)}")
    centre = combine(ratios, "geom")
    logs = [math.log(r) for r in ratios]
    half = t_quantile(confidence, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Interval(centre, centre * math.exp(-half), centre * math.exp(half))


def compare_pairs(a: list[list[float]], b: list[list[float]],
                  confidence: float = CONFIDENCE) -> Comparison:
    """B's time over A's from paired runs: `a[i][c]` and `b[i][c]` are the means of case `c`
    in A's and B's runs of pair `i`. Each case's interval is over its pairs' ratios; the
    geometric mean's is over each pair's geometric mean of its case ratios, so that the
    cases' shared moves (a slow host slows every case of a run) count once."""
    if len(a) != len(b) or not a:
        raise ValueError("one run of A and one of B per pair")
    ratios = [[tb / ta for ta, tb in zip(ra, rb, strict=True)] for ra, rb in zip(a, b)]
    cases = [ratio_interval([pair[c] for pair in ratios], confidence)
             for c in range(len(ratios[0]))]
    overall = ratio_interval([combine(pair, "geom") for pair in ratios], confidence)
    return Comparison(cases, overall, len(ratios))


def should_stop(a: list[list[float]], b: list[list[float]], threshold: float | None,
                min_pairs: int, max_pairs: int) -> bool:
    """Whether to run no more pairs: the last one is done, or, past `min_pairs`, the
    interim interval of the geometric mean settles the question."""
    if len(a) >= max_pairs:
        return True
    if len(a) < max(min_pairs, 2):
        return False
    return compare_pairs(a, b, INTERIM_CONFIDENCE).geomean.settles(threshold)


def verdict(interval: Interval, threshold: float | None = None) -> str:
    """The answer in words, with the interval as B's change in time against A's (past a
    factor of 2, as how many times faster or slower B is)."""
    ci = f"{confidence_words(CONFIDENCE)} {_pct(interval.low - 1)} to {_pct(interval.high - 1)}"
    if interval.within(threshold):
        return f"no difference larger than {threshold * 100:g}% ({ci})"
    if interval.high < 1 and interval.ratio <= 0.5:  # "95% faster" would hide how much
        return (f"B is {1 / interval.ratio:.1f} times faster than A ({confidence_words(CONFIDENCE)} "
                f"{1 / interval.high:.1f} to {1 / interval.low:.1f} times)")
    if interval.low > 1 and interval.ratio >= 2:
        return (f"B is {interval.ratio:.1f} times slower than A ({confidence_words(CONFIDENCE)} "
                f"{interval.low:.1f} to {interval.high:.1f} times)")
    if interval.high < 1:
        return (f"B is {(1 - interval.ratio) * 100:.1f}% faster than A "
                f"({confidence_words(CONFIDENCE)} {(1 - interval.high) * 100:.1f}% to "
                f"{(1 - interval.low) * 100:.1f}%)")
    if interval.low > 1:
        return (f"B is {(interval.ratio - 1) * 100:.1f}% slower than A "
                f"({confidence_words(CONFIDENCE)} {(interval.low - 1) * 100:.1f}% to "
                f"{(interval.high - 1) * 100:.1f}%)")
    return f"no difference detectable at this noise ({ci})"


def confidence_words(confidence: float) -> str:
    """`95% CI` for 0.95."""
    return f"{confidence * 100:g}% CI"


def _pct(change: float) -> str:
    return f"{change * 100:+.1f}%"
