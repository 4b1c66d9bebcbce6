#!POPCORN leaderboard mxfp4_mm
#!POPCORN gpu H200
"""MXFP4 GEMM with A quantized on the fly, in one Triton kernel, for any GPU Triton drives.

A small first kernel quantizes A exactly as the task asks (amax rounded at 1.75, E8M0
exponent, round to nearest even, saturation at 6) and packs two e2m1 codes per byte; the
GEMM kernel feeds `tl.dot_scaled` with them, B_q and B's E8M0 scales read straight from
their shuffled layout. (FUSED = True quantizes A inside the GEMM instead.) On Hopper, Triton emulates the scaled
dot with bf16 tensor cores (exact for these values).
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def _quantize(a, BM: tl.constexpr, BK: tl.constexpr):
    """bf16 [BM, BK] -> (packed e2m1 [BM, BK//2] uint8, E8M0 scales [BM, BK//32] uint8)."""
    blocks = tl.reshape(a.to(tl.float32), (BM, BK // 32, 32))
    amax = tl.max(tl.abs(blocks), axis=2)
    biased = ((amax.to(tl.int32, bitcast=True) + 0x200000) & 0x7F800000) >> 23
    e = tl.where(biased == 0, -127, biased - 129)
    e = tl.minimum(tl.maximum(e, -127), 127)
    inv = ((127 - e) << 23).to(tl.float32, bitcast=True)  # 2**-e, exact
    x = blocks * inv[:, :, None]
    mag = tl.abs(x)
    code = ((mag > 0.25).to(tl.int32) + (mag >= 0.75).to(tl.int32) + (mag > 1.25).to(tl.int32)
            + (mag >= 1.75).to(tl.int32) + (mag > 2.5).to(tl.int32)
            + (mag >= 3.5).to(tl.int32) + (mag > 5.0).to(tl.int32))
    code = code | tl.where((x < 0) & (code != 0), 8, 0)
    pairs = tl.reshape(code, (BM, BK // 2, 2))
    lo, hi = tl.split(pairs)
    packed = (lo | (hi << 4)).to(tl.uint8)
    return packed, (e + 127).to(tl.uint8)


@triton.jit
def _mxfp4_mm(a_ptr, bq_ptr, bs_ptr, c_ptr, M, N, K, scale_cols,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rm_c = tl.minimum(rm, M - 1)
    rn_c = tl.minimum(rn, N - 1)
    ka = tl.arange(0, BK)
    kb = tl.arange(0, BK // 2)
    ks = tl.arange(0, BK // 32)
    # E8M0 scales of B, shuffled: (rows/32, cols/8, 4, 16, 2, 2) holds [r0, c0, c2, r2, c1, r1]
    r = rn_c[:, None]
    row_part = (r // 32) * (scale_cols // 8) * 256 + (r % 16) * 4 + ((r // 16) % 2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm_c[:, None].to(tl.int64) * K + (k0 + ka)[None, :])
        a_q, a_s = _quantize(a, BM, BK)
        b = tl.load(bq_ptr + rn_c[:, None].to(tl.int64) * (K // 2) + (k0 // 2 + kb)[None, :])
        c = (k0 // 32 + ks)[None, :]
        b_s = tl.load(bs_ptr + row_part + (c // 8) * 256 + (c % 4) * 64 + ((c // 4) % 2) * 2)
        acc = tl.dot_scaled(a_q, a_s, "e2m1", tl.trans(b), b_s, "e2m1", acc)
    out = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(out, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


OVERRIDE = None  # (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages), for tuning scripts


@triton.jit
def _quantize_rows(a_ptr, q_ptr, s_ptr, M, K, BM: tl.constexpr, BK: tl.constexpr):
    """First kernel: A [M, K] bf16 -> packed e2m1 [M, K//2] and E8M0 scales [M, K//32]."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    k0 = tl.program_id(1) * BK
    rows = tl.minimum(rm, M - 1)[:, None].to(tl.int64)
    a = tl.load(a_ptr + rows * K + (k0 + tl.arange(0, BK))[None, :])
    q, s = _quantize(a, BM, BK)
    keep = rm[:, None] < M
    tl.store(q_ptr + rows * (K // 2) + (k0 // 2 + tl.arange(0, BK // 2))[None, :], q, mask=keep)
    tl.store(s_ptr + rows * (K // 32) + (k0 // 32 + tl.arange(0, BK // 32))[None, :], s, mask=keep)


@triton.jit
def _mxfp4_mm_prequant(aq_ptr, as_ptr, bq_ptr, bs_ptr, c_ptr, M, N, K, scale_cols,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Second kernel: scaled dots of the quantized A with B_q."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rm_c = tl.minimum(rm, M - 1)
    rn_c = tl.minimum(rn, N - 1)
    kb = tl.arange(0, BK // 2)
    ks = tl.arange(0, BK // 32)
    r = rn_c[:, None]
    row_part = (r // 32) * (scale_cols // 8) * 256 + (r % 16) * 4 + ((r // 16) % 2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_q = tl.load(aq_ptr + rm_c[:, None].to(tl.int64) * (K // 2) + (k0 // 2 + kb)[None, :])
        a_s = tl.load(as_ptr + rm_c[:, None].to(tl.int64) * (K // 32) + (k0 // 32 + ks)[None, :])
        b = tl.load(bq_ptr + rn_c[:, None].to(tl.int64) * (K // 2) + (k0 // 2 + kb)[None, :])
        c = (k0 // 32 + ks)[None, :]
        b_s = tl.load(bs_ptr + row_part + (c // 8) * 256 + (c % 4) * 64 + ((c // 4) % 2) * 2)
        acc = tl.dot_scaled(a_q, a_s, "e2m1", tl.trans(b), b_s, "e2m1", acc)
    out = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(out, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


class _FastLaunch:
    """Launch an already compiled Triton kernel directly, skipping the JIT's per-call
    argument binding and cache lookup (tens of microseconds of host time per launch on
    slow hosts). Compiled kernels are kept per configuration and integer specialization;
    anything unexpected falls back to the ordinary launch for good."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.compiled = {}
        self.enabled = True

    def __call__(self, grid, args: tuple, constexprs: dict, **options) -> None:
        key = (tuple(constexprs.items()), tuple(options.items()),
               tuple((a == 1, a % 16 == 0) for a in args if isinstance(a, int)))
        compiled = self.compiled.get(key) if self.enabled else None
        if compiled is not None:
            try:
                compiled[grid](*args, *constexprs.values())
                return
            except Exception:  # noqa: BLE001 - an API change: use the JIT path from now on
                self.enabled = False
        compiled = self.kernel[grid](*args, **constexprs, **options)
        if self.enabled:
            self.compiled[key] = compiled


_fused = _FastLaunch(_mxfp4_mm)
_quant = _FastLaunch(_quantize_rows)
_gemm = _FastLaunch(_mxfp4_mm_prequant)

FUSED = False  # quantize A inside the GEMM (True) or in a small first kernel (False)


def _config(m: int, k: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) for a problem size."""
    if OVERRIDE is not None:
        return OVERRIDE
    bk = 256 if k % 256 == 0 else 128 if k % 128 == 0 else 64
    return 16, 64, bk, 4, 3


def custom_kernel(data: input_t) -> output_t:
    A, _, B_q, _, B_scale_sh = data
    m, k = A.shape
    n = B_q.shape[0]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=A.device)
    bm, bn, bk, warps, stages = _config(m, k)
    grid = (triton.cdiv(n, bn), triton.cdiv(m, bm))
    b_q, b_s = B_q.view(torch.uint8), B_scale_sh.view(torch.uint8)
    blocks = {"BM": bm, "BN": bn, "BK": bk}
    if FUSED:
        _fused(grid, (A, b_q, b_s, c, m, n, k, B_scale_sh.shape[1]), blocks,
               num_warps=warps, num_stages=stages)
        return c
    a_q = torch.empty((m, k // 2), dtype=torch.uint8, device=A.device)
    a_s = torch.empty((m, k // 32), dtype=torch.uint8, device=A.device)
    qbk = 256 if k % 256 == 0 else 64
    _quant((triton.cdiv(m, 16), k // qbk), (A, a_q, a_s, m, k), {"BM": 16, "BK": qbk}, num_warps=4)
    _gemm(grid, (a_q, a_s, b_q, b_s, c, m, n, k, B_scale_sh.shape[1]), blocks,
          num_warps=warps, num_stages=stages)
    return c
