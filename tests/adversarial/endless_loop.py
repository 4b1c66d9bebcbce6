"""Fault: an endless loop. Caught by: the phase's time limit (timed out; the worker's
process group is killed)."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x = 0
    while True:
        x += 1
