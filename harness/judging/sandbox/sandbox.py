"""Containment of the worker process: environment, limits, sandbox, scratch, killing.

The worker is a fresh interpreter (`python -m harness.judging.worker.worker`), or, started by a
judge forked from a slot's template before it holds any secret, a fork of that judge with
the same containment (forked.py). It runs in its own session and process group, in a scratch folder, with an
environment stripped of the harness's secrets, its output captured to files, a file size
limit, bounds on its processes and scratch bytes (bounds.py), and (`worker.sandbox:
landlock`) a Landlock policy and a seccomp filter applied between fork and exec: it reads
only what a submission needs, writes only its scratch and shared-memory folders, and opens
no network connection (containment.py and seccomp.py say what exactly). On the CPU its address space is capped too: the worker caps itself
once started, a task's own evaluator from its start (memory_cap.py). The judge registers
as a child subreaper so that processes the worker leaves behind come back to it and are
killed too.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from multiprocessing.reduction import sendfds
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import bytecode
from harness.judging.sandbox import forked, landlock, zygote
from harness.judging.sandbox.bounds import (
    ProcessBound,
    Quota,
    bind_privately,
    kill_user,
    process_bound,
)
from harness.judging.sandbox.containment import (
    POLICY_ENV,
    SCRATCH_FOLDERS,
    build_policy,
    make_ruleset,
    prepare_scratch,
)
from harness.judging.sandbox.leftovers import make_folder
from harness.judging.sandbox.procfs import process_table
from harness.judging.sandbox.seccomp import NoIpSockets
from harness.judging.startup.compile_cache import ENV as COMPILE_CACHE_ENV
from harness.judging.startup.compile_cache import copy_back, copy_in
from harness.settings import WorkerSettings

if TYPE_CHECKING:
    from harness.judging.ranks.seat import RankSeat

# Under the sandbox, a seccomp filter beside Landlock: no IP sockets (Landlock refuses only
# TCP), no io_uring.
SECCOMP = True
# Run as root, the worker holds no capability.
DROP_CAPABILITIES = True

# Variables a worker may inherit: enough to find Python, the GPU and the compilers as the
# machine sets them up (a submission that builds an extension with torch's load_inline
# must build it as under the contest's own process: the H200 machines name their gcc in
# CC/CXX/CUDAHOSTCXX and the sm_90a target in TORCH_CUDA_ARCH_LIST), and what changes how
# torch's GPU allocator behaves (the public evaluators' process sees it too).
_ENV_KEEP = {"PATH", "LANG", "LC_ALL", "TZ", "TERM", "SHELL", "TMPDIR",
             "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
             "CC", "CXX", "CUDAHOSTCXX", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH",
             "CPLUS_INCLUDE_PATH", "TORCH_CUDA_ARCH_LIST", "TORCH_NVCC_FLAGS",
             "PYTORCH_ROCM_ARCH", "MAX_JOBS"}
WORKER_USER_NAME = "harness-worker"
_ENV_PREFIXES = (
    "CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "ROCM_", "HIP_", "HSA_", "OMP_", "MKL_",
    "OPENBLAS_", "NCCL_", "TORCH_SYMM", "TRITON_INTERPRET", "NVSHMEM_", "NVCC_",
)
# Never passed on, whatever the prefix rules say.
_ENV_DROP_PREFIXES = ("HARNESS_", "GITHUB_", "AWS_", "PG", "DATABASE")


class WorkerDied(RuntimeError):
    """The worker ended (crash, exit) while the judge waited for it."""


class WorkerTimeout(RuntimeError):
    """The worker did not answer within the time allowed."""


def passes(key: str, extra: Sequence[str] = ()) -> bool:
    """Whether the judge's variable `key` reaches the worker: on the allow-list, or named in
    `extra` (the organiser's `worker.env_pass`: names, or prefixes ending in `*`), and never
    under a dropped prefix, whatever the lists say."""
    if key.startswith(_ENV_DROP_PREFIXES):
        return False
    if key in _ENV_KEEP or key.startswith(_ENV_PREFIXES):
        return True
    return any(key.startswith(e[:-1]) if e.endswith("*") else key == e for e in extra)


def worker_env(scratch: Path, device: str, extra: Sequence[str] = ()) -> dict[str, str]:
    """The environment of a worker: an allow-list of the judge's (see `passes`), nothing
    secret, and the worker's own user name."""
    env = {key: value for key, value in os.environ.items() if passes(key, extra)}
    # The worker's user (a number of its own: bounds.py) is in no passwd file; a library
    # that asks its name (getpass.getuser(), as torch.compile's caches do) reads these.
    env["USER"] = env["LOGNAME"] = WORKER_USER_NAME
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    if sys.pycache_prefix:  # the judge's bytecode cache (harness/bytecode.py), read only
        env[bytecode.ENV] = sys.pycache_prefix
    env.update(prepare_scratch(scratch))  # home, temporary files and compiler caches
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux), so escaped processes can be found and killed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def children() -> set[int]:
    """This process's child processes, zombies and adopted orphans included."""
    me = os.getpid()
    return {pid for pid, (parent, _) in process_table().items() if parent == me}


def kill_strays(keep: set[int], seconds: float = 5.0) -> list[int]:
    """Kill and reap the judge's children that are not in `keep`, with their whole process
    groups; return their pids. A group dies as one: a process that forks and exits over
    and over (each pid too short-lived to be found) shares its group with its forks, and
    its exited forks wait, adopted by the judge (a subreaper), as zombies that name the
    group. Sweeps until none is left, for up to `seconds`."""
    killed: list[int] = []
    own_group = os.getpgid(0)
    deadline = time.monotonic() + seconds
    while True:
        table = process_table()
        strays = [p for p, (ppid, _) in table.items() if ppid == os.getpid() and p not in keep]
        if not strays or time.monotonic() > deadline:
            break
        for group in {table[p][1] for p in strays} - {own_group, 0}:
            _signal_quietly(group, signal.SIGKILL, group=True)
        for pid in strays:
            _signal_quietly(pid, signal.SIGKILL, group=False)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            killed.append(pid)
    return killed


def _signal_quietly(pid: int, sig: int, group: bool) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _prctl() -> Any:
    """libc's prctl, looked up once in the parent: a child between fork and exec of a
    process with threads should not load libraries (another thread may have held the
    loader's lock at the fork)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def die_with_parent(parent: int) -> None:
    """In a child between fork and exec: be killed when the process that started it ends,
    however it ends (SIGKILL included, which leaves it no cleanup), so that a worker never
    outlives its judge, running a submission with nobody to stop it (Linux's
    PR_SET_PDEATHSIG; it holds across exec). Exits at once where the parent is gone
    already."""
    if _PRCTL is None:
        return
    _PRCTL(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


@dataclass
class Limits:
    file_size: int
    address_space: int | None = None  # RLIMIT_AS from the start (memory_cap.whole_process_cap)
    ruleset: landlock.Ruleset | None = None
    no_ip: NoIpSockets | None = None
    drop_capabilities: bool = True
    bound: ProcessBound | None = None  # worker.max_processes (bounds.py)
    binds: list[tuple[bytes, bytes]] = field(default_factory=list)  # bounds.bind_privately
    parent: int = field(default_factory=os.getpid)  # the judge, where the limits are made
    network: Path | None = None  # a multi-GPU case's rank network (ranks/network.py)

    def apply(self) -> None:
        """Runs in the child between fork and exec: the ranks' network (entering it needs
        the privileges dropped below), its user and process bound (a change of user clears
        the parent-death signal), then it dies with its parent (the judge,
        `die_with_parent`); the sandbox last, once nothing else needs a right it takes
        away."""
        if self.network is not None:
            from harness.judging.ranks.network import join

            join(self.network)
        if self.binds:
            bind_privately(self.binds)
        if self.bound is not None:
            self.bound.apply()
        die_with_parent(self.parent)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size, self.file_size))
        if self.address_space:
            resource.setrlimit(resource.RLIMIT_AS, (self.address_space, self.address_space))
        if self.ruleset is not None:
            self.ruleset.restrict_self(drop_capabilities=self.drop_capabilities)
        if self.no_ip is not None:
            landlock.no_new_privs()
            self.no_ip.install()

    def close(self) -> None:
        """Release the ruleset's descriptor in the judge once the child is started."""
        if self.ruleset is not None:
            self.ruleset.close()


@dataclass
class Folders:
    """The folders of a process running submitted code: its scratch folder (its working
    directory), the staged task folders it may read, and the run's shared-memory folders it
    may write (allowed beside the scratch folder and the system's paths)."""

    scratch: Path
    readable: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)


def contain(settings: WorkerSettings, device: str, folders: Folders,
            address_space: int | None = None, network: Path | None = None, rank: int = 0,
            ) -> tuple[dict[str, str], Limits, landlock.Report]:
    """What a process running submitted code gets: its environment, the limits and sandbox
    applied between fork and exec, and the report of what the sandbox enforces.

    `address_space`: an RLIMIT_AS from the start, for a process that cannot cap itself
    once started as the worker does (memory_cap.py). `network`: the namespace of a
    multi-GPU case's ranks (ranks/network.py), which it joins: IP sockets are allowed
    there, where loopback is all there is; `rank`: its rank there, whose user and process
    bound are its own (bounds.worker_uid). Call `Limits.close` after the start.
    The process bound (`worker.max_processes`) is in the limits; the scratch quota is the
    caller's (`bounds.Quota`).
    """
    scratch = folders.scratch
    env = worker_env(scratch, device, settings.env_pass)
    bound = process_bound(settings.max_processes, rank)
    if bound is not None:  # its temporary and cache folders (prepare_scratch)
        bound.hand_over(scratch, [Path(env[key]) for key in SCRATCH_FOLDERS]
                        + [scratch / ".cache"])
    if settings.sandbox == "off":
        report = landlock.off()
        _note_bound(report, bound)
        return env, Limits(settings.file_size_limit_bytes, address_space, bound=bound,
                           network=network), report
    policy = build_policy(scratch, folders.readable, folders.writable, device,
                          settings.sandbox_read)
    no_ip = NoIpSockets() if SECCOMP and NoIpSockets.available() and network is None else None
    policy.no_ip = no_ip is not None
    env[POLICY_ENV] = policy.to_env()
    # TorchInductor's parallel compile workers need multiprocessing locks, which are
    # new objects in /dev/shm, refused here: compile in the worker itself.
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    ruleset, report = make_ruleset(policy, tcp=network is not None)
    if no_ip is not None:
        report.enforced.append("no IP sockets (seccomp)")
    if network is not None:  # TCP is held by the namespace, whatever Landlock's ABI
        report.enforced = [e for e in report.enforced if e != "tcp"] + [
            "IP sockets only in the ranks' own network, loopback alone"]
        report.missing = [m for m in report.missing if not m.startswith("tcp ")]
        if not report.missing and report.level == "partial":
            report.level = "full"
    limits = Limits(settings.file_size_limit_bytes, address_space, ruleset, no_ip,
                    DROP_CAPABILITIES, bound, network=network)
    _note_bound(report, bound)
    return env, limits, report


def _note_bound(report: landlock.Report, bound: ProcessBound | None) -> None:
    if bound is not None:
        report.enforced.append(bound.describe())


# A dumped stack is read once the worker's stderr has not grown for this many polls.
_STACK_POLL_SECONDS = 0.05
_STACK_SETTLE_POLLS = 4
# The pids of this judge's workers started and not yet killed: one, but a multi-GPU
# case's every rank (ranks/ranked.py), whose judges share this process.
_LIVE_WORKERS: set[int] = set()


class WorkerProcess:
    """One worker: start it, talk to it, watch its clock, kill it and its descendants."""

    def __init__(self, settings: WorkerSettings, device: str,
                 readable: list[Path] | None = None, writable: list[Path] | None = None,
                 compile_cache: Path | None = None, seat: RankSeat | None = None) -> None:
        """`readable`: the staged task folder; `writable`: the run's shared-memory folder
        (the sandbox allows these beside the scratch folder and the system's paths);
        `compile_cache`: the submission file's compiler-cache folder (compile_cache.py),
        writable too, named to the worker in its environment; under a scratch quota the
        worker sees there a copy of it in its scratch folder (bounds.bind_privately),
        stored back when it is gone. `seat`: the rank of a multi-GPU case it runs, whose
        network it joins (ranks/seat.py)."""
        self.settings = settings
        self.seat = seat
        self.device = device
        self.readable = list(readable or [])
        self.writable = list(writable or [])
        self.scratch = make_folder("worker")
        self.proc: subprocess.Popen | forked.ForkedProcess | None = None
        self.conn: Connection | None = None
        self.containment: landlock.Report | None = None
        self.bound: ProcessBound | None = None
        self._out = open(self.scratch / ".stdout", "w+b")
        self._err = open(self.scratch / ".stderr", "w+b")
        # Mounted over the captured output (bounded apart, by RLIMIT_FSIZE), which the
        # worker then cannot reach.
        self.quota = Quota(self.scratch, settings.scratch_mb)
        self.warnings = [self.quota.warning] if self.quota.warning else []
        self.compile_cache = compile_cache
        self.cache_copy: Path | None = None  # the worker's copy of it, under the quota
        if compile_cache is not None:
            self.writable.append(compile_cache)
            if self.quota.held:  # its rule too: Landlock meets the copy, not the folder
                self.cache_copy = self.scratch / ".compile-cache"
                warning = copy_in(compile_cache, self.cache_copy)
                self.warnings += [warning] if warning else []
                self.writable.append(self.cache_copy)

    def start(self) -> None:
        parent, child = Pipe(duplex=True)
        seat = self.seat
        env, limits, self.containment = contain(
            self.settings, self.device, Folders(self.scratch, self.readable, self.writable),
            network=seat and seat.network, rank=seat.rank if seat else 0)
        self.bound = limits.bound
        if self.cache_copy is not None:  # seen by the worker at the folder's own path
            limits.binds.append((bytes(self.cache_copy), bytes(self.compile_cache)))
        kill_user(self.bound and self.bound.uid)  # what a dead judge of this pid left
        if self.quota.held:
            self.containment.enforced.append(self.quota.describe())
        if self.compile_cache is not None:
            env[COMPILE_CACHE_ENV] = str(self.compile_cache)
        try:
            self.proc = self._spawn(child.fileno(), env, limits)
        finally:
            limits.close()
        child.close()
        self.conn = parent
        _LIVE_WORKERS.add(self.proc.pid)

    def _spawn(self, channel: int, env: dict[str, str],
               limits: Limits) -> subprocess.Popen | forked.ForkedProcess:
        """The worker's process: a fork of this judge while it may be one (forked.py), else
        a fork of the judge's zygote (zygote.py), else a new interpreter; each contained
        alike."""
        streams = (self._out, self._err)
        if forked.honours(env):
            if forked.possible():  # a judge forked from its template
                return forked.fork_worker(channel, self.device, self.scratch, env, streams,
                                          limits)
            spare = zygote.current()
            if spare is not None:
                try:
                    return spare.fork_worker(channel, self.device, self.scratch, env, streams,
                                             limits)
                except zygote.ZygoteGone:
                    pass  # a new interpreter
        return subprocess.Popen(
            [sys.executable, "-m", "harness.judging.worker.worker", str(channel), self.device],
            pass_fds=[channel], cwd=self.scratch, env=env, stdin=subprocess.DEVNULL,
            stdout=self._out, stderr=self._err, start_new_session=True,
            preexec_fn=limits.apply)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def forked(self) -> bool:
        """Whether it is a fork of this judge (forked.py) rather than a new interpreter."""
        return isinstance(self.proc, forked.ForkedProcess)

    def send(self, message: dict, fds: list[int] | tuple[int, ...] = ()) -> None:
        """Send a message (pickled: the worker trusts the judge, never the reverse), then
        the file descriptors `fds` (SCM_RIGHTS), which the worker takes with it."""
        if self.conn is None:  # its start failed
            raise WorkerDied(self.exit_description())
        try:
            self.conn.send(message)
            if fds:
                with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
                    sendfds(sock, list(fds))
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise WorkerDied(self.exit_description()) from exc

    def recv(self, timeout: float, spin: float = 0.0) -> dict:
        """The worker's next message, parsed as JSON only; raises on timeout or death.

        With `spin` > 0, poll without sleeping for that many seconds first: a blocked
        process wakes tens of microseconds late on some machines.
        """
        from harness.judging.worker.protocol import decode

        deadline = time.monotonic() + timeout
        spin_until = time.perf_counter() + min(spin, timeout)
        while time.perf_counter() < spin_until:
            if self.conn.poll(0):
                break
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout(f"no answer within {timeout:.3g} s")
            try:
                ready = self.conn.poll(min(left, 1.0))
            except (OSError, EOFError) as exc:
                raise WorkerDied(self.exit_description()) from exc
            if ready:
                try:
                    raw = self.conn.recv_bytes(maxlength=1 << 20)
                except (EOFError, OSError) as exc:
                    raise WorkerDied(self.exit_description()) from exc
                return decode(raw)
            if self.proc.poll() is not None and not self.conn.poll(0):
                raise WorkerDied(self.exit_description())

    def exit_description(self, when: str = "in the middle of the run") -> str:
        """How the worker ended: a signal's name, or its exit status `when`."""
        if self.proc is None:
            return "the worker never started"
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the worker stopped answering"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            hint = {
                "SIGSEGV": "a segmentation fault",
                "SIGABRT": "an abort",
                "SIGKILL": "out of memory, or killed from outside",
                "SIGXFSZ": "it wrote past the output size limit",
                "SIGBUS": "a bus error",
                "SIGFPE": "an arithmetic fault",
            }.get(name, "")
            return f"the worker was killed by {name}" + (f" ({hint})" if hint else "")
        return f"the worker exited with status {code} {when}"

    def dump_stack(self, wait: float = 3.0) -> str:
        """The worker's Python stacks, where it dumps them on SIGUSR1 (a multi-GPU case's
        rank does, ranks/seat.py): what it wrote to its stderr after the signal, once that
        stopped growing, within `wait` seconds ("" where it wrote nothing or is gone). Read
        at its own offsets (pread), so another thread may ask while the judge's reads the
        output."""
        if self.proc is None or self.proc.poll() is not None:
            return ""
        fd = self._err.fileno()
        mark = os.fstat(fd).st_size
        _signal_quietly(self.proc.pid, signal.SIGUSR1, group=False)
        deadline, size, settled = time.monotonic() + wait, mark, 0
        while time.monotonic() < deadline and settled < _STACK_SETTLE_POLLS:
            time.sleep(_STACK_POLL_SECONDS)
            grown = os.fstat(fd).st_size
            settled = settled + 1 if grown == size and grown > mark else 0
            size = grown
        return os.pread(fd, min(size - mark, 1 << 16), mark).decode(errors="replace")

    def killed_from_outside(self) -> bool:
        """Whether the worker, now ended, was killed by a signal that nothing the judge can
        name explains: SIGKILL or SIGTERM (the kernel's OOM killer, an operator, another
        process) with none of its bounds reached (call before `kill`)."""
        if self.proc is None or self.proc.poll() is None:
            return False
        return (self.proc.returncode in (-signal.SIGKILL, -signal.SIGTERM)
                and not self.bounds_reached())

    def bounds_reached(self) -> list[str]:
        """The bounds the worker's processes meet now, in words for a verdict (call before
        `kill`): the process bound, the scratch quota."""
        met = []
        if self.bound is not None and self.proc is not None and self.bound.reached():
            met.append(f"the submission reached its bound of {self.bound.tasks} processes and "
                       "threads (worker.max_processes): past it, fork fails")
        if self.quota.full():
            met.append(f"the submission filled its scratch quota of {self.quota.megabytes} MiB "
                       "(worker.scratch_mb): past it, writes fail")
        return met

    def output(self, start: tuple[int, int] = (0, 0),
               end: tuple[int, int] | None = None) -> tuple[str, str]:
        """Captured stdout and stderr from byte offsets `start` to `end` (the end of each file
        when None), each cut to the configured limit (the tail kept)."""
        ends = end or (None, None)
        return tuple(_tail(f, self.settings.output_limit_bytes, a, b)
                     for f, a, b in zip((self._out, self._err), start, ends))

    def output_sizes(self) -> tuple[int, int]:
        """How many bytes of stdout and stderr were captured so far: a mark for `output`."""
        sizes = []
        for f in (self._out, self._err):
            f.flush()
            sizes.append(os.fstat(f.fileno()).st_size)
        return sizes[0], sizes[1]

    def kill(self) -> list[int]:
        """Kill the worker's process group and every stray it left; return stray pids.
        The judge's other live workers (a multi-GPU case's other ranks) are no strays."""
        if self.proc is not None:
            _signal_quietly(self.proc.pid, signal.SIGKILL, group=True)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            _LIVE_WORKERS.discard(self.proc.pid)
        if self.conn is not None:
            self.conn.close()
        strays = kill_strays(keep=set(_LIVE_WORKERS) | zygote.pids())
        return strays + [p for p in kill_user(self.bound and self.bound.uid) if p not in strays]

    def close(self) -> list[int]:
        """Kill everything, drop the scratch folder; return the pids of strays killed."""
        strays = self.kill()
        for f in (self._out, self._err):
            f.close()
        if self.cache_copy is not None:
            copy_back(self.cache_copy, self.compile_cache)
        self.quota.release()
        _remove_tree(self.scratch)
        return strays


def _tail(f, limit: int, first: int = 0, end: int | None = None) -> str:
    """The file's bytes from `first` to `end` (its end when None), at most the last `limit`."""
    f.flush()
    size = f.seek(0, os.SEEK_END) if end is None else end
    start = max(first, size - limit)
    f.seek(start)
    text = f.read(max(size - start, 0)).decode("utf-8", "replace")
    f.seek(0, os.SEEK_END)
    if start > first:
        text = f"[... {start - first} earlier bytes cut ...]\n" + text
    return text


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
