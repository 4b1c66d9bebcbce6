import torch
from utils import match_reference


def generate_input(size, seed, device=None):
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(size, size, dtype=torch.bfloat16, device=device, generator=gen)
    b = torch.randn(size, size, dtype=torch.bfloat16, device=device, generator=gen)
    return a, b


def ref_kernel(data):
    a, b = data
    return a @ b


check_implementation = match_reference(ref_kernel, rtol=2e-2, atol=2e-1)


def work(size, **_):
    return {"flops": 2 * size**3, "bytes": 3 * 2 * size * size}
