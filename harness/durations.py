"""Durations as people read them: the one place that writes nanoseconds as text."""

from __future__ import annotations


def readable(ns: float | None) -> str:
    """A duration in the unit that reads best: ns, µs, ms or s ("-" for none)."""
    if ns is None:
        return "-"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def micros(ns: float | None, digits: int = 2, grouped: bool = False) -> str:
    """A duration in µs, the public leaderboards' unit and the judge's messages', to
    `digits` decimals (`grouped`: thousands set apart by commas); "-" for none."""
    if not isinstance(ns, (int, float)):
        return "-"
    return f"{ns / 1e3:{',' if grouped else ''}.{digits}f} µs"


def brief(ns: float) -> str:
    """Three significant digits: in µs, or in ms from 1000 µs (a chart's axis)."""
    us = ns / 1e3
    return f"{us:.3g} µs" if us < 1e3 else f"{us / 1e3:.3g} ms"
