"""A spare fork of the judge, made before it reads its secret, that forks its later workers.

A judge forked from its template forks its first worker (forked.py) while it holds no
secret, has touched no GPU and runs one thread. Every later worker (the next one after a
crash, a time-out or an out-of-memory stop, and each rank of a multi-GPU case) would be a
new interpreter, importing torch again: seconds each. In the same window the judge forks
a zygote, a process that keeps what the judge had then (torch and the harness imported, no
secret, no GPU context, one thread) and afterwards only forks. A later worker is its fork,
contained as a worker forked from the judge is (`forked.fork_worker`): the judge builds
the limits and sends them with the worker's descriptors (SCM_RIGHTS); the zygote forks,
the child applies them and becomes the worker, and the zygote reports the child's pid and,
once it has reaped it, its exit status.

The zygote reads nothing from the judge but these requests, which hold no secret: its
standard input, where the judge's secret comes later, is replaced by /dev/null at once,
and every descriptor but its socket is closed. It dies with the judge (PR_SET_PDEATHSIG),
each of its workers with it; the judge ends and reaps it when its evaluation is over.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harness.judging.sandbox import forked

if TYPE_CHECKING:
    from harness.judging.sandbox.sandbox import Limits

_MAX_REQUEST = 1 << 20  # a request's pickled bytes: the worker's environment, its limits
_NO_PIDFD_POLL_S = 0.05  # how often children are reaped where pidfds are missing

_zygote: Zygote | None = None


class ZygoteGone(OSError):
    """The zygote is not there to fork (it died): a new interpreter serves instead."""


class ZygoteChild(forked.ForkedProcess):
    """A worker forked by the zygote: its exit status is the zygote's report, read on
    demand (the judge cannot wait for another process's child)."""

    def __init__(self, pid: int, zygote: Zygote) -> None:
        super().__init__(pid)
        self._zygote = zygote

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid)
        return self.returncode


class Zygote:
    """The judge's end: fork a worker, read its exit status. Safe to use from several
    threads (a multi-GPU case's ranks start their workers at once)."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self._sock = sock
        self._lock = threading.Lock()
        self._codes: dict[int, int] = {}
        self._gone = False

    def fork_worker(self, channel: int, device: str, cwd: Path, env: Mapping[str, str],
                    streams: tuple[IO[bytes], IO[bytes]], limits: Limits) -> ZygoteChild:
        """A worker forked by the zygote, as `forked.fork_worker` forks one from this
        process; raises ZygoteGone where the zygote is gone, OSError where the worker
        could not be forked or contained (its limits refused, as a new one's would be)."""
        fds = [channel, streams[0].fileno(), streams[1].fileno()]
        if limits.ruleset is not None:
            fds.append(limits.ruleset.fd)
        payload = pickle.dumps((device, str(cwd), dict(env), limits))
        with self._lock:
            if self._gone:
                raise ZygoteGone("the zygote is gone")
            self._sock.setblocking(True)
            try:
                socket.send_fds(self._sock, [payload], fds)
            except OSError as exc:
                self._gone = True
                raise ZygoteGone(f"the zygote is gone: {exc}") from exc
            while True:
                words = self._receive(block=True)
                if words[0] == b"pid":
                    return ZygoteChild(int(words[1]), self)
                if words[0] == b"failed":
                    raise OSError(b" ".join(words[1:]).decode(errors="replace"))

    def exit_code(self, pid: int) -> int | None:
        """The exit status of the worker `pid` once the zygote reaped it (negative: the
        signal), -SIGKILL where the zygote is gone (its workers die with it), else None."""
        with self._lock:
            while pid not in self._codes and not self._gone:
                if not self._receive(block=False):
                    break
            if pid in self._codes:
                return self._codes[pid]
            return -signal.SIGKILL if self._gone else None

    def _receive(self, block: bool) -> list[bytes]:
        """The zygote's next message, split in words, an exit report recorded; [] where
        none is waiting (`block` False) or the zygote is gone."""
        self._sock.setblocking(block)
        try:
            message = self._sock.recv(256)
        except BlockingIOError:
            return []
        except OSError:
            message = b""
        if not message:
            self._gone = True
            if block:
                raise ZygoteGone("the zygote is gone")
            return []
        words = message.split()
        if words[0] == b"exit":
            self._codes[int(words[1])] = int(words[2])
        return words

    def close(self) -> None:
        """End the zygote: it sees its socket closed and exits."""
        with self._lock:
            self._gone = True
            self._sock.close()


def start() -> Zygote | None:
    """Fork this judge's zygote now, where a worker may still be a fork of it
    (`forked.possible`: no secret read, no GPU touched, one thread); None otherwise."""
    global _zygote
    if _zygote is not None or not forked.possible():
        return _zygote
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    judge = os.getpid()
    pid = os.fork()
    if pid == 0:
        ours.close()
        forked.run_child(lambda: _live(theirs, judge))
    theirs.close()
    _zygote = Zygote(pid, ours)
    return _zygote


def stop() -> None:
    """End this judge's zygote and reap it, its evaluation over (its workers are gone
    already): an orphan's zombie could wait for ever where nothing reaps them."""
    global _zygote
    spare, _zygote = _zygote, None
    if spare is None:
        return
    spare.close()
    try:
        os.kill(spare.pid, signal.SIGKILL)
        os.waitpid(spare.pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def current() -> Zygote | None:
    """This judge's zygote, where it has one that has not gone."""
    return _zygote if _zygote is not None and not _zygote._gone else None


def pids() -> set[int]:
    """The zygote's pid, if any: a child of the judge that is never a stray."""
    return {_zygote.pid} if _zygote is not None else set()


def _live(sock: socket.socket, judge: int) -> int:
    """The zygote's life: nothing of the judge's but its socket, then fork on request."""
    from harness.judging.sandbox.procfs import ZYGOTE_NAME, name_self
    from harness.judging.sandbox.sandbox import die_with_parent

    forked.freeze_inherited()
    die_with_parent(judge)
    name_self(ZYGOTE_NAME)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # where the judge's secret comes next
    for fd in forked.open_descriptors() - {0, 1, 2, sock.fileno()}:
        try:
            os.close(fd)
        except OSError:
            pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the judge's own stop ends it
    return _serve(sock)


def _serve(sock: socket.socket) -> int:
    """Fork a worker for each request on `sock`, report its pid, and its exit status
    once it ends; return when the judge closes its end."""
    children: dict[int, int | None] = {}  # pid -> its pidfd (None: none to be had)
    while True:
        waits = [sock.fileno()] + [fd for fd in children.values() if fd is not None]
        polled = None in children.values()
        ready, _, _ = select.select(waits, [], [], _NO_PIDFD_POLL_S if polled else None)
        if sock.fileno() in ready:
            message, fds, _, _ = socket.recv_fds(sock, _MAX_REQUEST, 8)
            if not message:
                return 0
            try:
                pid = _fork(message, fds)
                reply = f"pid {pid}"
            except Exception as exc:  # noqa: BLE001 - the judge starts a new interpreter
                pid, reply = None, f"failed {type(exc).__name__}: {exc}"
            finally:
                for fd in fds:
                    os.close(fd)
            if pid is not None:
                children[pid] = _pidfd(pid)
            sock.send(reply.encode())
        for pid, fd in list(children.items()):
            ended, status = os.waitpid(pid, os.WNOHANG)
            if ended:
                if fd is not None:
                    os.close(fd)
                del children[pid]
                sock.send(f"exit {pid} {os.waitstatus_to_exitcode(status)}".encode())


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # an old kernel: the loop polls instead
        return None


def _fork(message: bytes, fds: list[int]) -> int:
    """Fork one worker from the request `message` and its descriptors `fds` (its channel,
    its stdout and stderr, the Landlock ruleset where there is one)."""
    device, cwd, env, limits = pickle.loads(message)  # noqa: S301 - from the judge alone
    if len(fds) != 3 + (limits.ruleset is not None):
        raise ValueError(f"{len(fds)} descriptors for a worker")
    if limits.ruleset is not None:
        limits.ruleset.fd = fds[3]
    limits.parent = os.getpid()  # the worker dies with the zygote, which dies with the judge
    keep = {fds[0]} | ({fds[3]} if limits.ruleset is not None else set())
    start = forked.Start(fds[0], device, Path(cwd), env, (fds[1], fds[2]), frozenset(keep))
    return forked.fork_contained(start, limits)
