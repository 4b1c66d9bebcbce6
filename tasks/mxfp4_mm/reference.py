"""mxfp4_mm: C = dequant(quant_mxfp4(A)) @ dequant(B_q)^T in bf16, portable PyTorch.

The quantizer is AMD's, exactly: per 32 elements along K, amax rounded up to a power of
two at its second significand bit (add 0x200000, keep sign and exponent), scale exponent
floor(log2(rounded amax)) - 2 clamped to [-127, 127] and stored as E8M0 (+127), elements
divided by 2**e and rounded to e2m1 with ties to even, saturating at 6.
"""

import torch
from task import input_t, output_t
from utils import compare

BLOCK = 32
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
# Rounding thresholds on |x| / 2**e: passing one moves up a code; `True` means ties go up
# (the code above is even), `False` means ties stay (the code below is even).
_THRESHOLDS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False),
               (3.5, True), (5.0, False))


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def scale_exponents(x: torch.Tensor) -> torch.Tensor:
    """Per-block E8M0 exponents e (unbiased, int32) of x viewed as [rows, k/32, 32]."""
    amax = x.float().abs().amax(dim=-1)
    bits = amax.view(torch.int32)
    rounded = (bits + 0x200000) & 0x7F800000  # amax >= 0: the sign bit is already 0
    biased = rounded >> 23
    e = torch.where(biased == 0, torch.full_like(biased, -127), biased - 127 - 2)
    return e.clamp(-127, 127)


def e2m1_codes(scaled: torch.Tensor) -> torch.Tensor:
    """Round to the nearest e2m1 value, ties to even, saturating at 6; 4-bit codes."""
    mag = scaled.abs()
    code = torch.zeros(scaled.shape, dtype=torch.uint8, device=scaled.device)
    for threshold, tie_up in _THRESHOLDS:
        code += (mag >= threshold if tie_up else mag > threshold).to(torch.uint8)
    # The sign bit is kept whatever the magnitude rounds to, as AMD's quantizer keeps it:
    # a negative value that rounds to zero (and -0.0) is code 8, "-0".
    return code | (torch.signbit(scaled).to(torch.uint8) << 3)


def quant_mxfp4(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [rows, k] -> (packed codes [rows, k/2] uint8, E8M0 scales [rows, k/32] uint8)."""
    rows, k = x.shape
    blocks = x.float().reshape(rows, k // BLOCK, BLOCK)
    e = scale_exponents(blocks)
    scaled = blocks * torch.exp2(-e.float())[..., None]
    codes = e2m1_codes(scaled).reshape(rows, k)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)  # low nibble = even element
    return packed, (e + 127).to(torch.uint8)


def dequant_mxfp4(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Packed e2m1 [rows, k/2] and E8M0 scales [rows, >= k/32] -> float32 [rows, k]."""
    u = packed.view(torch.uint8)
    rows, half = u.shape
    codes = torch.stack((u & 0xF, u >> 4), dim=-1).reshape(rows, half * 2)
    values = torch.tensor(E2M1, dtype=torch.float32, device=u.device)[codes.long()]
    exps = scales.view(torch.uint8)[:, : half * 2 // BLOCK].float() - 127
    return values * torch.exp2(exps).repeat_interleave(BLOCK, dim=1)


def shuffle_scales(s: torch.Tensor) -> torch.Tensor:
    """Pad [n, k/32] to [ceil(n/256)*256, ceil(k/32/8)*8] with zeros, then shuffle."""
    n, cols = s.shape
    rows_p, cols_p = ceil_div(n, 256) * 256, ceil_div(cols, 8) * 8
    padded = torch.zeros((rows_p, cols_p), dtype=torch.uint8, device=s.device)
    padded[:n, :cols] = s
    shuffled = padded.view(rows_p // 32, 2, 16, cols_p // 8, 2, 4).permute(0, 3, 5, 2, 4, 1)
    return shuffled.contiguous().view(rows_p, cols_p)


def unshuffle_scales(sh: torch.Tensor, n: int, cols: int) -> torch.Tensor:
    """The inverse of shuffle_scales, cut back to [n, cols]."""
    rows_p, cols_p = sh.shape
    plain = sh.view(torch.uint8).view(rows_p // 32, cols_p // 8, 4, 16, 2, 2).permute(0, 5, 3, 1, 4, 2)
    return plain.contiguous().view(rows_p, cols_p)[:n, :cols]


def shuffle_weight(q: torch.Tensor) -> torch.Tensor:
    """B_q [n, k/2] into 16-row by 32-byte tiles (AMD's (16, 16) weight layout)."""
    n, half = q.shape
    return q.view(n // 16, 16, half // 32, 2, 16).permute(0, 2, 3, 1, 4).contiguous().view(n, half)


def unshuffle_weight(sh: torch.Tensor) -> torch.Tensor:
    """The inverse of shuffle_weight."""
    n, half = sh.shape
    return sh.view(n // 16, half // 32, 2, 16, 16).permute(0, 3, 1, 2, 4).contiguous().view(n, half)


def generate_input(m: int, n: int, k: int, seed: int, device: str | None = None) -> input_t:
    """A and B standard normal bf16; B quantized, packed, and shuffled as aiter reads it."""
    if k % 64:
        raise ValueError(f"k must be a multiple of 64, got {k}")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((m, k), dtype=torch.bfloat16, device=device, generator=gen)
    b = torch.randn((n, k), dtype=torch.bfloat16, device=device, generator=gen)
    b_q, b_scale = quant_mxfp4(b)
    b_shuffle = shuffle_weight(b_q)
    b_scale_sh = shuffle_scales(b_scale).view(torch.float8_e8m0fnu)
    fp4 = torch.float4_e2m1fn_x2
    return a, b, b_q.view(fp4), b_shuffle.view(fp4), b_scale_sh


def ref_kernel(data: input_t) -> output_t:
    a, _, b_q, _, b_scale_sh = data
    n, k = b_q.shape[0], a.shape[1]
    a_q, a_scale = quant_mxfp4(a)
    b_scale = unshuffle_scales(b_scale_sh, n, k // BLOCK)
    out = dequant_mxfp4(a_q, a_scale) @ dequant_mxfp4(b_q, b_scale).T
    return out.to(torch.bfloat16)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    """[m, n] bf16 within rtol = atol = 1e-2 (compared in float32); NaN and inf fail."""
    return compare(output, ref_kernel(data), rtol=1e-2, atol=1e-2)


def work(m: int, n: int, k: int, **_) -> dict:
    """FLOPs, and the fewest bytes: A in bf16, B at half a byte plus scales, C in bf16."""
    return {"flops": 2 * m * n * k, "bytes": 2 * m * k + n * k // 2 + n * k // 32 + 2 * m * n}
