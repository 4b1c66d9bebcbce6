"""Checks the judge makes on every output before the task's own check (which is the
authority on correctness: tasks build it from `tasks/utils.py`, beside their folders)."""

from __future__ import annotations

from typing import Any

import torch

from harness.judging.worker.structure import tensors


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
