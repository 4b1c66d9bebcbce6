from collections import namedtuple
from dataclasses import dataclass

import pytest
import torch

from harness.judging.worker.input_objects import put_back, saved_state
from harness.judging.worker.sharing import SharedAllocator, WireObject, WorkerArenas
from harness.judging.worker.structure import (
    InputLayoutError,
    clone,
    describe,
    fill_slot,
    make_outputs,
    make_slot,
    poison,
    structure_error,
    tensors,
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


# Inputs that hold objects: a dataclass of a task's own, an nn.Module with a buffer.


@dataclass
class Config:
    size: int
    weight: torch.Tensor


class Cache(torch.nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.register_buffer("data", torch.zeros(size))
        self.filled = 0


Pair = namedtuple("Pair", "left right")


def with_objects(seed: int):
    g = torch.Generator().manual_seed(seed)
    cache = Cache(4)
    cache.data.copy_(torch.randn(4, generator=g))
    return Config(4, torch.randn(4, generator=g)), Pair(cache, torch.randn(2, generator=g))


def test_objects_are_walked_copied_and_filled_like_tuples(tmp_path):
    data = with_objects(1)
    assert len(list(tensors(data))) == 3
    copy = clone(data)
    assert type(copy[0]) is Config and type(copy[1]) is Pair and type(copy[1].left) is Cache
    assert copy[0].weight is not data[0].weight and torch.equal(copy[0].weight, data[0].weight)
    slot = make_slot(data, SharedAllocator(tmp_path))
    fresh = with_objects(2)
    fill_slot(slot, fresh)
    assert torch.equal(slot[0].weight, fresh[0].weight)
    assert torch.equal(slot[1].left.data, fresh[1].left.data)  # a module's buffer, shared


def test_an_object_that_changes_between_calls_is_refused(tmp_path):
    slot = make_slot(with_objects(1), SharedAllocator(tmp_path))
    other = with_objects(2)
    other[0].size = 5
    with pytest.raises(InputLayoutError):
        fill_slot(slot, other)


def test_objects_travel_by_class_name_and_are_rebuilt_around_the_shared_memory(tmp_path):
    alloc = SharedAllocator(tmp_path)
    slot = make_slot(with_objects(1), alloc)
    wire = alloc.to_wire(slot)
    assert isinstance(wire[0], WireObject) and wire[0].qualname == "Config"
    asked = []

    def classes(module: str, qualname: str) -> type:
        asked.append(qualname)
        return {"Config": Config, "Cache": Cache}[qualname]

    mapped = WorkerArenas(classes).from_wire(wire)
    assert type(mapped[0]) is Config and type(mapped[1].left) is Cache
    assert sorted(asked) == ["Cache", "Config"]
    mapped[1].left.data.fill_(3)  # the worker writes the judge's memory
    assert torch.equal(slot[1].left.data, torch.full((4,), 3.0))


def test_what_a_call_changes_in_an_object_is_put_back():
    config, pair = with_objects(1)
    cache = pair.left
    saved = saved_state((config, pair))
    buffer = cache.data
    cache.filled = 3
    cache.extra = "left by a call"
    cache.register_buffer("data", torch.ones(4))  # replaced in the module's _buffers
    config.size = 9
    put_back(saved)
    assert cache.filled == 0 and not hasattr(cache, "extra") and cache.data is buffer
    assert config.size == 4
    assert saved_state((torch.zeros(2), [1, 2])) == []  # plain inputs: nothing to put back
