"""The performance-trend chart, drawn on the server as inline SVG (no script, no CDN)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from html import escape
from typing import Any

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22"]
LEFT, RIGHT, TOP, BOTTOM, LEGEND = 72, 16, 14, 30, 150
# The trend chart's size, in pixels.
TREND_WIDTH, TREND_HEIGHT = 1000, 260


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def _label(us: float) -> str:
    return f"{us:.3g} µs" if us < 1e3 else f"{us / 1e3:.3g} ms"


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
    times = [_seconds(p["at"]) for p in points]
    t0, t1 = min(times), max(times)
    if t1 - t0 < 60:
        t0, t1 = t0 - 30, t1 + 30
    scores = [p["score_ns"] / 1e3 for p in points]
    lo, hi = min(scores), max(scores)
    log = hi / max(lo, 1e-9) > 10
    f = math.log10 if log else (lambda v: v)
    y0, y1 = f(lo), f(hi)
    pad = (y1 - y0) * 0.08 or abs(y0) * 0.1 or 1.0
    y0, y1 = y0 - pad, y1 + pad
    if not log:
        y0 = max(y0, 0.0)
    plot_w, plot_h = width - LEFT - RIGHT - LEGEND, height - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - t0) / (t1 - t0) * plot_w

    def y(us: float) -> float:
        return TOP + (1 - (f(us) - y0) / (y1 - y0)) * plot_h

    out = [f'<svg class="trend" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="best score over time on {escape(trend["device"])}">',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>']
    for i in range(5):  # horizontal grid lines with their scores
        v = y0 + (y1 - y0) * i / 4
        us = 10 ** v if log else v
        yy = y(us)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" '
                   f'class="grid"/><text x="{LEFT - 6}" y="{yy + 4:.1f}" class="tick" '
                   f'text-anchor="end">{_label(us)}</text>')
    for t, anchor in ((t0, "start"), (t1, "end")):
        stamp = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
        out.append(f'<text x="{x(t):.1f}" y="{height - 10}" class="tick" '
                   f'text-anchor="{anchor}">{stamp}</text>')
    colours = {"best of all": "#111"} | user_colours(list(trend["users"]))
    for row, (name, pts) in enumerate(series.items()):
        colour, cls = colours[name], "overall" if name == "best of all" else "user"
        path, prev = [], None
        for p in pts:
            px, py = x(_seconds(p["at"])), y(p["score_ns"] / 1e3)
            path.append(f"M{px:.1f},{py:.1f}" if prev is None else f"H{px:.1f}V{py:.1f}")
            prev = py
        path.append(f"H{x(t1):.1f}")
        out.append(f'<path d="{"".join(path)}" class="{cls}" stroke="{colour}"/>')
        for p in pts:
            who = p.get("user", name)
            tip = escape(f"{who}: {_label(p['score_ns'] / 1e3)} at {p['at'][:19]} "
                         f"(submission {p['submission_id']})")
            out.append(f'<circle cx="{x(_seconds(p["at"])):.1f}" '
                       f'cy="{y(p["score_ns"] / 1e3):.1f}" r="3" fill="{colour}">'
                       f'<title>{tip}</title></circle>')
        ly = TOP + 8 + row * 18
        lx = width - LEGEND + 8
        out.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}" class="{cls}" '
                   f'stroke="{colour}"/><text x="{lx + 24}" y="{ly + 4}" class="legend">'
                   f'{escape(name[:18])}</text>')
    if log:
        out.append(f'<text x="{LEFT + 4}" y="{TOP + 12}" class="tick">log scale</text>')
    out.append("</svg>")
    return "\n".join(out)
