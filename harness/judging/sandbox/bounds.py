"""What one evaluation may hold of its machine: processes (and threads) and scratch bytes.

- **Processes.** `RLIMIT_NPROC` counts the tasks (processes and threads) of a real user,
  and the kernel never applies it to root (uid 0 is exempt, capabilities or not). So the
  worker of a root judge runs as a user of its own, `UID_BASE` + the judge's pid (one
  judge process judges one evaluation at a time, so no two running evaluations share
  it), under `RLIMIT_NPROC` = `worker.max_processes`. It keeps one capability,
  `CAP_DAC_OVERRIDE` (ambient, so its children keep it too), to read and write what
  Landlock allows it as root did (the Python installation under /root, its scratch
  folder, the run's shared memory), and loses everything else: it cannot chmod, chown or
  signal the judge's files and processes. A judge that is not root cannot change users:
  its worker is bounded at the tasks its own user holds when it starts plus the setting.
- **Scratch bytes.** The worker's scratch folder (its home, temporary files and, in a
  ranked run, every compiler cache) is a tmpfs of `worker.scratch_mb`, mounted by the
  judge on the folder before anything is written there and unmounted when the worker is
  gone. Past it, writes fail with ENOSPC. The judge's own files (the results database,
  its staging and compile-cache folders) are on other filesystems, never on this budget.

Both need root where the judge runs; where they cannot be had, the run says so in a
warning and goes on. `kill_user` ends every process left of a worker's user, and
`reached` tells a verdict which bound a failed run met.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
from dataclasses import dataclass
from pathlib import Path

from harness.judging.sandbox.libc import LIBC as _LIBC

# Users of workers: UID_BASE + the judge's pid, plus RANK_STRIDE times the rank for the
# workers of a multi-GPU case's ranks, each a user of its own (pid_max is at most 2**22, so
# every one stays below 2**32 - 1, and far above the users a machine hands out).
UID_BASE = 2_000_000_000
RANK_STRIDE = 1 << 22
MAX_RANKS = 64  # ranks of one case with users of their own; more share the last one's
# A bound counts as met where the tasks left are within this share of it (some may have
# ended between the failure and the count).
_NEAR = 0.05
# Scratch is full where less than this many bytes are left.
_FULL_BYTES = 1 << 20
# tmpfs files per MiB of quota: 64 (about 16 MiB of inode memory per GiB) still holds
# worker.compile_cache_max_files of a few GiB's caches.
_INODES_PER_MB = 64

_CAP_DAC_OVERRIDE = 1
# What the judge needs to start a worker as another user: CAP_DAC_OVERRIDE (kept),
# CAP_SETGID, CAP_SETUID, CAP_SETPCAP (the bounding set).
_NEEDED = (1 << 1) | (1 << 6) | (1 << 7) | (1 << 8)
_CAP_VERSION_3 = 0x20080522
_PR_CAPBSET_DROP, _PR_SET_KEEPCAPS, _PR_CAP_AMBIENT, _AMBIENT_RAISE = 24, 8, 47, 2
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_CLONE_NEWNS = 0x00020000


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]




def _last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40


_LAST_CAP = _last_cap()


@dataclass
class ProcessBound:
    """At most `tasks` processes and threads for a worker and everything it starts: as
    user `uid` where the judge is root, else as the judge's own user, whose `base` tasks
    (held when the worker starts) count against RLIMIT_NPROC too."""

    tasks: int
    uid: int | None
    base: int = 0

    def __post_init__(self) -> None:
        # Built in the judge: the child between fork and exec only makes system calls.
        self._header = _CapHeader(_CAP_VERSION_3, 0)
        self._now = (_CapData * 2)()
        dac = 1 << _CAP_DAC_OVERRIDE
        self._keep = (_CapData * 2)((dac, dac, dac), (0, 0, 0))

    def __reduce__(self) -> tuple:
        # Sent to the judge's zygote (zygote.py), which builds its system-call buffers anew.
        return (type(self), (self.tasks, self.uid, self.base))

    @property
    def limit(self) -> int:
        """RLIMIT_NPROC of the worker."""
        return self.base + self.tasks

    def apply(self) -> None:
        """In the child between fork and exec, first of its limits (a change of user
        clears the parent-death signal): become the worker's user with
        CAP_DAC_OVERRIDE alone, every capability out of the bounding set, and
        RLIMIT_NPROC at the bound."""
        if self.uid is not None:
            libc, header = _LIBC, ctypes.byref(self._header)
            # The one capability kept, made inheritable while the bounding set has it.
            if libc.capget(header, self._now) != 0:
                raise OSError(ctypes.get_errno(), "capget failed")
            self._now[0].inheritable, self._now[1].inheritable = 1 << _CAP_DAC_OVERRIDE, 0
            if libc.capset(header, self._now) != 0:
                raise OSError(ctypes.get_errno(), "capset failed")
            for cap in range(_LAST_CAP + 1):
                libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
            libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0)
            os.setgroups([])
            os.setresgid(self.uid, self.uid, self.uid)
            os.setresuid(self.uid, self.uid, self.uid)
            if libc.capset(header, self._keep) != 0:
                raise OSError(ctypes.get_errno(), "capset failed")
            if libc.prctl(_PR_CAP_AMBIENT, _AMBIENT_RAISE, _CAP_DAC_OVERRIDE, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT) failed")
        resource.setrlimit(resource.RLIMIT_NPROC, (self.limit, self.limit))

    def hand_over(self, scratch: Path, folders: list[Path]) -> None:
        """Make `folders` in `scratch` the worker user's own, and `scratch` searchable:
        tools that ask access(2) whether they may write a folder (gcc of its TMPDIR) are
        answered for the real user, without the capability that lets the worker write
        the judge's folders."""
        if self.uid is not None:
            os.chmod(scratch, 0o711)
            for folder in folders:
                os.chown(folder, self.uid, self.uid, follow_symlinks=False)

    def describe(self) -> str:
        how = "a user of its own" if self.uid is not None else "the judge's user"
        return f"at most {self.tasks} processes and threads (RLIMIT_NPROC, as {how})"

    def reached(self) -> bool:
        """Whether the worker's tasks are at the bound now (within a few: some may have
        ended since a fork failed)."""
        held = count_tasks(self.uid if self.uid is not None else os.getuid())
        return held >= self.limit - max(2, int(self.tasks * _NEAR))


def worker_uid(judge: int, rank: int = 0) -> int:
    """The user of the worker of judge process `judge` (of rank `rank`'s worker, for a
    multi-GPU case: each rank's processes are bounded and killed apart)."""
    return UID_BASE + min(rank, MAX_RANKS - 1) * RANK_STRIDE + judge


def process_bound(max_processes: int, rank: int = 0) -> ProcessBound | None:
    """The bound of a worker of this judge (None where the setting is 0): as a user of
    its own where the judge may change users (root), else as the judge's user, whose
    tasks now count against RLIMIT_NPROC too. `rank`: of a multi-GPU case's worker."""
    if max_processes <= 0:
        return None
    uid = worker_uid(os.getpid(), rank)
    if (os.geteuid() == 0 and _LIBC is not None and _effective_caps() & _NEEDED == _NEEDED
            and _mapped(uid)):
        return ProcessBound(max_processes, uid)
    base = count_tasks(os.getuid())
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    if hard != resource.RLIM_INFINITY:
        max_processes = max(1, min(max_processes, hard - base))
    return ProcessBound(max_processes, None, base)


def _mapped(uid: int) -> bool:
    """Whether this user namespace has `uid` (a container's may map only a few users)."""
    try:
        with open("/proc/self/uid_map") as f:
            ranges = [tuple(int(n) for n in line.split()) for line in f if line.strip()]
    except (OSError, ValueError):
        return False
    return any(inside <= uid < inside + count for inside, _, count in ranges)


def _effective_caps() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def count_tasks(uid: int) -> int:
    """The tasks (threads included) of real user `uid`, from /proc."""
    return sum(threads for _, threads in _processes_of(uid))


def _processes_of(uid: int | frozenset[int]) -> list[tuple[int, int]]:
    """(pid, threads) of every process whose real user is `uid` (or one of them)."""
    users = uid if isinstance(uid, frozenset) else frozenset((uid,))
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                status = f.read()
        except OSError:
            continue
        real, threads = None, 1
        for line in status.splitlines():
            if line.startswith("Uid:"):
                real = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
        if real in users:
            found.append((int(entry.name), threads))
    return found


def kill_user(uid: int | frozenset[int] | None, rounds: int = 50) -> list[int]:
    """SIGKILL every process of a worker's user (or users: one scan of the process table
    finds them all; never root's, nor a user below `UID_BASE`) until none is left; the pids
    killed. Catches what left the judge's process tree, and what a dead judge of the same
    pid left."""
    users = uid if isinstance(uid, frozenset) else frozenset(() if uid is None else (uid,))
    workers = frozenset(u for u in users if u >= UID_BASE)
    if not workers:
        return []
    killed: list[int] = []
    for _ in range(rounds):
        pids = [pid for pid, _ in _processes_of(workers)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, 9)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in pids:  # reap those that are the judge's children
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
    return killed


# -- the scratch quota --------------------------------------------------------------

class Quota:
    """`worker.scratch_mb` on a scratch folder the judge made: a tmpfs mounted on it,
    where this machine allows (`warning` says why not, where it does not)."""

    def __init__(self, folder: Path, megabytes: int) -> None:
        self.folder, self.megabytes = folder, megabytes
        self.warning = mount_quota(folder, megabytes)
        self.held = megabytes > 0 and self.warning is None

    def describe(self) -> str:
        return f"a scratch quota of {self.megabytes} MiB (tmpfs)"

    def full(self) -> bool:
        """Whether the quota is spent: writes fail."""
        return self.held and quota_full(self.folder)

    def release(self) -> None:
        """Unmount the tmpfs (its files go with it); the folder stays, for its maker."""
        if self.held:
            unmount_quota(self.folder)
            self.held = False


def mount_quota(folder: Path, megabytes: int) -> str | None:
    """Mount a tmpfs of `megabytes` on `folder` (empty, made by the judge); None when
    done or the setting is 0, else why not (a warning)."""
    if megabytes <= 0:
        return None
    if _LIBC is None:
        return "the scratch quota is not held: no C library to mount with"
    options = f"size={megabytes}m,nr_inodes={max(megabytes * _INODES_PER_MB, 4096)},mode=0700"
    if _LIBC.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                   options.encode()) != 0:
        code = ctypes.get_errno()
        why = ("mounting a tmpfs needs root" if code == errno.EPERM
               else os.strerror(code))
        return f"the scratch quota is not held: {why}"
    return None


def bind_privately(binds: list[tuple[bytes, bytes]]) -> None:
    """In a child between fork and exec (still root): a mount namespace of its own, where
    each (source, target) folder is bound over target, so that it works in source under
    target's path (a compiler-cache folder's copy under the quota, at the folder's own
    path: torch's extension builds are keyed by their folder's path). The judge's mounts
    are untouched."""
    libc = _LIBC
    if libc.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate / failed")
    for source, target in binds:
        if libc.mount(source, target, None, _MS_BIND, None) != 0:
            raise OSError(ctypes.get_errno(), "bind mount failed")


def unmount_quota(folder: Path) -> bool:
    """Detach a quota's tmpfs from `folder` (its memory is freed once nothing holds a
    file of it); whether one was mounted there."""
    if _LIBC is None or not os.path.ismount(folder):
        return False
    return _LIBC.umount2(os.fsencode(folder), _MNT_DETACH) == 0


def quota_full(folder: Path) -> bool:
    """Whether the tmpfs on `folder` has (nearly) no byte or file left."""
    if not os.path.ismount(folder):
        return False
    try:
        fs = os.statvfs(folder)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < _FULL_BYTES or (fs.f_files and fs.f_favail < 16)
