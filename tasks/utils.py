"""Helpers shared by the task folders beside this file, the way the public contests'
problem families ship a `utils.py`: each task's `task.yml` stages this file as `utils.py`,
so a task never imports the harness, and a public family's `eval.py` staged beside a task
finds the names it imports from `utils` (`set_seed`, `clear_l2_cache`,
`clear_l2_cache_large`) here too.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch


def set_seed(seed: int = 42) -> None:
    """Seed Python's and torch's generators (CPU and every GPU)."""
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def clear_l2_cache() -> None:
    """Evict the GPU's L2 cache by writing 256 MiB, enqueued without waiting (as the
    pmpp_v2 evaluator does before each timed call)."""
    dummy = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
    dummy.fill_(42)
    del dummy


def clear_l2_cache_large() -> None:
    """The larger flush of the nvfp4 and mxfp4 contests' evaluators: 62.5 GiB of random
    numbers, enqueued without waiting (tens of milliseconds of GPU work)."""
    dummy = torch.randn((16000, 1024, 1024), device="cuda")
    del dummy


def clone_data(data: Any) -> Any:
    """A deep copy of the tensors of a nested input (tuples, lists, dicts), strides kept."""
    if isinstance(data, torch.Tensor):
        out = torch.empty_strided(data.shape, data.stride(), dtype=data.dtype, device=data.device)
        return out.copy_(data)
    if isinstance(data, tuple):
        return tuple(clone_data(x) for x in data)
    if isinstance(data, list):
        return [clone_data(x) for x in data]
    if isinstance(data, dict):
        return {k: clone_data(v) for k, v in data.items()}
    return data


MAX_SHOWN = 5


def compare_tensors(
    got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float, name: str = "output"
) -> tuple[bool, str]:
    """Elementwise `|got - expected| <= atol + rtol * |expected|`, NaN and inf never pass."""
    if not isinstance(got, torch.Tensor):
        return False, f"{name}: expected a tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(expected.shape):
        return False, f"{name}: shape {list(got.shape)}, expected {list(expected.shape)}"
    if got.dtype != expected.dtype:
        got_dtype, want = (str(d).replace("torch.", "") for d in (got.dtype, expected.dtype))
        return False, f"{name}: dtype {got_dtype}, expected {want}"
    wide = torch.float64 if expected.dtype == torch.float64 else torch.float32
    g = got.detach().to(device=expected.device, dtype=wide)
    e = expected.detach().to(wide)
    diff = (g - e).abs()
    bad = ~(diff <= atol + rtol * e.abs())
    bad |= ~torch.isfinite(g)
    count = int(bad.sum())
    if count == 0:
        return True, ""
    excess = torch.where(bad, torch.nan_to_num(diff, nan=float("inf")), torch.zeros_like(diff))
    flat = excess.flatten()
    worst = torch.topk(flat, min(MAX_SHOWN, count)).indices
    lines = [
        f"{name}: {count} of {got.numel()} elements differ "
        f"(rtol={rtol:g}, atol={atol:g}); the worst:"
    ]
    for idx in worst.tolist():
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(idx), got.shape))
        lines.append(
            f"  at {where}: expected {e.flatten()[idx].item():.6g}, got {g.flatten()[idx].item():.6g}"
        )
    return False, "\n".join(lines)


def compare(got: Any, expected: Any, rtol: float, atol: float, name: str = "output") -> tuple[bool, str]:
    """Compare nested outputs (a tensor, or a list or tuple of them)."""
    if isinstance(expected, torch.Tensor):
        return compare_tensors(got, expected, rtol, atol, name)
    if not isinstance(got, (list, tuple)) or len(got) != len(expected):
        size = len(got) if isinstance(got, (list, tuple)) else type(got).__name__
        return False, f"{name}: expected {len(expected)} items, got {size}"
    problems = []
    for i, (g, e) in enumerate(zip(got, expected)):
        ok, message = compare(g, e, rtol, atol, f"{name}[{i}]")
        if not ok:
            problems.append(message)
    return (not problems), "\n".join(problems)


def match_reference(
    ref_kernel: Callable[[Any], Any], rtol: float, atol: float
) -> Callable[[Any, Any], tuple[bool, str]]:
    """A `check_implementation(data, output)` that compares with `ref_kernel(data)`."""

    def check_implementation(data: Any, output: Any) -> tuple[bool, str]:
        expected = ref_kernel(clone_data(data))
        return compare(output, expected, rtol, atol)

    return check_implementation


def make_match_reference(ref_kernel: Callable[[Any], Any], rtol: float = 1e-5,
                         atol: float = 1e-8) -> Callable[[Any, Any], tuple[bool, str]]:
    """The public families' name for `match_reference`."""
    return match_reference(ref_kernel, rtol, atol)
