"""harness/judging/preparation.py: a request's mistakes are found without torch, before
any worker starts; a sound request is prepared with its device."""

from __future__ import annotations

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
