"""Attack: cache outputs by a hash of the input's content. Caught by: inputs are new every
call, so the cache never hits and buys nothing; the screen flags content hashing
(cache-by-content), so the result is not clean."""
import hashlib

from task import input_t, output_t

_cache = {}


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    key = hashlib.sha1(a.cpu().numpy().tobytes()).hexdigest()
    if key not in _cache:
        _cache[key] = a + b
    return _cache[key]
