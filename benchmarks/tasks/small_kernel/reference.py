import torch
from utils import match_reference


def generate_input(size, seed, device=None):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(size, dtype=torch.float16, device=device, generator=gen)
    return x, torch.empty_like(x)


def ref_kernel(data):
    return data[0] * 2


check_implementation = match_reference(ref_kernel, rtol=0, atol=0)


def work(size, **_):
    return {"flops": size, "bytes": 4 * size}
