"""A seccomp filter beside Landlock: no IP sockets at all in the worker.

Landlock (ABI 4-7) refuses TCP connect and bind but not UDP, raw or ICMP sockets, so a
worker could still talk to a helper over UDP. This filter makes socket(2) fail with
EACCES for AF_INET and AF_INET6 (UNIX sockets and socket pairs stay: the pipe to the
judge is one, and drivers may use them), and refuses io_uring, whose socket operations
would bypass the filter. Built in the parent, installed in the child after
PR_SET_NO_NEW_PRIVS (which Landlock sets first).

Installed with SECCOMP_FILTER_FLAG_SPEC_ALLOW by default: kernels booted with
`spec_store_bypass_disable=seccomp` or `spectre_v2_user=seccomp` (the x86 default before
Linux 5.16, still chosen by some distributions) otherwise turn on speculative-store-bypass
and indirect-branch mitigations for every filtered process, which slows the submission's
own host code against the public evaluators' unfiltered process. The filter's purpose is
the socket rule, not those mitigations; `NoIpSockets(speculation_mitigations=True)`
keeps the kernel's choice.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_SET_MODE_FILTER, _FLAG_SPEC_ALLOW = 1, 1 << 2
_SECCOMP_NR = {"x86_64": 317, "aarch64": 277}  # seccomp(2)
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_AF_INET, _AF_INET6 = 2, 10
# (audit arch, socket, io_uring_setup) per machine.
_ARCH = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
_X32_BIT = 0x40000000  # x86_64's x32 calls: another table, never used by the worker


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# The kernel's seccomp-tied speculation mitigations stay off for the worker: they slow its
# host code against the public evaluators' unfiltered process.
SPECULATION_MITIGATIONS = False


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


class NoIpSockets:
    """The filter, built where it can be (Linux on x86_64 or aarch64)."""

    def __init__(self, speculation_mitigations: bool = SPECULATION_MITIGATIONS) -> None:
        self.speculation_mitigations = speculation_mitigations
        arch, socket_nr, uring_nr = _ARCH[platform.machine()]
        deny = _RET_ERRNO | errno.EACCES
        program = [
            _op(_LD_W_ABS, 4),                    # 0 arch
            _op(_JEQ_K, arch, 1, 0),              # 1 ours? skip the next
            _op(_RET_K, deny),                    # 2 another arch's calls: refused
            _op(_LD_W_ABS, 0),                    # 3 syscall number
            _op(_JGE_K, _X32_BIT, 7, 0),          # 4 x32 -> deny (12)
            _op(_JEQ_K, uring_nr, 6, 0),          # 5 io_uring_setup -> deny
            _op(_JEQ_K, socket_nr, 0, 4),         # 6 socket? else allow (11)
            _op(_LD_W_ABS, 16),                   # 7 its domain (low half of args[0])
            _op(_JEQ_K, _AF_INET, 3, 0),          # 8 -> deny
            _op(_JEQ_K, _AF_INET6, 2, 0),         # 9 -> deny
            _op(_RET_K, _RET_ALLOW),              # 10
            _op(_RET_K, _RET_ALLOW),              # 11
            _op(_RET_K, deny),                    # 12
        ]
        self._buffer = ctypes.create_string_buffer(b"".join(program))
        self._prog = _Prog(len(program), ctypes.addressof(self._buffer))
        self._libc = ctypes.CDLL(None, use_errno=True)

    def __reduce__(self) -> tuple:
        # Sent to the judge's zygote (zygote.py), which builds the filter's buffer anew.
        return (type(self), (self.speculation_mitigations,))

    @classmethod
    def available(cls) -> bool:
        return platform.system() == "Linux" and platform.machine() in _ARCH

    def install(self) -> None:
        """In the child, after PR_SET_NO_NEW_PRIVS: the filter holds from here on."""
        if not self.speculation_mitigations:
            if self._libc.syscall(_SECCOMP_NR[platform.machine()], _SECCOMP_SET_MODE_FILTER,
                                  _FLAG_SPEC_ALLOW, ctypes.byref(self._prog)) == 0:
                return
            if ctypes.get_errno() not in (errno.EINVAL, errno.ENOSYS):  # flag unknown before 4.17
                raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
        if self._libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(self._prog),
                            0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
