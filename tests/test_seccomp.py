"""The seccomp filter (harness/judging/sandbox/seccomp.py): no IP sockets and no io_uring
in a filtered process, UNIX sockets kept; in a forked child and in a fresh interpreter
exec'd under it as the worker is; the kernel's speculation settings left as they are
unless asked."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest
from conftest import exec_child, in_child

from harness.judging.sandbox import landlock
from harness.judging.sandbox.seccomp import NoIpSockets

needs_seccomp = pytest.mark.skipif(not NoIpSockets.available(), reason="no seccomp filter here")


def no_ip(mitigations: bool = False):
    """What a child runs to install the filter (after no_new_privs, as the worker does)."""
    def install() -> None:
        landlock.no_new_privs()
        NoIpSockets(speculation_mitigations=mitigations).install()

    return install


@needs_seccomp
def test_the_seccomp_filter_refuses_ip_sockets_only(tmp_path):
    def child(action) -> int:
        return in_child(no_ip(), action)

    assert child(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) == errno.EACCES
    assert child(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM)) == errno.EACCES
    assert child(lambda: socket.socketpair()) == 0
    assert child(lambda: (tmp_path / "f").write_text("x")) == 0


def _speculation() -> list[str]:
    lines = Path("/proc/self/status").read_text().splitlines()
    return [line for line in lines if line.startswith(("Speculation", "Seccomp:"))]


@needs_seccomp
@pytest.mark.parametrize("mitigations", [False, True])
def test_the_filter_leaves_speculation_as_the_kernel_has_it_unless_asked(tmp_path, mitigations):
    """Both ways of installing the filter hold; by default the child's speculation state
    is its parent's (kernels that tie mitigations to seccomp would slow its host code)."""
    out, filtered = tmp_path / "status", no_ip(mitigations)

    def record() -> None:
        out.write_text("\n".join(_speculation()))

    assert in_child(filtered, record) == 0
    lines = out.read_text().splitlines()
    assert "Seccomp:\t2" in lines
    assert in_child(filtered, lambda: socket.socket(socket.AF_INET)) == errno.EACCES
    if not mitigations:
        parent = [line for line in _speculation() if not line.startswith("Seccomp:")]
        assert [line for line in lines if not line.startswith("Seccomp:")] == parent


TRY_SOCKETS = """
import ctypes, errno, socket
for name, family, kind in (("udp", socket.AF_INET, socket.SOCK_DGRAM),
                           ("tcp6", socket.AF_INET6, socket.SOCK_STREAM),
                           ("unix", socket.AF_UNIX, socket.SOCK_STREAM)):
    try:
        socket.socket(family, kind).close()
        print(name, "opened")
    except PermissionError:
        print(name, "refused")
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 1, params)  # io_uring_setup
print("io_uring", "refused" if fd < 0 and ctypes.get_errno() == errno.EACCES else "not refused")
"""


@needs_seccomp
def test_an_execd_interpreter_opens_no_ip_socket_and_no_io_uring():
    """As the worker starts: the filter installed between fork and exec holds in the
    fresh interpreter: UDP and IPv6 sockets refused, a UNIX socket opened, io_uring
    (whose socket operations would pass the filter by) refused."""
    done = exec_child(TRY_SOCKETS, no_ip())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["udp refused", "tcp6 refused", "unix opened",
                                           "io_uring refused"]
