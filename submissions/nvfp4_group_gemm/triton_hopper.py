#!POPCORN leaderboard nvfp4_group_gemm
#!POPCORN gpu H200
"""NVFP4 grouped GEMM for Hopper (sm_90), which has no FP4 tensor cores.

One launch covers every group: each program owns one BLOCK_M x BLOCK_N tile of one group
(found from a small per-call table of pointers and sizes). In the K loop it loads packed
e2m1 bytes and the float8_e4m3fn scales straight from the blocked (128x4) layout, decodes
in registers to bfloat16 (bit operations, no table), applies the scales (an e2m1 value
times an e4m3 scale has at most five significant bits: exact in bfloat16) and feeds
bfloat16 tensor-core dots with float32 accumulation: one over the low nibbles (even K),
one over the high nibbles (odd K), so no interleaving is needed. M tails are masked.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64
NUM_WARPS, NUM_STAGES = 8, 4
META_COLS = 10  # a, b, c, sfa, sfb, M, N, K, first tile, tiles along N


@triton.jit
def _decode_half(nibbles, scales, ROWS: tl.constexpr, HALF: tl.constexpr):
    """e2m1 codes [ROWS, HALF] (int16) times their e4m3 scales [ROWS, HALF // 8] -> bf16.

    Bits of the bf16 result: sign from bit 3; exponent e + 126 and the mantissa bit for
    normal codes; 0.5 (0x3F00) for the subnormal code 1 and zero for code 0.
    """
    e = nibbles & 7
    bits = tl.where(e < 2, e * 0x3F00, (e << 6) + 0x3F00) | ((nibbles & 8) << 12)
    values = bits.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    s = scales.to(tl.float8e4nv, bitcast=True).to(tl.bfloat16)
    s = tl.reshape(tl.broadcast_to(s[:, :, None], (ROWS, HALF // 8, 8)), (ROWS, HALF))
    return values * s


@triton.jit
def _scale_offsets(rows, kb, rest_k):
    """Byte offsets of scale (row, 16-element block) in the [rest_m, rest_k, 32, 4, 4] layout."""
    r = rows[:, None]
    j = kb[None, :]
    return ((r // 128) * rest_k + j // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (j % 4)


@triton.jit
def _field(row, cols, i: tl.constexpr):
    """Element i of a small vector, as a scalar (one reduction: also runs interpreted)."""
    return tl.sum(tl.where(cols == i, row, 0))


@triton.jit
def _group_gemm(meta, num_groups, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GROUPS: tl.constexpr):
    pid = tl.program_id(0)
    slots = tl.arange(0, GROUPS)
    starts = tl.load(meta + slots * 10 + 8, mask=slots < num_groups, other=2**31 - 1)
    g = tl.sum((starts <= pid).to(tl.int32)) - 1
    cols = tl.arange(0, 16)
    row = tl.load(meta + g * 10 + cols, mask=cols < 10, other=0)
    a_ptr = _field(row, cols, 0).to(tl.pointer_type(tl.uint8))
    b_ptr = _field(row, cols, 1).to(tl.pointer_type(tl.uint8))
    c_ptr = _field(row, cols, 2).to(tl.pointer_type(tl.float16))
    sa_ptr = _field(row, cols, 3).to(tl.pointer_type(tl.uint8))
    sb_ptr = _field(row, cols, 4).to(tl.pointer_type(tl.uint8))
    M = _field(row, cols, 5).to(tl.int32)
    N = _field(row, cols, 6).to(tl.int32)
    K = _field(row, cols, 7).to(tl.int32)
    tile = pid - _field(row, cols, 8).to(tl.int32)
    tiles_n = _field(row, cols, 9).to(tl.int32)
    pid_m = tile // tiles_n
    pid_n = tile % tiles_n

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rm_c = tl.minimum(rm, M - 1)  # clamp the M tail: loads stay in bounds, stores are masked
    rn_c = tl.minimum(rn, N - 1)
    half = K // 2
    rest_k = K // 64
    kk = tl.arange(0, BK // 2)
    kb = tl.arange(0, BK // 16)
    a_rows = a_ptr + rm_c[:, None].to(tl.int64) * half
    b_rows = b_ptr + rn_c[:, None].to(tl.int64) * half
    sa_off = _scale_offsets(rm_c, kb, rest_k)
    sb_off = _scale_offsets(rn_c, kb, rest_k)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_bytes = tl.load(a_rows + (k0 // 2 + kk)[None, :])
        b_bytes = tl.load(b_rows + (k0 // 2 + kk)[None, :])
        step = (k0 // 64) * 512
        sa = tl.load(sa_ptr + sa_off + step)
        sb = tl.load(sb_ptr + sb_off + step)
        # The sum over K may run in any order, as long as A and B agree: one dot over the
        # low nibbles (even K) and one over the high nibbles (odd K), no interleaving.
        a_lo = _decode_half((a_bytes & 0xF).to(tl.int16), sa, BM, BK // 2)
        b_lo = _decode_half((b_bytes & 0xF).to(tl.int16), sb, BN, BK // 2)
        acc = tl.dot(a_lo, tl.trans(b_lo), acc)
        a_hi = _decode_half((a_bytes >> 4).to(tl.int16), sa, BM, BK // 2)
        b_hi = _decode_half((b_bytes >> 4).to(tl.int16), sb, BN, BK // 2)
        acc = tl.dot(a_hi, tl.trans(b_hi), acc)
    c = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


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


_launch = _FastLaunch(_group_gemm)
_meta_host = None  # pinned rows of pointers and sizes, refilled every call
_meta_copied = None  # event: the last copy out of _meta_host has finished


def _meta(rows: list, device) -> torch.Tensor:
    """The per-call table on the device, through pinned memory (no blocking copy)."""
    global _meta_host, _meta_copied
    if _meta_host is None or _meta_host.shape[0] < len(rows):
        _meta_host = torch.empty((max(8, len(rows)), META_COLS), dtype=torch.int64).pin_memory()
        _meta_copied = torch.cuda.Event()
    else:
        _meta_copied.synchronize()
    _meta_host[: len(rows)] = torch.tensor(rows, dtype=torch.int64)
    meta = _meta_host[: len(rows)].to(device, non_blocking=True)
    _meta_copied.record()
    return meta


def custom_kernel(data: input_t) -> output_t:
    abc, _, sf_blocked, sizes = data
    rows, first = [], 0
    for (a, b, c), (sfa, sfb), (m, n, k, _) in zip(abc, sf_blocked, sizes):
        tiles_n = triton.cdiv(n, BLOCK_N)
        rows.append([a.data_ptr(), b.data_ptr(), c.data_ptr(), sfa.data_ptr(), sfb.data_ptr(),
                     m, n, k, first, tiles_n])
        first += triton.cdiv(m, BLOCK_M) * tiles_n
    meta = _meta(rows, abc[0][0].device)
    _launch((first,), (meta, len(rows)),
            {"BM": BLOCK_M, "BN": BLOCK_N, "BK": BLOCK_K, "GROUPS": triton.next_power_of_2(len(rows))},
            num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return [c for _, _, c in abc]
