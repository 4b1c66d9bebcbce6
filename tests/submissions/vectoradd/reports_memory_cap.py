#!POPCORN leaderboard vectoradd
"""Honest, and says what it may map: its process's address-space cap and what it maps at
its first call, on stdout (tests/test_adversarial.py reads them from the worker's output)."""
import resource

import torch
from task import input_t, output_t

_told = []


def custom_kernel(data: input_t) -> output_t:
    if not _told:
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        print(f"cap {resource.getrlimit(resource.RLIMIT_AS)[0]} mapped {mapped}", flush=True)
        _told.append(True)
    a, b = data
    return torch.add(a, b)
