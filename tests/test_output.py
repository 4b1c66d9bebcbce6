"""Output that reads well: whole cells in a pipe or a CI log."""

import io
import re

import pytest
from conftest import ROOT

from harness.frontends.console import PIPE_WIDTH, make_console, pipe_width

LONG_USER = "Seed 7998ad55 maintainers of the contest"


def test_a_pipe_gets_a_wide_console():
    console = make_console(io.StringIO(), {})
    assert not console.is_terminal and console.width == PIPE_WIDTH
    assert pipe_width({"COLUMNS": "80"}) == PIPE_WIDTH  # never narrower than whole cells need
    assert pipe_width({"COLUMNS": "900"}) == 900
    assert pipe_width({"COLUMNS": "wide"}) == PIPE_WIDTH


@pytest.mark.slow
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


@pytest.mark.slow
def test_no_numpy_warning_where_numpy_is_missing(tmp_path):
    """Without NumPy, `import torch` warns; the judge and the worker silence that warning."""
    assert "Failed to initialize NumPy" in _import_torch_without_numpy(tmp_path, hush=False)
    assert "Failed to initialize NumPy" not in _import_torch_without_numpy(tmp_path, hush=True)


@pytest.mark.slow
def test_the_cpu_quick_start_prints_no_numpy_warning(cli):
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--device", "cpu", "--mode", "test")
    assert r.rc == 0, r.out
    assert "NumPy" not in r.out and "the submission's stderr" not in r.out


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(terminal: bool):
    from rich.console import Console

    from harness.judging.phases import PhaseSpec
    from harness.views.report import LiveProgress

    clock = FakeClock()
    console = Console(file=io.StringIO(), force_terminal=terminal, width=120)
    spec = PhaseSpec("benchmark", "public", [{"size": 8, "seed": 1}, {"size": 9, "seed": 2}],
                     True, timeout=60.0)
    return LiveProgress(console, clock=clock), spec, clock


def test_live_progress_shows_phase_case_calls_and_time_left():
    progress, spec, clock = _progress(terminal=True)
    assert progress.enabled
    with progress:
        progress.phase_start(spec)
        progress.case_start(spec, 0, spec.cases[0])
        fields = progress.bar.tasks[0].fields
        assert fields["case"] == "size: 8; seed: 1" and progress.time_left() == 60
        assert progress.bar.tasks[0].description == "benchmark (public seeds)"
        progress.call_done()
        assert fields["calls"] == ""  # drawn at most every 0.25 s: not yet
        clock.now += 0.3
        progress.call_done()
        assert progress.bar.tasks[0].fields["calls"] == "2 calls"
        clock.now += 0.1
        for _ in range(100):
            progress.call_done()
        assert progress.bar.tasks[0].fields["calls"] == "2 calls"  # rate-limited
        clock.now += 10
        progress.call_done()
        assert progress.bar.tasks[0].fields["calls"] == "103 calls"
        assert round(progress.time_left(), 6) == 49.6
        assert "50 s left" in str(progress.bar.columns[-2].render(progress.bar.tasks[0]))
        progress.case_start(spec, 1, spec.cases[1])
        assert progress.calls == 0 and progress.bar.tasks[0].fields["calls"] == ""


def test_live_progress_is_silent_off_a_terminal():
    progress, spec, clock = _progress(terminal=False)
    assert not progress.enabled
    with progress:
        progress.phase_start(spec)
        progress.case_start(spec, 0, spec.cases[0])
        progress.call_done()
    assert progress.bar.tasks == [] and progress.console.file.getvalue() == ""


H200 = {"kind": "cuda", "name": "NVIDIA H200", "chosen_by": "default", "capability": "90",
        "sm_count": 132, "l2_bytes": 0, "memory_bytes": 0, "clocks": {}, "software": {}}


def test_a_case_moved_by_a_few_long_samples_gets_a_note_under_the_table():
    from harness.consts import Status
    from harness.judging.measure.timing import long_samples
    from harness.results.document import CaseResult, Evaluation, PhaseResult
    from harness.views.report import print_evaluation

    ns = [6_600.0] * 97 + [48_600.0, 178_300.0, 367_900.0]  # vectoradd Triton's case 0, run 78
    quiet, moved = (CaseResult(i, {"size": 1024}, Status.PASSED, score_ns=sum(v) / len(v),
                               stats={"calls": len(v)}, samples={"ns": v, "host_ns": [0.0] * len(v)})
                    for i, v in enumerate(([6_600.0] * 100, ns)))
    moved.integrity["long_samples"] = long_samples(ns, 4, 0.05)
    ev = Evaluation(task={"name": "vectoradd", "ranking_by": "geom"},
                    submission={"name": "add_triton.py"}, device=H200,
                    mode="benchmark", started="", phases=[PhaseResult("benchmark", "public",
                                                                      [quiet, moved])])
    out = io.StringIO()
    print_evaluation(make_console(out, {}), ev)
    text = out.getvalue()
    assert "note (benchmark case 1): 3 of 100 samples took over 4x the median (6.60 µs" in text
    assert "the longest 367.9 µs" in text and text.count("note (") == 1  # case 0 has none


def test_the_benchmark_table_says_what_hid_the_launch():
    """The caption names the GPU sleep's window."""
    caption = "hidden up to 100 µs per sample"
    from harness.consts import Status
    from harness.results.document import CaseResult, Evaluation, PhaseResult
    from harness.views.report import print_evaluation

    case = CaseResult(0, {"size": 1024}, Status.PASSED, score_ns=6_600.0, stats={"calls": 10})
    case.integrity["hidden_window_us"] = 100.0
    ev = Evaluation(task={"name": "vectoradd", "ranking_by": "geom"},
                    submission={"name": "add_triton.py"}, device=H200, mode="benchmark",
                    started="", phases=[PhaseResult("benchmark", "public", [case])])
    out = io.StringIO()
    print_evaluation(make_console(out, {}), ev)
    assert caption in " ".join(out.getvalue().split())


def _remarks(out: str) -> list[str]:
    """The notes, flags and warnings a report printed (one line each off a terminal)."""
    return [line for line in out.splitlines() if line.startswith(("note (", "flag (", "warning:"))]


@pytest.mark.slow
@pytest.mark.parametrize("file,kind", [("tests/submissions/web/chatty.py", "note"),
                                       ("tests/adversarial/thread_lingers.py", "flag")],
                         ids=["long samples", "a thread left running"])
def test_notes_and_flags_fit_in_two_lines_and_verbose_prints_them_whole(cli, file, kind):
    """A default run prints each note and flag in two lines of 100 columns at most; the
    result document and --verbose keep the whole text."""
    import textwrap

    from harness.results.document import case_notes

    args = ("submit", file, "--task", "vectoradd", "--mode", "benchmark", "--device", "cpu",
            "--case", "size: 256; seed: 1")
    short = cli(*args, env={"COLUMNS": "100"})
    assert short.rc == 0, short.out
    remarks = _remarks(short.out)
    assert any(line.startswith(f"{kind} (") for line in remarks), short.out
    for line in remarks:
        assert len(textwrap.wrap(line, 100)) <= 2, line
    whole = cli(*args, "--verbose")
    [case] = whole.doc["phases"][0]["cases"]
    texts = case["flags"] + case_notes(case["integrity"])
    if kind == "note":  # chatty.py's notes run past two lines: shortened by default
        assert len(max(texts, key=len)) > 200, texts
        assert "--verbose prints them whole" in short.out
    flat = " ".join(whole.out.split())
    assert all(" ".join(t.split()) in flat for t in texts), whole.out
    assert "--verbose prints them whole" not in whole.out
