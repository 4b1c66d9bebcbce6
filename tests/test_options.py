"""harness/options.py: the options of one evaluation, as a judge process receives them."""

from __future__ import annotations

from pathlib import Path

from harness.options import RunOptions


def test_a_judge_gets_its_own_file_task_mode_and_secret_and_nothing_it_must_not_touch():
    batch = RunOptions(mode="benchmark", cases=["size: 8; seed: 1"], device="cpu", timeout=30,
                       db="results.db", user="alice", json_path=Path("out.json"),
                       summary_md=Path("out.md"), allow_shared_gpu=True)
    judge = batch.for_judge(Path("/tmp/a.py"), "/tasks/vectoradd", "leaderboard", b"\x01\x02")
    assert (judge.file, judge.task, judge.mode, judge.secret) == (
        Path("/tmp/a.py"), "/tasks/vectoradd", "leaderboard", b"\x01\x02")
    assert (judge.db, judge.user, judge.json_path, judge.summary_md) == (None, None, None, None)
    assert (judge.cases, judge.device, judge.timeout, judge.allow_shared_gpu) == (
        ["size: 8; seed: 1"], "cpu", 30, True)  # the organiser's choices travel
    assert batch.for_judge(Path("b.py"), "t").mode == "benchmark"  # its own mode by default
    assert batch.db == "results.db"  # the caller's options are left as they were


def test_the_wire_form_round_trips_with_the_secret_in_hex():
    judge = RunOptions(file=Path("a.py"), task="t", secret=b"\xff\x00").for_judge(
        Path("a.py"), "t", secret=b"\xff\x00")
    wire = judge.to_wire()
    assert wire["secret"] == "ff00" and wire["file"] == "a.py"
    assert RunOptions.from_wire(wire) == judge




def test_a_judge_knows_its_callers_working_directory(tmp_path, monkeypatch):
    """A judge process is started in the project's folder and works in its caller's
    (judge_process._work_in): the folder travels with the options."""
    monkeypatch.chdir(tmp_path)
    judge = RunOptions(mode="profile").for_judge(Path("a.py"), "t")
    assert judge.workdir == tmp_path
    assert RunOptions.from_wire(judge.to_wire()).workdir == tmp_path
    given = RunOptions(workdir=Path("/elsewhere")).for_judge(Path("a.py"), "t")
    assert given.workdir == Path("/elsewhere")  # a caller's own choice stays
