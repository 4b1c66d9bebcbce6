"""Attack: look through the garbage collector and the call stack for a reference output.
Caught by: the worker never holds one (wrong output); screen hard (gc-walk, frame-walk)."""
import gc
import sys

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, torch.Tensor) and value.shape == a.shape and value is not a and value is not b:
                return value
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.shape == a.shape and obj is not a and obj is not b:
            return obj
    return torch.zeros_like(a)
