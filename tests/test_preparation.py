"""harness/judging/preparation.py: a request's mistakes are found without torch, before
any worker starts; a sound request is prepared with its device."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

from harness.judging import UsageError, check_request, prepare
from harness.loading.cases import CaseError
from harness.loading.task_folder import TaskError
from harness.options import RunOptions

ADD = ROOT / "submissions" / "vectoradd" / "add_torch.py"


@pytest.mark.parametrize("options, error, words", [
    (RunOptions(file=ROOT / "no" / "such.py", task="vectoradd"), UsageError, "no such submission"),
    (RunOptions(file=ADD, task="mxfp4_mm"), UsageError, "remove one of them"),
    (RunOptions(file=ADD, task="nope"), TaskError, "known tasks"),
    (RunOptions(file=ADD, mode="test", cases=["size 3"]), CaseError, "key: value"),
    (RunOptions(file=ADD, mode="test", repeat=2), UsageError, "--repeat runs benchmark mode"),
])
def test_mistakes_are_found_by_the_check(options, error, words):
    with pytest.raises(error, match=words):
        check_request(options)


def test_a_sound_request_is_checked_then_prepared_with_its_device():
    options = RunOptions(file=ADD, mode="test", device="cpu")
    checked = check_request(options)
    assert checked.task.name == "vectoradd" and checked.directives.leaderboard == "vectoradd"
    prepared = prepare(options)
    assert prepared.device.kind == "cpu" and prepared.source == checked.source


def test_the_check_imports_no_torch():
    """So that `submit` tells a mistake in a fraction of a second, before its worker."""
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from harness.judging import check_request
        from harness.options import RunOptions
        check_request(RunOptions(file=Path({str(ADD)!r}), mode="test"))
        assert "torch" not in sys.modules, "torch imported"
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_a_timed_mode_on_a_task_without_benchmarks_is_refused_by_the_check(tmp_path):
    """Told before any process starts, unless the request gives its own cases to time."""
    task = tmp_path / "vectoradd"
    shutil.copytree(ROOT / "tasks" / "vectoradd", task)
    shutil.copy(ROOT / "tasks" / "utils.py", tmp_path)  # the folder's files name ../utils.py
    yml = task / "task.yml"
    text = yml.read_text()
    yml.write_text(text[:text.index("benchmarks:")] + "benchmarks: []\n")
    for mode in ("benchmark", "leaderboard", "profile"):
        with pytest.raises(UsageError, match="has no benchmarks to time"):
            check_request(RunOptions(file=ADD, task=str(task), mode=mode))
    check_request(RunOptions(file=ADD, task=str(task), mode="test"))
    check_request(RunOptions(file=ADD, task=str(task), mode="benchmark",
                             cases=["size: 8; seed: 1"]))
