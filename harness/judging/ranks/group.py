"""The judge's own rank processes for a multi-GPU case: the task's reference, per rank.

A multi-GPU task's reference calls collectives (the public amd_distributed folders'
`ref_kernel` reduce-scatters; every `check_implementation` calls `ref_kernel`), so its
expected outputs exist only in as many processes as the case has ranks, joined in a
process group. `RankGroup` starts them (reference_rank.py), trusted and apart from any
submission's process: a group of their own, its rendezvous a file in the run's folder,
gloo on loopback on the CPU or NCCL with rank r on GPU r. It asks every rank at once and
waits for every answer; a rank that fails, dies or runs past the time allowed is a
`RankError` that names it, and the whole group is stopped (the others may be waiting in a
collective that will never complete).
"""

from __future__ import annotations

import io
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.judging.ranks.reference_rank import receive, send
from harness.judging.sandbox.forked import ForkedProcess, run_child
from harness.judging.sandbox.sandbox import die_with_parent
from harness.settings import ROOT

START_SECONDS = 120.0  # each rank imports torch and joins the group
STACK_WAIT_SECONDS = 0.5  # for a silent rank to dump its stack (SIGUSR1, faulthandler)
# Loopback only: the group's traffic never leaves the machine. NCCL's bootstrap is TCP.
_LOOPBACK = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}


class RankError(RuntimeError):
    """A rank process that failed, died or ran past its time."""

    def __init__(self, rank: int, message: str) -> None:
        super().__init__(f"rank {rank}: {message}")
        self.rank, self.message = rank, message


class RankGroup:
    """`world` trusted processes, ranks 0 to world-1, each with the task's reference
    imported from the judge's staged copy `staged`, joined in a group of their own.
    `folder`: the run's folder (the rendezvous file and each rank's captured output).
    Use it in a `with` block: leaving it stops every rank."""

    def __init__(self, staged: Path, world: int, device: str, folder: Path) -> None:
        self.staged, self.world, self.device, self.folder = staged, world, device, folder
        self.procs: list[subprocess.Popen | ForkedProcess] = []
        self.socks: list[socket.socket] = []

    def __enter__(self) -> RankGroup:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout: float = START_SECONDS) -> None:
        """Start every rank and wait until each has joined the group."""
        store = self.folder / "rendezvous"
        store.unlink(missing_ok=True)
        fork = _may_fork(self.device)
        for rank in range(self.world):
            mine, theirs = socket.socketpair()
            args = [str(theirs.fileno()), str(rank), str(self.world), str(store),
                    str(self.staged), self.device]
            log = self.folder / f"rank{rank}.log"
            self.procs.append(_forked(args, theirs.fileno(), log, self.folder) if fork
                              else _started(args, theirs.fileno(), log, self.folder))
            theirs.close()
            self.socks.append(mine)
        self._answers(time.monotonic() + timeout, "to join the group")

    def generate(self, case: dict[str, Any], timeout: float) -> list[Any]:
        """Every rank's inputs of `case` (`generate_input(**case, rank=r)`), by rank."""
        return self._ask([("generate", dict(case))] * self.world, timeout, "to make its inputs")

    def reference(self, timeout: float) -> list[Any]:
        """Every rank's expected output (`ref_kernel` on a copy of its inputs), by rank."""
        return self._ask([("reference",)] * self.world, timeout, "to run the reference")

    def check(self, outputs: list[Any], timeout: float) -> list[tuple[bool, str]]:
        """The task's check of each rank's output against its inputs: `(ok, message)` by
        rank."""
        return self._ask([("check", out) for out in outputs], timeout, "to check its output")

    def close(self) -> None:
        """Stop every rank: asked first, killed where it does not end at once."""
        for sock in self.socks:
            try:
                send(sock, ("stop",))
            except OSError:
                pass
            sock.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                _kill(proc)
        self.procs, self.socks = [], []

    def _ask(self, requests: list[Any], timeout: float, what: str) -> list[Any]:
        for rank, (sock, request) in enumerate(zip(self.socks, requests)):
            try:
                send(sock, request)
            except OSError as exc:
                self._fail(rank, f"cannot be reached ({exc}){self._exit(rank)}")
        return self._answers(time.monotonic() + timeout, what)

    def _answers(self, deadline: float, what: str) -> list[Any]:
        """Every rank's answer, by rank; the first failure stops the group. Past the
        deadline, the rank blamed is one that is not waiting in a collective (`_stuck`):
        the others wait for it."""
        answers: dict[int, Any] = {}
        while len(answers) < self.world:
            waiting = [self.socks[r] for r in range(self.world) if r not in answers]
            ready, _, _ = select.select(waiting, [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                silent = [r for r in range(self.world) if r not in answers]
                self._fail(self._stuck(silent), f"took longer than allowed {what}")
            for sock in ready:
                rank = self.socks.index(sock)
                try:
                    answer = receive(sock, deadline)
                except TimeoutError:
                    self._fail(rank, f"took longer than allowed {what}")
                except (EOFError, OSError):
                    self._fail(rank, f"ended {what}{self._exit(rank)}")
                if answer[0] == "error":
                    self._fail(rank, f"failed {what}: {answer[1]}")
                answers[rank] = answer[1] if len(answer) > 1 else None
        return [answers[r] for r in range(self.world)]

    def _stuck(self, silent: list[int]) -> int:
        """Of the ranks that did not answer, the first whose Python stack (dumped on
        SIGUSR1 into its log) is not inside torch.distributed; else the first of them."""
        marks = {}
        for rank in silent:
            log = self.folder / f"rank{rank}.log"
            marks[rank] = log.stat().st_size if log.exists() else 0
            try:
                os.kill(self.procs[rank].pid, signal.SIGUSR1)
            except ProcessLookupError:
                return rank
        time.sleep(STACK_WAIT_SECONDS)
        for rank in silent:
            with open(self.folder / f"rank{rank}.log", "rb") as log:
                log.seek(marks[rank])
                stack = log.read().decode(errors="replace")
            if stack and "torch/distributed" not in stack:
                return rank
        return silent[0]

    def _fail(self, rank: int, message: str) -> None:
        for proc in self.procs:
            _kill(proc)
        self.close()
        raise RankError(rank, message)

    def _exit(self, rank: int) -> str:
        proc = self.procs[rank]
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return ""
        said = (self.folder / f"rank{rank}.log").read_bytes()[-2000:].decode(errors="replace")
        return f" (exit {code})" + (f": {said.strip()}" if said.strip() else "")


def _may_fork(device: str) -> bool:
    """Whether the ranks may be forks of this process, which has imported torch and the
    harness: on the CPU, where this process has touched no GPU and runs one Python thread
    (a fork holds only the thread that forked; torch's own CPU thread pool is made anew in
    a fork, which runs its operators on one thread, as DataLoader's forked workers do)."""
    torch = sys.modules.get("torch")
    return (device == "cpu" and torch is not None and not torch.cuda.is_initialized()
            and threading.active_count() == 1)


def _started(args: list[str], fd: int, log: Path, cwd: Path) -> subprocess.Popen:
    """A rank as a new interpreter (`python -m harness.judging.ranks.reference_rank`)."""
    parent = os.getpid()
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.judging.ranks.reference_rank", *args],
            pass_fds=[fd], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, **_LOOPBACK, "PYTHONPATH": str(ROOT)}, cwd=cwd,
            start_new_session=True, preexec_fn=lambda: die_with_parent(parent))


def _forked(args: list[str], fd: int, log: Path, cwd: Path) -> ForkedProcess:
    """A rank as a fork of this process (no second import of torch): in a session of its
    own, in `cwd`, its output in `log`, keeping only the descriptor `fd`, dying with this
    process; then reference_rank's main, as the new interpreter would run it."""
    parent = os.getpid()
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    pid = os.fork()
    if pid == 0:
        def body() -> int:
            os.setsid()
            die_with_parent(parent)
            os.chdir(cwd)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.closerange(3, fd)
            os.closerange(fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.environ.update(_LOOPBACK)
            sys.modules["torch"].set_num_threads(1)
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
            from harness.judging.ranks.reference_rank import main

            return main(args)

        run_child(body)
    os.close(out)
    return ForkedProcess(pid)


def _kill(proc: subprocess.Popen | ForkedProcess) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
