"""Admission: what a result may do. One place decides, from a result document and the
organiser's policy, whether it is recorded, whether it may rank, whether it is marked
suspicious, and why. `submit`, `batch`, `record` and the contest server's slots ask it,
and nothing else decides.

The outcomes, worst first:
- `not judged`: nothing was learned of the submission (a harness error, a worker that
  never started, a task this machine cannot run): never recorded against it.
- `not recorded`: the organiser's rules refuse the record (a ranked run under partial
  containment or on a GPU other processes used, a mode that is never recorded).
- `unranked`: recorded, and never ranked (a static-screen rule the organiser refuses a
  rank for, a result of the task's own evaluator, whose checks are not the harness's).
- `ranked`: recorded; it ranks where it passed.
A recorded result is marked `suspicious` where the screen or an integrity check flagged it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from harness.consts import GUARD, TASK_NEEDS, WORKER_START, Mark
from harness.loading.guard import counted
from harness.options import UNRECORDED_MODES
from harness.results.schema import DocumentError, validate


class Outcome(StrEnum):
    NOT_JUDGED = "not judged"
    NOT_RECORDED = "not recorded"
    UNRANKED = "unranked"
    RANKED = "ranked"


@dataclass(frozen=True)
class Policy:
    """The organiser's choices that admission reads (settings and command-line flags)."""

    allow_partial_containment: bool = False
    allow_shared_gpu: bool = False
    refuse_ranking_on: tuple[str, ...] = ()  # screen severities refused a rank

    @classmethod
    def of(cls, settings: Any, allow_partial_containment: bool = False,
           allow_shared_gpu: bool = False) -> Policy:
        """The policy of `settings` (harness.settings.Settings) and the flags."""
        return cls(bool(allow_partial_containment), bool(allow_shared_gpu),
                   tuple(settings.integrity.refuse_ranking_on))


@dataclass(frozen=True)
class Decision:
    """What a result may do, and why (the reason is empty for a plain ranked result)."""

    outcome: Outcome
    reason: str = ""
    mark: str = Mark.OK

    @property
    def recorded(self) -> bool:
        return self.outcome in (Outcome.RANKED, Outcome.UNRANKED)

    @property
    def rank_refused(self) -> str | None:
        """Why a recorded result never ranks (the store's `refused`), else None."""
        return self.reason if self.outcome == Outcome.UNRANKED else None


def not_judged(load_error: Mapping[str, Any] | None) -> str:
    """Why a run judged nothing of its submission, so that it is not recorded against it
    (a worker that never got to the submission, a task this machine cannot run); "" for
    every other run."""
    if (load_error or {}).get("kind") in (WORKER_START, TASK_NEEDS):
        return f"not recorded: {load_error['title']}"
    return ""


def shared_gpu_refusal(shared: Mapping[str, Any] | None, mode: str, allowed: bool) -> str:
    """Why a run is not recorded: a leaderboard run made on a shared GPU, unless the
    organiser allowed it (`--allow-shared-gpu`); '' where it may be recorded."""
    if not shared or mode != "leaderboard" or allowed:
        return ""
    n = shared["processes"]
    return (f"not recorded: the GPU was shared with {n} other process{'es' if n > 1 else ''} "
            "during this run, so its times are not a clean ranking; run it again on a free "
            "GPU (--allow-shared-gpu records it anyway)")


def containment_refusal(level: str, missing: list[str], mode: str,
                        allowed: bool) -> str | None:
    """Why a run under this containment `level` (lacking `missing`) is not recorded: a
    leaderboard run records only with full containment, unless the organiser allowed it."""
    if mode != "leaderboard" or allowed or level == "full":
        return None
    lacks = f" (missing: {', '.join(missing)})" if missing else ""
    return (f"containment {level}{lacks}: a leaderboard run records only with full "
            "containment; pass --allow-partial-containment to record anyway")


def admit(doc: Mapping[str, Any], policy: Policy) -> Decision:
    """The decision for one result document (an evaluation that was not judged at all
    never reaches admission: harness/execution/protocol.py's `Unjudged`)."""
    try:
        validate(doc)
    except DocumentError as exc:
        return Decision(Outcome.NOT_JUDGED, f"not a valid result document: {exc}")
    unjudged = not_judged(doc.get("load_error"))
    if unjudged:
        return Decision(Outcome.NOT_JUDGED, f"{unjudged}: {doc['load_error']['message']}")
    mode = doc.get("mode", "")
    if mode in UNRECORDED_MODES:
        return Decision(Outcome.NOT_RECORDED, f"a {mode} run is never recorded")
    containment = (doc.get("harness") or {}).get("containment") or {}
    refused = containment_refusal(str(containment.get("level", "off")),
                                  list(containment.get("missing") or []), mode,
                                  policy.allow_partial_containment)
    if refused:
        return Decision(Outcome.NOT_RECORDED, f"not recorded: {refused}")
    shared = shared_gpu_refusal(doc.get("gpu_shared"), mode, policy.allow_shared_gpu)
    if shared:
        return Decision(Outcome.NOT_RECORDED, shared)
    mark = _suspicion(doc, policy.refuse_ranking_on)
    unranked = _rank_refusal(doc, policy.refuse_ranking_on)
    if unranked:
        return Decision(Outcome.UNRANKED, unranked, mark)
    return Decision(Outcome.RANKED, "", mark)


def _suspicion(doc: Mapping[str, Any], counted_on: tuple[str, ...]) -> str:
    """`suspicious` where the static screen or an integrity check flagged the result (a
    second opinion's finding where the organiser counts it: harness/loading/guard.py)."""
    screened = any(counted(f, counted_on) if f.get("by") == GUARD
                   else f.get("severity") in ("hard", "flag") for f in doc.get("screen") or [])
    flagged = any(c.get("flags") for p in doc.get("phases") or [] for c in p.get("cases") or [])
    return Mark.SUSPICIOUS if screened or flagged else Mark.OK


def _rank_refusal(doc: Mapping[str, Any], refuse_on: tuple[str, ...]) -> str | None:
    """Why a recorded result never ranks: a screen rule the organiser refuses, or the
    task's own evaluator judged it."""
    hits = [f for f in doc.get("screen") or [] if counted(f, refuse_on)]
    if hits:
        return "static screen: " + ", ".join(sorted({
            f"{f['by']}:{f['rule']}" if f.get("by") else f["rule"] for f in hits}))
    evaluator = (doc.get("harness") or {}).get("evaluator")
    if evaluator:
        return f"judged by {evaluator['kind']}: the harness's own checks did not apply"
    return None
