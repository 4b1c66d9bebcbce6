"""Example submissions through runner.py on the CPU: test and benchmark modes, the JSON
document, the directive, case strings, and the small commands."""

import pytest
from conftest import MAILBOX_ON_CPU, ROOT, SHARED, cpu_only, needs_shared, patched_runner, run_cli


# Not marked slow: the quick loop (`-m "not slow"`) keeps this one submit end to end.
@pytest.mark.slow
def test_test_mode_from_the_directive(cli):
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test")
    assert r.rc == 0, r.out
    doc = r.doc
    assert doc["schema"] == "kernel-harness/result" and doc["version"] == 1
    assert doc["task"]["name"] == "vectoradd" and doc["status"] == "passed"
    assert [c["status"] for c in doc["phases"][0]["cases"]] == ["passed"] * 4
    assert "CPU" in r.out and "no GPU found" in r.out  # the device, said plainly
    # judged by a judge forked from the command's template, its first worker a fork of it
    assert doc["harness"]["head_start"] and doc["harness"]["forked_worker"]


@pytest.mark.slow
def test_the_submit_command_imports_no_torch_its_judge_does(cli):
    """One import of torch serves a run: the template's, which its judge and the judge's
    first worker are forked from; the command itself imports none (-X importtime lists
    every module this process imports, on its standard error)."""
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test",
            python=("-X", "importtime"))
    assert r.rc == 0 and r.doc["status"] == "passed", r.out
    imported = [line.rsplit("|", 1)[-1].strip() for line in r.out.splitlines()
                if line.startswith("import time:")]
    assert "rich" in imported and "torch" not in imported and "numpy" not in imported


@pytest.mark.slow
def test_benchmark_mode_with_a_case_string(cli):
    r = cli("submit", "submissions/vectoradd/add_inplace.py", "--mode", "benchmark",
            "--case", "size: 128; seed: 9", "--case", "size: 64; seed: 3")
    assert r.rc == 0, r.out
    phase = r.doc["phases"][0]
    assert [c["case"] for c in phase["cases"]] == [{"size": 128, "seed": 9}, {"size": 64, "seed": 3}]
    for c in phase["cases"]:
        s = c["stats"]
        assert s["calls"] >= 3 and s["best"] <= s["median"] <= s["worst"]
        assert c["integrity"]["clocks"]["flagged"] is False
        assert c["integrity"]["timing_seconds"] < c["wall_seconds"] <= phase["wall_seconds"]
        parts = c["wall_parts"]  # each step of the judge's work, together the case's wall
        assert list(parts) == ["inputs", "sharing", "calibration", "first_call", "warm_up",
                               "timing", "checks", "release", "clock_reading"]
        assert all(v >= 0 for v in parts.values())
        # the timing loop of every attempt (one timed again after a noise flag has two)
        loops = [c["integrity"]["timing_seconds"]] + [
            a["timing_seconds"] for a in c["integrity"].get("retried", [])]
        assert parts["timing"] <= sum(loops) + 1e-3
        assert 0.9 * c["wall_seconds"] <= sum(parts.values()) <= c["wall_seconds"]
    assert phase["score_ns"] > 0
    assert "mean ± std" in r.out
    assert "time: start-up" in r.out and "benchmark (public)" in r.out
    # where the time went: worker start-up, then the phase, all within the run's wall time
    assert 0 < r.doc["startup_seconds"] and 0 < phase["wall_seconds"]
    assert r.doc["startup_seconds"] + phase["wall_seconds"] <= r.doc["wall_seconds"]
    from harness.results.document import document_to_evaluation
    assert document_to_evaluation(r.doc).phases[0].wall_seconds == phase["wall_seconds"]


@pytest.mark.slow
def test_test_and_benchmark_modes_record_nothing(cli):
    cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test")
    assert not cli.db.exists()


@pytest.mark.slow
def test_tasks_and_template(cli, tmp_path):
    r = cli("tasks", want_json=False)
    assert r.rc == 0 and "nvfp4_group_gemm" in r.out and "mxfp4_mm" in r.out and "B200" in r.out
    r = cli("template", "vectoradd", want_json=False)
    assert r.rc == 0 and "def custom_kernel" in r.out
    out = tmp_path / "mine.py"
    assert cli("template", "nvfp4_group_gemm", "-o", str(out), want_json=False).rc == 0
    assert "#!POPCORN leaderboard nvfp4_group_gemm" in out.read_text()
    assert cli("template", "vectoradd", "--lang", "CUDA", want_json=False).rc == 2


@pytest.mark.slow
def test_task_folder_by_path(cli):
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--task", "tasks/vectoradd",
            "--mode", "test")
    assert r.rc == 0


@pytest.mark.slow
@cpu_only
@needs_shared
def test_nvfp4_seed_needs_a_gpu_here(cli):
    r = cli("submit", str(SHARED / "seeds" / "nvfp4_group_gemm_dot_scaled.py"),
            "--task", "nvfp4_group_gemm", "--mode", "test")
    assert r.rc == 1
    first = r.doc["phases"][0]["cases"][0]
    assert first["status"] == "needs a GPU" and "needs a GPU" in first["message"]
    assert "Traceback (most recent call last)" not in r.out


@pytest.mark.slow
@needs_shared
def test_mxfp4_seed_gets_the_aiter_verdict(cli):
    r = cli("submit", str(SHARED / "seeds" / "mxfp4_mm_fused_quant_aiter.py"),
            "--task", "mxfp4_mm", "--mode", "test")
    assert r.rc == 1
    err = r.doc["load_error"]
    assert "aiter" in err["title"] and "amd-aiter" in err["hint"] and "ROCm" in err["hint"]
    assert "Traceback (most recent call last)" not in r.out


@pytest.mark.slow
def test_pytorch_examples_pass_every_test_on_the_cpu(cli):
    for path in ("submissions/nvfp4_group_gemm/torch_dequant.py",
                 "submissions/mxfp4_mm/torch_dequant.py"):
        r = cli("submit", path, "--mode", "test")
        assert r.rc == 0, r.out
        assert len(r.doc["phases"][0]["cases"]) in (10, 4)


def test_help_runs():
    assert run_cli("--help").rc == 0


# runner.py with the mailbox, and judge and worker polling 10 ms for a message, as on a
# GPU (SPIN_SECONDS: never on the CPU, where they share two cores), so that the worker is
# still polling when the next request comes and the judge skips the wake handshake.
POLLING = patched_runner(*MAILBOX_ON_CPU, "from harness.judging.measure import timing",
                         "timing.SPIN_SECONDS['cpu'] = 0.01")


@pytest.mark.slow
def test_mailbox_round_trips(cli):
    """The shared-memory mailbox (the GPU default) on the CPU: timed calls, and errors
    that travel on the pipe beside it without desynchronizing the two channels."""
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "benchmark",
            "--case", "size: 64; seed: 2", python=POLLING)
    assert r.rc == 0, r.out
    case = r.doc["phases"][0]["cases"][0]
    assert case["stats"]["calls"] >= 3 and case["integrity"]["worker_says"]["busy_ns"] > 0
    from conftest import BAD

    r = cli("submit", str(BAD / "raises.py"), "--task", "vectoradd", "--mode", "test",
            python=POLLING)
    assert [c["status"] for c in r.doc["phases"][0]["cases"]] == ["error"] * 4


@pytest.mark.slow
def test_repeat_runs_benchmark_mode_in_fresh_workers_and_reads_them_together(cli, tmp_path):
    summary = tmp_path / "summary.md"
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "benchmark", "--repeat", "2",
            "--case", "size: 64; seed: 2", "--case", "size: 128; seed: 3",
            "--summary-md", str(summary))
    assert r.rc == 0, r.out
    markdown = summary.read_text()
    assert "#### Benchmarks over 2 runs" in markdown and "| run 1 | run 2 | median | spread |" in markdown
    assert "passed (the worst of 2 runs; the last below)" in markdown
    assert "run 2 of 2" in r.out and "Benchmarks over 2 runs, each in a fresh worker" in r.out
    rep = r.doc["repeat"]
    assert rep["runs"] == 2 and rep["passed"] == [True, True] and len(rep["documents"]) == 1
    first, last = rep["documents"][0], r.doc  # the document is the last run's, the first kept
    assert first["started"] <= last["started"] and first["mode"] == last["mode"] == "benchmark"
    for i, case in enumerate(rep["cases"]):
        means = [first["phases"][0]["cases"][i]["score_ns"], last["phases"][0]["cases"][i]["score_ns"]]
        assert case["means_ns"] == means and case["median_ns"] == pytest.approx(sum(means) / 2)
        assert case["spread"] == pytest.approx(max(means) / min(means))
    medians = [c["median_ns"] for c in rep["cases"]]
    assert rep["score_ns"] == pytest.approx((medians[0] * medians[1]) ** 0.5)  # geom


@pytest.mark.slow
def test_repeat_is_for_benchmark_mode_and_a_failing_run_sets_the_exit_code(cli):
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test", "--repeat", "2",
            want_json=False)
    assert r.rc == 2 and "--repeat runs benchmark mode only" in r.out
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "benchmark", "--repeat", "0",
            want_json=False)
    assert r.rc == 2 and "1 or more" in r.out
    r = cli("submit", str(ROOT / "tests/submissions/leaderboard/wrong.py"), "--task", "vectoradd",
            "--mode", "benchmark", "--repeat", "2", "--case", "size: 64; seed: 2")
    assert r.rc == 1 and r.doc["repeat"]["passed"] == [False, False]
    assert r.doc["repeat"]["worst_status"] == "failed" and r.doc["repeat"]["exit_code"] == 1
    assert r.doc["repeat"]["score_ns"] is None and "failed" in r.out
