"""A worker forked from its judge rather than started as a new interpreter.

A judge forked from a slot's template (harness/execution/judge_template.py) has imported
torch and the harness, touched no GPU and, until it reads its request's secret, holds no
secret. A worker it starts in that window is a fork of it: the same containment applied
between fork and the worker's first line as between fork and exec (`Limits.apply`), the
same environment, folders, streams and session, but no second import of torch. Every
other worker (a judge started from scratch, a second worker, one after the secret is read
or the GPU touched) is a new interpreter, as before.

`ForkedProcess` gives the judge what it uses of a `subprocess.Popen`.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from harness.judging.sandbox.sandbox import Limits

_open = False  # whether a worker started now may be a fork of this process
# Python's start-up variables of a worker's environment that a fork takes as a new
# interpreter would (`_as_if_exec`), and those it takes where this process started alike.
_EMULATED = frozenset({"PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"})
_OWN_START = frozenset({"PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONPYCACHEPREFIX"})


def allow(on: bool) -> None:
    """Open (a judge just forked from its template) or close (its secret read) the window
    in which a worker may be a fork of this process."""
    global _open
    _open = on


def possible() -> bool:
    """Whether a worker started now may be a fork of this process: the window is open and
    this process has not touched a GPU (a fork could not use it) and runs one thread."""
    if not _open:
        return False
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return False
    return len(os.listdir("/proc/self/task")) == 1


class ForkedProcess:
    """A child process of this one, as far as `subprocess.Popen` is used of it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (the judge's sweep of strays)
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("worker", timeout)
            time.sleep(0.005)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@dataclass(frozen=True)
class Start:
    """What exec would give a new worker: its channel's descriptor and device (its
    arguments), working folder, environment, output files and the descriptors it keeps."""

    channel: int
    device: str
    cwd: Path
    env: dict[str, str]
    streams: tuple[int, int]
    keep: frozenset[int]


def fork_worker(channel: int, device: str, cwd: Path, env: Mapping[str, str],
                streams: tuple[IO[bytes], IO[bytes]], limits: Limits) -> ForkedProcess:
    """A worker forked from this process, talking on the descriptor `channel`, as
    `python -m harness.judging.worker.worker CHANNEL DEVICE` would be started with `env`,
    in `cwd`, its output in `streams`, in a session of its own, under `limits`."""
    keep = {channel} | ({limits.ruleset.fd} if limits.ruleset is not None else set())
    start = Start(channel, device, cwd, dict(env),
                  (streams[0].fileno(), streams[1].fileno()), frozenset(keep))
    return ForkedProcess(fork_contained(start, limits))


def honours(env: Mapping[str, str]) -> bool:
    """Whether a fork of this process starts as a new interpreter given `env` would, as far
    as Python's own start-up variables go: those a fork emulates (`_as_if_exec`) or this
    process started with alike. Any other (PYTHONMALLOC, say, passed on by the organiser's
    `worker.env_pass`) is read only by a new interpreter, so its worker must be one."""
    return all(k in _EMULATED or (k in _OWN_START and os.environ.get(k) == v)
               for k, v in env.items() if k.startswith("PYTHON"))


def fork_contained(start: Start, limits: Limits) -> int:
    """Fork a worker and return its pid once its limits hold; raise OSError, the child
    reaped, where they could not be applied (as `subprocess.Popen` raises where its
    `preexec_fn` fails)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        become_worker(replace(start, keep=start.keep | {write}), limits, write)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        refusal = said.read()
    if refusal:
        os.waitpid(pid, 0)
        raise OSError(f"its limits could not be applied: {refusal.decode(errors='replace')}")
    return pid


def become_worker(start: Start, limits: Limits, report: int) -> None:
    """In the child: what exec would have given it, the containment, then the worker.
    Where the containment fails, its error is written to `report` and the child ends;
    else `report` is closed before the worker's first line."""
    def body() -> None:
        try:
            _as_if_exec(start)
            limits.apply()
        except BaseException as exc:  # noqa: BLE001 - told to the parent, which raises it
            os.write(report, f"{type(exc).__name__}: {exc}".encode()[:4000])
            os._exit(1)
        os.close(report)
        limits.close()
        from harness.judging.worker.worker import main

        main()

    run_child(body)


def run_child(body: Callable[[], int | None]) -> NoReturn:
    """Run `body` as a forked child's whole life and end the child with its exit code
    (None: 0; an exception: 1, its traceback on stderr), its standard streams flushed and
    nothing of its parent's teardown run (no `atexit` hook, no `finally` of the parent's
    frames)."""
    code = 1
    try:
        result = body()
        code = result if isinstance(result, int) else 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on its stderr, which its parent reads
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _as_if_exec(start: Start) -> None:
    """The state a new interpreter would start in: its own session, folder, standard
    streams (unbuffered, as PYTHONUNBUFFERED asks), descriptors, signal dispositions,
    environment, arguments, import path and the audit hook its sitecustomize installs (the
    refusals' reports); no bytecode written; temporary files under its own TMPDIR; what it
    inherited frozen out of the garbage collector's walks (`freeze_inherited`)."""
    os.setsid()
    os.chdir(start.cwd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(start.streams[0], 1)
    os.dup2(start.streams[1], 2)
    for fd in open_descriptors() - {0, 1, 2} - start.keep:
        try:
            os.close(fd)
        except OSError:
            pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    judges = _paths(os.environ.get("PYTHONPATH", ""))
    os.environ.clear()
    os.environ.update(start.env)
    tempfile.tempdir = None  # found again from TMPDIR, the worker's own, when first asked
    sys.dont_write_bytecode = True
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout, sys.stderr = _unbuffered(1), _unbuffered(2)
    sys.argv = [str(Path(__file__).parent.parent / "worker" / "worker.py"),
                str(start.channel), start.device]
    # As `python -m` with the worker's PYTHONPATH: its working folder, then that path.
    sys.path[:] = ([str(start.cwd)] + _paths(start.env.get("PYTHONPATH", ""))
                   + [p for p in sys.path[1:] if p not in judges])
    from harness.judging.sandbox.refusals import install

    install()  # the audit hook, which the worker's sitecustomize installs at start-up
    freeze_inherited()


def freeze_inherited() -> None:
    """Move every object this fork inherited out of the garbage collector's reach
    (gc.freeze): a collection would otherwise walk the parent's whole heap, writing to
    each object's header and so copying every page it shares with the parent, a pause of
    the size of that heap in the middle of whatever runs (a timed call among them); the
    objects made from now on are collected as in any process."""
    import gc

    gc.freeze()


def _paths(value: str) -> list[str]:
    return [p for p in value.split(os.pathsep) if p]


def _unbuffered(fd: int) -> io.TextIOWrapper:
    return io.TextIOWrapper(open(fd, "wb", buffering=0, closefd=False),  # noqa: SIM115
                            encoding="utf-8", errors="backslashreplace", write_through=True)


def open_descriptors() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}
