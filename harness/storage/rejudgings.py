"""The rows of rejudgings (`rejudgings`, `rejudged`): which originals a rejudging takes,
the new submission each got, and the states it goes through (open, then applied or
cancelled). Applying gives each new submission the mark admission gave it and marks its
original superseded; cancelling deletes the new submissions and their runs. Either is one
transaction, and only an open rejudging can take one."""

from __future__ import annotations

from typing import Any

from harness.consts import Mark
from harness.storage.store import Store, StoreError, now

OPEN, APPLIED, CANCELLED = "open", "applied", "cancelled"


def open_rejudging(store: Store, task: str, content_hash: str, who: str,
                   originals: list[int]) -> int:
    """A new open rejudging of `originals` (submission ids) on the task version
    `content_hash`; its id."""
    with store.transaction():
        cur = store.execute("INSERT INTO rejudgings (task, content_hash, created_at, created_by) "
                            "VALUES (?, ?, ?, ?) RETURNING id", (task, content_hash, now(), who))
        rid = int(cur.fetchone()[0])
        for original in originals:
            store.execute("INSERT INTO rejudged (rejudging_id, original_id) VALUES (?, ?)",
                          (rid, original))
    return rid


def set_outcome(store: Store, rid: int, original: int, submission_id: int | None,
                mark: str | None, error: str | None = None) -> None:
    """What the rejudging of `original` gave: its new submission and mark, or why none."""
    with store.transaction():
        store.execute("UPDATE rejudged SET submission_id = ?, mark = ?, error = ? "
                      "WHERE rejudging_id = ? AND original_id = ?",
                      (submission_id, mark, error, rid, original))


def rejudging(store: Store, rid: int) -> dict[str, Any] | None:
    """A rejudging and its items (each original's and new submission's ids, mark, error)."""
    rows = store.query("SELECT * FROM rejudgings WHERE id = ?", (rid,))
    if not rows:
        return None
    found = rows[0]
    found["items"] = store.query("SELECT original_id, submission_id, mark, error FROM rejudged "
                                 "WHERE rejudging_id = ? ORDER BY original_id", (rid,))
    return found


def rejudgings_of(store: Store, task: str) -> list[dict[str, Any]]:
    """A task's rejudgings, newest first, with how many originals each took."""
    return store.query(
        "SELECT r.id, r.task, r.content_hash, r.created_at, r.created_by, r.state, r.ended_at, "
        "COUNT(j.original_id) AS originals FROM rejudgings r "
        "LEFT JOIN rejudged j ON j.rejudging_id = r.id WHERE r.task = ? "
        "GROUP BY r.id, r.task, r.content_hash, r.created_at, r.created_by, r.state, r.ended_at "
        "ORDER BY r.id DESC", (task,))


def _close(store: Store, rid: int, state: str) -> dict[str, Any]:
    rows = store.query("SELECT state FROM rejudgings WHERE id = ?" +
                       (" FOR UPDATE" if store.postgres else ""), (rid,))
    if not rows:
        raise StoreError(f"no rejudging {rid}")
    if rows[0]["state"] != OPEN:
        raise StoreError(f"rejudging {rid} is {rows[0]['state']} already")
    store.execute("UPDATE rejudgings SET state = ?, ended_at = ? WHERE id = ?",
                  (state, now(), rid))
    return rejudging(store, rid)


def apply(store: Store, rid: int) -> dict[str, Any]:
    """Make the rejudging's new results count: each takes the mark admission gave it, each
    original it replaces becomes superseded (a hacked one stays hacked)."""
    with store.transaction():
        found = _close(store, rid, APPLIED)
        for item in found["items"]:
            if item["submission_id"] is None:
                continue
            store.execute("UPDATE submissions SET status = ? WHERE id = ?",
                          (item["mark"] or Mark.OK, item["submission_id"]))
            store.execute("UPDATE submissions SET status = ? WHERE id = ? AND status <> ?",
                          (Mark.SUPERSEDED, item["original_id"], Mark.HACKED))
    return found


def cancel(store: Store, rid: int) -> dict[str, Any]:
    """Drop the rejudging's new results (their submissions and runs); the originals stay
    as they were."""
    with store.transaction():
        found = _close(store, rid, CANCELLED)
        new = [i["submission_id"] for i in found["items"] if i["submission_id"] is not None]
        store.execute("UPDATE rejudged SET submission_id = NULL WHERE rejudging_id = ?", (rid,))
        for sid in new:
            store.execute("DELETE FROM runs WHERE submission_id = ?", (sid,))
            store.execute("DELETE FROM submissions WHERE id = ?", (sid,))
    return found
