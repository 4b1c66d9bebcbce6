"""What a submitter, and anyone reading the public board, may see of a result.

A leaderboard run's secret phases draw their inputs from the leaderboard's secret. What a
submission prints there, a case's spec, its message (a mismatch names values), its timings
and its flags would let a contestant learn those inputs in one run and replay the outputs in
the next. So of a secret phase only whether each case passed and the phase's score are
shown; the rest stays in the database and the full document, for the organiser (`runner.py
show`, the admin route). Every route that serves a result (popcorn-cli's, ours, the event
stream, the web pages and their JSON) goes through this module.
"""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

from harness.results.document import CaseResult


def secret_case(case: dict[str, Any]) -> dict[str, Any]:
    """A case of a secret phase as its submitter sees it: its index and status alone, in the
    shape of every other case (so that the report reads it)."""
    return asdict(CaseResult(int(case.get("index", 0)), {}, str(case.get("status", "?"))))


def public_document(doc: dict[str, Any]) -> dict[str, Any]:
    """A result document as its submitter may see it: the secret phases' cases reduced to
    pass or fail (`secret_case`), their output (`secret_output`) and the server's database
    path left out."""
    doc = copy.deepcopy(doc)
    doc.pop("secret_output", None)
    for phase in doc.get("phases", []):
        if phase.get("seeds") == "secret":
            phase["cases"] = [secret_case(c) for c in phase.get("cases", [])]
    if isinstance(doc.get("record"), dict):
        doc["record"].pop("database", None)
    return doc


def public_submission(sub: dict[str, Any]) -> dict[str, Any]:
    """A recorded submission (`frontends.boards.submission`) as the public board shows it:
    its secret runs' cases reduced to pass or fail, their messages (the worker's output,
    flags, warnings) left out but for a load error."""
    sub = copy.deepcopy(sub)
    for run in sub.get("runs", []):
        if run.get("seeds") != "secret":
            continue
        run["cases"] = [{"phase": c.get("phase", "")} | secret_case(c)
                        for c in run.get("cases", [])]
        messages = run.get("messages") or {}
        run["messages"] = {"load_error": messages.get("load_error"), "warnings": [],
                           "flags": [], "output": {}}
    return sub
