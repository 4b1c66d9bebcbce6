"""GPU memory that the judge allocates and a sandboxed worker maps, through a file descriptor.

torch's own sharing of CUDA tensors (legacy CUDA IPC handles) makes the importing process
reach into the exporting one: the driver needs access to the exporter's process, which a
worker under Landlock does not have to the judge (measured on the H200: "mapping of
buffer object failed"). The CUDA driver's virtual-memory API offers another way: the judge
creates physical memory that can be exported as a POSIX file descriptor, sends that
descriptor to the worker over their UNIX socket (SCM_RIGHTS), and the worker maps it
into its own address space. Nothing then needs the other process's /proc entries or
pid, and the memory stays the judge's: the worker holds a mapping, not an allocation.

An `Arena` is one such allocation, mapped in the process that holds it; tensors are views
of it (`Arena.view`). Everything goes through the driver library (libcuda) with ctypes;
torch keeps using its own context, which the mappings are valid in (one address space per
process, shared by every context of it).
"""

from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any

_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_RECOMMENDED = 1


class CudaVmmError(RuntimeError):
    """A driver call of the shared-memory path failed."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_DRIVER: ctypes.CDLL | None = None


def _driver() -> ctypes.CDLL:
    global _DRIVER
    if _DRIVER is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CudaVmmError(f"the CUDA driver library could not be loaded: {exc}") from exc
        u64, size = ctypes.c_uint64, ctypes.c_size_t
        lib.cuInit.argtypes = [ctypes.c_uint]
        lib.cuMemGetAllocationGranularity.argtypes = [ctypes.POINTER(size),
                                                      ctypes.POINTER(_Prop), ctypes.c_int]
        lib.cuMemCreate.argtypes = [ctypes.POINTER(u64), size, ctypes.POINTER(_Prop), u64]
        lib.cuMemExportToShareableHandle.argtypes = [ctypes.c_void_p, u64, ctypes.c_int, u64]
        lib.cuMemImportFromShareableHandle.argtypes = [ctypes.POINTER(u64), ctypes.c_void_p,
                                                       ctypes.c_int]
        lib.cuMemAddressReserve.argtypes = [ctypes.POINTER(u64), size, size, u64, u64]
        lib.cuMemMap.argtypes = [u64, size, size, u64, u64]
        lib.cuMemSetAccess.argtypes = [u64, size, ctypes.POINTER(_AccessDesc), size]
        lib.cuMemUnmap.argtypes = [u64, size]
        lib.cuMemAddressFree.argtypes = [u64, size]
        lib.cuMemRelease.argtypes = [u64]
        lib.cuCtxSynchronize.argtypes = []
        lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _check(lib, lib.cuInit(0), "cuInit")
        _DRIVER = lib
    return _DRIVER


def _check(lib: ctypes.CDLL, result: int, what: str) -> None:
    if result != 0:
        text = ctypes.c_char_p()
        lib.cuGetErrorString(result, ctypes.byref(text))
        name = text.value.decode() if text.value else "unknown error"
        raise CudaVmmError(f"{what} failed: CUDA error {result} ({name})")


def _prop(device: int) -> _Prop:
    prop = _Prop()
    prop.type = _PINNED
    prop.requestedHandleTypes = _POSIX_FD
    prop.location = _Location(_ON_DEVICE, device)
    return prop


def granularity(device: int) -> int:
    """The driver's recommended allocation size step on `device` (2 MiB on Hopper)."""
    lib, out = _driver(), ctypes.c_size_t()
    prop = _prop(device)
    _check(lib, lib.cuMemGetAllocationGranularity(ctypes.byref(out), ctypes.byref(prop),
                                                  _GRANULARITY_RECOMMENDED),
           "cuMemGetAllocationGranularity")
    return int(out.value)


class _ArrayInterface:
    """A CUDA array interface over raw memory: what torch.as_tensor wraps without a copy.
    The tensor keeps this object, and through it the arena, alive."""

    def __init__(self, ptr: int, nbytes: int, owner: Arena) -> None:
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 2, "strides": None}


class Arena:
    """One exportable allocation of GPU memory, mapped into this process.

    `create` in the judge; `export_fd` gives a descriptor to send; `open` in the worker
    maps a received descriptor (and closes it). Tensors are views (`view`), each keeping
    the arena alive: the mapping is undone and the allocation released (after the
    device has finished its work) when the last view and the arena itself are gone, or
    at `close`. The memory is freed once every process has released it, so a worker that
    keeps a view of an earlier case keeps valid memory, as with torch's own sharing.
    """

    def __init__(self, device: int, size: int, handle: int, ptr: int) -> None:
        self.device, self.size, self.handle, self.ptr = device, size, handle, ptr
        self._fd = -1
        self._release = weakref.finalize(self, _unmap, ptr, size, handle)
        self._release.atexit = False  # the process's exit frees everything anyway

    @classmethod
    def create(cls, device: int, nbytes: int) -> Arena:
        lib = _driver()
        step = granularity(device)
        size = max(step, -(-nbytes // step) * step)
        handle = ctypes.c_uint64()
        prop = _prop(device)
        _check(lib, lib.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0), "cuMemCreate")
        return cls._mapped(device, size, handle.value)

    @classmethod
    def open(cls, device: int, fd: int, size: int) -> Arena:
        """Map the allocation behind `fd` (sent by the judge) on `device`."""
        lib = _driver()
        handle = ctypes.c_uint64()
        try:
            _check(lib, lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                                           _POSIX_FD), "cuMemImportFromShareableHandle")
        finally:
            os.close(fd)
        return cls._mapped(device, size, handle.value)

    @classmethod
    def _mapped(cls, device: int, size: int, handle: int) -> Arena:
        """Reserve addresses, map `handle` there, allow `device` to read and write; on any
        failure undo what was done and release `handle`."""
        lib = _driver()
        ptr = ctypes.c_uint64()
        try:
            _check(lib, lib.cuMemAddressReserve(ctypes.byref(ptr), size, 0, 0, 0),
                   "cuMemAddressReserve")
            try:
                _check(lib, lib.cuMemMap(ptr.value, size, 0, handle, 0), "cuMemMap")
                access = _AccessDesc(_Location(_ON_DEVICE, device), _READ_WRITE)
                _check(lib, lib.cuMemSetAccess(ptr.value, size, ctypes.byref(access), 1),
                       "cuMemSetAccess")
            except BaseException:
                lib.cuMemUnmap(ptr.value, size)
                lib.cuMemAddressFree(ptr.value, size)
                raise
        except BaseException:
            lib.cuMemRelease(handle)
            raise
        return cls(device, size, handle, ptr.value)

    def export_fd(self) -> int:
        """A file descriptor for the allocation (kept until `close_fd` or `close`)."""
        if self._fd < 0:
            lib, fd = _driver(), ctypes.c_int(-1)
            _check(lib, lib.cuMemExportToShareableHandle(ctypes.byref(fd), self.handle, _POSIX_FD, 0),
                   "cuMemExportToShareableHandle")
            self._fd = fd.value
        return self._fd

    def close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def view(self, torch: Any, offset: int, nbytes: int, dtype: Any, shape: tuple[int, ...],
             stride: tuple[int, ...]) -> Any:
        """A tensor over bytes [offset, offset + nbytes) of the arena, with this layout."""
        if not self._release.alive:
            raise CudaVmmError("a view of a closed arena")
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise CudaVmmError(f"a view of bytes {offset}..{offset + nbytes} outside an arena "
                               f"of {self.size}")
        raw = torch.as_tensor(_ArrayInterface(self.ptr + offset, max(nbytes, 1), self),
                              device=f"cuda:{self.device}")
        return raw[:nbytes].view(dtype).as_strided(shape, stride)

    def close(self) -> None:
        """Unmap and release now (no view of it may be used after this)."""
        self.close_fd()
        self._release()


def _unmap(ptr: int, size: int, handle: int) -> None:
    """Wait for the device (no kernel may still use the memory), unmap, release."""
    lib = _driver()
    lib.cuCtxSynchronize()
    lib.cuMemUnmap(ptr, size)
    lib.cuMemAddressFree(ptr, size)
    lib.cuMemRelease(handle)
