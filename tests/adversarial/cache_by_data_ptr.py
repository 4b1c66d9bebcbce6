"""Attack: cache outputs by the inputs' data pointers. Caught by: buffers are reused with
new contents every call (stale output: wrong); screen flag cache-by-pointer."""
from task import input_t, output_t

_cache = {}


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    key = (a.data_ptr(), b.data_ptr())
    if key not in _cache:
        _cache[key] = a + b
    return _cache[key]
