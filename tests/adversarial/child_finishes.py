"""Attack: return a shared-memory output and let a child process fill it in after
custom_kernel returns. Caught by: the output is read as soon as the call returns (wrong
output); screen flag spawns-processes."""
import multiprocessing as mp
import time

import torch
from task import input_t, output_t


def _fill(out, a, b):
    time.sleep(0.01)
    torch.add(a, b, out=out)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    out = torch.empty_like(a).share_memory_()
    mp.get_context("fork").Process(target=_fill, args=(out, a.clone(), b.clone())).start()
    return out
