"""The worker started before the judge imports torch (harness/judging/startup/head_start.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from harness.judging.startup import head_start
from harness.judging.startup.head_start import HeadStart, _device_files_ready, guess_device
from harness.settings import Settings

ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"


def _settings(tmp_path: Path, **worker) -> Settings:
    extra = tmp_path / "extra.yaml"
    extra.write_text("worker:\n" + "".join(f"  {k}: {str(v).lower()}\n" for k, v in worker.items()))
    return Settings.load(extra)


def test_the_guess_follows_the_flag_then_the_driver_nodes(tmp_path, monkeypatch):
    node = tmp_path / "nvidiactl"
    monkeypatch.setattr(head_start, "_GPU_NODES", (str(node),))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert guess_device("cpu") == "cpu"
    assert guess_device(None) == "cpu"  # no driver node
    node.touch()
    assert guess_device(None) == "cuda"
    assert guess_device("cpu") == "cpu"
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        assert guess_device(None) == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert guess_device(None) == "cuda"


def test_no_head_start_when_off(tmp_path):
    assert HeadStart.begin(_settings(tmp_path, head_start=False), "cpu") is None


def test_a_head_start_imports_torch_before_its_first_message_and_closes_clean(tmp_path):
    head = HeadStart.begin(Settings.load(), "cpu")
    assert head is not None
    worker = head.worker
    try:
        assert head.staging.is_dir() and head.shm_root.is_dir()
        assert worker.proc.poll() is None  # running, waiting for the judge
    finally:
        head.close()
    assert worker.proc.poll() is not None
    assert not head.work.exists() and not head.shm_root.exists()
    assert not worker.scratch.exists()


def test_a_head_start_for_another_device_is_stopped_not_used(tmp_path):
    head = HeadStart.begin(Settings.load(), "cpu")
    worker = head.worker
    try:
        assert head.take("cuda") is None
        assert worker.proc.poll() is not None
        assert head.take("cpu") is None  # given once
    finally:
        head.close()


def test_a_task_that_cannot_be_imported_stops_the_head_start(tmp_path):
    from harness.judging.evaluation import evaluate
    from harness.judging.preparation import prepare
    from harness.loading.task_folder import TaskError
    from harness.options import RunOptions

    task = tmp_path / "vectoradd"  # the name the submission names
    shutil.copytree(ROOT / "tasks" / "vectoradd", task)
    shutil.copy(ROOT / "tasks" / "utils.py", tmp_path / "utils.py")  # task.yml: ../utils.py
    (task / "reference.py").write_text("raise RuntimeError('the reference is broken')\n")
    settings = Settings.load()
    head = HeadStart.begin(settings, "cpu")
    worker = head.worker
    try:
        prepared = prepare(RunOptions(file=ADD, task=str(task), mode="test", device="cpu",
                                      record=False))
        with pytest.raises((TaskError, RuntimeError)):
            evaluate(prepared, settings, head=head)
        assert worker.proc.poll() is not None  # not left waiting for a judge
        assert not head.work.exists()
    finally:
        head.close()


@pytest.mark.slow
@pytest.mark.parametrize("on", [True, False])
def test_a_run_says_whether_its_worker_had_a_head_start(tmp_path, on):
    config = tmp_path / "c.yaml"
    config.write_text(f"worker:\n  head_start: {str(on).lower()}\n")
    run = run_cli("submit", str(ADD), "--task", "vectoradd", "--mode", "test", "--device", "cpu",
                  "--no-record", "--config", str(config), json_path=tmp_path / "r.json")
    assert run.rc == 0, run.out
    assert run.doc["passed"]
    assert run.doc["harness"]["head_start"] is on
    assert run.doc["startup_seconds"] > 0
    # the process's time before the evaluation: its interpreter and imports, within its wall
    assert 0.05 < run.doc["harness"]["process_age_s"] < run.wall


@pytest.mark.slow
def test_a_forked_judge_reports_the_commands_time_before_the_evaluation(tmp_path):
    """submit's judge is a fork of a template the command started (here its own, which
    imports torch): the document's process_age_s counts from the command's start, so
    that it and the evaluation's wall account for the command's wall, bar its report and
    exit."""
    run = run_cli("submit", str(ADD), "--task", "vectoradd", "--mode", "test", "--device", "cpu",
                  "--no-record", json_path=tmp_path / "r.json", env={"HARNESS_WARM_HOST": "off"})
    assert run.rc == 0, run.out
    before, evaluation = run.doc["harness"]["process_age_s"], run.doc["wall_seconds"]
    assert before > run.doc["startup_seconds"]  # the template's import of torch is in it
    # The command's start is read from /proc to a clock tick, so its age may read up to
    # one tick long.
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert -tick <= run.wall - before - evaluation < 1.5, (run.wall, before, evaluation)


@pytest.mark.slow
def test_process_age_counts_from_the_process_start():
    code = ("import time; time.sleep(0.4); from harness.judging.evaluation import process_age; "
            "print(process_age())")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    assert 0.4 <= float(done.stdout) < 60


@pytest.mark.slow
def test_a_head_start_whose_judge_goes_away_exits_quietly():
    head = HeadStart.begin(Settings.load(), "cpu")
    worker = head.worker
    try:
        worker.conn.close()  # as when the judge stops before it sends its first message
        assert worker.proc.wait(timeout=120) == 0
        _, err = worker.output()
        assert "Traceback" not in err
    finally:
        head.close()


def test_a_worker_that_cannot_start_leaves_nothing_behind(tmp_path, monkeypatch):
    """A sandbox that fails in the child (Popen raises SubprocessError): no head start,
    no folder left, and the run goes on to start its own worker."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(head_start, "shm_folder",
                        lambda: Path(tempfile.mkdtemp(prefix="harness-shm-")))

    def refuse(self):
        raise subprocess.SubprocessError("Exception occurred in preexec_fn.")

    monkeypatch.setattr(head_start.WorkerProcess, "start", refuse)
    assert HeadStart.begin(Settings.load(), "cpu") is None
    assert list(tmp_path.iterdir()) == []


def test_no_head_start_before_the_gpus_device_files_exist(tmp_path):
    control, uvm = tmp_path / "nvidiactl", tmp_path / "nvidia-uvm"
    assert _device_files_ready("cuda", str(control), str(uvm))  # no NVIDIA GPU at all
    control.touch()
    assert not _device_files_ready("cuda", str(control), str(uvm))  # made at first use
    assert _device_files_ready("cpu", str(control), str(uvm))
    uvm.touch()
    assert _device_files_ready("cuda", str(control), str(uvm))


def test_the_head_start_holds_the_files_cache_folder_for_the_same_text(tmp_path):
    """The worker begun with a file may use that text's compiler-cache folder
    (compile_cache.py); a run that reads other text (the file changed in between) gets
    neither that worker nor that folder."""
    from harness.judging.startup import compile_cache

    sub = tmp_path / "sub.py"
    sub.write_text(ADD.read_text())
    for text, taken in ((ADD.read_text(), True), (ADD.read_text() + "# changed\n", False)):
        head = HeadStart.begin(Settings.load(), "cpu", sub, "test")
        worker = head.worker
        try:
            assert head.compile_cache.name == compile_cache.folder_name(ADD.read_text())
            assert (head.take("cpu", text) is worker) is taken
            cache, warning = head.take_cache()
            assert warning is None and (cache is not None) is taken
            if cache is not None:
                cache.release()
            else:
                assert worker.proc.poll() is not None
        finally:
            head.close()
            worker.close()  # a taken worker is its taker's to close (the judge's)


def test_a_ranked_head_start_has_no_cache_folder(tmp_path):
    head = HeadStart.begin(Settings.load(), "cpu", ADD, "leaderboard")
    try:
        assert head.compile_cache is None
        assert head.worker.compile_cache is None  # neither named to it nor writable
    finally:
        head.close()
