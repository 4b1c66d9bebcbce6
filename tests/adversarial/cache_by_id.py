"""Attack: cache outputs by id() of the input. Caught by: fresh inputs every call (the
cached output is stale: wrong output); screen flag cache-by-id."""
from task import input_t, output_t

_cache = {}


def custom_kernel(data: input_t) -> output_t:
    key = id(data)
    if key not in _cache:
        a, b = data
        _cache[key] = a + b
    return _cache[key]
