"""Fresh inputs masked until their call (`timing.rehearse_late`).

With the late rehearsal the judge writes a sample's fresh inputs before the worker runs the
previous sample's calls again, so that no other CUDA context (the judge's) runs between the
rehearsal and the timed calls (the switch to the judge's context and back leaves the
call's own state cold, about 1 µs on mxfp4_mm). The submission must still learn nothing
of those inputs in the rehearsal: the judge writes each tensor's bytes XORed with a key
stream, and sends the 63-bit key only after the rehearsal has answered, in a request of its
own; the worker then XORs them back, off the call's clock, before the call. The same
function masks and unmasks. With `timing.mask_cpu_inputs: false` only GPU tensors are
masked (`masks`): the judge writes the CPU-side ones plainly after the rehearsal.

The stream is drawn once per sample and device, in the order of the sample's tensors: for
GPU tensors from torch's Philox generator; for CPU tensors from SHAKE-256, or, where the
process has a GPU (a GPU run), from Philox on the GPU, copied (SHAKE-256 runs at some 0.3
GB/s, and nvfp4's CPU-side inputs are some 227 MB a sample). Each is seeded with a 64-bit
BLAKE2b digest of the key and the tensors' device (the CPU generator, mt19937, would read
only 32 bits of a seed: a rehearsal could try them all against the bytes of a known
input). A stream drawn on the GPU for CPU tensors is copied into one page-locked host
buffer that each process keeps and reuses (`HostStream`), not into fresh pageable memory
each time: a fresh 227 MB buffer is mapped, faulted in page by page and copied at pageable
speed for every sample and every calibration no-op, on both sides. Bytes are XORed as bytes
over each tensor's span in its storage (gaps of a strided layout included), never as
values. The functions are taken as this module is imported (before any submission): a
submission that replaces `torch.Tensor.bitwise_xor_` later is not called with the stream.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class _Torch:
    """torch's functions as this module was imported."""

    generator: Any = torch.Generator
    manual_seed: Any = torch.Generator.manual_seed
    randint: Any = torch.randint
    empty: Any = torch.empty
    frombuffer: Any = torch.frombuffer
    xor: Any = torch.Tensor.bitwise_xor_
    set_: Any = torch.Tensor.set_
    storage: Any = torch.Tensor.untyped_storage
    offset: Any = torch.Tensor.storage_offset
    element_size: Any = torch.Tensor.element_size
    stride: Any = torch.Tensor.stride
    numel: Any = torch.Tensor.numel
    narrow: Any = torch.Tensor.narrow
    copy: Any = torch.Tensor.copy_
    to: Any = torch.Tensor.to
    cuda_available: Any = torch.cuda.is_available
    u8: Any = torch.uint8
    blake2b: Any = hashlib.blake2b  # called with the key: taken too, as `sum` is
    shake_256: Any = hashlib.shake_256
    sum: Any = sum


_TORCH = _Torch()


def span_bytes(t: Any, fns: _Torch = _TORCH) -> Any:
    """The bytes of a tensor's span in its storage, as a 1-d uint8 tensor sharing them."""
    size = fns.element_size(t)
    span = (fns.sum([(n - 1) * s for n, s in zip(t.shape, fns.stride(t))]) + 1) * size
    return fns.set_(fns.empty(0, dtype=fns.u8, device=t.device), fns.storage(t),
                    fns.offset(t) * size, (span,), (1,))


def stream_seed(key: int, device_type: str, fns: _Torch = _TORCH) -> int:
    """The 64-bit seed of a sample's stream on a device of `device_type` ("cpu", "cuda")."""
    digest = fns.blake2b(f"{key}:{device_type}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


class HostStream:
    """One page-locked host buffer for the CPU tensors' stream drawn on the GPU, kept by the
    process and grown to the largest sample it has masked. The stream is copied into it
    rather than into fresh pageable memory (`_stream`); `reuse=False` gives the fresh copy
    (measured against it by `benchmarks/mask_cost.py`). Where pinning fails (no GPU, the
    driver refuses), the fresh copy it is."""

    def __init__(self, fns: _Torch = _TORCH, reuse: bool = True) -> None:
        self.fns, self.reuse = fns, reuse
        self.buffer: Any = None

    def copy(self, drawn: Any) -> Any:
        """`drawn` (a 1-d uint8 GPU tensor) on the host: a view of the kept buffer."""
        fns = self.fns
        n = fns.numel(drawn)
        if self.reuse and (self.buffer is None or fns.numel(self.buffer) < n):
            # the old one goes back to torch's pinned-memory cache (kept by the process,
            # so growing can hold about twice the largest sample: 0.5 GB on nvfp4)
            self.buffer = None
            try:
                self.buffer = fns.empty(n, dtype=fns.u8, pin_memory=True)
            except RuntimeError:
                self.reuse = False
        if not self.reuse:
            return fns.to(drawn, "cpu")
        view = fns.narrow(self.buffer, 0, 0, n)
        fns.copy(view, drawn)  # synchronous: the stream is on the host when it returns
        return view


_HOST = HostStream()  # no lock: a process masks from one thread (one evaluation a process)


def _stream(key: int, device: Any, n: int, fns: _Torch, draw_on: str | None = None,
            host: HostStream | None = None) -> Any:
    """`n` bytes of the sample's stream for the tensors on `device`. CPU tensors' bytes are
    drawn with SHAKE-256, or, with `draw_on="cuda"` (a GPU run: both ends pass it), with
    Philox on the GPU and copied into `host` (the process's kept buffer by default):
    SHAKE-256 runs at some 0.3 GB/s, and nvfp4's CPU-side inputs are some 227 MB a sample.
    The seed is the CPU's either way (its own stream). A stream in `host`'s kept buffer is a
    view that the next call in this process overwrites: use it before drawing another."""
    seed = stream_seed(key, device.type, fns)
    if device.type == "cpu" and draw_on is None:
        data = bytearray(fns.shake_256(seed.to_bytes(8, "little")).digest(n))
        return fns.frombuffer(data, dtype=fns.u8)
    where = draw_on if device.type == "cpu" else device
    gen = fns.generator(device=where)
    fns.manual_seed(gen, seed)
    out = fns.randint(0, 256, (n,), dtype=fns.u8, device=where, generator=gen)
    return (host or _HOST).copy(out) if device.type == "cpu" else out


def draw_device(fns: _Torch = _TORCH) -> str | None:
    """Where the CPU tensors' stream is drawn (`_stream`'s `draw_on`): on the GPU where
    this process has one (a GPU run: the judge and its worker alike), else None (SHAKE)."""
    return "cuda" if fns.cuda_available() else None


def xor_mask(tensors: Iterable[Any], key: int, fns: _Torch = _TORCH,
             draw_on: str | None = None, host: HostStream | None = None) -> None:
    """XOR the bytes of every tensor, in place, with the sample's key stream of its device,
    in order. Applied twice with one key to tensors of the same layouts, in the same order
    (and the same `draw_on`, see `_stream`), the bytes are back as they were. `host`: where
    a stream drawn on the GPU for CPU tensors lands (default: the process's kept buffer)."""
    groups: dict[Any, list[Any]] = {}
    for t in tensors:
        if fns.numel(t):
            groups.setdefault(t.device, []).append(span_bytes(t, fns))
    for device, spans in groups.items():
        stream = _stream(key, device, fns.sum([fns.numel(s) for s in spans]), fns, draw_on,
                         host)
        at = 0
        for s in spans:
            fns.xor(s, fns.narrow(stream, 0, at, fns.numel(s)))
            at += fns.numel(s)


def masks(t: Any, cpu_too: bool = True) -> bool:
    """Whether a sample's tensor `t` is masked: a GPU tensor always; a CPU tensor unless
    `cpu_too` is false (`timing.mask_cpu_inputs: false`: the judge then writes the CPU-side
    inputs plainly after the rehearsal, host memory only, and neither end XORs them)."""
    return cpu_too or t.device.type != "cpu"


def copy_spans(dst: Iterable[Any], src: Iterable[Any], fns: _Torch = _TORCH) -> None:
    """Copy each source tensor's span bytes over its destination's (the same layouts):
    bytes, not values (a bool's masked byte would be read as a value and lose its bits)."""
    for d, s in zip(dst, src, strict=True):
        if fns.numel(d):
            fns.copy(span_bytes(d, fns), span_bytes(s, fns))
