"""A heap touched before the submission runs, so that CPU timing does not fall into modes.

On the CPU a submission's output comes from the C library's heap. Where each block lands
depends on the heap's layout: on pages an earlier call touched, or on fresh ones, whose
first touch costs a page fault each (512 for a 2 MiB output, about 1 ms a call on a 2-core
machine). A run settles into one pattern or the other, and runs of one file read 2-4 times
apart. The worker (CPU runs only) therefore keeps what it frees (no trim), serves blocks
below glibc's ceiling of 32 MiB from the heap, and touches `HEAP_BYTES` of heap before the
submission is imported: its outputs then reuse touched pages, as the GPU's caching
allocator reuses its blocks. Larger blocks are mapped afresh every call, every run alike.
glibc only; elsewhere nothing changes. This module imports no torch.
"""

from __future__ import annotations

import ctypes

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit
# Touched up front: outputs of up to 8 MiB reuse it across a whole benchmark run (the
# heap's blocks move up as calls alternate, and come back down within this much).
HEAP_BYTES = 256 << 20
BLOCK_BYTES = 16 << 20  # allocated in blocks below the threshold: from the heap, not mapped


def _glibc() -> ctypes.CDLL | None:
    """This process's C library where it is glibc (it has gnu_get_libc_version)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
    except (OSError, AttributeError):
        return None
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.restype = ctypes.c_void_p
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


def touch_heap(total: int = HEAP_BYTES, block: int = BLOCK_BYTES) -> int:
    """Keep freed memory, serve blocks below 32 MiB from the heap, and touch `total`
    bytes of heap (allocated in `block`s, written, freed top first so that they merge
    into one free region). The bytes touched: 0 where the C library is not glibc, less
    than `total` where memory ran out."""
    libc = _glibc()
    if libc is None:
        return 0
    if not (libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)
            and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)):
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
