"""Ranking: per task version and device kind, each user's best fully passing file.

A program evaluated several times by one user counts with the median of its scores.
Scores of unchanged code vary from run to run (on the H200 here, host launch time moved
them by tens of percent), so "the best run counts" would reward resubmitting the same
program until a lucky draw; the median of repeated runs only gets more accurate as they
accumulate. The same program means the same code apart from comments, layout and
docstrings (`program_key`), so that editing a comment does not buy a fresh draw."""

from __future__ import annotations

import ast
import hashlib
import statistics
from dataclasses import dataclass, field
from typing import Any

from harness.consts import Mark


@dataclass
class Ranked:
    rank: int
    user: str
    submission_id: int  # the program's first ranked submission
    score_ns: float  # the median over `submission_ids`
    file_name: str
    created_at: str
    status: str
    submission_ids: list[int] = field(default_factory=list)  # every ranked run of the program

    @property
    def evaluations(self) -> int:
        return len(self.submission_ids)


def eligible(entry: dict[str, Any], device_kind: str) -> bool:
    """Ranks only if both leaderboard runs passed, on this device kind, and not hacked,
    superseded or a rejudging's result not applied yet."""
    public, secret = entry.get("public"), entry.get("secret")
    return (
        entry["mode"] == "leaderboard"
        and entry["device_kind"] == device_kind
        and entry["status"] not in (Mark.HACKED, Mark.PENDING, Mark.SUPERSEDED)
        and not entry.get("refused")
        and bool(public and public["passed"])
        and bool(secret and secret["passed"] and secret["score_ns"] is not None)
    )


def program_key(code: str) -> str:
    """A hash of what the code does: its syntax tree without docstrings or other bare
    strings; comments and layout never reach the tree. Code that does not parse is
    identified by its bytes."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "bytes:" + hashlib.sha256(code.encode()).hexdigest()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [n for n in body if not (isinstance(n, ast.Expr)
                                            and isinstance(n.value, ast.Constant)
                                            and isinstance(n.value.value, str))]
            node.body = kept or [ast.Pass()]
    return "ast:" + hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def rank(entries: list[dict[str, Any]], device_kind: str) -> list[Ranked]:
    """The ranked table: each user's best program by its median score; ties go to the
    program submitted first."""
    files: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in entries:
        if eligible(e, device_kind):
            same = e.get("program") or e.get("sha256") or f"#{e['id']}"
            files.setdefault((e["user_name"], same), []).append(e)
    best: dict[str, Ranked] = {}
    for (user, _), runs in files.items():
        runs.sort(key=lambda e: e["id"])
        first = runs[0]
        candidate = Ranked(0, user, first["id"],
                           statistics.median(e["secret"]["score_ns"] for e in runs),
                           first["file_name"], first["created_at"],
                           Mark.SUSPICIOUS if any(e["status"] == Mark.SUSPICIOUS for e in runs)
                           else first["status"],
                           [e["id"] for e in runs])
        current = best.get(user)
        if current is None or _key(candidate) < _key(current):
            best[user] = candidate
    ordered = sorted(best.values(), key=_key)
    for i, r in enumerate(ordered):
        r.rank = i + 1
    return ordered


def find(table: list[Ranked], submission_id: int) -> Ranked | None:
    """The row that counts `submission_id` (one of the runs of its program), if any."""
    return next((r for r in table if submission_id in r.submission_ids), None)


def _key(r: Ranked) -> tuple[float, int]:
    return (r.score_ns, r.submission_id)


def device_kinds(entries: list[dict[str, Any]]) -> list[str]:
    return sorted({e["device_kind"] for e in entries})
