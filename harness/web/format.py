"""Jinja filters: scores in µs, medals, times, cases."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from harness.durations import micros
from harness.loading.cases import format_case
from harness.results.document import case_notes

MEDALS = {1: "gold", 2: "silver", 3: "bronze"}


def us(ns: float | None) -> str:
    """A duration in µs, the unit of the public leaderboards ("-" when there is none)."""
    return micros(ns, grouped=True)


def medal(rank: int) -> Markup:
    """The rank, as a medal for ranks 1-3 (drawn by the stylesheet: no emoji font needed)."""
    kind = MEDALS.get(rank)
    return Markup(f'<span class="medal {kind}" title="{kind}">{rank}</span>' if kind else str(rank))


def when(iso: str | None) -> str:
    """An ISO time as `YYYY-MM-DD HH:MM:SS` (UTC, as recorded)."""
    return (iso or "")[:19].replace("T", " ")


def fraction(value: float | None) -> str:
    return f"{value:.0%}" if isinstance(value, (int, float)) else "-"


def case(value: dict[str, Any] | None) -> str:
    return format_case(value) if value else ""


FILTERS = {"us": us, "medal": medal, "when": when, "fraction": fraction, "case": case,
           "notes": case_notes}
