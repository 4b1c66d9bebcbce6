"""`runner.py compare A.py B.py` through runner.py, on the CPU, with real workers.

Timed files sleep 2 ms a call where their times are compared: a CPU shared with other
work moves a plain addition's mean by 2x or more between runs, a 2 ms sleep's by a few
percent, so that three runs of each say something."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import BAD, ROOT

PLAIN = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_text()
CASE = ["--case", "size: 64; seed: 1", "--device", "cpu", "--timeout", "60"]


def _file(folder: Path, name: str, sleep_ms: float = 0.0, leaderboard: str = "vectoradd") -> Path:
    """add_torch.py, sleeping `sleep_ms` in every call, naming `leaderboard`."""
    text = PLAIN.replace("#!POPCORN leaderboard vectoradd", f"#!POPCORN leaderboard {leaderboard}")
    if sleep_ms:
        text = text.replace("from task import", "import time\nfrom task import").replace(
            "    a, b = data", f"    time.sleep({sleep_ms / 1000!r})\n    a, b = data")
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.slow  # ten runner.py processes
def test_usage_errors_exit_2(cli, tmp_path):
    a, b = _file(tmp_path, "a.py"), _file(tmp_path, "b.py")
    other = _file(tmp_path, "other.py", leaderboard="mxfp4_mm")
    cases = [
        (["compare", str(a)], "two files"),
        (["compare", str(a), str(b), "--runs", "3", "--min-runs", "4"], "--min-runs"),
        (["compare", str(a), str(b), "--runs", "1"], "--runs"),
        (["compare", str(a), str(b), "--threshold", "1.5"], "--threshold"),
        (["compare", str(a), str(other)], "pass --task"),
        (["compare", str(a), str(other), "--task", "vectoradd"], "remove one of them"),
        (["compare", str(a), str(b), "--case", "size 3"], "key: value"),
        (["compare", str(a), str(tmp_path / "missing.py")], "no such submission file"),
        (["compare", str(a), str(b), "--baseline", "3"], "with --baseline, give one file"),
        (["compare", str(b), "--baseline", "3"], "no results database"),
    ]
    for args, needle in cases:
        r = cli(*args, want_json=False)
        assert r.rc == 2 and needle in r.out, (args, r.out)
        assert "Traceback" not in r.out


@pytest.mark.slow
def test_a_file_that_fails_its_tests_is_named_and_nothing_is_timed(cli, tmp_path):
    a = _file(tmp_path, "a.py")
    r = cli("compare", str(a), str(BAD / "wrong_values.py"), *CASE)
    assert r.rc == 1, r.out
    assert "B (wrong_values.py) fails the tests (failed): nothing was timed" in r.out
    assert r.doc["verdict"] is None and "wrong_values.py" in r.doc["error"]
    assert r.doc["a"]["test_status"] == "passed" and r.doc["b"]["test_status"] == "failed"
    assert r.doc["a"]["means_ns"] == [] and r.doc["b"]["means_ns"] == []
    assert "Traceback" not in r.out


@pytest.mark.slow
def test_two_copies_read_no_difference(cli, tmp_path):
    a, b = _file(tmp_path, "a.py", sleep_ms=2), _file(tmp_path, "b.py", sleep_ms=2)
    r = cli("compare", str(a), str(b), *CASE, "--runs", "3", "--threshold", "0.5")
    assert r.rc == 0, r.out
    low, high = r.doc["ratio"]["ci95"]
    assert 0.5 <= low <= r.doc["ratio"]["geomean"] <= high <= 1.5
    assert r.doc["verdict"].startswith("no difference larger than 50%"), r.doc["verdict"]
    assert r.doc["verdict"] in r.out


@pytest.mark.slow
def test_a_file_2_ms_slower_is_found_slower(cli, tmp_path):
    """B sleeps 2 ms a call more than A: B/A's interval lies above 1; and the --json shape."""
    a, b = _file(tmp_path, "a.py", sleep_ms=1), _file(tmp_path, "b.py", sleep_ms=3)
    r = cli("compare", str(a), str(b), *CASE, "--case", "size: 32; seed: 2", "--runs", "3")
    assert r.rc == 0, r.out
    doc = r.doc
    assert doc["ratio"]["ci95"][0] > 1 and "slower than A" in doc["verdict"]
    assert doc["verdict"] in r.out and "B over A, 3 runs of each" in r.out
    assert doc["runs"] == 3 and doc["order"] == ["A", "B", "B", "A", "A", "B"]
    assert doc["task"]["name"] == "vectoradd" and doc["device"]["kind"] == "cpu"
    for side, path in (("a", a), ("b", b)):
        assert doc[side]["file"] == str(path) and doc[side]["test_status"] == "passed"
        assert doc[side]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert len(doc[side]["means_ns"]) == 3 and all(len(m) == 2 for m in doc[side]["means_ns"])
    assert [c["case"] for c in doc["cases"]] == [{"size": 64, "seed": 1}, {"size": 32, "seed": 2}]
    for case in doc["cases"]:
        low, high = case["ci95"]
        assert 1 < low <= case["ratio"] <= high
    # the ratio is B's time over A's, pair by pair
    pairs = [[tb / ta for ta, tb in zip(ra, rb)]
             for ra, rb in zip(doc["a"]["means_ns"], doc["b"]["means_ns"])]
    first = [p[0] for p in pairs]
    assert min(first) <= doc["cases"][0]["ratio"] <= max(first)


@pytest.mark.slow
def test_a_baseline_is_a_recorded_submissions_code(cli, tmp_path):
    a = _file(tmp_path, "recorded.py", sleep_ms=1)
    assert cli("submit", str(a), "--mode", "test", "--device", "cpu", "--record",
               want_json=False).rc == 0
    a.unlink()  # A comes from the database, not from the file
    other = _file(tmp_path, "other.py", leaderboard="mxfp4_mm")
    r = cli("compare", str(other), "--baseline", "1", want_json=False)
    assert r.rc == 2 and "pass --task" in r.out
    b = _file(tmp_path, "b.py", sleep_ms=3)
    r = cli("compare", str(b), "--baseline", "1", *CASE, "--runs", "2", "--min-runs", "2")
    assert r.rc == 0, r.out
    assert "A = recorded.py (submission 1)" in r.out
    assert r.doc["a"]["submission_id"] == 1 and r.doc["a"]["file"] == "recorded.py"
    assert r.doc["a"]["sha256"] == hashlib.sha256(
        _file(tmp_path, "again.py", sleep_ms=1).read_bytes()).hexdigest()
    assert len(r.doc["a"]["means_ns"]) == 2 and r.doc["verdict"]


def test_the_compare_process_checks_both_requests_without_torch(tmp_path):
    """Its runs are judged in judges forked from its template: the command itself never
    imports torch (a mistake is told at once, and no run pays a second import)."""
    a, b = _file(tmp_path, "a.py"), _file(tmp_path, "b.py")
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from harness.frontends.compare import CompareOptions, _requests, _sides
        opts = CompareOptions(files=[Path({str(a)!r}), Path({str(b)!r})], device="cpu")
        sides = _sides(opts, None)
        _requests(opts, *sides)
        assert sides.a.test.mode == "test" and sides.b.bench.mode == "benchmark"
        assert sides.b.checked.task.name == "vectoradd"
        assert "torch" not in sys.modules, "torch imported"
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
