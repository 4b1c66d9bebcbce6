"""Attack: run code of the submission while the worker waits for the next call, when the
judge may already have written that call's fresh inputs: replace time.perf_counter and
time.sleep (under an alias) with a hook that computes, for every input buffer seen before
whose bytes have changed, its output in advance; the call returns it. Work there is on
no clock.

As a tracer, what the hook computes is wrong on purpose (the sum plus one): the case fails
if the hook ever ran while a call's fresh inputs were waiting, and passes as honest code
where it never does. Caught by: the worker's polling loop uses the clock and the nap it
took before the import (with the mailbox, on GPU runs); and the screen reads
through the alias (`patches-timing`, hard)."""
import time as _t

from task import input_t, output_t

_clock, _nap = _t.perf_counter, _t.sleep
_entries = []  # [a, b, fingerprint of the inputs when computed, output]


def _fingerprint(a, b):
    return tuple(float(v) for x in (a, b) for v in (x[0], x[x.numel() // 2], x[-1]))


def _ahead():
    for entry in _entries:
        seen = _fingerprint(entry[0], entry[1])
        if seen != entry[2]:
            entry[2], entry[3] = seen, entry[0] + entry[1] + 1


def _hooked_clock():
    _ahead()
    return _clock()


def _hooked_nap(seconds):
    _ahead()
    return _nap(seconds)


_t.perf_counter, _t.sleep = _hooked_clock, _hooked_nap


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    for entry in _entries:
        if entry[0] is a and entry[1] is b:
            if entry[3] is not None and entry[2] == _fingerprint(a, b):
                return entry[3]
            break
    else:
        _entries.append([a, b, None, None])
    return a + b
