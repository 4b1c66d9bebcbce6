"""The organiser's commands of the contest server: `users` and `contest`."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.consts import ExitCode
from harness.settings import Settings
from harness.storage.store import Store, resolve_db


def open_store(db: str | None) -> Store:
    """The results database of --db, $HARNESS_DB or the settings (made if it is new)."""
    return Store(resolve_db(db, Settings.load().store_path))


def users_add(console: Console, name: str, admin: bool, db: str | None) -> int:
    """Add a user; its token alone on standard output, the rest on standard error."""
    from harness.storage.users import UserError, add_user

    store = open_store(db)
    try:
        token = add_user(store, name, admin)
    except UserError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    finally:
        store.close()
    print(token, flush=True)
    console.print(f"added {'admin ' if admin else ''}{escape(name)}: the token above is shown "
                  "once (the database keeps only its hash)")
    return ExitCode.OK


def users_list(console: Console, as_json: bool, db: str | None) -> int:
    from harness.storage.users import list_users

    store = open_store(db)
    try:
        rows = list_users(store)
    finally:
        store.close()
    if as_json:
        print(json.dumps(rows, indent=2))
        return ExitCode.OK
    table = Table(title="Users")
    for col in ("name", "admin", "created", "revoked"):
        table.add_column(col)
    for r in rows:
        table.add_row(escape(r["name"]), "yes" if r["admin"] else "", r["created_at"][:19],
                      (r["revoked_at"] or "")[:19])
    Console(file=sys.stdout, highlight=False).print(table)
    return ExitCode.OK


def users_revoke(console: Console, name: str, db: str | None) -> int:
    from harness.storage.users import UserError, revoke_user

    store = open_store(db)
    try:
        revoke_user(store, name)
    except UserError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    finally:
        store.close()
    console.print(f"revoked {escape(name)}: its token no longer works")
    return ExitCode.OK


def contest_set(console: Console, task: str, deadline: str | None, modes: str | None,
                closed: bool | None, db: str | None) -> int:
    """Change a task's contest rules and show them."""
    from harness.server.rules import parse_modes, set_rules

    changes: dict = {}
    try:
        if deadline is not None:
            changes["deadline"] = None if deadline == "none" else deadline
        if modes is not None:
            changes["modes"] = parse_modes(modes)
        if closed is not None:
            changes["closed"] = closed
        store = open_store(db)
        try:
            rules = set_rules(store, task, **changes)
        finally:
            store.close()
    except ValueError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        return ExitCode.USAGE
    console.print(json.dumps(rules.to_dict()))
    return ExitCode.OK


def contest_show(console: Console, db: str | None) -> int:
    from harness.server.rules import all_rules

    store = open_store(db)
    try:
        print(json.dumps([r.to_dict() for r in all_rules(store)], indent=2))
    finally:
        store.close()
    return ExitCode.OK


def contest_delete(console: Console, job_id: int, db: str | None) -> int:
    """Delete a submission of the server (its job, and its recorded result)."""
    from harness.storage.queue import JobQueue

    store = open_store(db)
    try:
        job = JobQueue(store).delete(job_id, refund=True)  # the organiser's: the upload refunded
    finally:
        store.close()
    if job is None:
        console.print(f"[red]error:[/] no submission {job_id} on the server's queue")
        return ExitCode.USAGE
    console.print(f"deleted submission {job_id} ({escape(job.user_name)}, {job.task})")
    return ExitCode.OK
