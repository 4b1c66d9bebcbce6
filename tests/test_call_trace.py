"""harness/judging/measure/call_trace.py: the per-sample host account of a traced case."""

from __future__ import annotations

import gc

from harness.judging.measure.call_trace import HostUsage, finite_number, sample_record


def test_host_usage_counts_the_collections_and_faults_between_two_readings():
    usage = HostUsage()
    then = usage.now()
    gc.collect()
    gc.collect()
    touched = bytearray(8 << 20)  # fresh pages: minor faults as they are written
    for i in range(0, len(touched), 4096):
        touched[i] = 1
    seen = usage.since(then)
    assert seen["gc"] == 2
    assert seen["minflt"] > 0
    assert HostUsage().since(HostUsage().now())["gc"] == 0  # one hook however many are made
    hooks = [c for c in gc.callbacks if c.__module__ == HostUsage.__module__]
    assert len(hooks) == 1


def test_only_finite_numbers_are_kept_from_a_reply():
    assert [finite_number(v) for v in (3, 2.5, True, "4", float("nan"), float("inf"), 10**400)] \
        == [3.0, 2.5, None, None, None, None, None]
    record = sample_record({"ns": 5.0, "host_ns": float("inf"), "lead_ns": 7,
                            "trace": {"vcsw": 1, "gc": "many", "cpu_after": float("nan")}},
                           call=3, probe=False, scored=True, started=0.0)
    assert record["lead_ns"] == 7.0 and "host_ns" not in record
    assert record["worker"] == {"vcsw": 1}
