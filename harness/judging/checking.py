"""Comparing outputs with references: verdicts with readable mismatch reports.

Tasks build their `check_implementation` from `match_reference`; the judge also runs
`output_sanity` on every output before the task's own check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from harness.judging.structure import clone, tensors

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
        return False, f"{name}: dtype {got.dtype}, expected {expected.dtype}"
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
        expected = ref_kernel(clone(data))
        return compare(output, expected, rtol, atol)

    return check_implementation


def output_sanity(output: Any, expected_finite: bool = True) -> str:
    """A reason to fail before the task's check: NaN or inf where the reference has none."""
    if not expected_finite:
        return ""
    for i, t in enumerate(tensors(output)):
        if t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all()):
            nan = int(torch.isnan(t).sum())
            inf = int(torch.isinf(t).sum())
            return f"output tensor {i} holds {nan} NaN and {inf} inf values (unwritten or overflowed)"
    return ""


def all_finite(obj: Any) -> bool:
    """True when every floating tensor of a nested value is finite."""
    return all(
        bool(torch.isfinite(t).all()) for t in tensors(obj) if t.is_floating_point() and t.numel()
    )
