#!POPCORN leaderboard mxfp4_mm
"""Plain PyTorch: quantize A to MXFP4 (round to nearest even), dequantize A and B, multiply.

On a GPU the product runs in bfloat16, which holds every dequantized value exactly; on the
CPU it runs in float32.
"""
import torch
from task import input_t, output_t

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
THRESHOLDS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False),
              (3.5, True), (5.0, False))


def _quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[rows, k] -> (codes [rows, k] uint8, unbiased scale exponents [rows, k/32])."""
    rows, k = x.shape
    blocks = x.float().reshape(rows, k // 32, 32)
    bits = blocks.abs().amax(dim=-1).view(torch.int32)
    biased = ((bits + 0x200000) & 0x7F800000) >> 23
    e = torch.where(biased == 0, torch.full_like(biased, -127), biased - 129).clamp(-127, 127)
    scaled = blocks * torch.exp2(-e.float())[..., None]
    mag = scaled.abs()
    code = torch.zeros(scaled.shape, dtype=torch.uint8, device=x.device)
    for threshold, tie_up in THRESHOLDS:
        code += (mag >= threshold if tie_up else mag > threshold).to(torch.uint8)
    code |= ((scaled < 0) & (code != 0)).to(torch.uint8) << 3
    return code.reshape(rows, k), e


def _dequantize(codes: torch.Tensor, e: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    values = torch.tensor(E2M1, dtype=torch.float32, device=codes.device)[codes.long()]
    return (values * torch.exp2(e.float()).repeat_interleave(32, dim=1)).to(dtype)


def _unpack(packed: torch.Tensor) -> torch.Tensor:
    u = packed.view(torch.uint8)
    return torch.stack((u & 0xF, u >> 4), dim=-1).reshape(u.shape[0], -1)


def _b_exponents(scale_sh: torch.Tensor, n: int, cols: int) -> torch.Tensor:
    rows_p, cols_p = scale_sh.shape
    plain = scale_sh.view(torch.uint8).view(rows_p // 32, cols_p // 8, 4, 16, 2, 2)
    plain = plain.permute(0, 5, 3, 1, 4, 2).reshape(rows_p, cols_p)
    return plain[:n, :cols].to(torch.int32) - 127


def custom_kernel(data: input_t) -> output_t:
    A, _, B_q, _, B_scale_sh = data
    dtype = torch.bfloat16 if A.is_cuda else torch.float32
    a_codes, a_e = _quantize(A)
    n, k = B_q.shape[0], A.shape[1]
    a = _dequantize(a_codes, a_e, dtype)
    b = _dequantize(_unpack(B_q), _b_exponents(B_scale_sh, n, k // 32), dtype)
    return torch.matmul(a, b.T).to(torch.bfloat16)
