"""A Triton kernel that cannot compile (a non-power-of-two arange)."""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n):
    offs = tl.program_id(0) * 1000 + tl.arange(0, 1000)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    c = torch.empty_like(a)
    _add[(triton.cdiv(c.numel(), 1000),)](a, b, c, c.numel())
    return c
