"""Fault: allocate memory until it fails. Caught by: the worker's memory limit (an error,
not a dead machine), and the harness carries on."""
import torch
from task import input_t, output_t

_hoard = []


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    while True:
        _hoard.append(torch.empty(1 << 28, dtype=torch.uint8, device=a.device).fill_(1))
