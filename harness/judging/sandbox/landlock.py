"""Landlock, from the standard library: a kernel-enforced allow-list for the worker.

Landlock (Linux 5.13+) lets an unprivileged process give up access to everything but a
list of paths, for itself and every process it starts; later ABIs add TCP bind/connect
(4) and scoping of signals and abstract UNIX sockets to the process's own domain (6). A
sandboxed process also cannot ptrace, or read /proc/PID/mem or environ of, a process
outside its domain (the judge).

The ruleset is built in the parent (`Ruleset.build`: it opens every path) and applied
in the child between fork and exec (`Ruleset.restrict_self`: two system calls and no
allocation, safe after a fork of a threaded process).
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.judging.sandbox.libc import LIBC as _LIBC

# System call numbers: the same on x86_64 and aarch64 (both use the generic table here).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP = 38, 24
_CAP_LAST_CAP_FILE = "/proc/sys/kernel/cap_last_cap"

# Filesystem rights, with the ABI that introduced each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: REFER, 3: TRUNCATE, 5: IOCTL_DEV}
# The only rights a rule on a file (not a folder) may carry.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
# Everything but device nodes: a worker running as root could otherwise make a block
# device of the disk in its scratch folder and read the disk around every rule.
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK
         | MAKE_FIFO | MAKE_SYM | REFER | TRUNCATE | IOCTL_DEV)
DEVICE = READ_FILE | WRITE_FILE | IOCTL_DEV

# What a worker needs from the kernel for `containment: full`, and the ABI giving it.
FEATURES = {
    "filesystem": 1,          # reads and writes limited to the allowed paths
    "truncate": 3,            # truncate(2) of a read-only file refused too
    "tcp": 4,                 # no TCP bind or connect
    "scopes": 6,              # no signal to, nor abstract socket of, the judge
}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]




def abi_version() -> int:
    """The kernel's Landlock ABI: 0 where it has none (or it is disabled at boot)."""
    if _LIBC is None or platform.system() != "Linux" or platform.machine() not in (
        "x86_64", "aarch64"
    ):
        return 0
    version = _LIBC.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


@dataclass
class Report:
    """What a sandbox enforces: `level` is full, partial (with what is missing) or off."""

    level: str
    abi: int
    enforced: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"level": self.level, "abi": self.abi, "enforced": list(self.enforced),
                "missing": list(self.missing)}

    @property
    def summary(self) -> str:
        """One line for a report: what the sandbox lacks."""
        if self.level == "off":
            return "containment: off (the worker can read and write whatever the harness can)"
        return f"containment: {self.level}" + (
            f" (missing: {', '.join(self.missing)})" if self.missing else "")


def probe(abi: int | None = None) -> Report:
    """What a Landlock sandbox would enforce on this kernel, without building one."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        return Report("partial", abi, [], ["landlock (the kernel has none: nothing is "
                                             "contained but the environment and limits)"])
    enforced = [name for name, need in FEATURES.items() if abi >= need]
    missing = [f"{name} (Landlock ABI {need}; the kernel has {abi})"
               for name, need in FEATURES.items() if abi < need]
    return Report("full" if not missing else "partial", abi, enforced, missing)


def off() -> Report:
    """The report of a worker run with the sandbox switched off."""
    return Report("off", abi_version(), [], ["sandbox switched off (worker.sandbox: off)"])


def _handled_fs(abi: int) -> int:
    rights = 0
    for since, bits in _FS_BY_ABI.items():
        if abi >= since:
            rights |= bits
    return rights


class Ruleset:
    """A Landlock ruleset built in the judge, applied by the worker's child process."""

    def __init__(self, fd: int, abi: int, report: Report) -> None:
        self.fd, self.abi, self.report = fd, abi, report
        self.last_cap = _last_cap()  # read now: the child should not open files for it

    @classmethod
    def build(cls, read: Iterable[Path], write: Iterable[Path],
              devices: Iterable[Path] = (), tcp: bool = False) -> Ruleset | None:
        """A ruleset allowing `read` (read and execute), `write` (everything but device
        nodes) and `devices` (read, write, ioctl), and no TCP bind or connect unless `tcp`;
        None where the kernel has no Landlock. Paths that do not exist are skipped."""
        abi = abi_version()
        if abi < 1:
            return None
        handled = _handled_fs(abi)
        net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and not tcp else 0
        attr = _RulesetAttr(handled, net,
                            (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
        size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16 if abi >= 4 else 8
        fd = _LIBC.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
        ruleset = cls(fd, abi, probe(abi))
        try:
            for paths, rights in ((read, READ), (write, WRITE), (devices, DEVICE)):
                for path in paths:
                    ruleset.allow(path, rights & handled)
        except BaseException:
            ruleset.close()
            raise
        return ruleset

    def allow(self, path: Path | str, rights: int) -> bool:
        """Add a rule for `path` (False if it does not exist); a file keeps file rights."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not os.path.isdir(f"/proc/self/fd/{fd}"):
                rights &= _FILE_RIGHTS
            rule = _PathBeneathAttr(rights & _handled_fs(self.abi), fd)
            if _LIBC.syscall(_SYS_ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(rule),
                             ctypes.c_uint32(0)) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"landlock_add_rule({path}): {os.strerror(err)}")
        finally:
            os.close(fd)
        return True

    def restrict_self(self, own_proc: bool = True, drop_capabilities: bool = True) -> None:
        """In the child (after fork, before exec): enforce the ruleset on this process
        and all it starts. `own_proc` allows reading /proc/<this pid> (only the child
        knows its pid). As root, first empty the capability bounding set, so that the
        exec'd worker holds no capability (no raw sockets, /proc/kcore, module loading)."""
        if own_proc:
            # Its own folder only (/proc/self resolves to it here). Writable: the CUDA
            # driver writes there when it starts (measured on the H200: read-only, CUDA
            # fails with "Error 304: OS call failed"); a process may change only itself.
            self.allow("/proc/self", READ | WRITE)
        if drop_capabilities and os.geteuid() == 0:
            for cap in range(self.last_cap + 1):
                _LIBC.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        no_new_privs()
        if _LIBC.syscall(_SYS_RESTRICT_SELF, self.fd, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def no_new_privs() -> None:
    """No exec may gain privileges (setuid, file capabilities): required by Landlock and
    seccomp filters alike."""
    if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def _last_cap() -> int:
    try:
        return int(Path(_CAP_LAST_CAP_FILE).read_text())
    except (OSError, ValueError):
        return 40
