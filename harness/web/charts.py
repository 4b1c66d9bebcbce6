"""The performance-trend chart, drawn on the server as inline SVG (no script, no CDN)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

from harness.durations import brief

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22"]
LEFT, RIGHT, TOP, BOTTOM, LEGEND = 72, 16, 14, 30, 150
# The trend chart's size, in pixels.
TREND_WIDTH, TREND_HEIGHT = 1000, 260


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def user_colours(users: list[str]) -> dict[str, str]:
    """A colour per user, stable for one chart."""
    return {u: PALETTE[i % len(PALETTE)] for i, u in enumerate(users)}


def trend_svg(trend: dict[str, Any], width: int = TREND_WIDTH,
              height: int = TREND_HEIGHT) -> str:
    """An SVG step chart of the best score over time: one thin line per user, a thick one
    for the best of all; hovering a point shows who, what and when. Empty when there is
    no ranked result."""
    series = {"best of all": trend["overall"], **trend["users"]}
    points = [p for s in series.values() for p in s]
    if not points:
        return ""
    axes = _axes(points, width, height)
    out = [f'<svg class="trend" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="best score over time on {escape(trend["device"])}">',
           f'<rect x="{LEFT}" y="{TOP}" width="{axes.plot_w}" height="{axes.plot_h}" '
           'class="plot"/>']
    out += _grid(axes, height)
    colours = {"best of all": "#111"} | user_colours(list(trend["users"]))
    for row, (name, pts) in enumerate(series.items()):
        out += _series(name, pts, colours[name], axes)
        cls = "overall" if name == "best of all" else "user"
        ly = TOP + 8 + row * 18
        lx = width - LEGEND + 8
        out.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}" class="{cls}" '
                   f'stroke="{colours[name]}"/><text x="{lx + 24}" y="{ly + 4}" class="legend">'
                   f'{escape(name[:18])}</text>')
    if axes.log:
        out.append(f'<text x="{LEFT + 4}" y="{TOP + 12}" class="tick">log scale</text>')
    out.append("</svg>")
    return "\n".join(out)


@dataclass
class _Axes:
    """Where a point goes: its time on x, its score (µs) on y, linear or log."""

    t0: float
    t1: float
    y0: float
    y1: float
    log: bool
    plot_w: int
    plot_h: int

    def x(self, t: float) -> float:
        return LEFT + (t - self.t0) / (self.t1 - self.t0) * self.plot_w

    def scaled(self, us: float) -> float:
        return math.log10(us) if self.log else us

    def y(self, us: float) -> float:
        return TOP + (1 - (self.scaled(us) - self.y0) / (self.y1 - self.y0)) * self.plot_h


def _axes(points: list[dict[str, Any]], width: int, height: int) -> _Axes:
    """Axes that hold every point, with a margin; a log scale past a tenfold range."""
    times = [_seconds(p["at"]) for p in points]
    t0, t1 = min(times), max(times)
    if t1 - t0 < 60:
        t0, t1 = t0 - 30, t1 + 30
    scores = [p["score_ns"] / 1e3 for p in points]
    lo, hi = min(scores), max(scores)
    axes = _Axes(t0, t1, 0.0, 0.0, hi / max(lo, 1e-9) > 10, width - LEFT - RIGHT - LEGEND,
                 height - TOP - BOTTOM)
    y0, y1 = axes.scaled(lo), axes.scaled(hi)
    pad = (y1 - y0) * 0.08 or abs(y0) * 0.1 or 1.0
    axes.y0, axes.y1 = y0 - pad, y1 + pad
    if not axes.log:
        axes.y0 = max(axes.y0, 0.0)
    return axes


def _grid(axes: _Axes, height: int) -> list[str]:
    """Horizontal grid lines with their scores, and the first and last times."""
    out = []
    for i in range(5):
        v = axes.y0 + (axes.y1 - axes.y0) * i / 4
        us = 10 ** v if axes.log else v
        yy = axes.y(us)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + axes.plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" '
                   f'class="grid"/><text x="{LEFT - 6}" y="{yy + 4:.1f}" class="tick" '
                   f'text-anchor="end">{brief(us * 1e3)}</text>')
    for t, anchor in ((axes.t0, "start"), (axes.t1, "end")):
        stamp = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
        out.append(f'<text x="{axes.x(t):.1f}" y="{height - 10}" class="tick" '
                   f'text-anchor="{anchor}">{stamp}</text>')
    return out


def _series(name: str, pts: list[dict[str, Any]], colour: str, axes: _Axes) -> list[str]:
    """One series' step line to the chart's end, and its points with their tooltips."""
    cls = "overall" if name == "best of all" else "user"
    path, prev = [], None
    for p in pts:
        px, py = axes.x(_seconds(p["at"])), axes.y(p["score_ns"] / 1e3)
        path.append(f"M{px:.1f},{py:.1f}" if prev is None else f"H{px:.1f}V{py:.1f}")
        prev = py
    path.append(f"H{axes.x(axes.t1):.1f}")
    out = [f'<path d="{"".join(path)}" class="{cls}" stroke="{colour}"/>']
    for p in pts:
        who = p.get("user", name)
        tip = escape(f"{who}: {brief(p['score_ns'])} at {p['at'][:19]} "
                     f"(submission {p['submission_id']})")
        out.append(f'<circle cx="{axes.x(_seconds(p["at"])):.1f}" '
                   f'cy="{axes.y(p["score_ns"] / 1e3):.1f}" r="3" fill="{colour}">'
                   f'<title>{tip}</title></circle>')
    return out
