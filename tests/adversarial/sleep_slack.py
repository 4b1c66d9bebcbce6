"""Attack (GPU): behind a long hidden window (20 ms, nvfp4's and mxfp4's), wait for the GPU
as each call starts, so that the GPU sleep before the start event, sized from the call's
host time, grows to the whole window; then, on scored samples only (the sleep still runs
as the call starts; a probe has none), do the work on a side stream the end event does not
wait for: a 3 ms stand-in for a heavy kernel, then the sum. The judge's clock sees it,
but the scored samples' round trip is taken less the sleep and a quarter of it more (its
cycles at the maximum clock): 5 ms of slack, where it hid.
Caught by: the judge times the sleep itself (sampling.SLEEP_MEASURED: 2% slack); screen
flag side-streams."""
import time

import torch
from task import input_t, output_t

WORK_CYCLES = 6_000_000  # 3 ms at 2 GHz, longer where the SM runs slower
_side = None


def custom_kernel(data: input_t) -> output_t:
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    a, b = data
    main = torch.cuda.current_stream()
    t0 = time.perf_counter()  # a probe's start event is done within microseconds
    while not main.query() and time.perf_counter() - t0 < 2e-4:
        pass
    scored = not main.query()
    torch.cuda.synchronize()  # the host time now holds the sleep: the next one grows
    if not scored:  # honest on probes: the work inside the timed region
        torch.cuda._sleep(WORK_CYCLES)
        return a + b
    out = torch.empty_like(a)
    _side.wait_stream(main)
    with torch.cuda.stream(_side):
        torch.cuda._sleep(WORK_CYCLES)
        torch.add(a, b, out=out)
    return out
