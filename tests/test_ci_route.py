"""The CI route (.github/workflows/submissions.yml) judges a pull request's submissions with
the BASE branch's harness and tasks: a pull request that edits the judge beside its
submission is refused; one that only adds a submission gets the base branch's verdict."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

SCRIPT = ".github/scripts/pr-submissions.sh"
CHECKING = "harness/judging/checking.py"


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def base_repo(tmp_path):
    """A repository whose base commit holds this harness's files."""
    repo = tmp_path / "repo"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / name)
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return repo, git(repo, "rev-parse", "HEAD")


def pull_request(repo, base: str, name: str, changes: dict[str, str]) -> str:
    """A branch off `base` with these files written; its head commit (left checked out at base)."""
    git(repo, "checkout", "-q", "-b", name, base)
    for path, text in changes.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", name)
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", base)  # the workflow's checkout: the base commit
    return head


def take(repo, base: str, head: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", SCRIPT, base, head], cwd=repo, capture_output=True, text=True)


def test_workflow_checks_out_the_base_and_runs_the_script():
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "submissions.yml").read_text())
    steps = doc["jobs"]["evaluate"]["steps"]
    checkouts = [s for s in steps if str(s.get("uses", "")).startswith("actions/checkout")]
    assert [s["with"]["ref"] for s in checkouts] == ["${{ github.event.pull_request.base.sha }}"]
    script = "\n".join(s.get("run", "") for s in steps)
    assert SCRIPT in script and "git checkout" not in script and "pull_request.head" not in script


def test_a_pull_request_that_edits_the_judge_is_refused(tmp_path):
    repo, base = base_repo(tmp_path)
    cheat = (ROOT / CHECKING).read_text() + "\n# always pass\n"
    head = pull_request(repo, base, "cheat", {
        "submissions/vectoradd/mine.py": (ROOT / "tests/submissions/vectoradd/wrong_values.py")
        .read_text(), CHECKING: cheat})
    taken = take(repo, base, head)
    assert taken.returncode == 1 and taken.stdout == ""
    assert f"refused: this pull request changes {CHECKING} (M)" in taken.stderr
    assert not (repo / "submissions/vectoradd/mine.py").exists()
    assert (repo / CHECKING).read_text() == (ROOT / CHECKING).read_text()
    # editing an existing submission is refused too: only added files are taken
    head = pull_request(repo, base, "edit", {"submissions/vectoradd/add_torch.py": "x = 1\n"})
    taken = take(repo, base, head)
    assert taken.returncode == 1 and "submissions/vectoradd/add_torch.py (M)" in taken.stderr


@pytest.mark.slow
def test_an_added_submission_gets_the_base_verdict(tmp_path):
    repo, base = base_repo(tmp_path)
    wrong = "#!POPCORN leaderboard vectoradd\n" + (
        ROOT / "tests/submissions/vectoradd/wrong_values.py").read_text()
    head = pull_request(repo, base, "add", {"submissions/vectoradd/mine.py": wrong})
    taken = take(repo, base, head)
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.split() == ["submissions/vectoradd/mine.py"]
    assert git(repo, "rev-parse", "HEAD") == base
    judged = subprocess.run(  # the base checkout's own runner.py, as the workflow runs it
        [sys.executable, "runner.py", "submit", "submissions/vectoradd/mine.py", "--mode", "test",
         "--device", "cpu"], cwd=repo, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HARNESS_DB": str(tmp_path / "ci.db"), "PYTHONPATH": str(repo)})
    assert judged.returncode == 1 and "FAILED" in judged.stdout, judged.stdout + judged.stderr
