import torch

from harness.judging.worker.sharing import SharedAllocator, WorkerArenas
from harness.judging.worker.structure import (
    clone,
    describe,
    fill_slot,
    make_outputs,
    make_slot,
    poison,
    structure_error,
)


def sample():
    base = torch.randn(2, 3, 4)
    return ([(base.permute(2, 0, 1), torch.arange(5))], 7, (torch.zeros(2, dtype=torch.uint8)
                                                           .view(torch.float8_e4m3fn),))


def test_slot_keeps_layout_and_receives_values(tmp_path):
    data = sample()
    alloc = SharedAllocator(tmp_path)
    slot = make_slot(data, alloc)
    view = slot[0][0][0]
    assert view.stride() == data[0][0][0].stride()  # a permuted view stays a view
    fill_slot(slot, data)
    assert torch.equal(view, data[0][0][0])
    mapped = WorkerArenas().from_wire(alloc.to_wire(slot))  # what a worker maps: the same memory
    mapped[0][0][1].fill_(9)
    assert torch.equal(slot[0][0][1], torch.full((5,), 9))


def test_fill_refuses_a_changed_structure(tmp_path):
    data = sample()
    slot = make_slot(data, SharedAllocator(tmp_path))
    changed = (data[0], 8, data[2])
    try:
        fill_slot(slot, changed)
    except ValueError as exc:
        assert "changed" in str(exc)
    else:
        raise AssertionError("a changed scalar must be refused")


def test_poison_makes_unwritten_outputs_fail(tmp_path):
    out = make_outputs([torch.ones(3, dtype=torch.float16), torch.ones(2, dtype=torch.int32)],
                       SharedAllocator(tmp_path))
    poison(out)
    assert torch.isnan(out[0]).all() and (out[1] == -1).all()


def test_structure_errors_are_specific():
    expected = describe([torch.zeros(2, 3, dtype=torch.float16)])
    assert structure_error(expected, [torch.zeros(2, 3, dtype=torch.float16)]) is None
    assert "expected 1 items, got 2" in structure_error(expected, [torch.zeros(2, 3)] * 2)
    assert "shape [3, 2]" in structure_error(expected, [torch.zeros(3, 2, dtype=torch.float16)])
    assert "dtype float32" in structure_error(expected, [torch.zeros(2, 3)])
    assert "expected a list" in structure_error(expected, torch.zeros(2, 3))
    assert "got int" in structure_error(describe(torch.zeros(1)), 3)


def test_tensor_subclasses_are_refused():
    class Lazy(torch.Tensor):
        pass

    lazy = torch.zeros(2).as_subclass(Lazy)
    assert "subclass" in structure_error(describe(torch.zeros(2)), lazy)


def test_clone_is_deep_and_strided():
    data = sample()
    copy = clone(data)
    copy[0][0][1].add_(1)
    assert not torch.equal(copy[0][0][1], data[0][0][1])
    assert copy[0][0][0].stride() == data[0][0][0].stride()
