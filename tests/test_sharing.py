"""The buffers a judge shares with its worker: CPU files, GPU arenas sent as descriptors."""

import gc
import os
import socket
import subprocess
import sys
from multiprocessing.reduction import sendfds

import pytest
import torch
from conftest import HAS_GPU, ROOT, gpu

from harness.judging.worker.sharing import (
    ARENA_BYTES,
    ArenaNotice,
    SharedAllocator,
    SharedCpuTensor,
    SharedGpuTensor,
    WorkerArenas,
)
from harness.judging.worker.structure import make_outputs, make_slot


def test_cpu_buffers_travel_as_file_descriptors_of_the_same_memory(tmp_path):
    alloc = SharedAllocator(tmp_path)
    slot = make_slot((torch.arange(6.0).reshape(2, 3).t(), 4), alloc)
    wire = alloc.to_wire(slot)
    assert isinstance(wire[0], SharedCpuTensor) and wire[1] == 4
    assert wire[0].stride == (1, 3)  # the transposed layout is kept
    mapped = WorkerArenas().from_wire(wire)
    mapped[0].fill_(2.5)
    assert torch.equal(slot[0], torch.full((3, 2), 2.5))
    assert alloc.pending() == ([], [])  # no GPU arena to announce


def test_an_empty_tensor_still_gets_a_buffer(tmp_path):
    out = make_outputs([torch.empty(0, 3)], SharedAllocator(tmp_path))
    assert out[0].shape == (0, 3)


@gpu
def test_gpu_buffers_are_packed_into_zeroed_arenas_and_announced_once(tmp_path):
    alloc = SharedAllocator(tmp_path)
    big = torch.empty(ARENA_BYTES // 2 + 1, dtype=torch.uint8, device="cuda")
    a = alloc.empty_like_strided(torch.empty(3, 5, device="cuda").t())
    b = alloc.empty_like_strided(big)
    c = alloc.empty_like_strided(big)  # does not fit beside b: a second arena
    wire = alloc.to_wire([a, b, c])
    assert all(isinstance(w, SharedGpuTensor) for w in wire)
    assert [w.arena for w in wire] == [0, 0, 1]
    assert wire[0].stride == (1, 5) and wire[1].offset % 512 == 0 and wire[1].offset > 0
    assert int(b.sum()) == 0  # fresh arenas are zeroed: nothing of the judge's shows
    notices, fds = alloc.pending()
    assert [n.arena for n in notices] == [0, 1] and len(fds) == 2
    assert alloc.pending() == ([], [])  # each arena is announced once
    del alloc, b, c
    gc.collect()
    a.fill_(1.0)  # the views keep their arena mapped after the allocator is gone
    assert float(a.sum()) == 15.0


CHILD = r"""
import socket, sys
from multiprocessing.reduction import recvfds
import torch
from harness.judging.worker.sharing import ArenaNotice, SharedGpuTensor, WorkerArenas
s = socket.socket(fileno=int(sys.argv[1]))
(fd,) = recvfds(s, 1)
arenas = WorkerArenas()
arenas.add([ArenaNotice(0, int(sys.argv[2]))], [fd])
t = arenas.from_wire(SharedGpuTensor(0, 512, 16, "float32", (4,), (1,)))
print(float(t.sum()))
t.mul_(10)
torch.cuda.synchronize()
"""


@gpu
def test_another_process_maps_an_arena_from_its_descriptor(tmp_path):
    alloc = SharedAllocator(tmp_path)
    alloc.empty_like_strided(torch.empty(100, dtype=torch.uint8, device="cuda"))
    t = alloc.empty_like_strided(torch.empty(4, device="cuda"))
    t.copy_(torch.arange(4.0, device="cuda"))
    torch.cuda.synchronize()
    (notice,), (fd,) = alloc.pending()
    ours, theirs = socket.socketpair()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(theirs.fileno()), str(notice.size)],
                            pass_fds=[theirs.fileno()], env=env, stdout=subprocess.PIPE, text=True)
    theirs.close()
    sendfds(ours, [fd])
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip() == "6.0"
    assert torch.equal(t.cpu(), torch.arange(4.0) * 10)


def test_a_notice_without_its_descriptor_is_refused():
    with pytest.raises(ValueError):
        WorkerArenas().add([ArenaNotice(0, 1 << 21)], [])


@pytest.mark.skipif(HAS_GPU, reason="checks the message where no CUDA driver is installed")
def test_without_a_cuda_driver_an_arena_says_so():
    from harness.judging.worker.cuda_vmm import Arena, CudaVmmError

    with pytest.raises(CudaVmmError, match="CUDA"):
        Arena.create(0, 1 << 20)


@pytest.mark.slow
def test_buffers_the_gpu_cannot_hold_give_a_clear_verdict(monkeypatch):
    """An arena the driver refuses (a full GPU, say) is the machine's fault: the case gets a
    crashed verdict that says so, never an internal error, and the run carries on."""
    from harness.consts import Status
    from harness.judging.evaluation import evaluate
    from harness.judging.preparation import prepare
    from harness.judging.worker.cuda_vmm import CudaVmmError
    from harness.options import RunOptions
    from harness.settings import Settings

    def refuse(self, t, contiguous=False):
        raise CudaVmmError("cuMemCreate failed: CUDA error 2 (out of memory)")

    monkeypatch.setattr(SharedAllocator, "empty_like_strided", refuse)
    opts = RunOptions(file=ROOT / "submissions" / "vectoradd" / "add_torch.py", mode="test",
                      device="cpu", cases=["size: 256; seed: 1", "size: 512; seed: 2"])
    evaluation = evaluate(prepare(opts), Settings.load())
    cases = [c for phase in evaluation.phases for c in phase.cases]
    assert len(cases) == 2 and all(c.status == Status.CRASHED for c in cases)
    assert "could not share the case's GPU buffers" in cases[0].message
    assert "out of memory" in cases[0].message
