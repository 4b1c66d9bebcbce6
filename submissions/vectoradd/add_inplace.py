#!POPCORN leaderboard vectoradd
"""Adds into the first input's buffer: no allocation per call."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return torch.add(a, b, out=a)
