"""Recording an evaluation in the results database, and showing where it ranks."""

from __future__ import annotations

import getpass
import os
import subprocess
from dataclasses import asdict
from typing import Any

from harness.results.admission import Decision
from harness.results.document import Evaluation
from harness.results.ranking import find, program_key, rank
from harness.storage.store import Leaderboard, NewSubmission, Store, resolve_db

ENV_USER = "HARNESS_USER"


def resolve_user(flag: str | None) -> str:
    """--user, else $HARNESS_USER, else git's user.name, else the login name."""
    if flag:
        return flag
    if os.environ.get(ENV_USER):
        return os.environ[ENV_USER]
    try:
        name = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True,
                              timeout=5).stdout.strip()
        if name:
            return name
    except (OSError, subprocess.SubprocessError):
        pass
    return getpass.getuser()


def runs_of(ev: Evaluation) -> list[dict[str, Any]]:
    """The run rows of an evaluation: one per seed kind (public, and secret when used)."""
    seeds = ["public", "secret"] if ev.mode == "leaderboard" else ["public"]
    rows = []
    for kind in seeds:
        phases = [p for p in ev.phases if p.seeds == kind]
        bench = next((p for p in phases if p.name == "benchmark"), None)
        cases = [{"phase": p.name} | asdict(c) for p in phases for c in p.cases]
        rows.append({
            "mode": ev.mode, "seeds": kind, "device_kind": ev.device["ranking_kind"],
            "device_name": ev.device["name"], "started_at": ev.started, "ended_at": ev.ended,
            "passed": ev.load_error is None and bool(phases) and all(p.passed for p in phases),
            "score_ns": bench.score_ns if bench else None, "cases": cases,
            "messages": {"load_error": ev.load_error, "warnings": ev.warnings,
                         "flags": [f for c in cases for f in c["flags"]],
                         # the worker's output (bounded by worker.output_limit_bytes): what
                         # it printed before the secret phases with the public run, during
                         # them with the secret run (results/disclosure.py hides that one)
                         "output": ev.secret_output if kind == "secret" else ev.worker_output},
            "harness_version": ev.harness.get("version", ""),
            "system": {"harness": ev.harness, "device": ev.device},
        })
    return rows


def record_evaluation(store: Store, board: Leaderboard, user: str, ev: Evaluation,
                      decision: Decision) -> int:
    """Record one evaluation that admission let in (its submission and runs, in one
    transaction), marked and refused a rank as `decision` says; its id."""
    if not decision.recorded:
        raise ValueError(f"admission refused this result: {decision.reason}")
    code = ev.submission.get("code", "")
    submission = NewSubmission(user, ev.submission["name"], code, ev.submission["sha256"],
                               decision.mark, ev.screen, decision.rank_refused,
                               program_key(code))
    return store.record(board, submission, runs_of(ev))


class Recorder:
    """Opens the database for one submission, records it, prints the ranked table."""

    def __init__(self, store: Store, board: Leaderboard, user: str) -> None:
        self.store, self.board, self.user = store, board, user
        self.submission_id: int | None = None

    @classmethod
    def open(cls, opts, settings, prepared) -> Recorder:
        store = Store(resolve_db(opts.db, settings.store_path))
        board = store.leaderboard(prepared.task.name, prepared.task.content_hash)
        return cls(store, board, resolve_user(opts.user))

    @property
    def secret(self) -> bytes:
        return self.board.secret

    def close(self) -> None:
        """Close the database (SQLite folds its write-ahead log into the file then)."""
        self.store.close()

    def record(self, ev: Evaluation, decision: Decision) -> int:
        self.submission_id = record_with_standing(self.store, self.board, self.user, ev,
                                                  decision)
        return self.submission_id


def record_with_standing(store: Store, board: Leaderboard, user: str, ev: Evaluation,
                         decision: Decision) -> int:
    """Record one evaluation and write into `ev.record` its id, user and, in leaderboard
    mode, where it ranks (the result document's `record`); its id."""
    submission_id = record_evaluation(store, board, user, ev, decision)
    ev.record = {"submission_id": submission_id, "user": user,
                 "database": store.url if not store.postgres else "postgresql",
                 "refused": decision.rank_refused}
    if ev.mode == "leaderboard":
        table = rank(store.entries(board.task, board.content_hash), ev.device["ranking_kind"])
        mine = find(table, submission_id)
        ev.record.update(ranked=len(table), rank=mine.rank if mine else None,
                         evaluations_of_file=mine.evaluations if mine else None)
    return submission_id
