"""Fresh inputs masked until their call (`timing.rehearse_late`).

With the late rehearsal the judge writes a sample's fresh inputs before the worker runs the
previous sample's calls again, so that no other CUDA context (the judge's) runs between the
rehearsal and the timed calls (run 85: the switch to the judge's context and back leaves
the call's own state cold, about 1 µs on mxfp4_mm). The submission must still learn nothing
of those inputs in the rehearsal: the judge writes each tensor's bytes XORed with bytes drawn
from a key, and sends the key only with the call; the worker then XORs them back. The same
function masks and unmasks.

The bytes come from torch's generator of the tensor's device seeded per tensor, so the judge
and the worker, with the same torch on the same device, draw the same ones. The functions
are taken as this module is imported (before any submission): a submission that replaces
`torch.Tensor.bitwise_xor_` later is not called with the mask.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

_MIX = 0x9E3779B97F4A7C15  # spreads consecutive tensors' seeds apart
_SEEDS = (1 << 63) - 1
_T = torch.Tensor
_FNS = (torch.Generator, torch.Generator.manual_seed, torch.randint, torch.empty,
        _T.bitwise_xor_, _T.set_, _T.untyped_storage, _T.storage_offset, _T.element_size,
        _T.stride, _T.numel, torch.uint8)


def tensor_seed(key: int, index: int) -> int:
    """The generator seed for the `index`-th tensor of a sample masked with `key`."""
    return (key + (index + 1) * _MIX) & _SEEDS


def xor_mask(tensors: Iterable[Any], key: int, start: int = 0, fns: tuple = _FNS) -> int:
    """XOR every tensor's bytes, in place, with bytes drawn from `key` (the `i`-th tensor's
    own seed, `tensor_seed(key, start + i)`); the number of tensors. Applied twice with one
    key, a tensor is back as it was. Any dtype and layout: the bytes XORed are those of the
    tensor's span in its storage (gaps of a strided layout included), read and written as
    bytes, never as values."""
    (gen_type, seed, randint, empty, xor, set_, storage, offset, element_size, stride, numel,
     u8) = fns
    count = 0
    for count, t in enumerate(tensors, 1):
        index = start + count - 1
        if not numel(t):
            continue
        size = element_size(t)
        span = (sum((n - 1) * s for n, s in zip(t.shape, stride(t))) + 1) * size
        raw = set_(empty(0, dtype=u8, device=t.device), storage(t), offset(t) * size, (span,), (1,))
        gen = gen_type(device=t.device)
        seed(gen, tensor_seed(key, index))
        xor(raw, randint(0, 256, (span,), dtype=u8, device=t.device, generator=gen))
    return count
