"""The benchmark scripts on the CPU: what of them can run without a GPU.

Their measurements need CUDA; here they start (--help), their pieces that do not touch
the GPU work (benchmarks/_load.py, the settings variants of overhead.py, the knobs that
tune_kernels.py sweeps), and the per-session GPU scripts parse and name files that exist.
"""

from __future__ import annotations

import ast
import json
import math
import re
import statistics
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml
from conftest import ROOT

from harness.settings import Settings

BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))
GPU_SCRIPTS = ["benchmarks/gpu/smoke.sh", "benchmarks/gpu/tune.sh", "benchmarks/gpu/multi_gpu.sh",
               "benchmarks/gpu/ab_patch.sh",
               "benchmarks/gpu/slow_calls.sh"]


def python(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


@pytest.mark.parametrize("script,option", [("benchmarks/fidelity.py", "--repeats"),
                                           ("benchmarks/overhead.py", "--out"),
                                           ("benchmarks/honest_runs.py", "--stop-after"),
                                           ("benchmarks/compile_rerun.py", "--runs"),
                                           ("benchmarks/host_speed.py", "--variants"),
                                           ("benchmarks/shared_buffers.py", "--sizes"),
                                           ("benchmarks/call_trace.py", "--public-loop")])
def test_script_starts(script, option):
    proc = python(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:") and option in proc.stdout


@pytest.mark.slow
def test_load_helpers_run_a_submission_in_process():
    """benchmarks/_load.py: a task's reference and cases, an example imported beside it."""
    code = (
        "from _load import ROOT, load_submission, load_task_modules\n"
        "ref, tests, benches = load_task_modules('vectoradd')\n"
        "assert tests and benches\n"
        "sub = load_submission(ROOT / 'submissions' / 'vectoradd' / 'add_torch.py')\n"
        "data = ref.generate_input(**tests[1], device='cpu')\n"
        "print(ref.check_implementation(data, sub.custom_kernel(data)))\n"
    )
    proc = python("-c", code, cwd=BENCH)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(True, '')"


def test_overhead_variants_are_real_settings(tmp_path):
    """Each variant of overhead.py, written as its --config file, loads and takes effect
    (a misspelt key would raise in Settings.load)."""
    import overhead

    assert (overhead.TASK / "submission.py").is_file()
    for name, variant in overhead.VARIANTS.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(variant or {"timing": {}}))
        timing = Settings.load(path).timing
        for key, value in variant.get("timing", {}).items():
            assert getattr(timing, key) == value, (name, key)


def test_fidelity_reads_the_hidden_window_from_its_config_and_task(tmp_path):
    import fidelity

    task = BENCH / "tasks" / "small_kernel"
    config = tmp_path / "extra.yaml"
    config.write_text("timing:\n  hidden_window_us: 12.5\n")
    assert fidelity._launch_ahead_us(str(config), task) == 12.5
    counted = tmp_path / "counted.yaml"
    counted.write_text("timing:\n  host_launch: counted\n")
    assert fidelity._launch_ahead_us(str(counted), task) == 0.0
    assert fidelity.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert all((BENCH / "tasks" / w / "submission.py").is_file() for w in fidelity.WORKLOADS)


def module_names(path) -> set[str]:
    """The names a Python file assigns at module level."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


@pytest.mark.parametrize("sweep", ["nvfp4", "mxfp4"])
def test_tune_kernels_sets_knobs_the_examples_have(monkeypatch, sweep):
    """tune_kernels.py sweeps module-level knobs of a Triton example: each one it sets must
    exist in that file, or the sweep would time the same kernel every time."""
    pytest.importorskip("triton")
    import tune_kernels

    calls = []
    monkeypatch.setattr(tune_kernels, "sweep", lambda *a: calls.append(a))
    getattr(tune_kernels, sweep)(False)
    (task, path, configs, apply), = calls
    assert (ROOT / "tasks" / task / "task.yml").is_file()
    knobs = module_names(ROOT / path)
    assert len(configs) > 1
    for cfg in configs:
        stand_in = SimpleNamespace()
        apply(stand_in, cfg)
        assert vars(stand_in) and set(vars(stand_in)) <= knobs, (path, cfg)


@pytest.mark.parametrize("script", GPU_SCRIPTS)
def test_gpu_script_parses_and_names_existing_files(script):
    """`bash -n`, and every repository file the script names exists (a `for X in a b`
    list fills in `$X`)."""
    proc = subprocess.run(["bash", "-n", script], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    text = (ROOT / script).read_text()
    loops = {m[1]: m[2].split() for m in re.finditer(r"for (\w+) in ([^;$]+); do", text)}
    named = re.findall(r"(?:submissions|tests|benchmarks)/[\w/.$-]+\.py", text)
    assert named
    for path in named:
        var = re.search(r"\$(\w+)", path)
        paths = [path] if var is None else [path.replace(var[0], v) for v in loops[var[1]]]
        for p in paths:
            assert (ROOT / p).is_file(), f"{script} names {p}, which does not exist"


def test_contest_parity_help_and_pairs(tmp_path):
    """contest_parity.py parses its arguments, and names every pair's files (the public
    ones under a stand-in reference-kernels tree)."""
    run = subprocess.run([sys.executable, str(BENCH / "contest_parity.py"), "--help"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "--reference-kernels" in run.stdout
    import contest_parity

    pairs = contest_parity.pairs(tmp_path, ["nvfp4", "mxfp4"])
    assert [p["sub"].is_file() for p in pairs] == [True] * 4
    assert {p["eval"].name for p in pairs} == {"eval_better_bench_grouped_gemm.py", "eval.py"}


def test_contest_parity_shows_flagged_runs_and_keeps_their_clocks():
    import contest_parity

    check = {"flagged": True, "gap_median_ns": 3.6e6}
    doc = {"phases": [{"cases": [
        {"flags": [], "integrity": {"clock_samples": 5}},
        {"flags": ["the judge's clock saw ..."],
         "integrity": {"clocks": check, "clock_samples": 2, "worker_says": {"busy_ns": 1.0},
                       "hidden_window_us": 20000.0, "launch_counted": {"mean": 9.0e5}}},
    ]}]}
    assert contest_parity.flagged_cases(doc) == " [flagged: case 1]"
    assert contest_parity.flagged_cases({"phases": [{"cases": [{"flags": []}]}]}) == ""
    doc["phases"][0]["cases"][0]["integrity"]["retried"] = [{"flagged_by": ["clocks"]}]
    assert contest_parity.flagged_cases(doc) == " [flagged: case 1] [timed again: case 0]"
    cases = contest_parity._where_time_went(doc)["cases"]
    assert cases[0]["retried"] == [{"flagged_by": ["clocks"]}] and cases[1]["retried"] is None
    assert cases[1]["clocks"] == {"check": check, "samples": 2, "worker_says": {"busy_ns": 1.0},
                                  "hidden_window_us": 20000.0, "probes": {"mean": 9.0e5}}
    assert cases[0]["clocks"]["samples"] == 5 and cases[0]["clocks"]["probes"] is None


def test_contest_parity_merge_reports_ratios_and_each_evaluators_spread(tmp_path):
    """--merge pools runs of several files: per-case medians, their ratio, and how far each
    evaluator moved between runs (highest over lowest per-run geomean)."""
    def run(means: list[float]) -> dict:
        return {"means_ns": means, "wall_s": 1.0, "passed": True, "roundtrip_median_ns": 2e5}

    for i, (pub, har) in enumerate([([100.0, 400.0], [110.0, 400.0]),
                                    ([200.0, 800.0], [100.0, 440.0])]):
        (tmp_path / f"p{i}.json").write_text(json.dumps({"runs": 1, "pairs": [
            {"name": "pair", "public": [run(pub)], "harness": [run(har)]}]}))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(BENCH / "contest_parity.py"), "--merge",
                           str(tmp_path / "p0.json"), str(tmp_path / "p1.json"), "--out", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "parity.json").read_text())["pairs"][0]["summary"]
    assert summary["public_case_ns"] == [150.0, 600.0]
    assert summary["harness_case_ns"] == [105.0, 420.0]
    assert summary["public_run_spread"] == pytest.approx(2.0)
    assert summary["harness_run_spread"] == pytest.approx(1.0)  # 110 x 400 = 100 x 440
    assert "run-to-run spread public 2.000" in done.stdout
    # both cases at 0.7 (beyond 15%), but each inside the public's own range over its runs
    assert summary["verdict"]["met"] is False
    assert summary["verdict"]["geomean_within"] is False
    assert summary["verdict"]["missed_cases"] == [
        {"case": 0, "ratio": pytest.approx(0.7), "public_range_ns": [100.0, 200.0],
         "inside_public_range": True},
        {"case": 1, "ratio": pytest.approx(0.7), "public_range_ns": [400.0, 800.0],
         "inside_public_range": True}]
    assert "case 0 at 0.700, inside the public evaluator's own range 0.1-0.2 µs" in done.stdout


def test_contest_parity_merge_keeps_only_the_pairs_asked_for(tmp_path):
    """--merge with --only pools the named pairs alone: a file's cut pair stays out of a
    record that takes that pair from another file."""
    import contest_parity

    def entry(name: str, n: int) -> dict:
        runs = [{"means_ns": [100.0], "wall_s": 1.0, "passed": True, "roundtrip_median_ns": 1e5}
                for _ in range(n)]
        return {"name": name, "public": runs, "harness": runs}

    (tmp_path / "a.json").write_text(json.dumps({"pairs": [entry("x torch.py", 3),
                                                           entry("x triton.py", 1)]}))
    (tmp_path / "b.json").write_text(json.dumps({"pairs": [entry("x triton.py", 3)]}))
    both = contest_parity.merge([tmp_path / "a.json", tmp_path / "b.json"])
    assert [len(e["public"]) for e in both["pairs"]] == [3, 4]
    torch_only = contest_parity.merge([tmp_path / "a.json"], ["torch"])
    assert [e["name"] for e in torch_only["pairs"]] == ["x torch.py"]
    assert torch_only["only"] == ["torch"]


def test_contest_parity_verdict_is_issue_14s_criterion():
    sys.path.insert(0, str(BENCH))
    from contest_parity import verdict

    def summary(pub: list[float], har: list[float]) -> dict:
        ratio = math.exp(statistics.fmean(math.log(h / p) for p, h in zip(pub, har)))
        return {"public_case_ns": pub, "harness_case_ns": har, "geomean_ratio": ratio}

    runs = [{"means_ns": [100.0, 1000.0]}, {"means_ns": [104.0, 1040.0]}]
    assert verdict(summary([102.0, 1020.0], [105.0, 1000.0]), runs)["met"] is True
    far = verdict(summary([102.0, 1020.0], [125.0, 1000.0]), runs)  # case 0 at 1.225
    assert far["met"] is False and far["geomean_within"] is False
    assert far["missed_cases"][0]["inside_public_range"] is False
    assert far["missed_cases"][0]["case"] == 0
    # a case the harness never timed (it failed there) is a miss, never a match
    failed = verdict(summary([102.0], [105.0]) | {"public_case_ns": [102.0, 1020.0],
                                                  "harness_case_ns": [105.0]}, runs)
    assert failed["met"] is False
    assert failed["missed_cases"] == [{"case": 1, "ratio": None, "not_timed_by": "the harness"}]


def test_sandbox_startup_help():
    run = subprocess.run([sys.executable, str(BENCH / "sandbox_startup.py"), "--help"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "--device" in run.stdout


def test_parity_noise_asks_the_criterion_of_the_public_evaluator_against_itself(tmp_path):
    """parity_noise.py draws two groups of k runs every way: the public evaluator's own runs
    split in two (A/A) and k of the harness's against k of the public's (A/B)."""
    def run(means: list[float]) -> dict:
        return {"means_ns": means, "wall_s": 1.0, "passed": True}

    # the public evaluator moves 1.0-1.3x between runs; the harness sits at 1.0 throughout
    public = [[100.0, 1000.0], [130.0, 1300.0], [100.0, 1000.0], [130.0, 1300.0]]
    (tmp_path / "p.json").write_text(json.dumps({"pairs": [{
        "name": "pair", "public": [run(m) for m in public],
        "harness": [run([100.0, 1000.0]) for _ in public] + [run([100.0, None])]}]}))
    out = tmp_path / "noise.json"
    done = python(str(BENCH / "parity_noise.py"), str(tmp_path / "p.json"), "--k", "2",
                  "--out", str(out))
    assert done.returncode == 0, done.stderr
    row = json.loads(out.read_text())[0]
    assert row["harness_runs"] == 4  # the run that missed a case is left out
    assert row["paired_run_ratios"] == pytest.approx([1.0, 1 / 1.3, 1.0, 1 / 1.3])
    same = row["public_vs_public"]
    # three splits, each both ways: {0,1}|{2,3} and {0,3}|{1,2} equal (met); {0,2}|{1,3}
    # 1.3x apart
    assert same["draws"] == 6 and same["met"] == 4
    assert same["apart_max"] == pytest.approx(0.3)
    cross = row["harness_vs_public"]
    # 6 public pairs x 6 harness pairs; a public pair's median is 1.0, 1.15 or 1.3
    assert cross["draws"] == 36 and cross["met"] == 6  # only {0,2} (median 1.0) meets it
    assert cross["ratio_min"] == pytest.approx(1 / 1.3)
    assert "criterion met in 4 of 6 draws (67%)" in done.stdout


def test_parity_noise_reads_too_few_runs_as_such(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({"pairs": [{
        "name": "pair", "public": [{"means_ns": [1.0], "wall_s": 1.0}],
        "harness": [{"means_ns": [1.0], "wall_s": 1.0}]}]}))
    done = python(str(BENCH / "parity_noise.py"), str(tmp_path / "p.json"))
    assert done.returncode == 0, done.stderr
    assert "too few runs for two groups of 3" in done.stdout


def test_host_speed_runs_its_triton_kind_on_the_gpu_only():
    import host_speed

    assert host_speed.kinds_for("cpu") == ["dispatch", "python"]
    assert host_speed.kinds_for("cuda") == ["dispatch", "python", "triton", "triton_input"]
    for kind in ("triton", "triton_input"):
        ast.parse(host_speed.KINDS[kind])  # a submission file as written
        assert "SOURCE" not in host_speed.KINDS[kind]
    # the two differ only in what the kernel reads: memory the call made, or the input
    assert "src = y\n" in host_speed.KINDS["triton"]
    assert "src = x\n" in host_speed.KINDS["triton_input"]


def test_parity_noise_paired_interval_is_students_t_on_the_logs():
    import parity_noise

    assert parity_noise.paired_interval([1.1]) is None
    g, low, high = parity_noise.paired_interval([1.0, 1.21])  # logs 0 and 2 ln 1.1
    assert g == pytest.approx(1.1)
    half = 12.706 * (2 * math.log(1.1) / math.sqrt(2)) / math.sqrt(2)  # t(1) * sd / sqrt(n)
    assert (low, high) == pytest.approx((1.1 * math.exp(-half), 1.1 * math.exp(half)))
    # more runs of the same spread narrow it; df 13 takes df 12's quantile (the lower key)
    many = parity_noise.paired_interval([1.0, 1.21] * 7)
    assert many[2] / many[1] < high / low
    sd = statistics.stdev([0.0, 2 * math.log(1.1)] * 7)
    assert many[2] == pytest.approx(1.1 * math.exp(2.179 * sd / math.sqrt(14)))
    lots = parity_noise.paired_interval([1.0, 1.21] * 70)  # df 139: t(120), not the limit
    sd = statistics.stdev([0.0, 2 * math.log(1.1)] * 70)
    assert lots[2] == pytest.approx(1.1 * math.exp(1.980 * sd / math.sqrt(140)))


def _fake_parity_run(monkeypatch, tmp_path, *argv: str, _then=None) -> tuple[list[tuple], dict, str]:
    """contest_parity.main() with the two evaluators faked: what ran, in order, and the report
    (`_then`: a last change to the fakes before it runs)."""
    import contextlib
    import io

    import contest_parity

    order: list[tuple] = []
    monkeypatch.setattr(contest_parity, "pairs", lambda refk, which: [{"name": "a"}, {"name": "b"}])

    def public(pair, mode, tmp):
        order.append(("public", pair["name"], mode))
        return [100.0, 200.0], 2.0, True

    def harness(pair, mode, tmp, config=None):
        order.append(("harness", pair["name"], mode))
        return [110.0, 200.0], 1.0, True, {"phases": [{"cases": [{}, {}]}]}

    monkeypatch.setattr(contest_parity, "public_run", public)
    monkeypatch.setattr(contest_parity, "harness_run", harness)
    if _then is not None:
        _then()
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["contest_parity.py", "--reference-kernels", str(tmp_path),
                                      "--out", str(out), *argv])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert contest_parity.main() == 0
    return order, json.loads((out / "parity.json").read_text()), printed.getvalue()


def test_contest_parity_runs_pair_by_pair_or_interleaved(monkeypatch, tmp_path):
    order, report, _ = _fake_parity_run(monkeypatch, tmp_path, "--runs", "2", "--skip-test-mode")
    assert [name for who, name, _ in order if who == "public"] == ["a", "a", "b", "b"]
    order, report, _ = _fake_parity_run(monkeypatch, tmp_path, "--runs", "2", "--skip-test-mode",
                                        "--interleave")
    # each public run is followed by the harness's on the same pair
    assert order[:4] == [("public", "a", "benchmark"), ("harness", "a", "benchmark"),
                         ("public", "b", "benchmark"), ("harness", "b", "benchmark")]
    assert [name for who, name, _ in order if who == "public"] == ["a", "b", "a", "b"]
    assert [len(e["public"]) for e in report["pairs"]] == [2, 2]
    assert report["pairs"][0]["summary"]["geomean_ratio"] == pytest.approx(1.1 ** 0.5)


def test_contest_parity_runs_zero_gives_test_mode_walls_alone(monkeypatch, tmp_path):
    order, report, printed = _fake_parity_run(monkeypatch, tmp_path, "--runs", "0")
    assert {mode for _, _, mode in order} == {"test"} and len(order) == 4
    assert report["pairs"][0]["test_mode_wall_s"] == {
        "public": 2.0, "harness": 1.0, "public_passed": True, "harness_passed": True}
    assert "a: test mode wall 2.0 s vs 1.0 s (passed: public True, harness True)" in printed
    assert "geomean public" not in printed  # no benchmark runs: no ratio to state


def test_contest_parity_keeps_a_finished_pair_whole_when_a_later_one_is_cut(monkeypatch, tmp_path):
    """Pair by pair, a pair's test mode and summary are written as soon as its runs end: a
    run cut during the next pair keeps them (as a device call's time limit cuts)."""
    import contest_parity

    def cut_on_b() -> None:
        fake = contest_parity.harness_run

        def harness(pair, mode, tmp, config=None):
            if pair["name"] == "b":
                raise KeyboardInterrupt  # what a cut leaves: the process stops here
            return fake(pair, mode, tmp, config)

        monkeypatch.setattr(contest_parity, "harness_run", harness)

    with pytest.raises(KeyboardInterrupt):
        _fake_parity_run(monkeypatch, tmp_path, "--runs", "2", _then=cut_on_b)
    report = json.loads((tmp_path / "out" / "parity.json").read_text())
    a, b = report["pairs"]
    assert len(a["public"]) == 2 and a["summary"]["geomean_ratio"] == pytest.approx(1.1 ** 0.5)
    assert a["test_mode_wall_s"]["harness"] == 1.0
    assert b["harness"] == [] and "summary" not in b


@pytest.mark.slow
def test_parity_files_that_cannot_be_read_are_named_not_traced(tmp_path):
    (tmp_path / "bad.json").write_text('{"runs": 1}')
    for script in ("parity_noise.py", "contest_parity.py"):
        merge = [] if script == "parity_noise.py" else ["--merge"]
        for name in ("bad.json", "missing.json"):
            done = python(str(BENCH / script), *merge, str(tmp_path / name), "--out",
                          str(tmp_path / "out.json" if not merge else tmp_path / "o"))
            assert done.returncode == 1
            assert f"{tmp_path / name}: not a parity.json that contest_parity.py wrote" in done.stderr
            assert "Traceback" not in done.stderr


def test_contest_parity_splits_the_harness_wall_where_runs_say_so(tmp_path):
    """The summary gives the harness's process wall in three parts (medians over the runs
    with `before_s`): before the evaluation, the document's wall, and the rest after."""
    import contest_parity

    def run(wall, before, document):
        where = {"document_s": document} | ({"before_s": before} if before is not None else {})
        return {"means_ns": [100.0], "wall_s": wall, "passed": True, "where_time_went": where,
                "roundtrip_median_ns": 1e5}

    runs = [run(13.0, 4.0, 8.0), run(11.0, 3.0, 7.0), run(12.0, None, 7.5)]
    assert contest_parity.wall_split(runs) == {
        "runs": 2, "before": 3.5, "evaluation": 7.5, "after": pytest.approx(1.0)}
    assert contest_parity.wall_split(runs[2:]) is None  # runs from before before_s existed
    (tmp_path / "p.json").write_text(json.dumps({"runs": 1, "pairs": [
        {"name": "pair", "public": [{"means_ns": [100.0], "wall_s": 11.0, "passed": True}],
         "harness": runs}]}))
    done = subprocess.run([sys.executable, str(BENCH / "contest_parity.py"), "--merge",
                           str(tmp_path / "p.json"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert ("benchmark wall 11.0 s vs 12.0 s (harness: 3.5 s before the evaluation, 7.5 s in "
            "it, 1.0 s after)") in done.stdout


@pytest.mark.slow
def test_call_trace_traces_the_harness_beside_the_public_loop(tmp_path):
    """benchmarks/call_trace.py on the CPU: the harness's samples with both hosts' accounts,
    the public loop's calls beside them (in its own process and in the harness's worker),
    the summary and the features, and --read again."""
    out = tmp_path / "trace"
    task = BENCH / "tasks" / "empty_call"
    settings = tmp_path / "settings.yaml"  # merged with the trace's own setting
    settings.write_text("timing:\n  max_calls: 20\n")
    proc = python("benchmarks/call_trace.py", str(task / "submission.py"), "--task", str(task),
                  "--device", "cpu", "--public-loop", "--worker-loop", "--worker-sequences",
                  "--harness-config", str(settings), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sequences = json.loads((out / "sequences.json").read_text())  # in the worker, per case
    assert [(s["run"], s["case"]) for s in sequences] == [(0, 0)]
    assert len(sequences[0]["median_us"]) == 6
    assert all(v > 0 for v in sequences[0]["median_us"].values())
    assert "sequence medians (µs)" in proc.stdout and "harness, no GPU sleep" in proc.stdout
    traces = json.loads((out / "trace.json").read_text())
    assert sorted(t["side"] for t in traces) == ["harness", "public", "worker-loop"]
    harness = next(t for t in traces if t["side"] == "harness")
    assert len(harness["records"]) == 20
    for record in harness["records"]:
        assert record["scored"] and record["ns"] > 0 and record["rt"] >= record["ns"]
        for side in ("worker", "judge"):
            assert set(record[side]) == {"vcsw", "ivcsw", "minflt", "gc", "cpu_before",
                                         "cpu_after"}
            assert record[side]["cpu_after"] >= 0
    for side in ("public", "worker-loop"):  # the public loop, in its process and the worker
        loop = next(t for t in traces if t["side"] == side)
        assert len(loop["records"]) == 100 and all(r["ns"] > 0 for r in loop["records"])
    assert "slow share" in proc.stdout
    assert "harness: the slow calls against the others" in proc.stdout
    assert "public: the slow calls against the others" in proc.stdout
    again = python("benchmarks/call_trace.py", "--read", str(out / "trace.json"))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == proc.stdout.split("\ndata:")[0].strip()


def test_call_trace_summary_counts_what_slow_calls_add():
    """A case's slow calls (over 1.5x its median) and their share of its sum; probes are
    traced but not scored on a GPU."""
    import call_trace

    records = [{"ns": 10.0, "scored": True} for _ in range(8)]
    records += [{"ns": 40.0, "scored": True}, {"ns": 100.0, "scored": False, "probe": True}]
    summary = call_trace.case_summary(records)
    assert summary["calls"] == 9 and summary["slow"] == 1
    assert summary["median_us"] == pytest.approx(0.01)
    assert summary["slow_share"] == pytest.approx(30.0 / 120.0)
    slow, others = call_trace.slow_and_others(records)
    assert [r["ns"] for r in slow] == [40.0, 100.0] and len(others) == 8
    rows = dict((label, (s, o)) for label, s, o in call_trace.feature_table(
        [{"side": "harness", "records": records}], "harness"))
    assert rows["calls"] == (2.0, 8.0) and rows["probe"] == (0.5, 0.0)


@pytest.mark.slow
def test_shared_buffers_says_it_needs_a_gpu():
    """benchmarks/shared_buffers.py without CUDA: a message and exit code 2, no traceback."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the script would measure")
    proc = python("benchmarks/shared_buffers.py", "--sizes", "64")
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_contest_parity_reports_the_harness_slow_calls_share_per_case():
    """Each case's slow samples (over 1.5x its median) and what they add, median over runs,
    from the scored samples every harness run keeps; a case no run kept is None."""
    import contest_parity

    def run(*cases):
        return {"where_time_went": {"cases": [{"samples": {"ns": ns}} for ns in cases]}}

    steady, spiky = [10.0] * 10, [10.0] * 9 + [40.0]
    runs = [run(steady, spiky), run(steady, spiky), run(steady, [])]
    shares = contest_parity.slow_shares(runs)
    assert shares[0] == 0.0 and shares[1] == pytest.approx(30.0 / 130.0)
    assert contest_parity.slow_shares([run([], steady)]) == [None, 0.0]
