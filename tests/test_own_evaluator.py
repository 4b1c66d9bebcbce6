"""A task folder whose own eval.py defines the interface (no task.py, no custom_kernel):
it runs through that evaluator in the contained worker, its POPCORN_FD report becomes the
result, the result says which of the harness's checks did not apply, and it never ranks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

EVAL = '''\
import os, sys, time
from submission import double

def cases(path):
    out = []
    for line in open(path):
        if line.strip():
            out.append({k.strip(): int(v) for k, v in (p.split(":") for p in line.split(";"))})
    return out

def main():
    log = os.fdopen(int(os.environ["POPCORN_FD"]), "w")
    mode, tests = sys.argv[1], cases(sys.argv[2])
    good = True
    if mode == "test":
        log.write(f"test-count: {len(tests)}\\n")
        for i, t in enumerate(tests):
            ok = double(t["n"]) == 2 * t["n"]
            good &= ok
            log.write(f"test.{i}.status: {'pass' if ok else 'fail'}\\n")
            if not ok:
                log.write(f"test.{i}.error: double({t['n']}) is wrong\\n")
    else:
        log.write(f"benchmark-count: {len(tests)}\\n")
        for i, t in enumerate(tests):
            times = []
            for _ in range(5):
                t0 = time.perf_counter_ns(); double(t["n"]); times.append(time.perf_counter_ns() - t0)
            mean = sum(times) / len(times)
            log.write(f"benchmark.{i}.runs: 5\\nbenchmark.{i}.mean: {mean}\\nbenchmark.{i}.std: 0\\n"
                      f"benchmark.{i}.err: 0\\nbenchmark.{i}.best: {min(times)}\\n"
                      f"benchmark.{i}.worst: {max(times)}\\n")
    log.write(f"check: {'pass' if good else 'fail'}\\n")
    log.flush()

main()
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "doubling"
    root.mkdir()
    (root / "eval.py").write_text(EVAL)
    (root / "task.yml").write_text(textwrap.dedent("""\
        files:
          - {name: submission.py, source: "@SUBMISSION@"}
          - {name: eval.py, source: eval.py}
        lang: py
        description: double a number (the evaluator defines the interface)
        config: {main: eval.py}
        tests: [{n: 1}, {n: 21}]
        benchmarks: [{n: 5}]
    """))
    return root


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "sub.py"
    path.write_text(body)
    return path


def test_a_right_submission_passes_through_the_folders_evaluator(tmp_path, folder):
    sub = write(tmp_path, "def double(n):\n    return 2 * n\n")
    r = run_cli("submit", str(sub), "--task", str(folder), "--device", "cpu", "--mode",
                "benchmark", "--no-record", json_path=tmp_path / "out.json")
    assert r.rc == 0, r.out
    assert r.doc["harness"]["evaluator"]["kind"] == "the task's own evaluator"
    assert r.doc["harness"]["evaluator"]["not_applied"]
    case = r.doc["phases"][0]["cases"][0]
    assert case["stats"]["calls"] == 5 and case["score_ns"] > 0
    assert "own checks were not applied" in " ".join(r.doc["warnings"])
    assert r.doc["harness"]["head_start"] is False  # the early worker was stopped, unused


def test_a_wrong_submission_fails_with_the_evaluators_message(tmp_path, folder):
    sub = write(tmp_path, "def double(n):\n    return 2 * n if n > 1 else 0\n")
    r = run_cli("submit", str(sub), "--task", str(folder), "--device", "cpu", "--mode", "test",
                "--no-record", json_path=tmp_path / "out.json")
    assert r.rc == 1, r.out
    statuses = [c["status"] for c in r.doc["phases"][0]["cases"]]
    assert statuses == ["failed", "passed"]
    assert "double(1) is wrong" in r.doc["phases"][0]["cases"][0]["message"]


def test_it_is_recorded_but_never_ranked(tmp_path, folder):
    sub = write(tmp_path, "def double(n):\n    return 2 * n\n")
    r = run_cli("submit", str(sub), "--task", str(folder), "--device", "cpu",
                "--db", str(tmp_path / "r.db"), json_path=tmp_path / "out.json")
    assert r.rc == 0, r.out
    assert "own evaluator" in r.doc["record"]["refused"]
    assert r.doc["record"]["rank"] is None


def test_a_crashing_evaluator_is_a_clean_verdict(tmp_path, folder):
    sub = write(tmp_path, "import os\ndef double(n):\n    os._exit(3)\n")
    r = run_cli("submit", str(sub), "--task", str(folder), "--device", "cpu", "--mode", "test",
                "--no-record", json_path=tmp_path / "out.json")
    assert r.rc == 3, r.out
    assert "Traceback (most recent call last)" not in r.out


def test_the_evaluators_process_is_capped_from_its_start_over_what_the_judge_maps(tmp_path,
                                                                                  folder):
    """It imports the submission before the harness could cap it as a worker caps itself:
    its whole process is capped at what the judge maps (torch imported) plus the setting,
    the cap the result records and the submission sees."""
    config = tmp_path / "limits.yaml"
    config.write_text("cpu:\n  worker:\n    cpu_memory_limit_gb: 0.5\n")
    sub = write(tmp_path, "import resource\n"
                          "print('cap', resource.getrlimit(resource.RLIMIT_AS)[0], flush=True)\n"
                          "def double(n):\n    return 2 * n\n")
    r = run_cli("submit", str(sub), "--task", str(folder), "--device", "cpu", "--mode", "test",
                "--no-record", "--config", str(config), json_path=tmp_path / "out.json")
    assert r.rc == 0, r.out
    told = r.doc["worker_output"]["stdout"].split()
    cap = int(told[told.index("cap") + 1])
    assert cap == r.doc["harness"]["memory_cap_bytes"] > (1 << 30) // 2
