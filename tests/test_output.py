"""Output that reads well: whole cells in a pipe or a CI log."""

import io
import re

from conftest import ROOT

from harness.frontends.console import PIPE_WIDTH, make_console, pipe_width

LONG_USER = "Seed 7998ad55 maintainers of the contest"


def test_a_pipe_gets_a_wide_console():
    console = make_console(io.StringIO(), {})
    assert not console.is_terminal and console.width == PIPE_WIDTH
    assert pipe_width({"COLUMNS": "80"}) == PIPE_WIDTH  # never narrower than whole cells need
    assert pipe_width({"COLUMNS": "900"}) == 900
    assert pipe_width({"COLUMNS": "wide"}) == PIPE_WIDTH


def test_piped_ranked_table_keeps_names_and_dates_whole(cli):
    """`runner.py submit` into a pipe, with no $COLUMNS: the ranked table's user name,
    file name and date are whole (rich used to cut them to fit 80 columns)."""
    r = cli("submit", str(ROOT / "tests" / "submissions" / "leaderboard" / "fast.py"),
            "--task", "vectoradd", "--device", "cpu", "--user", LONG_USER,
            "--case", "size: 64; seed: 1", env={"COLUMNS": ""})
    assert r.rc == 0, r.out
    assert LONG_USER in r.out and "fast.py" in r.out
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", r.out), r.out
    assert "…" not in r.out, r.out
