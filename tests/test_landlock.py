"""Landlock (harness/judging/sandbox/landlock.py): the kernel's ABI and what a report says
of it, the rights handled per ABI, and children under a ruleset: forked (they cannot read
or write outside, connect to a listener, or reach their parent) and exec'd as the worker
is (a fresh interpreter that cannot read outside its allowed paths)."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest
from conftest import exec_child, in_child

from harness.judging.sandbox import landlock
from harness.judging.sandbox.containment import SYSTEM_READ, build_policy, python_paths

needs_landlock = pytest.mark.skipif(landlock.abi_version() < 1, reason="no Landlock here")
needs_abi = {n: pytest.mark.skipif(landlock.abi_version() < n, reason=f"needs Landlock ABI {n}")
             for n in (4, 6)}


def confined(ruleset: landlock.Ruleset):
    """What a child runs to enter `ruleset` (capabilities kept: the test may run as root)."""
    return lambda: ruleset.restrict_self(drop_capabilities=False)


def test_abi_and_reports_by_version():
    assert landlock.abi_version() >= 0
    assert landlock.probe(0).level == "partial" and "landlock" in landlock.probe(0).missing[0]
    three = landlock.probe(3)
    assert three.level == "partial" and three.enforced == ["filesystem", "truncate"]
    assert [m.split()[0] for m in three.missing] == ["tcp", "scopes"]
    assert landlock.probe(7).to_dict() == {"level": "full", "abi": 7, "missing": [],
                                           "enforced": ["filesystem", "truncate", "tcp", "scopes"]}
    assert "missing: tcp" in three.summary
    assert landlock.off().level == "off"




@needs_landlock
def test_a_child_reads_and_writes_only_what_it_is_allowed(tmp_path):
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    ruleset = landlock.Ruleset.build(read=python_paths(), write=[scratch])
    try:
        assert in_child(confined(ruleset), lambda: (scratch / "ok.txt").write_text("ok")) == 0
        assert in_child(confined(ruleset), lambda: (outside / "secret.txt").read_text()) == errno.EACCES
        assert in_child(confined(ruleset), lambda: (outside / "new.txt").write_text("x")) == errno.EACCES
        assert in_child(confined(ruleset), lambda: os.listdir(outside)) == errno.EACCES
        # no device nodes, even for root: a block device would read the disk around the rules
        assert in_child(confined(ruleset), lambda: os.mknod(scratch / "disk", 0o600 | 0o060000,
                                                   os.makedev(8, 0))) in (errno.EACCES, errno.EPERM)
    finally:
        ruleset.close()
    assert (scratch / "ok.txt").read_text() == "ok" and not (outside / "new.txt").exists()


@needs_abi[4]
def test_a_child_cannot_connect_or_bind_tcp(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    ruleset = landlock.Ruleset.build(read=python_paths(), write=[tmp_path])
    try:
        assert in_child(confined(ruleset), lambda: socket.create_connection(("127.0.0.1", port), 2)) \
            == errno.EACCES
        assert in_child(confined(ruleset), lambda: socket.socket().bind(("127.0.0.1", 0))) == errno.EACCES
    finally:
        ruleset.close()
        server.close()


@needs_abi[6]
def test_a_child_cannot_read_its_parents_memory_or_signal_it(tmp_path):
    """Landlock's own rule (ptrace attach, signal scope), with all of /proc readable.
    It does not cover environ and maps (a ptrace *read* check on Linux 6.18): the
    worker's policy keeps /proc/<other pid> out instead (next test)."""
    parent = os.getpid()
    ruleset = landlock.Ruleset.build(read=python_paths() + [Path("/proc")], write=[tmp_path])
    try:
        assert in_child(confined(ruleset), lambda: open(f"/proc/{parent}/mem", "rb").read(1)) \
            == errno.EACCES
        assert in_child(confined(ruleset), lambda: os.kill(parent, 0)) == errno.EPERM
    finally:
        ruleset.close()


@needs_landlock
def test_the_worker_policy_keeps_other_processes_proc_entries_out(tmp_path):
    parent = os.getpid()
    policy = build_policy(tmp_path, [], [], "cpu", [])
    ruleset = landlock.Ruleset.build(policy.read, policy.write, policy.devices)
    try:
        for entry in ("environ", "maps", "mem", "cmdline", "fd"):
            assert in_child(confined(ruleset), lambda e=entry: os.stat(f"/proc/{parent}/{e}")
                             and open(f"/proc/{parent}/{e}", "rb")) == errno.EACCES, entry
        assert in_child(confined(ruleset), lambda: Path("/proc/self/status").read_text()) == 0
        assert in_child(confined(ruleset), lambda: Path("/proc/cpuinfo").read_text()) == 0
        assert in_child(confined(ruleset), lambda: open("/proc/kcore", "rb")) in (errno.EACCES,
                                                                         errno.ENOENT)
    finally:
        ruleset.close()


def test_the_rights_handled_grow_with_the_abi():
    one = landlock._handled_fs(1)
    assert one == (1 << 13) - 1 and not one & (landlock.REFER | landlock.TRUNCATE)
    assert landlock._handled_fs(2) == one | landlock.REFER
    assert landlock._handled_fs(3) == one | landlock.REFER | landlock.TRUNCATE
    assert landlock._handled_fs(5) & landlock.IOCTL_DEV
    assert not landlock.WRITE & (landlock.MAKE_CHAR | landlock.MAKE_BLOCK)  # no device nodes


def test_the_reports_say_what_is_missing():
    assert landlock.off().summary.startswith("containment: off")
    assert landlock.probe(7).summary == "containment: full"
    assert landlock.probe(5).summary == ("containment: partial (missing: scopes "
                                         "(Landlock ABI 6; the kernel has 5))")


def test_no_ruleset_where_the_kernel_has_no_landlock(monkeypatch):
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    assert landlock.Ruleset.build(read=python_paths(), write=[]) is None


@needs_landlock
def test_a_path_that_does_not_exist_gets_no_rule(tmp_path):
    ruleset = landlock.Ruleset.build(read=[tmp_path / "nowhere"], write=[])
    try:
        assert ruleset.allow(tmp_path / "nowhere", landlock.READ) is False
        (tmp_path / "file").write_text("x")  # a file keeps the rights a file can hold
        assert ruleset.allow(tmp_path / "file", landlock.WRITE) is True
    finally:
        ruleset.close()


READ_BOTH = """
for name in ("inside", "outside"):
    try:
        open(BASE + "/" + name + "/data.txt").read()
        print(name, "read")
    except PermissionError:
        print(name, "refused")
"""


@needs_landlock
def test_an_execd_interpreter_reads_only_its_allowed_paths(tmp_path):
    """As the worker starts: the ruleset applied between fork and exec holds in the fresh
    interpreter, which reads what the rules name and nothing else."""
    for name in ("inside", "outside"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.txt").write_text(name)
    read = [Path(p) for p in SYSTEM_READ] + python_paths() + [tmp_path / "inside"]
    ruleset = landlock.Ruleset.build(read=read, write=[])
    try:
        done = exec_child(READ_BOTH.replace("BASE", repr(str(tmp_path))), confined(ruleset))
    finally:
        ruleset.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["inside read", "outside refused"]
