"""Fault: take every byte of the GPU's memory and keep it between calls (torch's share
for the worker raised to all of it, then allocations until the driver refuses even
2 MiB). Caught by: the judge's own buffers for checking and timing come first, and where
it cannot allocate the next case's, it stops the worker (which frees what it held) and
gives the case an out-of-memory verdict; the next evaluation on the GPU is unaffected."""
import torch
from task import input_t, output_t

_hoard = []


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    out = a + b
    torch.cuda.set_per_process_memory_fraction(1.0)
    for size in (1 << 30, 1 << 26, 1 << 21):
        while True:
            try:
                _hoard.append(torch.empty(size, dtype=torch.uint8, device=a.device))
            except torch.OutOfMemoryError:
                break
    return out
