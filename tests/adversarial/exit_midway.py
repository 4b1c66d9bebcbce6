"""Fault: os._exit(0) in the middle of the run (after a few good calls). Caught by: the
worker's end is noticed at once (crashed)."""
import os

from task import input_t, output_t

_calls = [0]


def custom_kernel(data: input_t) -> output_t:
    _calls[0] += 1
    if _calls[0] > 3:
        os._exit(0)
    a, b = data
    return a + b
