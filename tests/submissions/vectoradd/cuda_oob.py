"""A Triton kernel that stores far outside its output (an illegal memory access)."""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def _bad_store(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs + (1 << 40), tl.zeros((BLOCK,), dtype=tl.float16))


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    c = torch.empty_like(a)
    _bad_store[(triton.cdiv(c.numel(), 1024),)](c, c.numel(), BLOCK=1024)
    return c
