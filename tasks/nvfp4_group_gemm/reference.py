"""NVFP4 block-scaled grouped GEMM: a portable reference that dequantizes.

The public reference calls torch._scaled_mm with FP4 operands, which exists only on
sm_100. This one decodes e2m1, applies the float8_e4m3fn scales and multiplies in float32
(TF32 off): with these inputs every product and partial sum is exact in float32, so it
matches a tensor-core result up to the final rounding to float16. It runs on the CPU and
on any CUDA GPU.
"""

import torch
from task import input_t, output_t
from utils import clone_data, compare

SF_VEC = 16
# e2m1 nibble: bit 3 is the sign, bits 2..0 index these magnitudes.
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def _device(device):
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def _fp4(layers, mn, k, gen, device):
    """[mn, k//2, layers] e2m1x2, K-major, values in {0, ±0.5, ±1, ±1.5}."""
    raw = torch.randint(0, 256, (layers, mn, k // 2), dtype=torch.uint8, device=device, generator=gen)
    return (raw & 0b1011_1011).permute(1, 2, 0).view(torch.float4_e2m1fn_x2)


def _scales(layers, mn, k, gen, device):
    """[mn, ceil(k/16), layers] float8_e4m3fn scales in {1, 2}."""
    ints = torch.randint(1, 3, (layers, mn, ceil_div(k, SF_VEC)), dtype=torch.int8, device=device,
                         generator=gen)
    return ints.to(torch.float8_e4m3fn).permute(1, 2, 0)


def to_blocked(sf, gen, device):
    """The cuBLAS 128x4 blocked layout: a [32, 4, rest_m, 4, rest_k, L] view such that
    out[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, l] = sf[i, j, l]; padding random."""
    mn, sf_k, layers = sf.shape
    rest_m, rest_k = ceil_div(mn, 128), ceil_div(sf_k, 4)
    base = torch.randint(1, 3, (layers, rest_m, rest_k, 32, 4, 4), dtype=torch.int8, device=device,
                         generator=gen).to(torch.float8_e4m3fn)
    out = base.permute(3, 4, 1, 5, 2, 0)
    i = torch.arange(mn, device=device)[:, None]
    j = torch.arange(sf_k, device=device)[None, :]
    out.view(torch.uint8)[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, :] = (
        sf.to(device).view(torch.uint8))
    return out


def generate_input(m: list, n: list, k: list, g: int, seed: int, device: str | None = None) -> input_t:
    """The public contest's input tuple for `g` groups (scales in plain layout on the CPU)."""
    device = _device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    abc, sf_plain, sf_blocked, sizes = [], [], [], []
    layers = 1
    for mi, ni, ki in zip(m, n, k):
        a = _fp4(layers, mi, ki, gen, device)
        b = _fp4(layers, ni, ki, gen, device)
        c = torch.randn((layers, mi, ni), dtype=torch.float16, device=device, generator=gen).permute(1, 2, 0)
        sfa = _scales(layers, mi, ki, gen, device)
        sfb = _scales(layers, ni, ki, gen, device)
        sf_blocked.append((to_blocked(sfa, gen, device), to_blocked(sfb, gen, device)))
        sf_plain.append((sfa.cpu(), sfb.cpu()))
        abc.append((a, b, c))
        sizes.append((mi, ni, ki, layers))
    return abc, sf_plain, sf_blocked, sizes


def decode_e2m1(x: torch.Tensor) -> torch.Tensor:
    """[rows, k//2, layers] packed e2m1 -> [rows, k, layers] float32 (low nibble = lower K index)."""
    u = x.view(torch.uint8)
    nibbles = torch.stack((u & 0xF, u >> 4), dim=2)  # [rows, k//2, 2, layers]
    nibbles = nibbles.reshape(u.shape[0], u.shape[1] * 2, u.shape[2])
    table = torch.tensor(E2M1, dtype=torch.float32, device=u.device)
    return table[nibbles.long()]


def dequantize(x: torch.Tensor, sf: torch.Tensor) -> torch.Tensor:
    """Decoded values times their scales (each scale covers 16 elements along K)."""
    values = decode_e2m1(x)
    scales = sf.to(values.device).float().repeat_interleave(SF_VEC, dim=1)[:, : values.shape[1]]
    return values * scales


def ref_kernel(data: input_t) -> output_t:
    abc, sf_plain, _, sizes = data
    out = []
    for (a, b, c), (sfa, sfb), (_, _, _, layers) in zip(abc, sf_plain, sizes):
        aa, bb = dequantize(a, sfa), dequantize(b, sfb)
        for li in range(layers):
            c[:, :, li] = (aa[:, :, li] @ bb[:, :, li].T).to(torch.float16)
        out.append(c)
    return out


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    """g outputs of the right shape and dtype, each within rtol = atol = 1e-3."""
    abc = data[0]
    if not isinstance(output, (list, tuple)) or len(output) != len(abc):
        got = len(output) if isinstance(output, (list, tuple)) else type(output).__name__
        return False, f"expected a list of {len(abc)} tensors (one per group), got {got}"
    expected = ref_kernel(clone_data(data))
    return compare(list(output), expected, rtol=1e-3, atol=1e-3)


def work(m: list, n: list, k: list, **_) -> dict:
    """FLOPs, and the fewest bytes: A and B at half a byte, the scales, C as float16."""
    flops = sum(2 * mi * ni * ki for mi, ni, ki in zip(m, n, k))
    nbytes = sum(
        (mi + ni) * ki // 2 + (mi + ni) * ceil_div(ki, SF_VEC) + 2 * mi * ni
        for mi, ni, ki in zip(m, n, k)
    )
    return {"flops": flops, "bytes": nbytes}
