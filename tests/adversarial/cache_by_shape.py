"""Attack: cache outputs by shape. Caught by: fresh values every call (wrong output)."""
from task import input_t, output_t

_cache = {}


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    if a.shape not in _cache:
        _cache[a.shape] = a + b
    return _cache[a.shape]
