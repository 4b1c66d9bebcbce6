"""Contestants and organisers: names with secret tokens, stored as SHA-256 hashes.

A token is 32 random bytes (URL-safe text); the database keeps only its hash, so a copy of
the database gives no one a token. The server learns who submits only from the token."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from harness.storage.store import Store, now

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


class UserError(ValueError):
    """A user name that cannot be added, or one that is not there."""


@dataclass(frozen=True)
class User:
    name: str
    admin: bool


def token_hash(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def add_user(store: Store, name: str, admin: bool = False) -> str:
    """Add `name` (or give a revoked one a fresh token); the new token."""
    if not NAME.match(name):
        raise UserError(f"bad user name {name!r}: letters, digits and _.@- (up to 64), "
                        "starting with a letter or digit")
    token = secrets.token_urlsafe(32)
    with store.transaction():
        rows = store.query("SELECT revoked_at FROM users WHERE name = ?", (name,))
        if rows and rows[0]["revoked_at"] is None:
            raise UserError(f"user {name} exists (revoke it first for a new token)")
        if rows:
            store.execute("UPDATE users SET token_hash = ?, admin = ?, revoked_at = NULL, "
                          "created_at = ? WHERE name = ?", (token_hash(token), int(admin), now(),
                                                            name))
        else:
            store.execute("INSERT INTO users (name, token_hash, admin, created_at) "
                          "VALUES (?, ?, ?, ?)", (name, token_hash(token), int(admin), now()))
    return token


def revoke_user(store: Store, name: str) -> None:
    """Make `name`'s token worthless; its submissions stay."""
    with store.transaction():
        cur = store.execute("UPDATE users SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                            (now(), name))
    if cur.rowcount == 0:
        raise UserError(f"no active user {name}")


def list_users(store: Store) -> list[dict[str, Any]]:
    """Every user: name, admin, created, revoked (never a token or its hash)."""
    rows = store.query("SELECT name, admin, created_at, revoked_at FROM users ORDER BY name")
    return [dict(r, admin=bool(r["admin"])) for r in rows]


def user_for_token(store: Store, token: str | None) -> User | None:
    """The active user holding `token`, if any."""
    if not token:
        return None
    rows = store.query("SELECT name, admin FROM users WHERE token_hash = ? AND revoked_at IS NULL",
                       (token_hash(token.strip()),))
    return User(rows[0]["name"], bool(rows[0]["admin"])) if rows else None
