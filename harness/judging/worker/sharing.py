"""Buffers the judge allocates and the worker maps: a case's input slots and outputs.

CPU tensors live in files of the run's shared-memory folder, which the worker opens by
name. GPU tensors are views of arenas (`harness.judging.worker.cuda_vmm`): the judge creates
each arena, sends its file descriptor once over the worker's UNIX socket, and the worker
maps it. Nothing of either needs access to the other process (a worker under Landlock
has none to the judge), and the pages a worker maps hold nothing of the judge's own
(pristine inputs, reference outputs): arenas are fresh allocations, zeroed.

On the wire (the pickled judge-to-worker messages) a shared tensor is a small
descriptor; `from_wire` in the worker turns descriptors back into tensors.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.judging.worker.structure import rebuilt, transform

# GPU buffers are packed into arenas of at least this size (the driver's granularity is
# 2 MiB on Hopper); each tensor starts on a boundary of _ALIGN bytes.
ARENA_BYTES = 64 << 20
_ALIGN = 512


@dataclass(frozen=True)
class SharedCpuTensor:
    """How a worker maps a CPU tensor the judge placed in a shared-memory file."""

    path: str
    nbytes: int
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def open(self) -> torch.Tensor:
        flat = torch.from_file(self.path, shared=True, size=self.nbytes, dtype=torch.uint8)
        dtype = getattr(torch, self.dtype)
        return flat.view(dtype).as_strided(self.shape, self.stride)


@dataclass(frozen=True)
class SharedGpuTensor:
    """How a worker maps a GPU tensor: bytes of one of the judge's arenas."""

    arena: int
    offset: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]


@dataclass(frozen=True)
class WireObject:
    """An object of an input on the wire: its class by module and name, its attributes
    (their tensors as descriptors). The worker rebuilds it (`WorkerArenas.from_wire`)."""

    module: str
    qualname: str
    attrs: dict[str, Any]


def object_modules(obj: Any) -> set[str]:
    """The modules whose classes the objects of a nested value are (`WireObject`s)."""
    found: set[str] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, WireObject):
            found.add(item.module)
            stack.extend(item.attrs.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


@dataclass(frozen=True)
class ArenaNotice:
    """An arena the worker has not mapped yet; its descriptor follows the message."""

    arena: int
    size: int


def _extent(shape: torch.Size | tuple[int, ...], stride: tuple[int, ...], element: int) -> int:
    """Bytes spanned by a strided layout (at least one element)."""
    if any(n == 0 for n in shape):
        return element
    return (1 + sum((n - 1) * s for n, s in zip(shape, stride))) * element


def contiguous_strides(shape: torch.Size | tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc)
        acc *= max(int(dim), 1)
    return tuple(reversed(strides))


class SharedAllocator:
    """Allocates the tensors of one case that the worker maps (see the module's docstring).

    `pending()` lists the arenas created since the last call, with their descriptors, for
    the message that first refers to them. The allocator lives for one case; an arena is
    unmapped once the allocator and the arena's last view are gone.
    """

    def __init__(self, shm_dir: Path) -> None:
        self.shm_dir = shm_dir
        # id of each buffer handed out -> (the buffer, kept alive; its wire descriptor)
        self._shared: dict[int, tuple[torch.Tensor, SharedCpuTensor | SharedGpuTensor]] = {}
        self._arenas: list = []
        self._used = 0  # bytes used of the newest arena
        self._sent = 0  # arenas the worker was told of

    def empty_like_strided(self, t: torch.Tensor, contiguous: bool = False) -> torch.Tensor:
        stride = contiguous_strides(t.shape) if contiguous else tuple(t.stride())
        nbytes = _extent(t.shape, stride, t.element_size())
        dtype = str(t.dtype).replace("torch.", "")
        if t.device.type == "cuda":
            return self._gpu_tensor(t, stride, nbytes, dtype)
        path = self.shm_dir / f"buf{len(self._shared)}"
        path.write_bytes(b"")
        os.truncate(path, nbytes)
        desc = SharedCpuTensor(str(path), nbytes, dtype, tuple(t.shape), stride)
        out = desc.open()
        self._shared[id(out)] = (out, desc)
        return out

    def _gpu_tensor(self, t: torch.Tensor, stride: tuple[int, ...], nbytes: int,
                    dtype: str) -> torch.Tensor:
        from harness.judging.worker.cuda_vmm import Arena

        start = -(-self._used // _ALIGN) * _ALIGN
        if not self._arenas or start + nbytes > self._arenas[-1].size:
            device = t.device.index if t.device.index is not None else torch.cuda.current_device()
            arena = Arena.create(device, max(nbytes, ARENA_BYTES))
            arena.view(torch, 0, arena.size, torch.uint8, (arena.size,), (1,)).zero_()
            self._arenas.append(arena)
            start = 0
        arena = self._arenas[-1]
        self._used = start + nbytes
        out = arena.view(torch, start, nbytes, t.dtype, tuple(t.shape), stride)
        desc = SharedGpuTensor(len(self._arenas) - 1, start, nbytes, dtype, tuple(t.shape), stride)
        self._shared[id(out)] = (out, desc)
        return out

    def to_wire(self, obj: Any) -> Any:
        """The form in which a nested value of shared buffers is sent to the worker (an
        object as a `WireObject`: its class may live in a module the judge imported
        privately, which pickle cannot name)."""
        return transform(obj, lambda t: self._shared[id(t)][1] if id(t) in self._shared else t,
                         lambda o, attrs: WireObject(type(o).__module__, type(o).__qualname__,
                                                     attrs))

    def pending(self) -> tuple[list[ArenaNotice], list[int]]:
        """The arenas the worker has not been sent yet: notices and file descriptors."""
        new = range(self._sent, len(self._arenas))
        self._sent = len(self._arenas)
        return ([ArenaNotice(i, self._arenas[i].size) for i in new],
                [self._arenas[i].export_fd() for i in new])

    def forget_fds(self) -> None:
        """Close the judge's copies of sent descriptors (the worker holds its own)."""
        for arena in self._arenas[:self._sent]:
            arena.close_fd()


class WorkerArenas:
    """In the worker: the arenas of the current case, mapped from received descriptors.
    `classes(module, qualname)` finds the class of a received object."""

    def __init__(self, classes: Callable[[str, str], type] | None = None) -> None:
        self.arenas: dict[int, Any] = {}
        self.classes = classes or _importable

    def add(self, notices: list[ArenaNotice], fds: list[int]) -> None:
        from harness.judging.worker.cuda_vmm import Arena

        pairs = list(zip(notices, fds, strict=True))  # a descriptor for every notice
        device = torch.cuda.current_device()
        for notice, fd in pairs:
            self.arenas[notice.arena] = Arena.open(device, fd, notice.size)

    def clear(self) -> None:
        """Forget the case's arenas (each is unmapped with its last view)."""
        self.arenas.clear()

    def from_wire(self, obj: Any) -> Any:
        """Open the shared buffers of a received nested value."""
        if isinstance(obj, SharedCpuTensor):
            return obj.open()
        if isinstance(obj, SharedGpuTensor):
            arena = self.arenas[obj.arena]
            return arena.view(torch, obj.offset, obj.nbytes, getattr(torch, obj.dtype),
                              obj.shape, obj.stride)
        if isinstance(obj, WireObject):
            attrs = {k: self.from_wire(v) for k, v in obj.attrs.items()}
            return rebuilt(self.classes(obj.module, obj.qualname), attrs)
        if isinstance(obj, list):
            return [self.from_wire(x) for x in obj]
        if isinstance(obj, tuple):
            items = [self.from_wire(x) for x in obj]
            return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
        if isinstance(obj, dict):
            items = {k: self.from_wire(v) for k, v in obj.items()}
            return items if type(obj) is dict else type(obj)(items)
        return obj


def _importable(module: str, qualname: str) -> type:
    """A class by its module (imported as usual) and qualified name."""
    import importlib

    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found
