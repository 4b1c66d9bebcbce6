"""`--task` against a file's `#!POPCORN leaderboard` directive: a task name that disagrees
is an error, a task folder's path that disagrees is a warning (the path names the task)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from harness.judging import UsageError, prepare
from harness.loading.task_folder import TASKS_DIR, given_by_name
from harness.options import RunOptions

ADD = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_text()


def _submission(tmp_path: Path, leaderboard: str) -> Path:
    """add_torch.py with its directive naming `leaderboard`."""
    path = tmp_path / "submission.py"
    path.write_text(ADD.replace("#!POPCORN leaderboard vectoradd",
                                f"#!POPCORN leaderboard {leaderboard}"))
    return path


def _public_folder(tmp_path: Path, name: str) -> Path:
    """A copy of the vectoradd folder under another name, as a public repository keeps one."""
    folder = tmp_path / name
    shutil.copytree(TASKS_DIR / "vectoradd", folder)
    shutil.copy(TASKS_DIR / "utils.py", tmp_path / "utils.py")  # task.yml: ../utils.py
    return folder


@pytest.mark.parametrize("text,by_name", [
    ("vectoradd", True), ("tasks/vectoradd", False), ("./vectoradd", False),
    (str(TASKS_DIR / "vectoradd"), False), ("vectoradd/", False),
])
def test_a_bare_name_of_a_folder_under_tasks_is_a_name(text, by_name):
    assert given_by_name(text, (TASKS_DIR / "vectoradd").resolve()) is by_name


def test_a_bare_word_for_another_folder_is_a_path(tmp_path):
    """A bare word that resolved to a folder outside tasks/ (the working directory's) is
    that folder's path, not the name of the task under tasks/."""
    folder = _public_folder(tmp_path, "vectoradd")
    assert given_by_name("vectoradd", folder.resolve()) is False


def test_a_task_name_that_disagrees_is_an_error(tmp_path):
    file = _submission(tmp_path, "princeton_vectoradd")
    with pytest.raises(UsageError, match="remove one of them"):
        prepare(RunOptions(file=file, task="vectoradd", mode="test", device="cpu"))


def test_a_folder_path_that_disagrees_is_a_warning(tmp_path):
    file = _submission(tmp_path, "princeton_vectoradd")
    folder = _public_folder(tmp_path, "add_py")
    prepared = prepare(RunOptions(file=file, task=str(folder), mode="test", device="cpu"))
    assert prepared.task.name == "add_py"
    assert len(prepared.warnings) == 1
    assert "'#!POPCORN leaderboard princeton_vectoradd'" in prepared.warnings[0]
    assert str(folder.resolve()) in prepared.warnings[0]


def test_a_directive_that_agrees_warns_of_nothing(tmp_path):
    file = _submission(tmp_path, "vectoradd")
    for task in ("vectoradd", str(TASKS_DIR / "vectoradd")):
        prepared = prepare(RunOptions(file=file, task=task, mode="test", device="cpu"))
        assert prepared.warnings == []


@pytest.mark.slow
def test_through_runner_a_folder_path_runs_with_a_warning(cli, tmp_path):
    file = _submission(tmp_path, "princeton_vectoradd")
    folder = _public_folder(tmp_path, "add_py")
    r = cli("submit", str(file), "--task", str(folder), "--mode", "test", "--device", "cpu")
    assert r.rc == 0, r.out
    assert r.doc["task"]["name"] == "add_py" and r.doc["passed"]
    assert any("princeton_vectoradd" in w for w in r.doc["warnings"])
    assert "warning:" in r.out and "princeton_vectoradd" in r.out


@pytest.mark.slow
def test_through_runner_a_relative_path_under_tasks_is_a_path(cli, tmp_path):
    """`tasks/vectoradd` (from the checkout's root) is a path, even to a task that has a
    name: a file that names another leaderboard is run there, with a warning."""
    file = _submission(tmp_path, "mxfp4_mm")
    r = cli("submit", str(file), "--task", "tasks/vectoradd", "--mode", "test", "--device", "cpu")
    assert r.rc == 0, r.out
    assert any("mxfp4_mm" in w for w in r.doc["warnings"])


def test_through_runner_a_task_name_that_disagrees_exits_2(cli, tmp_path):
    file = _submission(tmp_path, "princeton_vectoradd")
    r = cli("submit", str(file), "--task", "vectoradd", "--mode", "test", "--device", "cpu",
            want_json=False)
    assert r.rc == 2 and "remove one of them" in r.out
    assert "Traceback" not in r.out
