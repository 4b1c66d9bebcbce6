"""Ranking: per task version and device kind, each user's best fully passing result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Ranked:
    rank: int
    user: str
    submission_id: int
    score_ns: float
    file_name: str
    created_at: str
    status: str


def eligible(entry: dict[str, Any], device_kind: str) -> bool:
    """Ranks only if both leaderboard runs passed, on this device kind, and not hacked."""
    public, secret = entry.get("public"), entry.get("secret")
    return (
        entry["mode"] == "leaderboard"
        and entry["device_kind"] == device_kind
        and entry["status"] != "hacked"
        and not entry.get("refused")
        and bool(public and public["passed"])
        and bool(secret and secret["passed"] and secret["score_ns"] is not None)
    )


def rank(entries: list[dict[str, Any]], device_kind: str) -> list[Ranked]:
    """The ranked table: best score per user, ties to the earlier submission."""
    best: dict[str, dict[str, Any]] = {}
    for e in entries:
        if not eligible(e, device_kind):
            continue
        key = (e["secret"]["score_ns"], e["id"])
        current = best.get(e["user_name"])
        if current is None or key < (current["secret"]["score_ns"], current["id"]):
            best[e["user_name"]] = e
    ordered = sorted(best.values(), key=lambda e: (e["secret"]["score_ns"], e["id"]))
    return [
        Ranked(i + 1, e["user_name"], e["id"], e["secret"]["score_ns"], e["file_name"],
               e["created_at"], e["status"])
        for i, e in enumerate(ordered)
    ]


def device_kinds(entries: list[dict[str, Any]]) -> list[str]:
    return sorted({e["device_kind"] for e in entries})
