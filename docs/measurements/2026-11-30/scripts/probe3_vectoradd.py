"""Session diagnostic (run 46): inside the harness's worker, one call per sample, where
does the host time of vectoradd's torch call go? Every call times its own parts: the add
(`A + B`), the copy into the output, then a second add right after (warm). Every other
call first runs a tiny torch op (an add on a 1-element GPU tensor) before those, to see
whether a warmed launch path is faster. Every 64 calls of a shape it prints the medians
of the last 64 calls, per kind of call."""
import statistics
import time

import torch

_tiny = None
_log: dict = {}


def custom_kernel(data):
    global _tiny
    A, B, output = data
    if _tiny is None:
        _tiny = torch.zeros(1, device=A.device)
    n = sum(len(v) for k, v in _log.items() if k[0] == A.shape[0])
    warm = n % 2 == 1
    if warm:
        _tiny.add_(1)
    t0 = time.perf_counter_ns()
    tmp = A + B
    t1 = time.perf_counter_ns()
    output[...] = tmp
    t2 = time.perf_counter_ns()
    again = A + B
    t3 = time.perf_counter_ns()
    del again
    entry = _log.setdefault((A.shape[0], warm), [])
    entry.append(((t1 - t0) / 1e3, (t2 - t1) / 1e3, (t3 - t2) / 1e3))
    if len(entry) % 64 == 0:
        last = entry[-64:]
        med = [statistics.median(x[i] for x in last) for i in range(3)]
        print(f"PROBE {A.shape[0]} {'warmed' if warm else 'as is '}: add {med[0]:.1f} µs, "
              f"copy {med[1]:.1f} µs, second add {med[2]:.1f} µs", flush=True)
    return output
