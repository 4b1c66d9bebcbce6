"""The contest server's rejudging routes (admins only): a rejudging started as jobs of the
queue, beside the contestants' (who go first: storage/queue.py's CLAIM_ORDER), followed,
then applied or cancelled as a whole. The command line's twin is `runner.py rejudge`."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request

from harness.results.rejudging import Selection, changes, rankings, select
from harness.storage import rejudgings
from harness.storage.queue import QUEUED, RUNNING, NewJob
from harness.storage.store import StoreError


def add_rejudging_endpoints(api: Blueprint, a: Any) -> None:
    """POST /admin/rejudge/<leaderboard>, GET /admin/rejudgings/<id>, and POST
    /admin/rejudgings/<id>/apply or /cancel."""
    from harness.server.api import fail

    @api.post("/admin/rejudge/<leaderboard>")
    def start(leaderboard: str) -> Any:
        """JSON {"all": bool, "top": N, "users": [...], "ids": [...]} (all optional: the
        ranked submissions by default)."""
        who = a.admin()
        task = a.task_or_404(leaderboard)
        chosen = _selection(request.get_json(silent=True) or {}, fail)
        with a.db() as queue:
            store = queue.store
            board = store.leaderboard(task.name, task.content_hash)
            kinds = {k.lower(): k for k in queue.gpu_kinds()}
            originals = select(store, task.name, chosen)
            served = [e for e in originals if e["device_kind"].lower() in kinds]
            if not served:
                fail(400, f"nothing to rejudge on {task.name}: no chosen submission ran on a "
                          f"GPU kind this server runs ({', '.join(kinds.values()) or 'none'})")
            with store.transaction():
                rid = rejudgings.open_rejudging(store, task.name, board.content_hash, who.name,
                                                [e["id"] for e in served])
                jobs = [queue.enqueue(_job(store, task.name, e, kinds, rid)) for e in served]
        a.on_enqueue()
        return jsonify({"id": rid, "leaderboard": task.name, "version": board.content_hash,
                        "jobs": jobs, "skipped": [e["id"] for e in originals
                                                  if e not in served]})

    @api.get("/admin/rejudgings/<int:rid>")
    def follow(rid: int) -> Any:
        a.admin()
        with a.db() as queue:
            found = rejudgings.rejudging(queue.store, rid)
            if found is None:
                fail(404, f"no rejudging {rid}")
            return jsonify(report(queue, found))

    @api.post("/admin/rejudgings/<int:rid>/<action>")
    def settle(rid: int, action: str) -> Any:
        a.admin()
        if action not in ("apply", "cancel"):
            fail(404, f"no rejudging action {action!r}: apply or cancel")
        with a.db() as queue:
            waiting = queue.rejudging_jobs(rid)
            if action == "apply" and (waiting.get(QUEUED) or waiting.get(RUNNING)):
                fail(409, f"rejudging {rid} still has {waiting.get(QUEUED, 0)} queued and "
                          f"{waiting.get(RUNNING, 0)} running jobs: apply it once they end")
            try:
                if action == "cancel":
                    rejudgings.cancel(queue.store, rid)
                    queue.drop_rejudging_jobs(rid)
                else:
                    rejudgings.apply(queue.store, rid)
            except StoreError as exc:
                fail(404 if "no rejudging" in str(exc) else 409, str(exc))
            return jsonify(report(queue, rejudgings.rejudging(queue.store, rid)))


def _selection(body: Any, fail: Any) -> Selection:
    if not isinstance(body, dict):
        fail(400, 'send JSON {"all": bool, "top": N, "users": [...], "ids": [...]}')
    ids, users, top = body.get("ids") or [], body.get("users") or [], body.get("top")
    if not (isinstance(ids, list) and all(isinstance(i, int) for i in ids)):
        fail(400, f"ids must be a list of submission ids, not {ids!r}")
    if not (isinstance(users, list) and all(isinstance(u, str) for u in users)):
        fail(400, f"users must be a list of user names, not {users!r}")
    if top is not None and not (isinstance(top, int) and top > 0):
        fail(400, f"top must be a whole number above 0, not {top!r}")
    return Selection(tuple(ids), tuple(users), top, bool(body.get("all")))


def _job(store: Any, task: str, entry: dict[str, Any], kinds: dict[str, str],
         rid: int) -> NewJob:
    sub = store.submission(entry["id"])
    return NewJob(entry["user_name"], task, "leaderboard", kinds[entry["device_kind"].lower()],
                  sub["file_name"], sub["code"], rid, entry["id"])


def report(queue: Any, found: dict[str, Any]) -> dict[str, Any]:
    """A rejudging as the routes answer it: its row, its jobs by state, what changed per
    submission, and each ranking before and after."""
    rid = found["id"]
    return {"rejudging": {k: v for k, v in found.items() if k != "items"},
            "jobs": queue.rejudging_jobs(rid), "changes": changes(queue.store, found),
            "rankings": {kind: {"before": [vars(e) for e in before],
                                "after": [vars(e) for e in after]}
                         for kind, (before, after) in rankings(queue.store, found).items()}}
