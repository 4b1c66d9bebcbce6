"""Session diagnostic (run 44): run 43 read the host time of vectoradd's torch call at
14-23 µs in the harness's worker at import (as in a bare process), but 36-134 µs in the
worker's timed probes. On each case's first call this submission times the same call 200
times (median host time, synchronized after each) on the harness's own buffers (the
judge's arenas, mapped from descriptors) and on private copies of them (torch's memory),
and prints both; then it does the public submission's work."""
import statistics
import time

import torch

_seen = set()


def _host(a, b, o, n=200):
    hosts = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        o[...] = a + b
        hosts.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
    return statistics.median(hosts) / 1e3


def custom_kernel(data):
    A, B, output = data
    if A.shape not in _seen:
        _seen.add(A.shape)
        a, b, o = A.clone(), B.clone(), output.clone()
        torch.cuda.synchronize()
        shared, private = _host(A, B, output), _host(a, b, o)
        shared2, private2 = _host(A, B, output), _host(a, b, o)
        print(f"PROBE {tuple(A.shape)}: harness buffers {shared:.1f} {shared2:.1f} µs, "
              f"torch memory {private:.1f} {private2:.1f} µs", flush=True)
    output[...] = A + B
    return output
