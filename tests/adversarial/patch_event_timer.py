"""Attack (GPU): patch torch.cuda.Event.elapsed_time to report a hundredth of the time.
Defeated by: the worker's events' elapsed_time, taken before the import (the patch never
reaches the timing); the screen (patches-timing, hard) keeps it off the leaderboard."""
import torch
from task import input_t, output_t

_real = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real(self, end) / 100


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    c = a + b
    for _ in range(100):
        c = c + 0
    return c
