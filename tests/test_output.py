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


NO_NUMPY = 'raise ModuleNotFoundError("No module named \'numpy\'", name="numpy")\n'


def _import_torch_without_numpy(tmp_path, hush: bool) -> str:
    import subprocess
    import sys

    (tmp_path / "numpy").mkdir(exist_ok=True)
    (tmp_path / "numpy" / "__init__.py").write_text(NO_NUMPY)
    code = ("from harness.quiet import hush_numpy_warning; hush_numpy_warning(); " if hush
            else "") + "import torch"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_no_numpy_warning_where_numpy_is_missing(tmp_path):
    """Without NumPy, `import torch` warns; the judge and the worker silence that warning."""
    assert "Failed to initialize NumPy" in _import_torch_without_numpy(tmp_path, hush=False)
    assert "Failed to initialize NumPy" not in _import_torch_without_numpy(tmp_path, hush=True)


def test_the_cpu_quick_start_prints_no_numpy_warning(cli):
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--device", "cpu", "--mode", "test")
    assert r.rc == 0, r.out
    assert "NumPy" not in r.out and "the submission's stderr" not in r.out
