"""The schema's migrations: the modules of harness/storage/migrations, one per change,
numbered, each applied once.

A migration's statements and its number's row in `schema_version` are written in one
transaction: a process killed mid-migration leaves the database as it was before it, and
the next to open it applies the migration whole. Migrations take turns: on SQLite the
transaction holds the write lock from its start (`BEGIN IMMEDIATE`); on PostgreSQL it first
takes a transaction-scoped advisory lock. Both locks end with their holder's transaction or
connection, so a killed migrator never leaves one behind; whoever waited reads the version
again and skips what was done meanwhile.

Opening a store costs one query when the schema is current. A database whose
`schema_version` names a migration this harness lacks (a newer harness wrote it) is
refused before anything is written to it. Databases made by older harnesses, whose
migrations were the same statements kept in harness/results/store.py, carry the same
numbers: they upgrade like any other.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.storage.store import Store

PACKAGE = "harness.storage.migrations"
FOLDER = Path(__file__).with_name("migrations")
ADVISORY_KEY = 7340211  # PostgreSQL's advisory lock of the harness's migrations


def known() -> dict[int, str]:
    """This harness's migrations: number -> module name (`v0005_uploads`)."""
    return {int(p.stem[1:5]): p.stem for p in sorted(FOLDER.glob("v[0-9][0-9][0-9][0-9]_*.py"))}


LATEST = max(known())


def statements(number: int) -> list[str]:
    """Migration `number`'s statements, `{pk}` standing for the auto-increment key."""
    return list(importlib.import_module(f"{PACKAGE}.{known()[number]}").STATEMENTS)


def dialect(sql: str, postgres: bool) -> str:
    """A statement for its engine: `{pk}` is the auto-increment key, `?` a parameter."""
    if postgres:
        return sql.replace("?", "%s").replace("{pk}", "BIGSERIAL PRIMARY KEY")
    return sql.replace("{pk}", "INTEGER PRIMARY KEY AUTOINCREMENT")


def refuse_newer(version: int, url: str) -> None:
    """A StoreError where a database holds migrations this harness lacks."""
    from harness.storage.store import StoreError

    if version > LATEST:
        raise StoreError(f"the database at {url} has schema {version}; this harness knows up "
                         f"to {LATEST}: upgrade the harness (nothing was changed)")


def upgrade(store: Store) -> list[int]:
    """Apply, in order, each migration the database lacks, each in its own transaction;
    the numbers this process applied (others may have applied the rest meanwhile)."""
    applied = []
    for number in sorted(known()):
        with store.transaction():
            if store.postgres:
                store.execute("SELECT pg_advisory_xact_lock(?)", (ADVISORY_KEY,))
            store.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            done = store.version()
            refuse_newer(done, store.url)
            if done >= number:
                continue
            for statement in statements(number):
                store.execute(statement)
            store.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
            applied.append(number)
    return applied
