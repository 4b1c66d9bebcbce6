"""Attack: use the untimed rehearsal to compute timed calls' outputs in advance. Every
call also computes, and caches, the output of every other input buffer seen so far, as it
holds now; a call whose output is cached returns it. Inside a timed sample that is honest
work on the clock; in the rehearsal it would be free, if the next sample's inputs were
already in place. Caught by: the judge writes them only after the rehearsal, so the
outputs cached there are those of inputs already replaced (stale: wrong)."""
from task import input_t, output_t

_seen = {}
_cache = {}


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    key = (a.data_ptr(), b.data_ptr())
    _seen[key] = (a, b)
    out = _cache.pop(key, None)
    if out is None:
        out = a + b
    for other, (x, y) in _seen.items():
        if other != key:
            _cache[other] = x + y
    return out
