"""The worker's account of what the sandbox refuses: an audit hook (PEP 578).

The kernel refuses silently (an EACCES or EPERM the submission may swallow). So that a
verdict can say what was refused, every Python process in the sandbox (the worker and
the Python children it starts, through `sitecustomize`) writes one line per refused
attempt to its standard error: `sandbox refused: open /path (write)`. A refusal is
predicted from the policy the judge passed in the environment: an existing path outside
the allowed ones, a TCP socket, another process's /proc entries. Diagnostics only: the
kernel's rules are the containment.
"""

from __future__ import annotations

import json
import os
import sys

_EVENTS = {"open", "os.listdir", "os.scandir", "sqlite3.connect", "socket.__new__",
           "socket.connect", "socket.bind", "os.kill"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_LIMIT = 50


class _Hook:
    def __init__(self, read: list[str], write: list[str], no_ip: bool) -> None:
        self.read = tuple(p.rstrip("/") for p in read)
        self.write = tuple(p.rstrip("/") for p in write)
        self.no_ip = no_ip
        self.seen: set[str] = set()
        self.busy = False

    def __call__(self, event: str, args: tuple) -> None:
        if event not in _EVENTS or self.busy or len(self.seen) >= _LIMIT:
            return
        self.busy = True  # what the hook itself calls must not re-enter it
        try:
            what = self.check(event, args)
            if what and what not in self.seen:
                self.seen.add(what)
                os.write(2, f"sandbox refused: {what}\n".encode(errors="replace"))
        except Exception:  # noqa: BLE001 - a diagnostic never breaks the submission
            pass
        finally:
            self.busy = False

    def check(self, event: str, args: tuple) -> str | None:
        if event == "socket.__new__":  # refused by the seccomp filter (seccomp.py)
            family, kind = args[1], args[2]
            if family in (2, 10) and self.no_ip:
                return f"an IP socket ({'tcp' if kind & 0xF == 1 else 'udp' if kind & 0xF == 2 else 'raw'})"
            return None
        if event in ("socket.connect", "socket.bind"):
            sock, address = args[0], args[1]
            if sock.family in (2, 10) and sock.type & 0xF == 1:  # AF_INET(6), SOCK_STREAM
                return f"tcp {event.split('.')[1]} {address}"
            return None
        if event == "os.kill":
            if int(args[0]) == os.getppid():  # the judge, outside the sandbox's scope
                return f"signal {args[1]} to the judge (process {args[0]})"
            return None
        path = args[0]
        if not isinstance(path, str) or path in ("", ":memory:"):
            return None
        writing = event == "sqlite3.connect"
        if writing and path.startswith("file:"):  # a URI: file:/path?mode=ro
            path = path[5:].split("?")[0]
            writing = "mode=ro" not in args[0]
        if event == "open":
            mode, flags = args[1], args[2]
            writing = any(c in (mode or "") for c in "wax+") or bool(flags & _WRITE_FLAGS)
        if path.startswith("/") and "/.." not in path and self.allowed(path, writing):
            return None  # the common case (every import): no file system call
        full = os.path.realpath(path)
        # A missing file is no refusal, unless it would be made in an existing folder.
        if not os.path.lexists(full if not writing else os.path.dirname(full)):
            return None
        if self.allowed(full, writing):
            return None
        return f"{'write' if writing else 'read'} {full}"

    def allowed(self, path: str, writing: bool) -> bool:
        if path.startswith("/proc/"):
            parts = path.split("/")
            if parts[2].isdigit():  # only this process's own folder is in the policy
                return parts[2] == str(os.getpid())
        roots = self.write if writing else self.read + self.write
        return any(path == r or path.startswith(r + "/") for r in roots)


def run_shadowed_sitecustomize(ours: str) -> None:
    """Run the installation's own `sitecustomize`, which the sandbox's (earlier on the
    import path) hides."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(ours))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def install() -> None:
    """Add the hook if this process runs under a sandbox policy (see containment.py)."""
    raw = os.environ.get("KERNEL_HARNESS_SANDBOX")
    if not raw:
        return
    try:
        policy = json.loads(raw)
        sys.addaudithook(_Hook(policy["read"], policy["write"], bool(policy.get("no_ip"))))
    except (ValueError, KeyError, TypeError):
        pass
