"""Attack: compute every input slot's output at once and serve them from then on
("compute all timed inputs in the first call"). Caught by: each slot is refilled with new
values just before its call, so the served outputs are stale (wrong output)."""
from task import input_t, output_t

_seen = []
_outputs = {}


def custom_kernel(data: input_t) -> output_t:
    if len(_seen) < 2:
        _seen.append(data)
        for i, d in enumerate(_seen):
            _outputs[i] = d[0] + d[1]
        return data[0] + data[1]
    return _outputs[len(_seen) % 2]
