"""The folders a run makes for itself, named for the process that made them, and the sweep
of those whose process is gone.

A judge killed outright (SIGKILL, the kernel's out-of-memory killer, a CI runner's hard
stop) cannot remove what it made: its worker's scratch folder, the run's folder and its
shared-memory folder (in /dev/shm, that is memory); a contest server's slot killed so
leaves its job's folder (the uploaded file). Each is named
`harness-KIND-HOST-PID-...` for the process that made it. HOST is a key of the machine's
boot and the maker's PID namespace: a process of another machine (a temporary folder on
shared storage) or of another container is never taken for a dead one here, since its
key differs. The first evaluation of each later process under the same user, on the same
machine and namespace, with the same temporary folder, removes the folders whose maker no
longer exists, unmounting a scratch quota's tmpfs first, and kills what its workers left
running (their user is named for the maker: bounds.py); so does each server slot as it
starts. Folders named otherwise (older runs') are never touched.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from harness import bytecode
from harness.judging.sandbox.bounds import MAX_RANKS, kill_user, unmount_quota, worker_uid
from harness.judging.sandbox.procfs import stat_fields

KINDS = ("worker", "run", "shm", "foreign", "ncu", "batch", "job")
_NAME = re.compile(rf"harness-(?:{'|'.join(KINDS)})-([0-9a-f]{{12}})-(\d{{1,10}})-")
_swept = False


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


@functools.cache
def host_key() -> str:
    """12 hex digits naming this machine's boot and this process's PID namespace (read
    once: neither changes while the process runs)."""
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    boot = _read("/proc/sys/kernel/random/boot_id")
    return hashlib.sha256(f"{boot}/{namespace}".encode()).hexdigest()[:12]


def prefix(kind: str) -> str:
    """The name's beginning for a folder of `kind` made by this process."""
    return f"harness-{kind}-{host_key()}-{os.getpid()}-"


def make_folder(kind: str, parent: str | Path | None = None) -> Path:
    """A new folder `harness-KIND-HOST-PID-...` (in the temporary folder, or `parent`)."""
    return Path(tempfile.mkdtemp(prefix=prefix(kind), dir=parent))


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (one killed whose parent has not
    reaped it, as under a container's init that reaps nothing, can no longer use its
    folders)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):  # another user's; no such number
        return True
    return stat_fields(pid)[:1] not in (["Z"], ["X"])


def _remove(path: Path) -> bool:
    """Remove a folder (a scratch quota's tmpfs unmounted first), also where its maker's
    worker took its own rights away from a folder inside (chmod); whether it is gone."""
    unmount_quota(path)
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        for folder, dirs, _ in os.walk(path):
            for name in dirs:
                try:
                    os.chmod(os.path.join(folder, name), 0o700, follow_symlinks=False)
                except (OSError, NotImplementedError):
                    pass
        shutil.rmtree(path, ignore_errors=True)
    return not path.exists()


def sweep(places: list[Path] | None = None) -> list[Path]:
    """Remove this user's run folders whose maker, on this machine and in this PID
    namespace, is gone (from the temporary folder and /dev/shm, or `places`); the folders
    removed."""
    places = places if places is not None else [Path(tempfile.gettempdir()), Path("/dev/shm")]
    ours, uid = host_key(), os.getuid()
    removed = []
    for place in places:
        try:
            candidates = list(place.glob("harness-*"))
        except OSError:
            continue
        for path in candidates:
            match = _NAME.match(path.name)
            if match is None or match.group(1) != ours:
                continue
            try:
                info = path.lstat()  # a link named like a run folder is no folder: kept
            except OSError:
                continue
            maker = int(match.group(2))
            if info.st_uid != uid or not stat.S_ISDIR(info.st_mode) or alive(maker):
                continue
            # its workers: every rank's, where it judged a multi-GPU case
            kill_user(frozenset(worker_uid(maker, rank) for rank in range(MAX_RANKS)))
            if _remove(path):
                bytecode.forget(path)
                removed.append(path)
    return removed


def sweep_once() -> list[Path]:
    """`sweep`, the first time a process asks (each evaluation asks); never fails the
    evaluation that asks."""
    global _swept
    if _swept:
        return []
    _swept = True
    try:
        return sweep()
    except Exception:  # noqa: BLE001 - tidying: whatever it meets, the run goes on
        return []
