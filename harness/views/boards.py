"""What the read commands and the web leaderboard show, as plain data.

One function per view: `runner.py leaderboard/history/show --json`, the web pages and
their /api/ endpoints all call these, so they agree by construction. Nothing here writes
to the database, prints, or needs a web framework."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.loading.cases import format_case
from harness.loading.task_folder import TaskError, list_task_names, load_task
from harness.results.ranking import Ranked, device_kinds, eligible, find, rank
from harness.storage.store import Store


class UnknownTask(LookupError):
    """No task of that name here, and no results for it in the database."""


@dataclass
class Board:
    """The ranked tables of one task version, one per device kind."""

    task: str
    content_hash: str | None  # None: every version ranked together
    tables: dict[str, list[Ranked]]
    entries: list[dict[str, Any]] = field(repr=False)
    older: int  # results of earlier task versions, not ranked here

    def to_dict(self) -> dict[str, Any]:
        """The document of `runner.py leaderboard TASK --json`."""
        return {"task": self.task, "content_hash": self.content_hash,
                "devices": {k: [vars(r) for r in t] for k, t in self.tables.items()}}


def current_hash(store: Store, task: str) -> str:
    """The task version that ranks now: the task folder's, else the newest in the database."""
    try:
        return load_task(task).content_hash
    except TaskError:
        board = store.current_board(task)
        if board is None:
            raise UnknownTask(f"no task {task!r} here and no results for it") from None
        return board["content_hash"]


def board(store: Store, task: str, device: str | None = None,
          all_versions: bool = False) -> Board:
    """The ranked tables of `task` (its current version unless `all_versions`)."""
    content_hash = current_hash(store, task)
    entries = store.entries(task, None if all_versions else content_hash)
    kinds = [device] if device else device_kinds(entries)
    older = 0 if all_versions else sum(
        1 for e in store.entries(task) if e["content_hash"] != content_hash)
    return Board(task, None if all_versions else content_hash,
                 {kind: rank(entries, kind) for kind in kinds}, entries, older)


def history(store: Store, task: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
    """Every recorded submission, oldest first, with its runs (`history --json`)."""
    rows = store.history(task, user)
    for row in rows:
        for run in row["runs"]:
            run["passed"] = bool(run["passed"])
    return rows


def submission(store: Store, submission_id: int, code: bool) -> dict[str, Any] | None:
    """One submission with its runs and cases (`show ID --json`); the code only if asked."""
    sub = store.submission(submission_id)
    if sub is None:
        return None
    if not code:
        sub.pop("code", None)
    for run in sub["runs"]:
        run["passed"] = bool(run["passed"])
    sub["passed"] = bool(sub["runs"]) and all(r["passed"] for r in sub["runs"])
    return sub


def standing(store: Store, sub: dict[str, Any]) -> tuple[Ranked | None, int]:
    """Where a submission ranks among its task version's results on its device kind (the
    row that counts it, if any) and how many rows that table has."""
    if not sub["runs"]:
        return None, 0
    table = rank(store.entries(sub["task"], sub["content_hash"]), sub["runs"][0]["device_kind"])
    return find(table, sub["id"]), len(table)


def task_info(task: str) -> dict[str, Any] | None:
    """The task folder's description, GPUs and cases; None when it is not here."""
    try:
        t = load_task(task)
    except TaskError:
        return None
    return {"name": t.name, "description": t.description, "gpus": t.gpus,
            "ranking_by": t.ranking_by, "content_hash": t.content_hash,
            "tests": [format_case(c) for c in t.tests],
            "benchmarks": [format_case(c) for c in t.benchmarks]}


def task_names(store: Store) -> list[str]:
    """Every task with a folder here or results in the database."""
    return sorted(set(list_task_names()) | set(store.tasks()))


def overview(store: Store, top: int = 3) -> list[dict[str, Any]]:
    """One tile per task: description, GPU kinds, the top rows per device kind, counts."""
    tiles = []
    for name in task_names(store):
        info = task_info(name)
        try:
            b = board(store, name)
        except UnknownTask:
            continue
        tiles.append({
            "task": name,
            "description": info["description"] if info else "",
            "gpus": info["gpus"] if info else [],
            "devices": {k: [vars(r) for r in t[:top]] for k, t in b.tables.items()},
            "submissions": len(b.entries),
            "users": len({e["user_name"] for e in b.entries}),
        })
    return tiles


def trend(b: Board, device_kind: str) -> dict[str, Any]:
    """The best ranked score over time on one device kind, overall and per user.

    Each point is the moment a ranked submission arrived and the score it left: the
    user's ranked score then (the median of a repeated program, as ranked), and the
    best of all users'. Only changes are kept."""
    ranked = sorted((e for e in b.entries if eligible(e, device_kind)), key=lambda e: e["id"])
    seen: dict[str, list[dict[str, Any]]] = {}
    best_of: dict[str, Ranked] = {}
    users: dict[str, list[dict[str, Any]]] = {}
    overall: list[dict[str, Any]] = []
    for e in ranked:
        user = e["user_name"]
        seen.setdefault(user, []).append(e)
        best_of[user] = rank(seen[user], device_kind)[0]
        mine = users.setdefault(user, [])
        score = best_of[user].score_ns
        if not mine or mine[-1]["score_ns"] != score:
            mine.append({"at": e["created_at"], "score_ns": score, "submission_id": e["id"]})
        leader = min(best_of.values(), key=lambda r: (r.score_ns, r.submission_id))
        if not overall or (overall[-1]["score_ns"], overall[-1]["user"]) != (
                leader.score_ns, leader.user):
            overall.append({"at": e["created_at"], "score_ns": leader.score_ns,
                            "user": leader.user, "submission_id": leader.submission_id})
    return {"task": b.task, "device": device_kind, "overall": overall, "users": users}
