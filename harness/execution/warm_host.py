"""A warm host: a judge template lent to every command of this user, so that none pays
the import of torch.

Each command (`submit`, `compare`) and each batch or server slot starts a template of its
own (judge_template.py): a process that imports torch, numpy and the harness once, then
forks each job's judge. A command run once pays that import (seconds) every time.
`runner.py warm` keeps one host process with those imports done, listening on a socket of
this user's (`socket_path`); a command that finds it asks for a template, and the host
forks one for it alone: the same process, in the same state, as a template the command
would have started, lent for as long as the command keeps the connection, with no second
import. The command's judges are forked from it as from its own.

A template is lent only where it would be the same as the command's own:
- the same code: the host's project folder, and the sizes and times of the harness's
  source files, as the command sees them now (an edited checkout starts its own);
- the same environment for what the imports read: every variable of the command's
  template environment agrees with the host's, but those read only once a job runs
  (`_READ_LATE`: which GPUs are visible, the compiler caches' folder), which the lent
  template takes from the command;
- the same user, checked on the socket (SO_PEERCRED), in a folder only that user reaches.
Anything else, or no host, and the command starts its own template, as before. The host
never reads a request: it holds no secret, and a lent template is a template.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import struct
import sys
from collections.abc import Mapping
from pathlib import Path

from harness.execution.judge_template import read_line
from harness.judging.sandbox.forked import ForkedProcess
from harness.settings import ROOT

ENV = "HARNESS_WARM_HOST"  # the host's socket, where not the default; "off": never use one
# Read after the imports, when a job runs (the GPU's runtime at its first use, the judge
# as it finds its compiler caches): a lent template takes the command's own.
_READ_LATE = frozenset({"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                        "HARNESS_COMPILE_CACHE"})
_HANDSHAKE_LIMIT = 1 << 20
_CONNECT_TIMEOUT_S = 5.0


def socket_path() -> Path | None:
    """Where this user's host listens: $HARNESS_WARM_HOST, else a folder of this user's
    under $XDG_RUNTIME_DIR or the temporary folder; None where set to `off`."""
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"kernel-harness-{os.getuid()}" / "warm.sock"


def fingerprint(root: Path = ROOT) -> str:
    """The code a template holds as it is on disk now, without importing it: the
    interpreter, each of the harness's source files and the preloaded packages' own files
    (an upgrade of torch changes them), each by path, size and time."""
    files = sorted((root / "harness").rglob("*.py")) + _package_files()
    entries = [sys.executable, sys.version]
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        entries.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


def _package_files() -> list[Path]:
    """The files that say which version of each preloaded package is installed."""
    import importlib.util

    found = []
    for name in ("torch", "numpy", "triton"):
        try:
            spec = importlib.util.find_spec(name)  # a top-level package: not imported
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            folder = Path(spec.origin).parent
            found += [folder / "__init__.py", folder / "version.py", folder / "_version.py"]
    return found


class LentTemplate(ForkedProcess):
    """A template lent by the host, as far as `JudgeTemplate` uses its process (it is
    not this process's child: its end is seen on a pidfd)."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        try:
            self._ended: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._ended = None

    def poll(self) -> int | None:
        if self.returncode is None:
            if self._ended is not None:
                gone = bool(select.select([self._ended], [], [], 0)[0])
            else:
                gone = not Path(f"/proc/{self.pid}").exists()
            if gone:
                self.returncode = -signal.SIGKILL
                if self._ended is not None:
                    os.close(self._ended)
                    self._ended = None
        return self.returncode


def borrow(env: Mapping[str, str]) -> tuple[LentTemplate, socket.socket] | None:
    """A template lent by this user's host for judges with the environment `env`: its pid
    and the socket to send it jobs on (it has said `ready` already); None where there is
    no host or it lends none for `env` (the caller starts its own)."""
    path = socket_path()
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(_CONNECT_TIMEOUT_S)
    try:
        sock.connect(str(path))
        if _peer(sock)[1] != os.getuid():
            raise OSError("the host is another user's")
        ask = {"root": str(ROOT), "code": fingerprint(), "env": dict(env),
               "umask": _umask()}
        sock.sendall(json.dumps(ask).encode() + b"\n")
        answer = read_line(sock).split()
        if len(answer) != 2 or answer[0] != b"lent" or read_line(sock).strip() != b"ready":
            raise OSError(f"no template lent: {b' '.join(answer).decode(errors='replace')}")
        sock.settimeout(None)
        return LentTemplate(int(answer[1])), sock
    except (OSError, ValueError):
        sock.close()
        return None


def host(path: Path) -> int:
    """The host's life: the imports, then a template forked for each command that asks
    for one and may have it (see the module's doc); ends on SIGTERM or SIGINT."""
    from harness.execution.judge_template import preload
    from harness.judging.sandbox.procfs import WARM_HOST_NAME, name_self

    name_self(WARM_HOST_NAME)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.parent.stat().st_uid != os.getuid() or path.parent.stat().st_mode & 0o077:
        print(f"error: {path.parent} must be this user's alone (mode 700)", file=sys.stderr)
        return 2
    if _answers(path):
        print(f"error: a host listens on {path} already", file=sys.stderr)
        return 2
    os.environ["PYTHONPATH"] = str(ROOT)  # as every judge's environment has it (judge_env)
    if not preload():
        print("error: the imports touched the GPU: a fork could not use it", file=sys.stderr)
        return 1
    listener = _listen(path)
    own = {"root": str(ROOT), "code": fingerprint(), "env": dict(os.environ)}
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # lent templates reaped by the kernel
    print(f"warm: judges' templates lent on {path}", flush=True)
    try:
        while True:
            conn, _ = listener.accept()
            with conn:
                _lend(conn, own, listener)
    except KeyboardInterrupt:
        return 0
    finally:
        listener.close()
        path.unlink(missing_ok=True)


def _answers(path: Path) -> bool:
    """Whether a process listens on the socket `path` now."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _listen(path: Path) -> socket.socket:
    path.unlink(missing_ok=True)  # a host that died left it (a live one is refused first)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(64)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    return listener


def _lend(conn: socket.socket, own: dict, listener: socket.socket) -> None:
    """Answer one command: a template forked for it, or why not."""
    conn.settimeout(_CONNECT_TIMEOUT_S)
    try:
        peer, uid = _peer(conn)
        if uid != os.getuid():
            return
        ask = _request(conn)
        refusal = _refusal(ask, own)
        if refusal:
            print(f"warm: refused pid {peer}: {refusal}", flush=True)
            conn.sendall(f"refused {refusal}\n".encode())
            return
    except (OSError, ValueError):
        return
    print(f"warm: lent a template to pid {peer}", flush=True)
    pid = os.fork()
    if pid == 0:
        from harness.execution.judge_template import fork_judges
        from harness.judging.sandbox.forked import run_child

        def template() -> int:
            from harness.judging.sandbox.procfs import TEMPLATE_NAME, name_self

            name_self(TEMPLATE_NAME)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # it waits for its judges itself
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host's Ctrl-C is not its end
            listener.close()
            os.environ.clear()
            os.environ.update(ask["env"])
            os.chdir(ROOT)  # as a template of the command's own starts
            os.umask(int(ask.get("umask", 0o022)))
            conn.settimeout(None)
            conn.sendall(f"lent {os.getpid()}\nready\n".encode())
            return fork_judges(conn)

        run_child(template)


def _refusal(ask: dict, own: dict) -> str:
    """Why the host lends no template for `ask` ("" where it does)."""
    if ask.get("root") != own["root"]:
        return "another project folder"
    if ask.get("code") != own["code"]:  # the command's, taken as it asked
        return "the code (the harness, Python or its packages) changed since the host started"
    from harness.judging.startup.head_start import guess_device

    env, host_env = ask.get("env") or {}, own["env"]
    if guess_device(None, env) != guess_device(None, host_env):
        return "another device (what the imports preload differs)"
    for key in set(env) | _template_keys(host_env):
        if key not in _READ_LATE and env.get(key) != host_env.get(key):
            return f"another environment ({key})"
    return ""


def _template_keys(env: Mapping[str, str]) -> set[str]:
    from harness.execution.judge_template import template_env

    return set(template_env(env))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _peer(sock: socket.socket) -> tuple[int, int]:
    """The pid and user of the process at the other end of `sock` (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid, uid


def _request(sock: socket.socket) -> dict:
    """A command's request: one line of JSON, the only thing it sends before its answer
    (so read in blocks)."""
    data = bytearray()
    while not data.endswith(b"\n") and len(data) < _HANDSHAKE_LIMIT:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return json.loads(data)
