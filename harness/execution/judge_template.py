"""Judge processes forked from a warm template: a slot pays the import of torch once.

A slot (a batch's local slot, a contest server's) keeps one template process,
`python -m harness.execution.judge_process --template`: it imports torch, numpy, triton
and the harness, touches no GPU, and then only forks. Each job's judge is a fork of it,
which runs `judge_process.judge` as a judge started from scratch would (its command line is
the template's, so it is found under the same name), and ends: a job never sees what an
earlier job's judge did, since no judge outlives its job and the template runs nothing.

The template never reads a request. A job's request travels on a pipe of its own, handed
to the template (SCM_RIGHTS) with the file for the judge's output; the judge reads it
after the fork. So no leaderboard secret is ever in the memory from which later judges,
and the workers forked from them, are made.

Its environment holds what a worker may see and what a judge reads itself, nothing secret
of the slot's (`template_env`).

The template dies with the slot's thread that started it (PR_SET_PDEATHSIG) and each judge
with the template; a judge killed by the slot (its time limit, a stop) is reaped by the template,
which reports its exit status. A template that died is started again for the next job.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING

from harness.judging.sandbox.forked import freeze_inherited, run_child
from harness.settings import ROOT

if TYPE_CHECKING:
    from harness.execution.warm_host import LentTemplate

# What a judge imports on every job, imported once in the template; none touches a GPU.
PRELOAD = (
    "numpy", "torch",
    "harness.execution.in_process", "harness.judging", "harness.judging.judge",
    "harness.judging.evaluation", "harness.judging.worker.worker",
    "harness.loading.task_folder", "harness.loading.screen", "harness.results.document",
)
# Imported too where the machine has a GPU (most submissions there use Triton, and a forked
# worker inherits it); on a CPU a judge never needs it, and a submission that imports it
# imports it in its worker.
GPU_PRELOAD = ("triton",)
_START_TIMEOUT_S = 120.0  # the template's imports, on a loaded 2-core machine
# Beside what a worker may see (sandbox.passes), what a judge reads itself: its import path,
# its user's folders (the compile cache's root among them), Python's and the compilers' own
# settings. Nothing else of the slot's environment (a database's password, a signing key,
# a cloud token) reaches a template, so none is in a forked worker's memory.
_JUDGE_KEEP = {"PYTHONPATH", "HOME", "HARNESS_COMPILE_CACHE", "PYTHONPYCACHEPREFIX",
               "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONWARNINGS"}
# Python's start-up settings that a judge does not read itself but may pass on to its
# workers (the organiser's `worker.env_pass`): the judge's interpreter starts without them
# (one meant for the worker, PYTHONMALLOC say, could stop the judge), and they are put back
# into its environment once it runs, under this name meanwhile (never passed to a worker).
WITHHELD = "HARNESS_WORKERS_PYTHON"
_JUDGE_PREFIXES = ("XDG_", "TRITON_", "TORCHINDUCTOR_", "TORCH_", "PYTORCH_")


_shared: JudgeTemplate | None = None


def shared() -> JudgeTemplate:
    """This process's one template, for a process that runs one job at a time and has no
    slot of its own to keep one in (a Ray worker process, reused across Ray tasks, which
    runs them on its main thread); it dies with the thread that started it."""
    global _shared
    if _shared is None:
        _shared = JudgeTemplate()
    return _shared


def template_env(env: Mapping[str, str], extra: Sequence[str] = ()) -> dict[str, str]:
    """The environment of a template and its judges, from a judge's whole `env`: what its
    worker may inherit (`extra`: the organiser's `worker.env_pass`) and what the judge
    itself reads, nothing secret."""
    from harness.judging.sandbox.sandbox import passes

    return {k: v for k, v in env.items()
            if k in _JUDGE_KEEP or k.startswith(_JUDGE_PREFIXES) or passes(k, extra)}


def interpreter_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` to start a judge's (or a template's) interpreter with: the PYTHON variables it
    does not read itself held in one variable, which `restore_withheld` puts back."""
    held = {k: v for k, v in env.items() if k.startswith("PYTHON") and k not in _JUDGE_KEEP}
    out = {k: v for k, v in env.items() if k not in held}
    if held:
        out[WITHHELD] = json.dumps(held)
    return out


def restore_withheld() -> None:
    """In a judge's (or a template's) interpreter, once started: the variables
    `interpreter_env` held back, in its environment again for its workers."""
    held = os.environ.pop(WITHHELD, None)
    if held:
        os.environ.update(json.loads(held))


class TemplateGone(RuntimeError):
    """The template process is not there to fork a judge (it died, or never started)."""


class ForkedJudge:
    """One judge forked from a template: what `run_judge` needs of a `subprocess.Popen`
    (`pid`, `wait`, `send_signal`, `returncode`). A thread of its own reads the template's
    report of its exit, so that any number of threads may wait for it."""

    def __init__(self, pid: int, channel: socket.socket, lock: threading.Lock) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()
        threading.Thread(target=self._read_exit, args=(channel, lock), daemon=True,
                         name=f"judge {pid}").start()

    def _read_exit(self, channel: socket.socket, lock: threading.Lock) -> None:
        """Its exit status (negative: the signal that ended it), as the template reports
        it; -SIGKILL where the template died meanwhile (and the judge with it). The
        template's lock (held since the fork) is released then."""
        try:
            channel.settimeout(None)
            line = read_line(channel)
        except OSError:
            line = b""
        self.returncode = int(line) if line.strip() else -signal.SIGKILL
        lock.release()
        self._ended.set()

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("judge", timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if not self._ended.is_set():
            os.kill(self.pid, sig)


class JudgeTemplate:
    """A slot's template process, started on the first `fork` and again after it dies."""

    def __init__(self) -> None:
        self.env: dict[str, str] = {}  # the whole environment of its judges
        self.proc: subprocess.Popen | LentTemplate | None = None
        self.channel: socket.socket | None = None
        self._ready = False  # its `ready` read
        self._lock = threading.Lock()  # one judge at a time

    def fork(self, env: Mapping[str, str], request: bytes, log: IO[bytes]) -> ForkedJudge:
        """A judge forked now, with the environment `env` (a template started with
        another is replaced), reading `request` on its standard input and writing its
        output to `log`; raises TemplateGone where no template can be started."""
        self._lock.acquire()
        try:
            if dict(env) != self.env:
                self._drop()
                self.env = dict(env)
            for attempt in (1, 2):  # a template that died since the last job: a new one
                self._start()
                try:
                    return self._fork(request, log)
                except OSError as exc:
                    self._drop()
                    if attempt == 2:
                        raise TemplateGone(f"the judge template is gone: {exc}") from exc
        except BaseException:
            self._lock.release()
            raise
        raise AssertionError("unreachable")

    def start_soon(self, env: Mapping[str, str]) -> None:
        """Start the template for judges with the environment `env` now, without waiting
        for its imports, so that the first job finds it ready or nearly so. Call it from
        the thread that will run the jobs (the template dies with that thread)."""
        with self._lock:
            if dict(env) != self.env:
                self._drop()
                self.env = dict(env)
            if self.proc is None or self.proc.poll() is not None:
                self._spawn()

    def _fork(self, request: bytes, log: IO[bytes]) -> ForkedJudge:
        read, write = os.pipe()
        try:
            socket.send_fds(self.channel, [b"job\n"], [read, log.fileno()])
        finally:
            os.close(read)
        try:
            with os.fdopen(write, "wb") as pipe:  # a request is far below a pipe's buffer
                pipe.write(request)
        except BrokenPipeError:
            pass  # the judge died at once: its exit status says so
        self.channel.settimeout(_START_TIMEOUT_S)
        line = read_line(self.channel)
        if not line.strip():
            raise ConnectionError("the template ended before it forked")
        return ForkedJudge(int(line), self.channel, self._lock)

    def _start(self) -> None:
        """Start the template (where it is not started yet) and wait until it has imported
        what it preloads."""
        if self.proc is None or self.proc.poll() is not None:
            self._spawn()
        if self._ready:
            return
        try:
            ready = read_line(self.channel)
        except OSError:
            ready = b""
        if ready.strip() != b"ready":
            self._drop()
            raise TemplateGone("the judge template did not start")
        self._ready = True

    def _spawn(self) -> None:
        """Start the template process, without waiting for it; or take one that this
        user's warm host lends (warm_host.py), ready at once. One started here dies with
        the thread that starts it (PR_SET_PDEATHSIG follows the thread): a slot's own
        thread; a lent one when this process closes its end."""
        from harness.execution.warm_host import borrow
        from harness.judging.sandbox.sandbox import die_with_parent

        lent = borrow(self.env)
        if lent is not None:
            self.proc, self.channel = lent
            self._ready = True
            return

        ours, theirs = socket.socketpair()
        parent = os.getpid()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.execution.judge_process", "--template",
                 str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=interpreter_env(self.env), cwd=ROOT,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=lambda: die_with_parent(parent))
        finally:
            theirs.close()
        self.channel = ours
        self._ready = False
        ours.settimeout(_START_TIMEOUT_S)

    def _drop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        """End the template (a judge still running dies with it)."""
        with self._lock:
            self._drop()


def read_line(sock: socket.socket) -> bytes:
    """One line from `sock`, read a byte at a time (what follows it is the next reader's:
    the next judge's, a lent template's first job)."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = sock.recv(1)
        if not byte:
            break
        line += byte
    return bytes(line)


def serve(fd: int) -> int:
    """The template's life: preload, say `ready`, then fork a judge for each job sent on
    the socket `fd` and report its pid and, once reaped, its exit status; ends when the
    slot closes its end."""
    from harness.judging.sandbox.procfs import TEMPLATE_NAME, name_self

    name_self(TEMPLATE_NAME)
    channel = socket.socket(fileno=fd)
    if not preload():
        return 1
    channel.sendall(b"ready\n")
    return fork_judges(channel)


def preload() -> bool:
    """Import what every judge imports (PRELOAD, and GPU_PRELOAD where the machine seems
    to have a GPU); False where that touched the GPU (a fork could not use it)."""
    import importlib

    from harness.judging.startup.head_start import guess_device

    for name in PRELOAD + (GPU_PRELOAD if guess_device(None) == "cuda" else ()):
        try:
            importlib.import_module(name)
        except ImportError:  # triton where it is not installed: the judge imports it then
            pass
    return not sys.modules["torch"].cuda.is_initialized()


def fork_judges(channel: socket.socket) -> int:
    """Fork a judge for each job sent on `channel` and report its pid and, once reaped,
    its exit status; return when the other end is closed. A judge still running then is
    killed: nobody is left to read its answer."""
    from harness.judging.sandbox.sandbox import die_with_parent

    me = os.getpid()
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 2)
        except OSError:
            return 0
        if len(fds) != 2:
            return 0  # the slot closed its end
        pid = os.fork()
        if pid == 0:
            channel.close()
            _be_judge(*fds, template=me, die=die_with_parent)
        for f in fds:
            os.close(f)
        channel.sendall(f"{pid}\n".encode())
        status = _reap(pid, channel)
        if status is None:
            return 0
        try:
            channel.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        except OSError:
            return 0


def _reap(pid: int, channel: socket.socket) -> int | None:
    """The judge `pid`'s wait status once it ends; None where the other end of `channel`
    went first (the judge's whole group is killed and reaped then)."""
    try:
        ended = os.pidfd_open(pid)
    except (AttributeError, OSError):  # an old kernel: wait, as a slot's thread is there
        return os.waitpid(pid, 0)[1]
    try:
        ready, _, _ = select.select([ended, channel], [], [])
        if ended not in ready:  # the other end closed (it never writes during a job)
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            os.waitpid(pid, 0)
            return None
        return os.waitpid(pid, 0)[1]
    finally:
        os.close(ended)


def _be_judge(request: int, log: int, template: int, die) -> None:
    """In the forked judge: its own session, death with the template, the request on its
    standard input and its output in `log`; then a judge process's main, and exit."""
    def body() -> int:
        freeze_inherited()  # the template's heap, shared with it page by page
        os.setsid()
        die(template)
        os.dup2(request, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(request)
        os.close(log)
        from harness.execution.judge_process import judge
        from harness.judging.sandbox import forked

        forked.allow(True)  # its worker may be a fork of it until it reads its secret
        return judge()

    run_child(body)
