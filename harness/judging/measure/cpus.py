"""Which CPUs the judge and the worker run on.

On GPU runs, by default, the worker's calling thread keeps one CPU of its own through the
timed calls (`wants_hold`, `hold_plan`, `Hold`): from the submission's second sample on,
the thread that runs it is held on the first CPU of the last physical core of the
evaluation's CPUs, and every other thread, the worker's and the judge's, is kept on the
other cores (a hyperthread sibling of the held CPU stays idle). The public contests'
evaluators (pmpp_v2's `eval.py`, the nvfp4 and mxfp4 contests') run their benchmark
repeats back to back in one process that never sleeps between them (CUDA synchronisation
spins), so the scheduler leaves it on one CPU with warm caches; the worker, which waits for
the judge between samples, was found on a different CPU in almost every sample, with host
work per call varying 60-131 µs by CPU and sample. Holding it read nvfp4
triton_hopper's host-bound case at the public evaluator's level. Only threads
are placed: the worker's other threads (CUDA's, OpenMP's) keep every other core, unlike
`worker.pin_cpus`, which confines the whole worker to one core. Not held: the submission's
import and its first sample (a build started there would run its compilers on the one
CPU). The worker places its threads after its reply to each sample or rehearsal, outside
the judge's round trip (`Worker._hold_next`). Still sharing the held CPU: threads the
calling thread starts inside a call (until the sample's reply) and processes it starts
(compilers of a later lazy build). Evaluations at once on one machine get shares of the
cores (batch slots, `harness.frontends.backends.shares_cores`), or, sharing the CPUs (two
`submit`s), claim their held cores machine-wide (`CoreClaims`: a lock file per core): each
holds a core no other holds, and keeps its other threads off the cores held when it
starts, while a core is left them (an evaluation that started first does not move its
threads off a later one's held core); with every core claimed, the last one is shared as
before. A task turns
holding off with `timing.hold_cpu: false`, an organiser with `worker.hold_cpu`.

With `worker.pin_cpus` (off by default: 2.2x slower on a host-bound case) the
worker process gets a physical core of its own and the judge (and everything it starts)
the others, so that a judge polling on a hyperthread sibling cannot slow its launches.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

SYSFS = Path("/sys/devices/system/cpu")
# Where held cores are claimed (`CoreClaims`): one folder for every user of the machine.
CLAIMS = Path(tempfile.gettempdir()) / "kernel-harness-held-cores"


@dataclass(frozen=True)
class CpuPlan:
    """The logical CPUs of the judge and of the worker (disjoint physical cores)."""

    judge: frozenset[int]
    worker: frozenset[int]

    def to_dict(self) -> dict[str, list[int]]:
        return {"judge": sorted(self.judge), "worker": sorted(self.worker)}


def cores(allowed: set[int] | frozenset[int], sysfs: Path | None = None) -> list[list[int]]:
    """`allowed` grouped by physical core (hyperthread siblings together), in CPU order.

    A CPU whose topology cannot be read counts as a core of its own."""
    groups: dict[tuple[str, str], list[int]] = {}
    for cpu in sorted(allowed):
        groups.setdefault(_topology(cpu, sysfs or SYSFS), []).append(cpu)
    return sorted(groups.values())


def _topology(cpu: int, sysfs: Path) -> tuple[str, str]:
    """(package, core id) of a logical CPU; ("?", the CPU) where it cannot be read."""
    topology = sysfs / f"cpu{cpu}" / "topology"
    try:
        return ((topology / "physical_package_id").read_text().strip(),
                (topology / "core_id").read_text().strip())
    except OSError:
        return ("?", str(cpu))


def plan(allowed: set[int] | frozenset[int], sysfs: Path | None = None) -> CpuPlan | None:
    """The worker on the last physical core of `allowed`, the judge on the rest.

    None when there are fewer than two physical cores: nothing to separate."""
    groups = cores(allowed, sysfs)
    if len(groups) < 2:
        return None
    worker = frozenset(groups[-1])
    return CpuPlan(judge=frozenset(allowed) - worker, worker=worker)


def share(allowed: set[int] | frozenset[int], index: int, count: int,
          sysfs: Path | None = None) -> set[int]:
    """The `index`-th of `count` equal shares of the physical cores in `allowed` (one per
    evaluation running at once); all of `allowed` when a share would be under two cores."""
    groups = cores(allowed, sysfs)
    per = len(groups) // max(count, 1)
    if per < 2:
        return set(allowed)
    return {cpu for group in groups[index * per:(index + 1) * per] for cpu in group}


def slot_cpus(index: int, count: int) -> str:
    """The CPUs (comma-separated) of evaluation slot `index` of `count` running at once on
    this machine; empty where the OS cannot say."""
    allowed = allowed_now()
    if not allowed:
        return ""
    return ",".join(str(c) for c in sorted(share(allowed, index % max(count, 1), count)))


def parse(text: str) -> set[int]:
    """The CPUs of a `slot_cpus` string."""
    return {int(c) for c in text.split(",") if c.strip()}


def allowed_now() -> set[int] | None:
    """This process's CPUs, or None where the OS cannot say (not Linux)."""
    getter = getattr(os, "sched_getaffinity", None)
    return set(getter(0)) if getter else None


def pin(cpus: set[int] | frozenset[int]) -> None:
    """Restrict this process (and what it starts later) to `cpus`."""
    os.sched_setaffinity(0, cpus)


def this_thread() -> int:
    """The kernel's id of the calling thread."""
    return threading.get_native_id()


def threads() -> list[int]:
    """The kernel's ids of this process's threads (empty where /proc cannot say)."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return []


def _place(tid: int, cpus: set[int] | frozenset[int]) -> None:
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError:  # the thread ended meanwhile, or the CPU set is refused
        pass


class Hold:
    """Holds the thread that calls `apply` on one CPU and keeps this process's other
    threads on `others` (the evaluation's CPUs less the held CPU's physical core)."""

    def __init__(self, cpu: int, others: set[int] | frozenset[int]) -> None:
        self.cpu = cpu
        self.others = set(others) - {cpu}
        self.placed: set[int] = set()

    def apply(self) -> None:
        """Place the calling thread (again, should anything have moved it) and every
        thread not placed before: threads the calling thread starts inherit its one CPU,
        so call again after code that may start them. Cheap when nothing changed: one
        affinity read and one listing of /proc/self/task."""
        me = this_thread()
        if os.sched_getaffinity(0) != {self.cpu}:
            _place(0, {self.cpu})
        if not self.others:
            return
        now = set(threads())
        new = now - self.placed
        self.placed = (self.placed & now) | new | {me}
        for tid in new - {me}:
            _place(tid, self.others)


def place_all(cpus: set[int] | frozenset[int]) -> None:
    """Every thread of this process (and those its threads start later) on `cpus`."""
    if not cpus:
        return
    for tid in threads():
        _place(tid, cpus)
    _place(0, cpus)  # the calling thread, also where /proc cannot list threads


def wants_hold(setting: bool | None, task_timing: dict, device_kind: str) -> bool:
    """Whether the worker's calling thread is held: `worker.hold_cpu` where it is set,
    else the task's `timing.hold_cpu` (true where the task does not say); never off the
    GPU, where the submission's own CPU kernels need every core."""
    if device_kind != "cuda":
        return False
    if setting is not None:
        return bool(setting)
    return bool(task_timing.get("hold_cpu", True))


class CoreClaims:
    """This evaluation's claims on the physical cores its worker's thread is held on, and
    what it sees of other evaluations' on this machine: an exclusive `flock` on a file per
    core (named for the core's package and id) in a folder every user can write (sticky,
    as /tmp; `CLAIMS` unless given). A claim lasts until `release`, or until its process
    ends (the kernel drops the lock with the file). Claims never fail an evaluation: where
    the folder cannot be used nothing is claimed and every core looks free (holding then
    works as without claims); a claim file that cannot be used (not a plain file, not
    readable) makes its core look held. The folder and its files are opened without
    following links, the files without blocking (a FIFO put there cannot stall a judge)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or CLAIMS
        self.held: list[int] = []  # the open files of this evaluation's claims
        self._dir: int | None = None  # the folder, opened once

    def _folder(self) -> int | None:
        """The claims folder, opened (made if missing, sticky and writable by every user);
        None where it cannot be used."""
        if self._dir is not None:
            return self._dir
        try:
            try:
                os.mkdir(self.folder, 0o700)
            except FileExistsError:
                pass
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != 0o1777:
                os.fchmod(fd, 0o1777)  # through the descriptor: never a link's target
            elif st.st_uid != os.getuid() and stat.S_IMODE(st.st_mode) & 0o1002 != 0o1002:
                raise OSError("the claims folder is another user's, not sticky and open")
        except OSError:
            os.close(fd)
            return None
        self._dir = fd
        return fd

    def _open(self, folder: int, name: str) -> int | None:
        """`name`'s claim file in `folder`, opened (made if missing, readable by every
        user whatever this process's umask) and checked to be a plain file; None where
        it cannot be."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = None
        for create in (0, os.O_CREAT | os.O_EXCL, 0):  # open, else make, else open (a race)
            try:
                fd = os.open(name, flags | create, 0o644, dir_fd=folder)
                break
            except (FileNotFoundError, FileExistsError):
                continue
            except OSError:
                return None
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{name} is not a plain file")
            if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != 0o644:
                os.fchmod(fd, 0o644)
        except OSError:
            os.close(fd)
            return None
        return fd

    def _lock(self, name: str) -> int | None:
        """`name`'s claim file, opened and locked: its descriptor; None where another
        evaluation holds the core (or its file cannot be used); -1 where the folder
        cannot be used."""
        folder = self._folder()
        if folder is None:
            return -1
        fd = self._open(folder, name)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by another evaluation (or a lock refused: as held)
            os.close(fd)
            return None
        return fd

    def take(self, name: str) -> bool:
        """Claim the core `name` unless another evaluation holds it (True where claims
        cannot be made at all: nothing to keep apart from)."""
        fd = self._lock(name)
        if fd is not None and fd >= 0:
            self.held.append(fd)
        return fd is not None

    def taken_elsewhere(self, name: str) -> bool:
        """Whether another evaluation holds the core `name` now (one this evaluation holds
        reads as taken too)."""
        fd = self._lock(name)
        if fd is not None and fd >= 0:
            fcntl.flock(fd, fcntl.LOCK_UN)  # a lock taken to look, dropped at once
            os.close(fd)
        return fd is None

    def release(self) -> None:
        """End this evaluation's claims (unlocked first: a child that inherited a file
        does not keep the claim)."""
        for fd in self.held:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self.held = []
        if self._dir is not None:
            os.close(self._dir)
            self._dir = None


def core_name(core: list[int], sysfs: Path | None = None) -> str:
    """A physical core's name on this machine, the same whatever CPUs a process may use:
    its package and core id, or its first CPU where the topology cannot be read."""
    package, core_id = _topology(min(core), sysfs or SYSFS)
    return f"cpu-{core_id}" if package == "?" else f"core-{package}-{core_id}"


def hold_plan(allowed: set[int] | frozenset[int] | None, sysfs: Path | None = None,
              claims: CoreClaims | None = None) -> tuple[int, frozenset[int]] | None:
    """The CPU a worker's calling thread is held on (the first of the last physical core
    of `allowed`) and the CPUs left to every other thread (the other cores: a hyperthread
    sibling of the held CPU stays idle, as the judge's polling there would slow it); None
    with fewer than two physical cores (nothing to keep apart) or where the OS cannot say.

    With `claims`, the last core that no other evaluation on the machine holds, claimed,
    and the other threads kept off the cores others hold now too (while a core is left
    them); where every core is held, the last one, shared as without claims."""
    groups = cores(allowed or set(), sysfs)
    if len(groups) < 2:
        return None
    core = groups[-1]  # the same last core that pin_cpus gives a worker
    if claims is not None:
        core = next((g for g in reversed(groups) if claims.take(core_name(g, sysfs))), core)
    others = set(allowed or set()) - set(core)
    if claims is not None:
        busy = {c for g in groups if g is not core
                and claims.taken_elsewhere(core_name(g, sysfs)) for c in g}
        others = (others - busy) or others
    return min(core), frozenset(others)
