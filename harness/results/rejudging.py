"""Rejudgings read and chosen, for the command line (harness/frontends/rejudge.py) and the
contest server's admin routes alike: which stored submissions a rejudging takes, what
changed for each, and each ranking before and after."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.consts import Mark
from harness.results.ranking import rank
from harness.storage.store import Store

NOT_COUNTED = (Mark.HACKED, Mark.PENDING, Mark.SUPERSEDED)


@dataclass
class Selection:
    """Which stored submissions a rejudging takes."""

    ids: tuple[int, ...] = ()
    users: tuple[str, ...] = ()
    top: int | None = None
    everything: bool = False


def select(store: Store, task: str, chosen: Selection) -> list[dict[str, Any]]:
    """The originals (entries of `store.entries`) that `chosen` names, oldest first."""
    entries = [e for e in store.entries(task) if e["status"] not in NOT_COUNTED]
    if chosen.ids:
        entries = [e for e in entries if e["id"] in chosen.ids]
    elif not chosen.everything:
        ranked: set[int] = set()
        for version in {e["content_hash"] for e in entries}:
            of_version = [e for e in entries if e["content_hash"] == version]
            for kind in {e["device_kind"] for e in of_version}:
                table = rank(of_version, kind)[:chosen.top] if chosen.top else rank(of_version,
                                                                                   kind)
                ranked |= {row.submission_id for row in table}
        entries = [e for e in entries if e["id"] in ranked]
    if chosen.users:
        entries = [e for e in entries if e["user_name"] in chosen.users]
    return sorted(entries, key=lambda e: e["id"])


def verdict(sub: dict[str, Any] | None) -> tuple[str, float | None]:
    """A stored submission's leaderboard verdict and score: its secret run's (or its
    public one's, where it has no secret run)."""
    if sub is None:
        return "", None
    runs = {r["seeds"]: r for r in sub["runs"]}
    run = runs.get("secret") or runs.get("public")
    if run is None:
        return "not run", None
    passed = all(r["passed"] for r in sub["runs"])
    return ("passed" if passed else "failed"), run["score_ns"] if passed else None


def failure(sub: dict[str, Any] | None) -> str:
    """Why a stored submission failed, in a line: its load error's title, or its first
    case that did not pass (public runs first)."""
    for run in sorted((sub or {}).get("runs") or [], key=lambda r: r["seeds"] != "public"):
        load_error = (run.get("messages") or {}).get("load_error")
        if load_error:
            return str(load_error.get("title") or load_error.get("status") or "not loaded")
        for case in run.get("cases") or []:
            if case.get("status") != "passed":
                said = f": {case['message'][:120]}" if case.get("message") else ""
                return f"{case.get('phase', '')} case {case.get('index')}: {case['status']}{said}"
    return ""


def changes(store: Store, found: dict[str, Any]) -> list[dict[str, Any]]:
    """Per original of the rejudging `found` (storage.rejudgings.rejudging): its verdict
    and score, the new ones, the change, why the new one fails where it does, and the new
    screen's findings the original did not have."""
    rows = []
    for item in found["items"]:
        old, new = store.submission(item["original_id"]), None
        if item["submission_id"] is not None:
            new = store.submission(item["submission_id"])
        (was, before), (now_, after) = verdict(old), verdict(new)
        seen = {f["rule"] for f in (old or {}).get("screen") or []}
        rows.append({
            "original": item["original_id"], "new": item["submission_id"],
            "user": old["user_name"] if old else "", "file": old["file_name"] if old else "",
            "was": was, "before_ns": before, "now": now_ if new else "not judged",
            "after_ns": after, "mark": item["mark"], "error": item["error"],
            "fails_because": failure(new) if new and now_ == "failed" else "",
            "change": (after / before - 1) if before and after else None,
            "new_findings": sorted({f["rule"] for f in (new or {}).get("screen") or []
                                    if f["severity"] in ("hard", "flag")} - seen)})
    return rows


def rankings(store: Store, found: dict[str, Any]) -> dict[str, tuple[list, list]]:
    """Per device kind, the ranking of the rejudging's originals as they stand and the one
    their new results would make once applied (each with the mark admission gave it)."""
    items = found["items"]
    originals = {i["original_id"] for i in items}
    marks = {i["submission_id"]: i["mark"] for i in items if i["submission_id"] is not None}
    entries = store.entries(found["task"])
    before = [e for e in entries if e["id"] in originals]
    after = [dict(e, status=marks[e["id"]]) for e in entries if e["id"] in marks]
    kinds = sorted({e["device_kind"] for e in before + after})
    return {kind: (rank(before, kind), rank(after, kind)) for kind in kinds}
