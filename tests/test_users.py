"""Contest users (`runner.py users`): the token alone on stdout, stored only as a hash,
revoked tokens refused."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
from conftest import run_cli
from serverkit import add_user

from harness.storage.store import Store
from harness.storage.users import user_for_token


@pytest.mark.slow
def test_add_list_revoke(tmp_path):
    db = str(tmp_path / "u.db")
    token = add_user(db, "alice")
    admin = add_user(db, "root", admin=True)
    raw = sqlite3.connect(db).execute("SELECT name, token_hash, admin FROM users ORDER BY name")
    rows = raw.fetchall()
    assert rows == [("alice", hashlib.sha256(token.encode()).hexdigest(), 0),
                    ("root", hashlib.sha256(admin.encode()).hexdigest(), 1)]
    everything = sqlite3.connect(db).execute("SELECT * FROM users").fetchall()
    assert token not in str(everything)  # only the hash is kept
    store = Store(db)
    assert user_for_token(store, token).name == "alice"
    assert user_for_token(store, admin).admin
    assert user_for_token(store, token + "x") is None and user_for_token(store, "") is None

    again = run_cli("users", "add", "alice", "--db", db)
    assert again.rc == 2 and "exists" in again.out
    bad = run_cli("users", "add", "../evil", "--db", db)
    assert bad.rc == 2 and "bad user name" in bad.out

    listed = run_cli("users", "list", "--json", "--db", db)
    assert [(u["name"], u["admin"]) for u in json.loads(listed.out)] == [("alice", False),
                                                                          ("root", True)]
    assert token not in listed.out

    assert run_cli("users", "revoke", "alice", "--db", db).rc == 0
    assert user_for_token(store, token) is None
    assert run_cli("users", "revoke", "alice", "--db", db).rc == 2
    fresh = add_user(db, "alice")  # a revoked name gets a new token
    assert fresh != token and user_for_token(store, fresh).name == "alice"
