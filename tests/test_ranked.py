"""A multi-GPU task judged end to end on the CPU (harness/judging/ranks/ranked.py), through
`runner.py submit --mode test`: each case's ranks are sandboxed CPU workers joined over
gloo, the task's reference runs in the judge's own ranks, and a rank that fails is named.
The small all-gather task, tasks/all_gather, with 2 and 4 ranks: its example
(submissions/all_gather/all_gather_torch.py) and faulty ones of tests/submissions."""

from __future__ import annotations

import time

import pytest
from conftest import ROOT

from harness.judging.needs import ranks
from harness.judging.ranks.ranked import Meeting, RankReference, hung_rank
from harness.judging.sandbox.procfs import WORKER_NAME, family, name_of, stat_fields

TASK = ROOT / "tasks" / "all_gather"
SUBS = ROOT / "tests" / "submissions" / "all_gather"
EXAMPLE = ROOT / "submissions" / "all_gather" / "all_gather_torch.py"
TWO_RANKS = ["--case", "world_size: 2; size: 64; seed: 11"]
BENCH_TWO = ["--case", "world_size: 2; size: 4096; seed: 21"]


def submit(cli, path, *extra):
    r = cli("submit", str(path), "--task", str(TASK), "--device", "cpu", "--mode", "test",
            *extra)
    assert "Traceback (most recent call last)" not in r.out, r.out
    return r


def cases(doc):
    return [c for p in doc["phases"] for c in p["cases"]]


@pytest.mark.slow
def test_the_example_passes_on_two_and_four_ranks(cli):
    r = submit(cli, EXAMPLE)
    assert r.rc == 0, r.out
    assert [(c["case"]["world_size"], c["status"]) for c in cases(r.doc)] == [
        (2, "passed"), (4, "passed")]
    assert not any("left running" in w for w in r.doc["warnings"]), r.doc["warnings"]
    assert "hostname of the client socket" not in r.out  # the group's noise, not shown
    contained = r.doc["harness"]["containment"]
    if contained["level"] != "off":
        assert "IP sockets only in the ranks' own network, loopback alone" in contained["enforced"]


@pytest.mark.slow
@pytest.mark.parametrize("name, status, said", [
    ("wrong_on_rank_1", "failed", "rank 1: the first call: wrong output"),
    ("raises_on_rank_1", "error", "rank 1: "),
    ("own_input", "failed", "the first call: wrong output"),
])
def test_a_rank_that_fails_is_named(cli, name, status, said):
    r = submit(cli, SUBS / f"{name}.py", *TWO_RANKS)
    assert r.rc == 1, r.out
    [case] = cases(r.doc)
    assert case["status"] == status and said in case["message"], case
    assert case["message"].startswith(("rank 0: ", "rank 1: ")), case["message"]
    if name == "raises_on_rank_1":  # rank 0, waiting in the collective, was stopped at once
        assert "rank 1 gives up" in case["message"] and r.wall < 60


@pytest.mark.slow
def test_a_rank_that_hangs_is_named_and_nothing_is_left_running(cli):
    r = submit(cli, SUBS / "hangs_on_rank_1.py", *TWO_RANKS, "--timeout", "8")
    assert r.rc == 3, r.out
    [case] = cases(r.doc)
    assert case["status"] == "timed out", case
    assert case["message"].startswith("rank 1: timed out"), case["message"]
    assert _no_worker_left(within=10.0)


def _no_worker_left(within: float) -> bool:
    """Whether no worker runs below this process (the judges are subreapers, and so is
    this process once a test judged in it: a run's orphans come back here) within
    `within` seconds, a killed one given the moment its kernel needs to end it. A zombie
    has ended: it runs nothing."""
    import os

    deadline = time.monotonic() + within
    while True:
        left = [p for p in family(os.getpid()) if name_of(p) == WORKER_NAME
                and stat_fields(p)[:1] not in (["Z"], [])]
        if not left or time.monotonic() > deadline:
            return not left
        time.sleep(0.2)


@pytest.mark.slow
def test_a_leaderboard_run_times_every_rank_in_lockstep(cli):
    """Every timed phase on two ranks: each sampling decision taken by both together, so
    both make the same calls, each behind a barrier; the case's times are rank 0's."""
    r = submit(cli, EXAMPLE, "--mode", "leaderboard", "--no-record", *BENCH_TWO)
    assert r.rc == 0, r.out
    timed = [c for p in r.doc["phases"] if p["name"] != "test" for c in p["cases"]]
    assert timed and all(c["status"] == "passed" and c["score_ns"] > 0 for c in timed), timed
    assert all(c["stats"]["calls"] >= 2 for c in timed)
    assert r.doc["score_ns"] > 0


@pytest.mark.slow
def test_a_slow_rank_is_in_rank_0s_time(cli):
    """Rank 1 sleeps 5 ms before the collective: rank 0 waits for it there, inside its clock."""
    r = submit(cli, SUBS / "slow_on_rank_1.py", "--mode", "benchmark", *BENCH_TWO)
    assert r.rc == 0, r.out
    [case] = cases(r.doc)
    assert case["status"] == "passed" and case["stats"]["mean"] > 4e6, case["stats"]


def test_a_timing_decision_is_taken_by_every_rank_alike():
    """Each rank says what it wants (one more sample, say); each hears yes only where all
    said yes, so every rank makes the same calls."""
    import threading

    meeting = Meeting(group=None, world=3)
    meeting.deadline = time.perf_counter() + 30  # as once every rank has loaded
    for wishes, heard in (((True, False, True), False), ((True, True, True), True)):
        answers: dict[int, bool] = {}

        def one(rank: int, wants: bool, answers: dict[int, bool]) -> None:
            answers[rank] = RankReference(None, meeting, rank).together(wants)

        threads = [threading.Thread(target=one, args=(r, w, answers))
                   for r, w in enumerate(wishes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert answers == {0: heard, 1: heard, 2: heard}


def test_what_a_multi_gpu_task_needs_by_machine():
    eight = [{"world_size": 8}, {"world_size": 2}]
    assert ranks(False, eight, "cuda", 0) is None  # not multi-GPU: nothing
    assert ranks(True, eight, "cpu", 0) is None  # CPU ranks, every mode: judged here
    assert ranks(True, eight, "cuda", 1).title == "needs 8 GPUs, this run has 1 GPU"
    assert ranks(True, eight, "cuda", 0).title == "needs 8 GPUs, this run has no GPU"
    assert ranks(True, eight, "cuda", 8).title == "runs 8 ranks, judged on the CPU only so far"


def test_the_hung_rank_is_the_one_whose_stacks_are_not_in_a_collective():
    waiting = '  File ".../torch/distributed/distributed_c10d.py", line 4287 in all_gather\n'
    spinning = '  File "submission.py", line 11 in custom_kernel\n'
    assert hung_rank({0: waiting, 1: spinning, 2: waiting}) == 1
    assert hung_rank({0: spinning, 1: spinning}) is None  # two: it does not tell
    assert hung_rank({0: waiting, 1: ""}) is None  # one said nothing: it does not tell


@pytest.mark.slow
def test_a_folder_whose_reference_asks_for_cuda_needs_a_gpu_per_rank(cli, tmp_path):
    """As the public amd_distributed folders' references do (CUDA generators on rank r's
    GPU): on the CPU, the run says how many GPUs the case needs, not that the folder is
    broken."""
    import shutil

    folder = tmp_path / "cuda_ranks"
    shutil.copytree(TASK, folder)
    reference = folder / "reference.py"
    reference.write_text(reference.read_text().replace(
        'return torch.device(f"cuda:{rank}") if torch.cuda.is_available() else torch.device("cpu")',
        'return torch.device(f"cuda:{rank}")'))
    r = cli("submit", str(EXAMPLE), "--task", str(folder), "--device", "cpu",
            "--mode", "test", *TWO_RANKS)
    assert r.rc == 1 and r.doc["status"] == "needs a GPU", r.out
    assert r.doc["load_error"]["title"] == "the task needs 2 GPUs, this run has no GPU"
    assert "Traceback" not in r.out
