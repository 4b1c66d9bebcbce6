"""harness/judging/ranks/: the judge's own rank processes for a multi-GPU task, on the CPU
(gloo on loopback), with the small all-gather task, tasks/all_gather."""

from __future__ import annotations

import shutil
import time

import pytest
import torch
from conftest import ROOT

from harness.judging.ranks.group import RankError, RankGroup
from harness.loading.task_folder import load_task

pytestmark = pytest.mark.slow  # each rank is a process that imports torch

TASK = ROOT / "tasks" / "all_gather"


def staged(tmp_path, reference: str | None = None):
    folder = tmp_path / "task"
    shutil.copytree(TASK, folder)
    if reference is not None:
        (folder / "reference.py").write_text(reference)
    task = load_task(str(folder))
    run = tmp_path / "run"
    run.mkdir()
    return task.stage(run / "judge"), run


def own_draw(rank: int, size: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed * 1000 + rank)
    return torch.randn(size, generator=gen)


def alive(group: RankGroup) -> list[int]:
    return [p.pid for p in group.procs if p.poll() is None]


@pytest.mark.parametrize("world", [2, 4])
def test_each_rank_makes_its_inputs_and_the_reference_checks_every_output(tmp_path, world):
    judge, run = staged(tmp_path)
    case = {"world_size": world, "size": 8, "seed": 5}
    with RankGroup(judge, world, "cpu", run) as group:
        inputs = group.generate(case, timeout=30)
        assert [torch.equal(x, own_draw(r, 8, 5)) for r, x in enumerate(inputs)] == [True] * world
        gathered = torch.cat(inputs)
        assert all(torch.equal(out, gathered) for out in group.reference(timeout=30))
        assert group.check([gathered.clone() for _ in range(world)], timeout=30) == \
            [(True, "")] * world
        wrong = [gathered.clone() for _ in range(world)]
        wrong[1][3] += 1
        verdicts = group.check(wrong, timeout=30)
        assert verdicts[1] == (False, "values differ at [3]")
        assert all(ok for r, (ok, _) in enumerate(verdicts) if r != 1)
        procs = list(group.procs)
    assert all(p.poll() is not None for p in procs)  # the group is gone with the block


FORKED_GROUP = """
import sys
from pathlib import Path

import torch

from harness.judging.ranks.group import RankGroup
from harness.judging.sandbox.forked import ForkedProcess

judge, run = Path(sys.argv[1]), Path(sys.argv[2])
with RankGroup(judge, 2, "cpu", run) as group:
    print("forked", all(isinstance(p, ForkedProcess) for p in group.procs))
    inputs = group.generate({"world_size": 2, "size": 8, "seed": 5}, timeout=60)
    print("checks", group.check([torch.cat(inputs)] * 2, timeout=60))
    procs = list(group.procs)
print("gone", all(p.poll() is not None for p in procs))
"""


def test_ranks_on_the_cpu_are_forks_of_a_judge_that_runs_one_thread(tmp_path):
    """No second import of torch per rank: forked from the judge, which has it (a judge
    of several threads starts them as new interpreters: a fork holds one thread)."""
    import subprocess
    import sys

    judge, run = staged(tmp_path)
    proc = subprocess.run([sys.executable, "-c", FORKED_GROUP, str(judge), str(run)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split("\n")[:3] == [
        "forked True", "checks [(True, ''), (True, '')]", "gone True"], proc.stdout


BROKEN_ON_RANK_1 = (TASK / "reference.py").read_text().replace(
    '    device = _device(rank)\n',
    '    device = _device(rank)\n    if rank == 1:\n        raise ValueError("no inputs for rank 1")\n')
HANGS_ON_RANK_1 = (TASK / "reference.py").read_text().replace(
    'def check_implementation(data: input_t, output: output_t):\n',
    'def check_implementation(data: input_t, output: output_t):\n'
    '    if dist.get_rank() == 1:\n        import time\n        time.sleep(600)\n')


def test_a_rank_that_fails_is_named_and_the_group_is_stopped(tmp_path):
    judge, run = staged(tmp_path, BROKEN_ON_RANK_1)
    group = RankGroup(judge, 2, "cpu", run)
    group.start()
    procs = list(group.procs)
    with pytest.raises(RankError, match="rank 1: failed to make its inputs: ValueError") as err:
        group.generate({"world_size": 2, "size": 8, "seed": 5}, timeout=30)
    assert err.value.rank == 1
    assert all(p.poll() is not None for p in procs) and group.procs == []


def test_a_rank_that_hangs_ends_at_the_limit_with_every_rank_gone(tmp_path):
    judge, run = staged(tmp_path, HANGS_ON_RANK_1)
    with RankGroup(judge, 2, "cpu", run) as group:
        procs = list(group.procs)
        inputs = group.generate({"world_size": 2, "size": 8, "seed": 5}, timeout=30)
        began = time.monotonic()
        with pytest.raises(RankError, match="rank 1: took longer than allowed to check") as err:
            group.check([torch.cat(inputs)] * 2, timeout=3)
        assert err.value.rank == 1 and time.monotonic() - began < 10
    assert all(p.poll() is not None for p in procs)


def test_a_rank_that_cannot_join_says_why(tmp_path):
    judge, run = staged(tmp_path, "raise ImportError('the reference is broken')\n")
    with pytest.raises(RankError, match="could not join the group: ImportError"):
        RankGroup(judge, 2, "cpu", run).start()


MEMBER = """
import socket, sys
print(sorted(name for _, name in socket.if_nameindex()), flush=True)
if sys.argv[1] == "serve":
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    print(server.getsockname()[1], flush=True)
    server.settimeout(20)
    conn, _ = server.accept()  # the first that reaches it: a member, never the outside
    conn.sendall(sys.argv[2].encode())
    conn.close()
else:
    with socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10) as conn:
        print(conn.recv(100).decode(), flush=True)
"""


def member(network, *args):
    import subprocess
    import sys

    from harness.judging.ranks.network import join

    return subprocess.Popen([sys.executable, "-c", MEMBER, *args], stdout=subprocess.PIPE,
                            text=True, preexec_fn=lambda: join(network.path))


def test_a_rank_network_holds_loopback_alone_and_only_its_members_reach_it(network):
    import secrets
    import socket

    token = secrets.token_hex(8)
    server = member(network, "serve", token)
    try:
        assert server.stdout.readline().strip() == "['lo']"
        port = server.stdout.readline().strip()
        try:  # from outside the namespace, the port is someone else's or no one's
            with socket.create_connection(("127.0.0.1", int(port)), timeout=2) as outside:
                outside.settimeout(2)
                assert token not in outside.recv(100).decode(errors="replace")
        except OSError:
            pass
        client = member(network, "connect", port)
        out, _ = client.communicate(timeout=30)
        assert out.split() == ["['lo']", token]
    finally:
        server.kill()  # it has ended where the test passed
        server.wait()


def test_sandboxed_ranks_reach_each_other_in_their_network_and_others_no_ip_at_all(tmp_path,
                                                                                  network):
    """Workers of one case's ranks are contained as any worker (Landlock, the process
    bound, no capabilities), with IP sockets allowed in their own network alone; a worker
    without one is refused any IP socket, as before."""
    import secrets
    import subprocess
    import sys

    from harness.judging.sandbox.sandbox import Folders, contain
    from harness.settings import Settings

    settings = Settings.load().worker
    token = secrets.token_hex(8)

    def sandboxed(network, *args):
        scratch = tmp_path / secrets.token_hex(4)
        scratch.mkdir()
        env, limits, report = contain(settings, "cpu", Folders(scratch),
                                      network=network.path if network else None)
        try:
            proc = subprocess.Popen([sys.executable, "-c", MEMBER, *args], cwd=scratch,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, preexec_fn=limits.apply)
        finally:
            limits.close()
        return proc, report

    server, report = sandboxed(network, "serve", token)
    try:
        assert server.stdout.readline().strip() == "['lo']", server.stderr.read()
        assert "IP sockets only in the ranks' own network, loopback alone" in report.enforced
        assert "tcp" not in report.enforced
        port = server.stdout.readline().strip()
        client, _ = sandboxed(network, "connect", port)
        out, err = client.communicate(timeout=30)
        assert out.split() == ["['lo']", token], err
        alone, report = sandboxed(None, "connect", port)
        out, err = alone.communicate(timeout=30)
        assert alone.returncode != 0 and token not in out
        if "no IP sockets (seccomp)" in report.enforced:
            assert "PermissionError" in err, err
    finally:
        server.kill()  # it has ended where the test passed
        server.wait()
