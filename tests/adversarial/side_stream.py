"""Attack (GPU): do the work on a side stream the end event does not wait for.
Caught by: the worker synchronizes the whole device before it reports, so the judge's
clock sees the hidden work (two-clock check flags it); screen flag side-streams."""
import torch
from task import input_t, output_t

_side = None


def custom_kernel(data: input_t) -> output_t:
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    a, b = data
    out = torch.empty_like(a)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        acc = a.float()
        for _ in range(200):
            acc = acc * 1.0000001
        torch.add(a, b, out=out)
    return out
