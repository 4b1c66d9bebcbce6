"""vectoradd: C = A + B for float16 matrices."""

import torch
from task import input_t, output_t
from utils import match_reference


def generate_input(size: int, seed: int, device: str | None = None) -> input_t:
    """Two [size, size] float16 tensors of standard normal values on the run device."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    return a, b


def ref_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b


check_implementation = match_reference(ref_kernel, rtol=1e-3, atol=1e-3)


def work(size: int, **_) -> dict:
    """One addition per element; read two halves, write one."""
    return {"flops": size * size, "bytes": 3 * 2 * size * size}
