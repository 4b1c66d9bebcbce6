"""The real popcorn-cli (the public contest client, built from its own source) against a real
`runner.py serve`: submit in each mode, a file that does not load, a leaderboard run whose
secret phases print, list, show, delete, a wrong token, an unknown leaderboard. What it
prints and its exit code are what a contestant sees.

The binary: $POPCORN_CLI, else the one in the project's shared/ folder where it runs
(`tools/popcorn-cli/build.sh` prints its path; `.ci/run` builds it where it can), else
`popcorn-cli` on the PATH. Skipped without one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SHARED
from serverkit import CASE, Server, add_user

pytest.importorskip("flask", reason="the server needs Flask")
pytestmark = [pytest.mark.popcorn, pytest.mark.slow, pytest.mark.xdist_group("popcorn")]

FAST = ROOT / "tests" / "submissions" / "leaderboard" / "fast.py"
PRINTS = ROOT / "tests" / "submissions" / "vectoradd" / "print_inputs.py"


def find_binary() -> str | None:
    """popcorn-cli's path, where one runs here."""
    candidates = [os.environ.get("POPCORN_CLI")]
    if SHARED is not None:
        candidates.append(str(SHARED / "tools" / "popcorn-cli" / "popcorn-cli"))
    candidates.append(shutil.which("popcorn-cli"))
    for path in filter(None, candidates):
        try:
            if subprocess.run([path, "--version"], capture_output=True, timeout=30).returncode == 0:
                return path
        except (OSError, subprocess.SubprocessError):
            continue
    return None


BINARY = find_binary()


@pytest.fixture(scope="module")
def contest(tmp_path_factory):
    if BINARY is None:
        pytest.skip("no popcorn-cli here: set $POPCORN_CLI or run shared/tools/popcorn-cli/build.sh")
    tmp = tmp_path_factory.mktemp("popcorn")
    db = str(tmp / "contest.db")
    homes = {}
    for name in ("alice", "bob"):
        homes[name] = tmp / name
        homes[name].mkdir()
        (homes[name] / ".popcorn.yaml").write_text(f"cli_id: {add_user(db, name)}\n")
    admin = add_user(db, "root", admin=True)
    homes["nobody"] = tmp / "nobody"
    homes["nobody"].mkdir()
    (homes["nobody"] / ".popcorn.yaml").write_text("cli_id: not-a-token\n")
    server = Server(db, tmp / "serve.log", "--workers", "1", "--device", "cpu", *CASE).start()
    yield {"base": server.base, "homes": homes, "tmp": tmp, "admin": admin}
    server.stop()


def popcorn(contest, who: str, *args: str, timeout: float = 300,
            env: dict | None = None) -> tuple[int, str]:
    """popcorn-cli ARGS as `who` (their own home and config): its exit code and output."""
    env = {"PATH": os.environ["PATH"], "HOME": str(contest["homes"][who]),
           "POPCORN_API_URL": contest["base"], "NO_COLOR": "1", "TERM": "dumb", **(env or {})}
    proc = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=contest["tmp"], stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr


def submit(contest, who: str, file: Path, mode: str, board: str = "vectoradd") -> tuple[int, str]:
    return popcorn(contest, who, "submit", "--no-tui", "--leaderboard", board, "--gpu", "CPU",
                   "--mode", mode, str(file))


def submission_id(output: str) -> int:
    """The id popcorn-cli printed in its JSON result (`"submission_id": N`)."""
    line = next(row for row in output.splitlines() if '"submission_id"' in row)
    return int(line.split(":")[1].strip().rstrip(","))


@pytest.mark.parametrize("mode", ["test", "benchmark", "leaderboard"])
def test_an_honest_file_passes_in_each_mode(contest, mode):
    rc, out = submit(contest, "alice", FAST, mode)
    assert rc == 0, out
    assert '"passed": true' in out and '"passed": false' not in out, out
    assert "Traceback" not in out


def test_a_file_that_does_not_load_is_reported_failed(contest):
    broken = contest["tmp"] / "broken.py"
    broken.write_text("def custom_kernel(data:\n    return data\n")
    rc, out = submit(contest, "alice", broken, "test")
    assert rc != 0, out
    assert "failed" in out and "syntax error" in out, out


def test_the_secret_phases_print_nothing_to_the_submitter(contest):
    rc, out = submit(contest, "bob", PRINTS, "leaderboard")
    assert rc == 0, out
    job = submission_id(out)
    rc, shown = popcorn(contest, "bob", "submissions", "show", str(job))
    assert rc == 0 and "INPUT [" not in out + shown, out + shown  # its prints, not its code


def test_list_show_and_delete_ones_own(contest):
    rc, out = submit(contest, "bob", FAST, "test")
    assert rc == 0, out
    job = submission_id(out)
    rc, listed = popcorn(contest, "bob", "submissions", "list", "--leaderboard", "vectoradd")
    assert rc == 0 and str(job) in listed and "fast.py" in listed, listed
    rc, shown = popcorn(contest, "bob", "submissions", "show", str(job))
    assert rc == 0 and "custom_kernel" in shown, shown  # one's own code
    rc, other = popcorn(contest, "alice", "submissions", "show", str(job))
    assert rc != 0 and "404" in other, other  # another user's: as if absent
    rc, gone = popcorn(contest, "bob", "submissions", "delete", str(job), "--force")
    assert rc == 0 and f"Submission {job} deleted successfully" in gone, gone
    rc, again = popcorn(contest, "bob", "submissions", "show", str(job))
    assert rc != 0 and "404" in again, again


def test_a_wrong_token_and_an_unknown_leaderboard_are_refused_with_the_reason(contest):
    rc, out = submit(contest, "nobody", FAST, "test")
    assert rc != 0 and "401" in out and "token" in out, out
    rc, out = submit(contest, "alice", FAST, "test", board="nosuchtask")
    assert rc != 0 and "nosuchtask" in out, out
    assert "<html" not in out.lower() and "<!doctype" not in out.lower()


def test_admin_stats_and_the_admin_commands_this_server_lacks(contest):
    rc, out = popcorn(contest, "alice", "admin", "stats",
                      env={"POPCORN_ADMIN_TOKEN": contest["admin"]})
    assert rc == 0 and '"uploads"' in out and '"jobs"' in out, out
    rc, out = popcorn(contest, "alice", "admin", "start",
                      env={"POPCORN_ADMIN_TOKEN": contest["admin"]})
    assert rc != 0 and "501" in out and "not offered by this server" in out, out
