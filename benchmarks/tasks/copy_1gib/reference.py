import torch
from utils import match_reference


def generate_input(size, seed, device=None):
    gen = torch.Generator(device=device).manual_seed(seed)
    src = torch.randint(0, 255, (size,), dtype=torch.uint8, device=device, generator=gen)
    return src, torch.empty_like(src)


def ref_kernel(data):
    return data[0].clone()


check_implementation = match_reference(ref_kernel, rtol=0, atol=0)


def work(size, **_):
    return {"flops": 0, "bytes": 2 * size}
