"""Shared moves of the containment attacks (copied into each attack by the test: a
submission is one file). Every attempt prints `ATTACK <what> ok` or `... refused`; the
last line is `ESCAPED <count of attempts that worked>`."""
import os
import pwd
import sqlite3

ESCAPED = []


def attempt(what, fn):
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001
        print(f"ATTACK {what} refused: {exc!r}"[:300], flush=True)
        return None
    ESCAPED.append(what)
    print(f"ATTACK {what} ok: {str(result)[:200]}", flush=True)
    return result


def project_dir():
    import harness

    return os.path.dirname(os.path.dirname(os.path.realpath(harness.__file__)))


def places():
    """Where a user's databases would be: up from here, the real home, /tmp, the project."""
    out, here = [], os.getcwd()
    while here != "/":
        out.append(here)
        here = os.path.dirname(here)
    return out + real_homes() + ["/tmp", project_dir()]


def real_homes():
    """The home folders of root and of this user (where /etc/passwd names it: the worker
    of a root judge runs as a user of its own, which it does not)."""
    homes = [pwd.getpwuid(0).pw_dir]
    try:
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return sorted(set(homes))


def find_databases(max_depth=5):
    found = set()
    for top in places():
        base = top.rstrip("/").count("/")
        for root, dirs, files in os.walk(top):
            if root.count("/") - base >= max_depth:
                dirs[:] = []
            dirs[:] = [d for d in dirs if not d.startswith((".pyenv", ".cache", "proc", "sys"))]
            found.update(os.path.join(root, f) for f in files if f.endswith(".db"))
    if not found:  # os.walk swallows its errors: nothing found is a refusal
        raise PermissionError("no database could be found")
    return sorted(found)


def rewrite(path):
    con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=1)  # never a new file
    n = 0
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
        for col in con.execute(f"PRAGMA table_info({table})").fetchall():
            if "score" in col[1] or "mean" in col[1]:
                n += con.execute(f"UPDATE {table} SET {col[1]} = 1e-9").rowcount
    con.commit()
    return n


def read_secrets(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    return [r[0] for r in con.execute("SELECT secret FROM leaderboards")]


def report():
    print(f"ESCAPED {len(ESCAPED)}", flush=True)
