"""Nested inputs and outputs (tuples, lists, tensors, numbers): describe, share, fill, copy.

Judge and worker both use this module: the judge lays out shared buffers (allocated by
harness.judging.worker.sharing) like a case's input and reference output; the worker checks its
output against the expected description and copies it into the judge's buffers.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_MAX_DEPTH = 64  # nesting of an input; deeper is taken for a cycle


def describe(obj: Any) -> dict[str, Any]:
    """A JSON-able description of a nested value (kinds, shapes, dtypes)."""
    if isinstance(obj, torch.Tensor):
        return {
            "kind": "tensor",
            "shape": list(obj.shape),
            "dtype": str(obj.dtype).replace("torch.", ""),
            "device": obj.device.type,
        }
    if isinstance(obj, (list, tuple)):
        return {"kind": type(obj).__name__, "items": [describe(x) for x in obj]}
    if isinstance(obj, dict):
        return {"kind": "dict", "items": {str(k): describe(v) for k, v in obj.items()}}
    if isinstance(obj, (int, float, bool, str)) or obj is None:
        return {"kind": "value", "type": type(obj).__name__}
    return {"kind": "other", "type": type(obj).__name__}


def is_object(obj: Any) -> bool:
    """Whether a value is an object whose attributes hold the input (a dataclass, an
    `nn.Module`, any instance with attributes): its tensors are shared and filled like
    those of a tuple, its class rebuilt around them in the worker."""
    if isinstance(obj, (torch.Tensor, list, tuple, dict, str, bytes, int, float, bool,
                        type, enum.Enum, types.ModuleType, types.FunctionType,
                        types.BuiltinFunctionType, types.MethodType)) or obj is None:
        return False
    return hasattr(obj, "__dict__") or (dataclasses.is_dataclass(obj) and hasattr(obj, "__slots__"))


def attributes(obj: Any) -> dict[str, Any]:
    """An object's attributes (its `__dict__`, or a slotted dataclass's fields)."""
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def rebuilt(cls: type, attrs: dict[str, Any]) -> Any:
    """An instance of `cls` with these attributes, made without calling its `__init__`
    (as pickle makes one)."""
    obj = object.__new__(cls)
    if hasattr(obj, "__dict__"):
        obj.__dict__.update(attrs)
    else:
        for name, value in attrs.items():
            object.__setattr__(obj, name, value)
    return obj


def tensors(obj: Any) -> Iterator[torch.Tensor]:
    """The tensors of a nested value, depth first."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from tensors(item)
    elif is_object(obj):
        for item in attributes(obj).values():
            yield from tensors(item)


def transform(obj: Any, on_tensor: Callable[[torch.Tensor], Any],
              on_object: Callable[[Any, dict[str, Any]], Any], depth: int = 0) -> Any:
    """The same nested value with `on_tensor` applied to each tensor, and each object
    replaced by `on_object(obj, its attributes transformed)`. Tuples keep their named-tuple
    class, dicts their dict class."""
    if depth > _MAX_DEPTH:
        raise InputLayoutError(f"the input nests deeper than {_MAX_DEPTH} levels (a cycle?)")
    if isinstance(obj, torch.Tensor):
        return on_tensor(obj)

    def inner(x: Any) -> Any:
        return transform(x, on_tensor, on_object, depth + 1)

    if isinstance(obj, list):
        return [inner(x) for x in obj]
    if isinstance(obj, tuple):
        items = [inner(x) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        items = {k: inner(v) for k, v in obj.items()}
        return items if type(obj) is dict else _same_kind(obj, items)
    if is_object(obj):
        return on_object(obj, {k: inner(v) for k, v in attributes(obj).items()})
    return obj


def _same_kind(like: dict, items: dict) -> dict:
    """`items` as a dict of `like`'s class where it can be made from pairs (OrderedDict)."""
    try:
        return type(like)(items)
    except TypeError:
        return items


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """The same nested value with `fn` applied to each tensor (objects copied around the
    new tensors)."""
    return transform(obj, fn, lambda o, attrs: rebuilt(type(o), attrs))


def clone(obj: Any) -> Any:
    """A deep copy of the tensors of a nested value, keeping strides."""
    return map_tensors(obj, _clone_strided)


def _clone_strided(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def nbytes(obj: Any) -> int:
    """Bytes held by the tensors of a nested value."""
    return sum(t.numel() * t.element_size() for t in tensors(obj))


def make_slot(template: Any, alloc: Any) -> Any:
    """Shared buffers with the layout of `template` (strides kept: views stay views)."""
    return map_tensors(template, alloc.empty_like_strided)


def make_outputs(template: Any, alloc: Any) -> Any:
    """Contiguous shared buffers shaped like the reference output."""
    return map_tensors(template, lambda t: alloc.empty_like_strided(t, contiguous=True))


class InputLayoutError(ValueError):
    """A task whose inputs change shape or non-tensor values from call to call."""


def fill_slot(slot: Any, data: Any) -> None:
    """Copy the tensors of `data` into `slot`; everything else must already match."""
    if isinstance(slot, torch.Tensor):
        if not isinstance(data, torch.Tensor) or data.shape != slot.shape:
            raise InputLayoutError("the input changed shape between calls of one case")
        slot.copy_(data)
    elif isinstance(slot, (list, tuple)):
        if not isinstance(data, (list, tuple)) or len(slot) != len(data):
            raise InputLayoutError("the input changed structure between calls of one case")
        for s, d in zip(slot, data):
            fill_slot(s, d)
    elif isinstance(slot, dict):
        if not isinstance(data, dict) or slot.keys() != data.keys():
            raise InputLayoutError("the input changed structure between calls of one case")
        for key in slot:
            fill_slot(slot[key], data[key])
    elif is_object(slot):
        if type(slot) is not type(data):
            raise InputLayoutError("the input changed class between calls of one case")
        mine, theirs = attributes(slot), attributes(data)
        if mine.keys() != theirs.keys():
            raise InputLayoutError("the input's attributes changed between calls of one case")
        for key in mine:
            fill_slot(mine[key], theirs[key])
    elif type(slot) is not type(data) or slot != data:
        raise InputLayoutError("the input's non-tensor part changed between calls of one case: "
                               f"{slot!r} != {data!r}")


def twin(slot: Any) -> Any:
    """A private copy of a slot's layout: every tensor new, with the same shape, strides,
    dtype and device (contents undefined); everything else as it is."""
    return map_tensors(slot, lambda t: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                                                           device=t.device))


def poison(obj: Any) -> None:
    """Fill buffers with NaN (or all-ones bytes) so that unwritten outputs fail."""
    for t in tensors(obj):
        if t.dtype in _FLOATS:
            t.fill_(float("nan"))
        elif t.numel():
            t.view(torch.uint8).fill_(0xFF) if t.element_size() == 1 else t.fill_(-1)


def structure_error(expected: dict[str, Any], got: Any, where: str = "output") -> str | None:
    """Why `got` does not match the `expected` description, or None when it does."""
    kind = expected["kind"]
    if kind == "tensor":
        if not isinstance(got, torch.Tensor):
            return f"{where}: expected a tensor, got {type(got).__name__}"
        if type(got) is not torch.Tensor and not isinstance(got, torch.nn.Parameter):
            return (
                f"{where}: a {type(got).__name__} (tensor subclass) is not accepted; "
                "return a plain torch.Tensor"
            )
        shape = list(got.shape)
        if shape != expected["shape"]:
            return f"{where}: shape {shape}, expected {expected['shape']}"
        dtype = str(got.dtype).replace("torch.", "")
        if dtype != expected["dtype"]:
            return f"{where}: dtype {dtype}, expected {expected['dtype']}"
        return None
    if kind == "dict":
        if not isinstance(got, dict) or set(map(str, got)) != set(expected["items"]):
            return f"{where}: expected a dict with keys {sorted(expected['items'])}"
        for key, e in expected["items"].items():
            g = next(v for k, v in got.items() if str(k) == key)
            err = structure_error(e, g, f"{where}[{key!r}]")
            if err:
                return err
        return None
    if kind in ("list", "tuple"):
        if not isinstance(got, (list, tuple)):
            n = len(expected["items"])
            return f"{where}: expected a {kind} of {n} items, got {type(got).__name__}"
        if len(got) != len(expected["items"]):
            return f"{where}: expected {len(expected['items'])} items, got {len(got)}"
        for i, (e, g) in enumerate(zip(expected["items"], got)):
            err = structure_error(e, g, f"{where}[{i}]")
            if err:
                return err
        return None
    return None


# Taken as this module is imported (in the worker: before any submission is): a
# submission that replaces Tensor.copy_ does not run its code in the worker's copies of
# inputs and outputs, outside the timed region (worker.TorchCalls says why).
tensor_copy = torch.Tensor.copy_


def copy_into(buffers: Any, got: Any) -> None:
    """Copy a checked output into the judge's buffers."""
    if isinstance(buffers, torch.Tensor):
        tensor_copy(buffers, got)
        return
    if isinstance(buffers, (list, tuple)):
        for b, g in zip(buffers, got):
            copy_into(b, g)
    elif isinstance(buffers, dict):
        for key, b in buffers.items():
            copy_into(b, next(v for k, v in got.items() if str(k) == key))


_MAX_LAYOUT_TENSORS = 4096


def tensor_layout(obj: Any) -> dict[str, Any] | None:
    """The description of an output made of tensors alone (in lists, tuples and dicts, at
    most a few thousand), or None: only such an output can be shared with the judge."""
    leaves = 0
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            leaves += 1
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        else:
            return None
        if leaves > _MAX_LAYOUT_TENSORS or len(stack) > _MAX_LAYOUT_TENSORS:
            return None
    return describe(obj)


def layout_template(layout: Any, device: str, max_bytes: int) -> Any:
    """Zero tensors laid out as a worker's description of its output (judge side).

    The description comes from untrusted code: only tensors inside lists, tuples and dicts
    are accepted, with known dtypes, a bounded count and at most `max_bytes` in all;
    anything else is None.
    """
    count = [0]
    total = [0]

    def build(d: Any) -> Any:
        if not isinstance(d, dict):
            raise ValueError("not a layout")
        kind = d.get("kind")
        if kind == "tensor":
            count[0] += 1
            dtype = getattr(torch, str(d.get("dtype")), None)
            shape = d.get("shape")
            if (not isinstance(dtype, torch.dtype) or not isinstance(shape, list)
                    or not all(isinstance(n, int) and n >= 0 for n in shape)
                    or count[0] > _MAX_LAYOUT_TENSORS):
                raise ValueError("not a tensor layout")
            numel = 1
            for n in shape:
                numel *= n
            total[0] += numel * torch.empty((), dtype=dtype).element_size()
            if total[0] > max_bytes:
                raise ValueError("too large")
            return torch.zeros(shape, dtype=dtype, device=device)
        if kind in ("list", "tuple") and isinstance(d.get("items"), list):
            items = [build(x) for x in d["items"]]
            return items if kind == "list" else tuple(items)
        if kind == "dict" and isinstance(d.get("items"), dict):
            return {str(k): build(v) for k, v in d["items"].items()}
        raise ValueError(f"outputs of kind {kind!r} cannot be shared")

    try:
        return build(layout)
    except (ValueError, TypeError, RuntimeError):
        return None
