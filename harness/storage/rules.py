"""The rows of the contest rules (`contest_rules`): one per task that has any."""

from __future__ import annotations

from typing import Any

from harness.storage.store import Store


def rules_row(store: Store, task: str) -> dict[str, Any] | None:
    """A task's row (deadline, modes as comma-separated text, closed), if it has one."""
    rows = store.query("SELECT * FROM contest_rules WHERE task = ?", (task,))
    return rows[0] if rows else None


def ruled_tasks(store: Store) -> list[str]:
    """Every task with a row, by name."""
    return [r["task"] for r in store.query("SELECT task FROM contest_rules ORDER BY task")]


def put_rules(store: Store, task: str, deadline: str | None, modes: list[str] | None,
              closed: bool) -> None:
    """Write a task's row, made or replaced (`modes` None: every mode)."""
    store.execute(
        "INSERT INTO contest_rules (task, deadline, modes, closed) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (task) DO UPDATE SET deadline = excluded.deadline, "
        "modes = excluded.modes, closed = excluded.closed",
        (task, deadline, ",".join(modes) if modes else None, int(closed)))
