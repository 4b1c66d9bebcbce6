"""A network of its own for one multi-GPU case's ranks: a network namespace that holds
only loopback.

The ranks of a submission talk over a process group (gloo's TCP on the CPU, NCCL's
bootstrap on GPUs), so their workers need IP sockets, which every other worker is refused
(seccomp.py). Joined to a namespace of their own, they reach each other on 127.0.0.1 and
nothing else: no other interface exists there, and nothing outside, the judge's own rank
processes included, can reach a port opened inside. `RankNetwork` starts the process that
holds the namespace (it lives as long as the case, and dies with the judge); a worker
joins it between fork and exec (`join`, before it drops the privileges that setns needs).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

from harness.judging.sandbox.libc import LIBC
from harness.judging.sandbox.sandbox import die_with_parent

CLONE_NEWNET = 0x40000000
START_SECONDS = 10.0

# The holder: a new network namespace, its loopback brought up (SIOCGIFFLAGS, then
# SIOCSIFFLAGS with IFF_UP), a line to say so, then nothing until it is killed.
_HOLDER = """
import ctypes, fcntl, os, signal, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x40000000) != 0:
    sys.stdout.write("unshare: " + os.strerror(ctypes.get_errno()) + "\\n")
    sys.exit(1)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(sock, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
fcntl.ioctl(sock, 0x8914, struct.pack("16sH", b"lo", flags | 1))
sock.close()
sys.stdout.write("ready\\n")
sys.stdout.flush()
while True:
    signal.pause()
"""


class NetworkError(RuntimeError):
    """The namespace could not be made (no privilege to, or no kernel support)."""


class RankNetwork:
    """The process holding one case's network namespace; `path` is the namespace's file,
    which `join` enters. Use it in a `with` block: leaving it ends the holder (the
    namespace goes once its last member is gone)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> RankNetwork:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        parent = os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-E", "-c", _HOLDER], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lambda: die_with_parent(parent))
        line = self.proc.stdout.readline().decode(errors="replace").strip()
        if line != "ready":
            self.close()
            raise NetworkError(f"no network namespace for the ranks: {line or 'the holder ended'}")

    @property
    def path(self) -> Path:
        """The namespace's file (/proc/PID/ns/net of its holder)."""
        if self.proc is None:
            raise NetworkError("the network is not started")
        return Path(f"/proc/{self.proc.pid}/ns/net")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


def join(path: str | Path) -> None:
    """Enter the network namespace at `path` (between fork and exec, while the process may
    still: it needs CAP_SYS_ADMIN over the namespace)."""
    if LIBC is None:
        raise NetworkError("no C library to call setns")
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if LIBC.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise NetworkError(f"setns into {path}: {os.strerror(err)}")
    finally:
        os.close(fd)
