"""The statistics of `runner.py compare` (harness/results/comparison.py) on fixed data."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from harness.results.comparison import (
    Interval,
    compare_pairs,
    ratio_interval,
    should_stop,
    t_quantile,
    verdict,
)


@pytest.mark.parametrize("confidence,df,expected", [
    (0.95, 1, 12.7062), (0.95, 2, 4.3027), (0.95, 3, 3.1824), (0.95, 9, 2.2622),
    (0.95, 30, 2.0423), (0.999, 2, 31.5991), (0.999, 9, 4.7809), (0.99, 5, 4.0321),
])
def test_t_quantiles_match_the_tables(confidence, df, expected):
    assert t_quantile(confidence, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_refuses_what_has_none():
    for confidence, df in ((0.95, 0), (1.0, 3), (0.0, 3)):
        with pytest.raises(ValueError):
            t_quantile(confidence, df)


def test_ratio_interval_by_hand():
    ratios = [1.02, 1.03, 1.01, 1.025]
    logs = [math.log(r) for r in ratios]
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = 3.182446305 * sd / 2  # t(0.975, 3) * sd / sqrt(4)
    iv = ratio_interval(ratios)
    assert iv.ratio == pytest.approx(math.exp(mean))
    assert iv.low == pytest.approx(math.exp(mean - half))
    assert iv.high == pytest.approx(math.exp(mean + half))
    assert iv.excludes_one() and iv.low > 1


def test_ratio_interval_needs_two_positive_ratios():
    with pytest.raises(ValueError, match="two pairs"):
        ratio_interval([1.0])
    with pytest.raises(ValueError, match="above 0"):
        ratio_interval([1.0, 0.0])


def test_a_drift_shared_by_a_pair_cancels():
    """The host slows down over the runs, by up to 2x, but B is 10% slower than A in every
    pair: the ratio is exactly 1.1, with no width."""
    a = [[100.0 * k, 200.0 * k] for k in (1.0, 1.5, 2.0, 1.2)]
    b = [[t * 1.1 for t in pair] for pair in a]
    c = compare_pairs(a, b)
    assert c.pairs == 4
    for iv in [*c.cases, c.geomean]:
        assert (iv.ratio, iv.low, iv.high) == pytest.approx((1.1, 1.1, 1.1))


def test_the_geomean_is_over_each_pairs_geomean():
    """Case 0 of B is 20% slower, case 1 is 20% faster (in every pair but with noise): the
    geometric mean is near 1, and its interval comes from the pairs' geomeans."""
    a = [[100.0, 100.0]] * 3
    b = [[120.0, 1 / 1.2 * 100.0], [121.0, 1 / 1.21 * 100.0], [119.0, 1 / 1.19 * 100.0]]
    c = compare_pairs(a, b)
    assert c.cases[0].low > 1 and c.cases[1].high < 1
    assert c.geomean.ratio == pytest.approx(1.0)
    assert c.geomean.low == pytest.approx(1.0) and c.geomean.high == pytest.approx(1.0)
    direct = ratio_interval([math.sqrt(rb[0] / ra[0] * rb[1] / ra[1]) for ra, rb in zip(a, b)])
    assert c.geomean == direct


def test_compare_pairs_needs_one_run_of_each_per_pair():
    with pytest.raises(ValueError):
        compare_pairs([[1.0], [1.0]], [[1.0]])
    with pytest.raises(ValueError):
        compare_pairs([[1.0, 2.0], [1.0, 2.0]], [[1.0], [1.0]])  # a case missing


def test_should_stop_waits_for_the_minimum_and_stops_at_the_last():
    clear_a, clear_b = [[100.0]] * 5, [[150.0], [151.0], [149.0], [150.5], [150.0]]
    assert not should_stop(clear_a[:2], clear_b[:2], None, 3, 10)  # below the minimum
    assert should_stop(clear_a[:3], clear_b[:3], None, 3, 10)  # settled at the minimum
    noisy_a, noisy_b = [[100.0]] * 3, [[90.0], [112.0], [101.0]]
    assert not should_stop(noisy_a, noisy_b, None, 3, 10)
    assert should_stop(noisy_a, noisy_b, None, 3, 3)  # the last pair


def test_an_interim_look_asks_for_more_than_95_percent():
    """Three pairs whose 95% interval excludes 1 but whose 99.9% interval does not: the
    runs go on (an early stop at 95% would be wrong too often over several looks)."""
    a, b = [[100.0]] * 3, [[103.0], [105.0], [104.0]]
    assert compare_pairs(a, b).geomean.excludes_one()
    assert not should_stop(a, b, None, 3, 10)


def test_a_threshold_settles_an_interval_within_it():
    a, b = [[100.0]] * 4, [[100.2], [99.9], [100.1], [99.95]]
    assert not should_stop(a, b, None, 3, 10)
    assert should_stop(a, b, 0.05, 3, 10)


@pytest.mark.parametrize("interval,threshold,words", [
    (Interval(0.969, 0.960, 0.978), None, "B is 3.1% faster than A (95% CI 2.2% to 4.0%)"),
    (Interval(1.020, 1.010, 1.030), None, "B is 2.0% slower than A (95% CI 1.0% to 3.0%)"),
    (Interval(0.999, 0.988, 1.009), None,
     "no difference detectable at this noise (95% CI -1.2% to +0.9%)"),
    (Interval(0.999, 0.995, 1.004), 0.01,
     "no difference larger than 1% (95% CI -0.5% to +0.4%)"),
    (Interval(1.002, 1.001, 1.004), 0.01,  # within the threshold: that answers it
     "no difference larger than 1% (95% CI +0.1% to +0.4%)"),
    (Interval(22.4, 15.15, 33.18), None, "B is 22.4 times slower than A (95% CI 15.2 to 33.2 times)"),
    (Interval(0.25, 0.2, 0.3125), None, "B is 4.0 times faster than A (95% CI 3.2 to 5.0 times)"),
    (Interval(0.999, 0.980, 1.015), 0.01,
     "no difference detectable at this noise (95% CI -2.0% to +1.5%)"),
])
def test_verdicts_in_words(interval, threshold, words):
    assert verdict(interval, threshold) == words


def _sequential(rng: random.Random, change: float, sigma: float, runs: int = 10,
                min_runs: int = 3) -> Interval:
    """One simulated compare: per pair, the log of B's time over A's is normal around
    log(1 + change) with `sigma`; the 95% interval where it stopped."""
    a, b = [], []
    while True:
        a.append([1.0])
        b.append([math.exp(rng.gauss(math.log(1 + change), sigma))])
        if should_stop(a, b, None, min_runs, runs):
            return compare_pairs(a, b).geomean


@pytest.mark.slow
def test_the_looks_together_keep_the_error_near_five_percent():
    """Copies (no change) over many simulated compares of up to 10 pairs, looking after
    each from the third: about 5% read a difference (95% intervals at every look read
    one in about 16%)."""
    rng = random.Random(20261203)
    wrong = sum(_sequential(rng, 0.0, 0.02).excludes_one() for _ in range(2000))
    assert wrong / 2000 < 0.07


def test_a_two_percent_change_is_found_where_pairs_vary_by_one_percent():
    rng = random.Random(7)
    results = [_sequential(rng, 0.02, 0.01) for _ in range(500)]
    right = sum(iv.low > 1 for iv in results)
    assert right / 500 > 0.95
    assert not any(iv.high < 1 for iv in results)  # never the wrong way round
