"""Attack: patch the host clock the worker times with, so a 10 ms call reports 1 µs.
Caught by: the worker, which took its clock before the import (the patch changes only the
submission's own); the judge's own clock besides; and the static screen (patches-timing,
hard)."""
import time

from task import input_t, output_t

_fake = {"t": 0}


def _perf_counter_ns():
    _fake["t"] += 1000
    return _fake["t"]


time.perf_counter_ns = _perf_counter_ns


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    time.sleep(0.01)  # far above any allowance a busy host's calibration spread earns
    return a + b
