"""Contest rules per task (leaderboard): a deadline, the modes allowed, closed or open.

Kept in the results database (`contest_rules`), set with `runner.py contest` or the admin
endpoints; a task without a row takes every mode, with no deadline, open."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from harness.options import MODES
from harness.storage.rules import put_rules, ruled_tasks, rules_row
from harness.storage.store import Store


@dataclass
class Rules:
    task: str
    deadline: str | None = None  # ISO 8601, UTC unless it says otherwise
    modes: list[str] | None = None  # None: every mode
    closed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "deadline": self.deadline,
                "modes": self.modes or list(MODES), "closed": self.closed}

    def refusal(self, mode: str, at: datetime | None = None) -> str | None:
        """Why an upload in `mode` is refused now (a 403's message), if it is."""
        if self.closed:
            return f"leaderboard {self.task} is closed to submissions"
        if self.deadline and (at or datetime.now(UTC)) > parse_deadline(self.deadline):
            return f"leaderboard {self.task} closed at its deadline, {self.deadline}"
        if self.modes and mode not in self.modes:
            return (f"mode {mode} is not allowed on leaderboard {self.task} "
                    f"(allowed: {', '.join(self.modes)})")
        return None


def parse_deadline(text: str) -> datetime:
    """An ISO 8601 time; UTC where it names no zone."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"bad deadline {text!r}: give an ISO 8601 time such as "
                         "2026-12-31T23:59:00Z") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def parse_modes(text: str) -> list[str] | None:
    """A comma-separated list of modes (`all`: every mode, None)."""
    if text.strip() == "all":
        return None
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"unknown mode(s) {', '.join(unknown) or text!r}: use "
                         f"{', '.join(MODES)} or all")
    return modes


def get_rules(store: Store, task: str) -> Rules:
    """A task's rules (a task without a row takes every mode, no deadline, open)."""
    row = rules_row(store, task)
    if row is None:
        return Rules(task)
    return Rules(task, row["deadline"], row["modes"].split(",") if row["modes"] else None,
                 bool(row["closed"]))


def all_rules(store: Store) -> list[Rules]:
    """The rules of every task that has any."""
    return [get_rules(store, task) for task in ruled_tasks(store)]


def set_rules(store: Store, task: str, **changes: Any) -> Rules:
    """Change some of a task's rules (deadline, modes, closed); the rules now."""
    with store.transaction():
        rules = get_rules(store, task)
        for key, value in changes.items():
            setattr(rules, key, value)
        if rules.deadline:
            rules.deadline = parse_deadline(rules.deadline).isoformat()
        put_rules(store, task, rules.deadline, rules.modes, rules.closed)
    return rules
