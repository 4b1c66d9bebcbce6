"""A multi-GPU case's submission side (harness/judging/ranks/seat.py): each rank's judge
starts a sandboxed worker of its own in the case's network, and the worker joins the
ranks' process group (gloo on loopback) before it imports the submission, which then finds
`torch.distributed` ready, as under the public evaluator. Real workers on the CPU."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import ROOT

from harness.judging.judge import Entry, Judge
from harness.judging.measure.devices import DeviceInfo
from harness.judging.ranks.seat import RankSeat
from harness.loading.task_folder import import_reference, load_task
from harness.settings import Settings

pytestmark = pytest.mark.slow  # real workers, one per rank, each importing torch

CPU = DeviceInfo("cpu", "test CPU", "flag")
TASK = ROOT / "tasks" / "all_gather"
# Its import needs the group: an all-reduce of each rank's number, printed by every rank.
JOINS_AT_IMPORT = """
import torch
import torch.distributed as dist

_total = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(_total)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "total", int(_total.item()))


def custom_kernel(data):
    parts = [torch.empty_like(data) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, data)
    return torch.cat(parts)
"""


def rank_judges(tmp_path: Path, network, world: int, timeout_s: float = 60.0) -> list[Judge]:
    """One judge per rank of `world`, the submission staged once for all of them."""
    task = load_task(str(TASK))
    submission = tmp_path / "submission.py"
    submission.write_text(JOINS_AT_IMPORT)
    staging = task.stage(tmp_path / "worker", submission, for_worker=True, text=JOINS_AT_IMPORT)
    settings = Settings.load().for_device("cpu")
    judges = []
    for rank in range(world):
        reference = import_reference(task, task.stage(tmp_path / f"judge{rank}"))
        seat = RankSeat(rank, world, network.path, "gloo", timeout_s)
        judges.append(Judge(task, reference, CPU, settings,
                            Entry(submission, staging, seat=seat)))
    return judges


def start_all(judges: list[Judge]) -> list[bool]:
    """Each judge's `start` at once, in a thread of its own (the ranks join together)."""
    started: list[bool] = [False] * len(judges)

    def start(rank: int) -> None:
        started[rank] = judges[rank].start(120.0)

    threads = [threading.Thread(target=start, args=(r,)) for r in range(len(judges))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return started


def test_each_rank_joins_the_group_before_the_submission_is_imported(tmp_path, network):
    judges = rank_judges(tmp_path, network, 2)
    try:
        assert start_all(judges) == [True, True], [j.load_error for j in judges]
        # each rank's worker a user of its own where the judge may change users (root), so
        # that neither's bound nor its end (every process of its user killed) is the other's
        users = [j.worker.bound.uid for j in judges if j.worker.bound is not None]
        assert len(set(users)) == len(users), users
        for j in judges:  # contained as any worker, IP sockets in the case's network alone
            assert j.containment.level == judges[0].containment.level
            if j.containment.level != "off":
                assert ("IP sockets only in the ranks' own network, loopback alone"
                        in j.containment.enforced)
                assert "no IP sockets (seccomp)" not in j.containment.enforced
    finally:
        for j in judges:
            j.close()
    said = [j.worker_output["stdout"] for j in judges]
    assert "rank 0 of 2 total 3" in said[0] and "rank 1 of 2 total 3" in said[1], said


def test_a_rank_whose_others_never_come_says_it_could_not_join(tmp_path, network):
    [alone, _] = rank_judges(tmp_path, network, 2, timeout_s=3.0)
    try:
        assert not alone.start(60.0)
    finally:
        alone.close()
    error = alone.load_error
    assert error["kind"] == "group", error
    assert error["title"] == "a rank's worker could not join the other ranks"
    assert "rank 0 of 2 could not join the ranks' process group (gloo)" in error["message"]
