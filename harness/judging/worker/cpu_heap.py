"""A heap touched before the submission runs, so that CPU timing does not fall into modes.

On the CPU a submission's output comes from the C library's heap. Where each block lands
depends on the heap's layout: on pages an earlier call touched, or on fresh ones, whose
first touch costs a page fault each (512 for a 2 MiB output, about 1 ms a call on a 2-core
machine). A run settles into one pattern or the other, and runs of one file read 2-4 times
apart. The worker (CPU runs only) therefore keeps what it frees (no trim) and touches up
to `HEAP_BYTES` of heap before the submission is imported: its outputs then reuse touched
pages, as the GPU's caching allocator reuses its blocks. A block that no free region of
the heap fits is mapped afresh, as before. The touched heap is part of the submission's
memory allowance (`heap_size`). glibc only; elsewhere nothing changes. This module imports
no torch.
"""

from __future__ import annotations

import ctypes

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit
# Touched up front. Blocks that alternate with small allocations kept between them move up
# the heap; this much keeps a benchmark run's outputs of a few MiB on touched pages.
HEAP_BYTES = 256 << 20
HEAP_SHARE = 4  # at most this fraction (1 / HEAP_SHARE) of a capped submission's allowance
BLOCK_BYTES = 16 << 20  # allocated in blocks below the threshold: from the heap, not mapped


def _glibc() -> ctypes.CDLL | None:
    """This process's C library where it is glibc (it has gnu_get_libc_version)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
    except (OSError, AttributeError, TypeError):  # TypeError: no CDLL(None) on Windows
        return None
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.restype = ctypes.c_void_p
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


def heap_size(memory_limit: int) -> int:
    """The heap to touch: `HEAP_BYTES`, or less under a cap of `memory_limit` bytes on what
    the submission may map (0: none), of which it is a part."""
    return HEAP_BYTES if memory_limit <= 0 else min(HEAP_BYTES, memory_limit // HEAP_SHARE)


def touch_heap(total: int = HEAP_BYTES, block: int = BLOCK_BYTES) -> int:
    """Serve blocks below 32 MiB from the heap, keep freed memory, and touch `total` bytes
    of heap (allocated in `block`s and written; freed, they fold back into the heap's free
    top). The bytes touched: 0 where the C library is not glibc or refuses the settings,
    less than `total` where an allocation failed."""
    libc = _glibc()
    if libc is None or total < block:
        return 0
    # The threshold first: where it is refused (a 32-bit glibc's ceiling is lower),
    # nothing has changed.
    if not libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX):
        return 0
    if not libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1):
        return 0
    blocks = []
    try:
        for _ in range(total // block):
            pointer = libc.malloc(block)
            if not pointer:
                break
            blocks.append(pointer)
            libc.memset(pointer, 0, block)
    finally:
        for pointer in reversed(blocks):
            libc.free(pointer)
    return len(blocks) * block
