"""harness/judging/ranks/: the judge's own rank processes for a multi-GPU task, on the CPU
(gloo on loopback), with the small all-gather task under tests/multi_gpu/."""

from __future__ import annotations

import shutil
import time

import pytest
import torch
from conftest import ROOT

from harness.judging.ranks.group import RankError, RankGroup
from harness.loading.task_folder import load_task

pytestmark = pytest.mark.slow  # each rank is a process that imports torch

TASK = ROOT / "tests" / "multi_gpu" / "all_gather"


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
        assert group.check([gathered.clone() for _ in range(world)], timeout=30) == \
            [(True, "")] * world
        wrong = [gathered.clone() for _ in range(world)]
        wrong[1][3] += 1
        verdicts = group.check(wrong, timeout=30)
        assert verdicts[1] == (False, "values differ at [3]")
        assert all(ok for r, (ok, _) in enumerate(verdicts) if r != 1)
        procs = list(group.procs)
    assert all(p.poll() is not None for p in procs)  # the group is gone with the block


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
