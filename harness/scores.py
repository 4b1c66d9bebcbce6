"""A task's score from its cases' scores, and the one geometric mean the project uses."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable


def geomean(values: Iterable[float]) -> float:
    """The geometric mean of positive values; NaN where there are none."""
    logs = [math.log(v) for v in values]
    return math.exp(statistics.fmean(logs)) if logs else math.nan


def combine(scores: list[float], ranking_by: str) -> float:
    """The task score from per-case means, by the task's `ranking_by`: `last`, `mean` or `geom`."""
    if not scores:
        raise ValueError("no case scores")
    if ranking_by == "last":
        return scores[-1]
    if ranking_by == "mean":
        return statistics.fmean(scores)
    if ranking_by == "geom":
        return geomean(scores)
    raise ValueError(f"unknown ranking_by {ranking_by!r}")
