#!POPCORN leaderboard vectoradd
#!POPCORN gpu H200
"""A Triton kernel: each program adds one block of 4096 elements (GPU only)."""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    c = torch.empty_like(a)
    n = a.numel()
    _add[(triton.cdiv(n, 4096),)](a, b, c, n, BLOCK=4096, num_warps=8)
    return c
