import pytest

from harness.judging.measure.integrity import (
    CONFIRM_PROBES,
    Calibration,
    calibration_disturbed,
    check_clocks,
    clock_note,
    clock_samples,
    confirmed_clocks,
    find_gpu,
    physics_floor,
)

CAL = Calibration(median_ns=50_000, p90_ns=55_000, calls=40)


def test_honest_gaps_are_not_flagged():
    reported = [1_000_000.0] * 50
    roundtrip = [r + 52_000 for r in reported]
    check = check_clocks(reported, roundtrip, CAL, "cuda")
    assert not check.flagged
    assert check.judge_mean_ns == pytest.approx(1_002_000)


def test_hidden_work_is_flagged_and_timed_by_the_judge():
    reported = [10_000.0] * 50  # the timer saw 10 µs...
    roundtrip = [10_000 + 50_000 + 400_000.0] * 50  # ...the judge waited 400 µs more
    check = check_clocks(reported, roundtrip, CAL, "cuda")
    assert check.flagged and "outside the timed region" in check.message
    assert check.judge_mean_ns == pytest.approx(410_000)


def _probe(extra_ns: float = 0.0) -> dict:
    """A probe of 15 calls of 100 µs: the round trip holds them, the calibrated overhead
    and `extra_ns` more."""
    return {"ns": 100_000.0, "rt": 15 * 100_000.0 + 50_000 + extra_ns}


class _More:
    """The judge's source of more probes (a fake): each call takes one from a list."""

    def __init__(self, replies: list) -> None:
        self.replies, self.calls = list(replies), 0

    def __call__(self):
        self.calls += 1
        return self.replies.pop(0) if self.replies else None


def test_a_flag_on_two_probes_is_confirmed_on_more():
    """One stall of the host (50 ms) in one of two probes flags alone (the median of two
    is their mean); three more honest probes clear it."""
    more = _More([_probe(), _probe(), _probe()])
    clocks, checked = confirmed_clocks([_probe(), _probe(50e6)], 15, CAL, "cuda", more)
    assert len(checked) == CONFIRM_PROBES and more.calls == CONFIRM_PROBES - 2
    assert not clocks.flagged


def test_work_outside_the_timed_region_stays_flagged_after_confirmation():
    more = _More([_probe(3e6)] * 3)  # 200 µs of hidden work in every call
    clocks, checked = confirmed_clocks([_probe(3e6), _probe(3e6)], 15, CAL, "cuda", more)
    assert clocks.flagged and len(checked) == 5
    assert clocks.judge_mean_ns == pytest.approx(15 * 100_000 + 3e6)


def test_no_time_left_keeps_the_flag_on_the_probes_taken():
    more = _More([])
    clocks, checked = confirmed_clocks([_probe(), _probe(50e6)], 15, CAL, "cuda", more)
    assert clocks.flagged and len(checked) == 2 and more.calls == 1


def test_no_flag_or_enough_probes_take_no_more():
    more = _More([_probe()] * 5)
    clocks, checked = confirmed_clocks([_probe(), _probe()], 15, CAL, "cuda", more)
    assert not clocks.flagged and more.calls == 0
    many = [_probe(3e6)] * CONFIRM_PROBES
    clocks, checked = confirmed_clocks(many, 15, CAL, "cuda", more)
    assert clocks.flagged and more.calls == 0 and len(checked) == CONFIRM_PROBES
    assert confirmed_clocks([], 15, CAL, "cuda", more) == (None, [])


def test_allowance_grows_with_the_reported_time():
    reported = [10_000_000.0] * 20
    roundtrip = [r + 50_000 + 1_500_000 for r in reported]  # 15% extra: within 25%
    assert not check_clocks(reported, roundtrip, CAL, "cuda").flagged


def test_calibration_disturbed_after_import():
    assert not calibration_disturbed(CAL, Calibration(60_000, 70_000, 40), "cuda")
    assert calibration_disturbed(CAL, Calibration(2_000_000, 2_100_000, 40), "cuda")
    assert not calibration_disturbed(CAL, Calibration(2_000_000, 2_100_000, 40), "cuda",
                                     outside_ns=700_000)
    # the CPU's slack is wider: its no-ops vary by milliseconds
    assert not calibration_disturbed(CAL, Calibration(2_000_000, 2_100_000, 40), "cpu")


def test_physics_floor_takes_the_larger_bound():
    table = {"H200": {"bandwidth_tbs": 4.0, "tflops": {"bf16": 1000}}}
    floor = physics_floor({"flops": 2e12, "bytes": 4e9}, "NVIDIA H200", "bf16", table)
    assert floor.compute_ns == pytest.approx(2e6) and floor.memory_ns == pytest.approx(1e6)
    assert floor.ns == pytest.approx(2e6) and floor.gpu == "H200"


def test_unknown_gpu_gets_no_floor():
    assert physics_floor({"flops": 1, "bytes": 1}, "Mystery GPU 9000", "bf16") is None


@pytest.mark.parametrize("name,key", [("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100"),
                                      ("NVIDIA B200", "B200"), ("AMD Instinct MI300X", "MI300X"),
                                      ("AMD Instinct MI355X", "MI355X"), ("NVIDIA A100-SXM4-80GB", "A100"),
                                      ("NVIDIA L4", "L4"), ("Tesla T4", "T4")])
def test_gpu_table_covers_the_common_gpus(name, key):
    assert find_gpu(name)[0] == key


def test_clock_note_records_the_clock_and_warns_only_when_throttled():
    full = {"sm_mhz": 1980.0, "sm_max_mhz": 1980.0, "power_w": 300.0, "temp_c": 40.0}
    record, warning = clock_note({"size": 1}, full, 0.9)
    assert record["end"] == record["max"] == 1980.0 and warning == ""
    record, warning = clock_note({"size": 1}, dict(full, sm_mhz=1400.0), 0.9)
    assert record["end"] == 1400.0 and "throttled" in warning and "1400 MHz" in warning
    assert clock_note({}, {}, 0.9) == ({}, "")  # nvidia-smi unreadable: nothing said


def test_clocks_are_compared_on_probes_only_behind_a_hidden_window():
    """A sample behind a hidden window has the GPU sleep on the judge's clock and not in
    the reported time (by design): comparing its clocks would flag honest code (it did,
    for the nvfp4 Triton example on the H200, whose few long samples held no probe)."""
    probes, timed = ["probe"], ["hidden-1", "hidden-2"]
    assert clock_samples(20000.0, probes, timed) == ["probe"]
    assert clock_samples(20000.0, [], timed) == []
    assert clock_samples(0.0, [], timed) == timed


def test_one_stall_in_ten_calibration_gaps_is_not_their_p90():
    """Heavy no-ops stop at ten (CALIBRATION_MIN_CALLS): a stall among them must not
    become the spread that widens the two-clock check's allowance threefold."""
    calibration = Calibration.from_gaps([25e6] * 9 + [75e6])
    assert calibration.median_ns == 25e6 and calibration.p90_ns == 25e6
    assert Calibration.from_gaps([1.0, 2.0]).p90_ns == 1.0
    assert Calibration.from_gaps(list(range(40))).p90_ns == 35


NOISY = Calibration(median_ns=200_000, p90_ns=4_700_000, calls=10)  # two stalls of ten (CPU, loaded)


def test_a_noisy_calibration_does_not_hide_work_outside_the_timed_region():
    """Two stalls among ten no-ops put the calibration's p90 4.5 ms above its median, so
    the median rule allows 13.5 ms; a 3 ms sleep outside the timed region on every sample
    still shows on the low gaps (the CPU machine under load: 5 of 6 phases passed)."""
    reported = [1_000.0] * 12  # the patched timer says 1 µs...
    roundtrip = [1_000 + 200_000 + 3_000_000 + 40_000 * k for k in range(12)]  # ...3 ms more
    check = check_clocks(reported, roundtrip, NOISY, "cpu")
    assert check.flagged and check.rule == "low gaps" and "on 10 of 12 samples" in check.message
    assert check.allowed_excess_ns > 13e6  # the median rule alone would have let it pass


def test_the_median_rule_alone_where_asked():
    """low_rule=False (the scored samples behind a window): the low gaps are not held to
    the allowance without the spread; the median rule still applies."""
    reported = [1_000.0] * 12
    roundtrip = [1_000 + 200_000 + 3_000_000 + 40_000 * k for k in range(12)]
    assert not check_clocks(reported, roundtrip, NOISY, "cpu", low_rule=False).flagged
    far = [r + 20_000_000 for r in roundtrip]
    assert check_clocks(reported, far, NOISY, "cpu", low_rule=False).rule == "median"


def test_one_honest_sample_does_not_clear_the_low_gaps():
    """A cheater who behaves on one sample of twelve (a probe it recognised, say): the
    least gap is honest, the quarter quantile is not."""
    reported = [1_000.0] * 12
    roundtrip = [1_000 + 200_000 + (0 if k == 5 else 3_000_000) for k in range(12)]
    check = check_clocks(reported, roundtrip, NOISY, "cpu")
    assert check.flagged and check.rule == "low gaps" and "on 11 of 12 samples" in check.message


def test_a_suspect_low_gap_on_few_probes_takes_more_and_the_unit_is_a_sample():
    """nvfp4's long samples give a case two or three probes: under a noisy calibration a
    low gap above the strict allowance is not yet a flag, but takes more probes; work
    outside the timed region then flags, per sample of 15 calls."""
    noisy = Calibration(median_ns=50_000, p90_ns=5_000_000, calls=10)
    more = _More([_probe(3e6)] * 3)
    clocks, checked = confirmed_clocks([_probe(3e6), _probe(3e6)], 15, noisy, "cuda", more)
    assert more.calls == 3 and len(checked) == 5
    assert clocks.flagged and clocks.rule == "low gaps" and "per sample of 15 calls" in clocks.message
    honest = _More([_probe()] * 3)  # two stalled probes first, then three honest ones
    clocks, checked = confirmed_clocks([_probe(3e6), _probe(3e6)], 15, noisy, "cuda", honest)
    assert honest.calls == 3 and not clocks.flagged


def test_a_noisy_host_with_some_short_gaps_is_not_flagged():
    reported = [1_000_000.0] * 12
    roundtrip = [r + 200_000 + (4_000_000 if k % 2 else 0) for k, r in enumerate(reported)]
    assert not check_clocks(reported, roundtrip, NOISY, "cpu").flagged


def test_the_least_gap_needs_enough_samples_to_speak():
    reported = [1_000.0] * (CONFIRM_PROBES - 1)
    roundtrip = [1_000 + 200_000 + 3_000_000.0] * len(reported)
    assert not check_clocks(reported, roundtrip, NOISY, "cpu").flagged  # confirmed on more


