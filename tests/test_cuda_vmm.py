"""GPU memory shared through file descriptors (harness/judging/worker/cuda_vmm.py): with a
fake CUDA driver, an arena's size, the undoing of a half-made mapping, the descriptors it
receives and gives, its release and its views' bounds; on a GPU, the real round trip."""

from __future__ import annotations

import ctypes
import gc
import os

import pytest
from conftest import gpu

from harness.judging.worker import cuda_vmm
from harness.judging.worker.cuda_vmm import Arena, CudaVmmError

MiB = 1 << 20


class FakeDriver:
    """libcuda as the module calls it: every call recorded by name; the names in `fail`
    return CUDA error 2 (out of memory). Handles and addresses are made up; an exported
    descriptor is a real one (of /dev/null), as the caller closes it."""

    def __init__(self, *fail: str) -> None:
        self.fail, self.calls = set(fail), []

    def __getattr__(self, name: str):
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args):
            self.calls.append(name)
            if name in self.fail:
                return 2
            out = {"cuMemGetAllocationGranularity": 2 * MiB, "cuMemCreate": 7,
                   "cuMemImportFromShareableHandle": 9, "cuMemAddressReserve": 0x7000_0000,
                   "cuMemExportToShareableHandle": None}.get(name)
            if name == "cuMemExportToShareableHandle":
                out = os.open(os.devnull, os.O_RDONLY)
            if out is not None:
                args[0]._obj.value = out  # the byref(...) output argument
            if name == "cuGetErrorString":
                args[1]._obj.value = b"out of memory"
            return 0

        return call


@pytest.fixture
def driver(monkeypatch):
    """Install a FakeDriver (failing the calls named); the test's arenas are released
    into it, never into a real driver."""
    def use(*fail: str) -> FakeDriver:
        fake = FakeDriver(*fail)
        monkeypatch.setattr(cuda_vmm, "_DRIVER", fake)
        return fake

    yield use
    gc.collect()


def _released(calls: list[str]) -> list[str]:
    return [c for c in calls if c in ("cuCtxSynchronize", "cuMemUnmap", "cuMemAddressFree",
                                      "cuMemRelease")]


def test_a_failed_driver_call_names_itself(driver):
    fake = driver()
    cuda_vmm._check(fake, 0, "cuMemMap")
    with pytest.raises(CudaVmmError, match=r"cuMemMap failed: CUDA error 2 \(out of memory\)"):
        cuda_vmm._check(fake, 2, "cuMemMap")


def test_an_arena_is_a_whole_number_of_the_drivers_steps(driver):
    fake = driver()
    assert Arena.create(0, 3 * MiB).size == 4 * MiB
    assert Arena.create(0, 0).size == 2 * MiB  # never empty
    arena = Arena.create(1, 2 * MiB)
    assert (arena.size, arena.device, arena.handle, arena.ptr) == (2 * MiB, 1, 7, 0x7000_0000)
    assert fake.calls[-4:] == ["cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess"]
    prop = cuda_vmm._prop(1)
    assert (prop.type, prop.requestedHandleTypes) == (cuda_vmm._PINNED, cuda_vmm._POSIX_FD)
    assert (prop.location.type, prop.location.id) == (cuda_vmm._ON_DEVICE, 1)


@pytest.mark.parametrize("failing,undone", [
    ("cuMemAddressReserve", ["cuMemRelease"]),
    ("cuMemMap", ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"]),
    ("cuMemSetAccess", ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"])])
def test_a_mapping_that_fails_halfway_is_undone(driver, failing, undone):
    """A full GPU or a driver without the API fails one step: what was done before it is
    undone and the allocation released, so nothing of the judge's stays mapped."""
    fake = driver(failing)
    with pytest.raises(CudaVmmError, match=failing):
        Arena.create(0, MiB)
    assert _released(fake.calls[fake.calls.index(failing):]) == undone


@pytest.mark.parametrize("fail", [(), ("cuMemImportFromShareableHandle",)])
def test_the_worker_closes_the_descriptor_it_received(driver, fail):
    driver(*fail)
    fd = os.open(os.devnull, os.O_RDONLY)
    if fail:
        with pytest.raises(CudaVmmError):
            Arena.open(0, fd, 2 * MiB)
    else:
        assert Arena.open(0, fd, 2 * MiB).handle == 9
    with pytest.raises(OSError):
        os.fstat(fd)


def test_the_judge_exports_one_descriptor_and_closes_it(driver):
    fake = driver()
    arena = Arena.create(0, MiB)
    fd = arena.export_fd()
    assert arena.export_fd() == fd and fake.calls.count("cuMemExportToShareableHandle") == 1
    arena.close_fd()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_an_arena_is_released_once_after_the_device_is_idle(driver):
    fake = driver()
    arena = Arena.create(0, MiB)
    fd = arena.export_fd()
    arena.close()
    arena.close()
    assert _released(fake.calls) == ["cuCtxSynchronize", "cuMemUnmap", "cuMemAddressFree",
                                     "cuMemRelease"]
    with pytest.raises(OSError):
        os.fstat(fd)
    with pytest.raises(CudaVmmError, match="closed arena"):
        arena.view(None, 0, 4, None, (1,), (1,))


def test_an_arena_nothing_holds_is_released(driver):
    fake = driver()
    Arena.create(0, MiB)
    gc.collect()
    assert _released(fake.calls)[-1] == "cuMemRelease"


@pytest.mark.parametrize("offset,nbytes", [(-1, 4), (0, 2 * MiB + 1), (2 * MiB - 2, 4), (0, -1)])
def test_a_view_outside_the_arena_is_refused(driver, offset, nbytes):
    driver()
    arena = Arena.create(0, MiB)
    with pytest.raises(CudaVmmError, match="outside an arena"):
        arena.view(None, offset, nbytes, None, (1,), (1,))


def test_without_a_cuda_driver_an_arena_says_so(monkeypatch):
    monkeypatch.setattr(cuda_vmm, "_DRIVER", None)
    monkeypatch.setattr(ctypes, "CDLL", _no_library)
    with pytest.raises(CudaVmmError, match="CUDA driver library could not be loaded"):
        Arena.create(0, MiB)


def _no_library(name: str, *args, **kwargs):
    raise OSError(f"{name}: cannot open shared object file")


@pytest.mark.gpu
@gpu
def test_an_arena_exported_and_opened_again_holds_the_same_bytes():
    """On a GPU: a tensor viewed in an arena, exported as a descriptor and mapped again
    (as the worker maps it), reads what was written; released, the memory is the
    driver's again."""
    import torch

    arena = Arena.create(0, 3 * MiB)
    view = arena.view(torch, 4096, 16, torch.float32, (2, 2), (2, 1))
    view.copy_(torch.arange(4.0, device="cuda").reshape(2, 2))
    again = Arena.open(0, os.dup(arena.export_fd()), arena.size)
    seen = again.view(torch, 4096, 16, torch.float32, (2, 2), (2, 1))
    torch.cuda.synchronize()
    assert torch.equal(seen.cpu(), torch.arange(4.0).reshape(2, 2))
    assert view.data_ptr() == arena.ptr + 4096
    again.close()
    arena.close()
