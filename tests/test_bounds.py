"""What one evaluation may hold of its machine (harness/judging/sandbox/bounds.py): a fork
bomb stops at the process bound, a disk filler at the scratch quota, and a submission that
takes every byte of the GPU gets an out-of-memory verdict; each with a verdict that names
the bound, nothing left afterwards, and the machine (and the next run) unaffected. Real
processes, through runner.py as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, gpu, run_cli

from harness.judging.sandbox import bounds, leftovers
from harness.judging.sandbox.procfs import JUDGE_NAME
from harness.settings import Settings

CORPUS = ROOT / "tests" / "adversarial"
CASE = ["--case", "size: 256; seed: 1"]
SUBMISSIONS_ADD_TORCH = ROOT / "submissions" / "vectoradd" / "add_torch.py"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the bounds as root: a user of the "
                               "worker's own, a tmpfs mounted by the judge")


def _config(tmp_path: Path, **worker) -> Path:
    config = tmp_path / "bounds.yaml"
    config.write_text("worker:\n" + "".join(f"  {k}: {v}\n" for k, v in worker.items()))
    return config


def _mounted(path: str) -> bool:
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


def _printed(doc: dict, key: str) -> str:
    [value] = [line.split()[1] for line in doc["worker_output"]["stdout"].splitlines()
               if line.startswith(key + " ")]
    return value


@pytest.mark.xdist_group("loud")  # never beside another test of the group (conftest.py)
@pytest.mark.slow  # a 15 s phase of forks
@root_only
def test_a_fork_bomb_stops_at_the_bound_and_leaves_nothing(tmp_path):
    """64 processes and threads for the worker and its children: the bomb's forks fail past
    them, it keeps trying until the phase's 15 s run out, the verdict names the bound, a
    command started meanwhile runs at once, and the worker's user has no process left."""
    out = tmp_path / "r.json"
    cmd = [sys.executable, str(ROOT / "runner.py"), "submit",
           str(CORPUS / "fork_until_refused.py"), "--task", "vectoradd", "--device", "cpu",
           "--mode", "test", *CASE, "--timeout", "15", "--no-record", "--json", str(out),
           "--config", str(_config(tmp_path, max_processes=64))]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT, env={**os.environ, "COLUMNS": "200",
                                           "HARNESS_WARM_HOST": "off"})  # its judge below it
    from test_stopping import _named

    deadline = time.monotonic() + 60
    judges: list[int] = []
    while not judges and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        judges = _named(proc.pid, JUDGE_NAME)  # forked from the command's judge template
    assert judges, "no judge started"
    uid = bounds.UID_BASE + judges[0]  # the worker's user is its judge's
    while bounds.count_tasks(uid) < 60 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert bounds.count_tasks(uid) <= 64
    began = time.monotonic()
    subprocess.run(["true"], check=True, timeout=10)  # the machine stays responsive
    assert time.monotonic() - began < 2
    text, _ = proc.communicate(timeout=120)
    doc = json.loads(out.read_text())
    assert "Traceback (most recent call last)" not in text, text
    [case] = doc["phases"][0]["cases"]
    assert case["status"] == "timed out", text
    assert "bound of 64 processes and threads (worker.max_processes)" in case["message"], text
    assert int(_printed(doc, "WORKER_UID")) == uid
    assert 32 <= int(_printed(doc, "FORKED")) < 64  # the worker's own threads count too
    assert bounds.count_tasks(uid) == 0  # every child killed with the worker
    assert any("at most 64 processes" in e for e in doc["harness"]["containment"]["enforced"])


@pytest.mark.slow
@root_only
def test_a_disk_filler_stops_at_the_quota_and_its_scratch_goes(tmp_path):
    """A 64 MiB scratch quota: the writes fail (ENOSPC) once it is full, the verdict names
    it, and the folder (its tmpfs) is gone with the run."""
    r = run_cli("submit", str(CORPUS / "fill_scratch.py"), "--task", "vectoradd", "--device",
                "cpu", "--mode", "test", *CASE, "--no-record",
                "--config", str(_config(tmp_path, scratch_mb=64)), json_path=tmp_path / "r.json")
    assert "Traceback (most recent call last)" not in r.out.split("Traceback (the submission")[0]
    [case] = r.doc["phases"][0]["cases"]
    assert r.rc == 1 and case["status"] == "error", r.out
    assert "scratch quota of 64 MiB (worker.scratch_mb)" in case["message"], r.out
    assert "No space left on device" in case["message"]
    written = int(_printed(r.doc, "WROTE"))
    assert 48 << 20 <= written <= 64 << 20, written
    scratch = _printed(r.doc, "SCRATCH")
    assert not os.path.exists(scratch) and not _mounted(scratch)


@pytest.mark.slow
@root_only
def test_an_honest_run_holds_both_bounds_and_records_them(tmp_path):
    r = run_cli("submit", str(SUBMISSIONS_ADD_TORCH), "--task", "vectoradd", "--device", "cpu",
                "--mode", "test", "--no-record", json_path=tmp_path / "r.json")
    assert r.rc == 0 and r.doc["passed"], r.out
    enforced = r.doc["harness"]["containment"]["enforced"]
    assert "at most 512 processes and threads (RLIMIT_NPROC, as a user of its own)" in enforced
    assert "a scratch quota of 4096 MiB (tmpfs)" in enforced


@root_only
def test_a_quota_refuses_writes_past_it_and_is_gone_when_released(tmp_path):
    folder = tmp_path / "scratch"
    folder.mkdir()
    quota = bounds.Quota(folder, 4)
    assert quota.held and quota.warning is None and _mounted(str(folder))
    with pytest.raises(OSError) as refused, open(folder / "big", "wb") as fh:
        for _ in range(8):
            fh.write(b"\0" * (1 << 20))
            fh.flush()
    assert refused.value.errno == 28 and quota.full()  # ENOSPC
    quota.release()
    assert not _mounted(str(folder)) and list(folder.iterdir()) == []


@root_only
def test_the_sweep_unmounts_a_dead_judges_quota_and_kills_its_workers(tmp_path):
    """A judge killed outright leaves its worker's tmpfs mounted and, maybe, processes of
    its worker's user: the next evaluation's sweep takes both."""
    made = subprocess.run(
        [sys.executable, "-c", "import sys, os; from harness.judging.sandbox.leftovers import "
         "make_folder; print(make_folder('worker', sys.argv[1]), os.getpid())", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=True).stdout.split()
    dead, pid = Path(made[0]), int(made[1])
    assert bounds.Quota(dead, 4).held
    (dead / "left").write_bytes(b"x" * 4096)
    uid = bounds.UID_BASE + pid
    left = subprocess.Popen(["sleep", "600"], user=uid, group=uid)
    try:
        assert bounds.count_tasks(uid) == 1
        assert leftovers.sweep([tmp_path]) == [dead]
        assert bounds.count_tasks(uid) == 0  # killed (and reaped: it was this one's child)
    finally:
        left.kill()
    assert not dead.exists() and not _mounted(str(dead))


def test_where_the_worker_cannot_have_a_user_of_its_own_its_judges_user_is_bounded(monkeypatch):
    """A judge that is not root, or whose user namespace lacks the worker's user (a
    container's): RLIMIT_NPROC over the tasks its own user holds now, plus the setting."""
    monkeypatch.setattr(bounds, "_mapped", lambda uid: False)
    bound = bounds.process_bound(100)
    assert bound.uid is None and bound.tasks == 100
    assert bound.base >= 1 and bound.limit == bound.base + 100
    assert "as the judge's user" in bound.describe()


def test_kill_user_never_touches_root_or_an_ordinary_user():
    assert bounds.kill_user(0) == [] and bounds.kill_user(os.getuid()) == []
    assert bounds.kill_user(bounds.UID_BASE - 1) == [] and bounds.kill_user(None) == []


def test_the_bounds_are_settings_with_room_for_the_flagship_tasks(tmp_path):
    worker = Settings.load().worker
    assert worker.max_processes >= 256 and worker.scratch_mb >= 2048
    for key, value in (("max_processes", -1), ("scratch_mb", 1.5), ("max_processes", True)):
        with pytest.raises(ValueError, match=f"worker.{key}"):
            Settings.load(_config(tmp_path, **{key: value}))
    off = Settings.load(_config(tmp_path, max_processes=0, scratch_mb=0)).worker
    assert bounds.process_bound(off.max_processes) is None
    assert bounds.Quota(tmp_path, off.scratch_mb).held is False


@gpu
def test_a_submission_holding_all_gpu_memory_gets_an_out_of_memory_verdict(tmp_path):
    """It takes every byte in its first call and keeps it: the judge cannot allocate the
    big second case's inputs (or, sooner, memory for its check), stops the worker, and
    says out of memory; no traceback; an honest run on the same GPU right after passes."""
    r = run_cli("submit", str(CORPUS / "hold_gpu_memory.py"), "--task", "vectoradd",
                "--device", "cuda", "--mode", "test", "--case", "size: 256; seed: 1",
                "--case", "size: 16384; seed: 2", "--no-record", json_path=tmp_path / "r.json")
    assert "Traceback (most recent call last)" not in r.out, r.out
    cases = r.doc["phases"][0]["cases"]
    assert cases[-1]["status"] == "error", r.out  # the big case, at the latest
    assert all(c["status"] == "passed" or c["message"].startswith(
        "out of memory: the judge could not allocate this case's buffers while the "
        "submission held") for c in cases), r.out
    honest = run_cli("submit", str(SUBMISSIONS_ADD_TORCH), "--task", "vectoradd", "--device",
                     "cuda", "--mode", "test", "--no-record", json_path=tmp_path / "h.json")
    assert honest.rc == 0 and honest.doc["passed"], honest.out
