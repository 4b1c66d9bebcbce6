"""The folders a run makes for itself, named for the process that made them, and the sweep
of those whose process is gone.

A judge killed outright (SIGKILL, the kernel's out-of-memory killer, a CI runner's hard
stop) cannot remove what it made: its worker's scratch folder, the run's folder and its
shared-memory folder (in /dev/shm, that is memory). Each is named
`harness-KIND-NS-PID-...` for the process that made it (NS: its PID namespace, so that a
process of another container sharing the folder is never taken for a dead one); the next
evaluation under the same user removes those whose maker no longer exists. A live run's
folders are never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from harness import bytecode

_NAME = re.compile(r"harness-(?:worker|run|shm|foreign|ncu)-(\d+)-(\d+)-")
_swept = False


def _namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:  # no /proc: the folder names still work, the sweep matches nothing
        return 0


def make_folder(kind: str, parent: str | Path | None = None) -> Path:
    """A new folder `harness-KIND-NS-PID-...` (in the temporary folder, or `parent`)."""
    return Path(tempfile.mkdtemp(prefix=f"harness-{kind}-{_namespace()}-{os.getpid()}-",
                                 dir=parent))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process by that number
        return True
    return True


def sweep(places: list[Path] | None = None) -> list[Path]:
    """Remove this user's run folders whose maker, in this PID namespace, is gone (from
    the temporary folder and /dev/shm, or `places`); the folders removed."""
    places = places if places is not None else [Path(tempfile.gettempdir()), Path("/dev/shm")]
    ours, uid = _namespace(), os.getuid()
    removed = []
    for place in places:
        try:
            candidates = list(place.glob("harness-*"))
        except OSError:
            continue
        for path in candidates:
            match = _NAME.match(path.name)
            if match is None or int(match.group(1)) != ours or ours == 0:
                continue
            try:
                info = path.lstat()
            except OSError:
                continue
            if info.st_uid != uid or not stat.S_ISDIR(info.st_mode) or _alive(int(match.group(2))):
                continue
            shutil.rmtree(path, ignore_errors=True)
            bytecode.forget(path)
            removed.append(path)
    return removed


def sweep_once() -> list[Path]:
    """`sweep`, the first time a process asks (each evaluation asks)."""
    global _swept
    if _swept:
        return []
    _swept = True
    return sweep()
