"""`runner.py batch`: six vectoradd submissions (two failing, one hanging) through the
local backend with --jobs 2 and through a local Ray instance: the same verdicts and the
same ranking."""

import json
import shutil
from pathlib import Path

import pytest
from conftest import BAD, ROOT, run_cli
from rich.console import Console

from harness.consts import JobState
from harness.frontends.batch import Batch, Job
from harness.frontends.batch import job_parts as batch_parts

LB = ROOT / "tests" / "submissions" / "leaderboard"
EXPECTED = {"fast.py": "passed", "sleep_1ms.py": "passed", "sleep_3ms.py": "passed",
            "wrong.py": "failed", "raises.py": "error", "hang.py": "timed out"}


@pytest.fixture(scope="module")
def batch_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("batch")
    for name in ("fast", "sleep_1ms", "sleep_3ms", "wrong"):
        shutil.copy(LB / f"{name}.py", folder)
    for name in ("raises", "hang"):
        shutil.copy(BAD / f"{name}.py", folder)
    return folder


def run_batch(folder, tmp_path, *backend):
    out, db = tmp_path / "batch.json", tmp_path / "batch.db"
    r = run_cli("batch", str(folder), "--task", "vectoradd", "--device", "cpu",
                "--case", "size: 64; seed: 1", "--timeout", "8", "--db", str(db),
                "--json", str(out), *backend)
    assert r.rc == 1, r.out  # some submissions fail
    assert "Traceback (most recent call last)" not in r.out
    doc = json.loads(out.read_text())
    verdicts = {p["file"].split("/")[-1]: p["status"] for p in doc["results"]}
    board = json.loads(run_cli("leaderboard", "vectoradd", "--json", "--db", str(db)).out)
    ranking = [row["user"] for row in board["devices"]["CPU"]]
    return doc, verdicts, ranking, r.out


@pytest.fixture(scope="module")
def local_run(batch_dir, tmp_path_factory):
    """The six through the local backend with --jobs 2, once for the module's tests."""
    return run_batch(batch_dir, tmp_path_factory.mktemp("local"), "--jobs", "2")


@pytest.mark.slow
@pytest.mark.xdist_group("batch_local")  # one process runs both readers of `local_run`
def test_local_backend(local_run):
    doc, verdicts, ranking, out = local_run
    assert verdicts == EXPECTED
    # into a pipe, each result as a line when it ends, before the table at the end
    table = out.index("Batch: 6 submissions")
    for name, status in EXPECTED.items():
        assert 0 <= out.find(f"{name} (vectoradd): {status}") < table, out
    assert ranking == ["fast", "sleep_1ms", "sleep_3ms"]
    slots = {w for r in doc["results"] for w in r["where"]}
    assert slots == {"CPU slot 0", "CPU slot 1"}  # both slots were used
    for r in doc["results"]:  # each result carries its integrity flags and device name
        assert isinstance(r["flags"], list) and "device_uuid" in r
        assert all(set(f) == {"rule", "severity"} for f in r["screen"])  # the screen's findings
    # the hang cost only its own slot: it ran alongside the others
    assert doc["wall_seconds"] < sum(r["wall_seconds"] for r in doc["results"])


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.xdist_group("batch_local")
def test_ray_backend_agrees(batch_dir, local_run, tmp_path):
    pytest.importorskip("ray")
    _, local_verdicts, local_ranking, _ = local_run
    doc, verdicts, ranking, _ = run_batch(batch_dir, tmp_path, "--backend", "ray")
    assert verdicts == local_verdicts == EXPECTED
    assert ranking == local_ranking
    assert doc["backend"] == "ray"


def test_slots_pin_one_gpu_each(monkeypatch):
    """Two evaluations never share a GPU: one slot per visible GPU."""
    import torch

    from harness.execution.backends import local_slots

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots = local_slots(None, None)
    assert [s["CUDA_VISIBLE_DEVICES"] for s in slots] == ["0", "1", "2", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert [s["CUDA_VISIBLE_DEVICES"] for s in local_slots(None, None)] == ["2", "5"]
    assert [s["_where"] for s in local_slots("cpu", 3)] == ["CPU slot 0", "CPU slot 1", "CPU slot 2"]


@pytest.mark.slow
def test_tasks_from_directives(tmp_path):
    """Without --task, each file's `#!POPCORN leaderboard` directive names its task."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(ROOT / "submissions" / "vectoradd" / "add_torch.py", folder)
    shutil.copy(ROOT / "submissions" / "mxfp4_mm" / "torch_dequant.py", folder / "mx.py")
    out = tmp_path / "batch.json"
    r = run_cli("batch", str(folder), "--device", "cpu", "--mode", "test", "--db",
                str(tmp_path / "b.db"), "--json", str(out))
    assert r.rc == 0, r.out
    doc = json.loads(out.read_text())
    assert sorted(doc["tasks"]) == ["mxfp4_mm", "vectoradd"]
    assert {(p["file"].split("/")[-1], p["task"], p["status"]) for p in doc["results"]} == {
        ("add_torch.py", "vectoradd", "passed"), ("mx.py", "mxfp4_mm", "passed")}
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(LB / "fast.py", plain)
    r = run_cli("batch", str(plain), "--db", str(tmp_path / "b.db"))
    assert r.rc == 2 and "#!POPCORN leaderboard" in r.out


def test_a_bad_config_is_a_message_not_a_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("timing:\n  host_launch: nothing\n")
    r = run_cli("batch", "submissions/vectoradd", "--task", "vectoradd", "--device", "cpu",
                "--config", str(bad), "--db", str(tmp_path / "b.db"))
    assert r.rc == 2 and "timing.host_launch must be hidden or counted" in r.out
    assert "Traceback" not in r.out


def test_a_jobs_line_and_row_show_the_same_status_and_score():
    """The log's line and the live table's row read a finished job alike: its status
    coloured by the verdict, its score where it has one."""
    passed = Job(Path("a.py"), "t", JobState.DONE, doc={"status": "passed", "score_ns": 1500.0})
    failed = Job(Path("b.py"), "t", JobState.DONE, doc={"status": "failed", "score_ns": None})
    broken = Job(Path("c.py"), "t", JobState.DONE, error="judge died")
    for status in ("needs a GPU", "cannot run here"):  # the task's needs: its own verdict
        lacks = Job(Path("d.py"), "t", JobState.DONE, error="not recorded: the task needs",
                    doc={"status": status, "load_error": {"kind": "task_needs"}})
        assert lacks.status == status
    assert passed.status_markup == "[green]passed[/]" and passed.score_ns == 1500.0
    assert failed.status_markup == "[red]failed[/]" and failed.score_ns is None
    assert broken.status_markup == "[red]harness error[/]" and broken.score_ns is None

    class Shown:  # the two views without a batch: `line` and `view` read only these
        jobs, tasks, mode = [passed, failed, broken], ["t"], "benchmark"

    lines = [Batch.line(Shown(), j) for j in Shown.jobs]
    assert lines[0].startswith("a.py (t): [green]passed[/] 1.50 µs")
    assert lines[1].startswith("b.py (t): [red]failed[/],")
    console = Console(width=120, record=True)
    console.print(Batch.view(Shown()))
    table = console.export_text()
    assert "1.50 µs" in table and "harness error" in table


def test_verbose_prints_each_submissions_remarks_whole():
    """`batch --verbose`: after the results, each submission's warnings, flags and notes,
    whole; a job without a document has none."""
    import io
    from types import SimpleNamespace

    from harness.frontends.batch import _print_remarks

    flag, warning, note = ("f " * 150).strip(), ("w " * 150).strip(), ("n " * 150).strip()
    doc = {"warnings": [warning], "phases": [{"name": "benchmark", "cases": [
        {"index": 2, "flags": [flag], "integrity": {"long_samples": {"note": note}}}]}]}
    console = Console(file=io.StringIO(), width=2000)
    _print_remarks(console, SimpleNamespace(jobs=[Job(Path("a.py"), doc=doc), Job(Path("b.py"))]))
    lines = console.file.getvalue().splitlines()
    assert lines[0] == "a.py" and "b.py" not in console.file.getvalue()
    assert lines[1:] == [f"  warning: {warning}",
                         f"  flag (benchmark case 2): {flag}",
                         f"  note (benchmark case 2): {note}"]


def test_a_jobs_parts_add_up_to_its_wall():
    """`batch --json`'s parts of a job: the judge process outside the evaluation, the
    wait for the worker, each phase's cases and the rest add up to the job's wall; the
    recording comes after it; a job with no document has none."""
    doc = {"wall_seconds": 2.0, "startup_seconds": 0.5,
           "phases": [{"name": "test", "cases": [{"wall_seconds": 0.2}, {"wall_seconds": 0.1}]},
                      {"name": "benchmark", "cases": [{"wall_seconds": 0.9}]}]}
    job = Job(Path("a.py"), wall=3.0, doc=doc, record_seconds=0.05)
    parts = batch_parts(job)
    assert parts == pytest.approx({"judge": 1.0, "startup": 0.5, "test": 0.3, "benchmark": 0.9,
                                   "other": 0.3, "record": 0.05})
    assert sum(v for k, v in parts.items() if k != "record") == pytest.approx(job.wall)
    assert batch_parts(Job(Path("b.py"), wall=1.0)) == {}


def test_a_running_jobs_row_shows_its_phase_and_cases_done():
    """What a job's judge process relays (harness/execution/progress_relay.py) shows in its
    row of the live table while it runs."""
    from harness.frontends.batch import Job, _JobProgress
    from harness.judging import PhaseSpec
    from harness.results.document import CaseResult

    job, changes = Job(Path("a.py"), "vectoradd"), []
    progress = _JobProgress(job, lambda: changes.append(job.progress))
    spec = PhaseSpec("tests", "public", [{}, {}, {}], False, 60.0)
    progress.phase_start(spec)
    progress.case_start(spec, 0, {})
    progress.case_done(spec, CaseResult(0, {}, "passed"))
    bench = PhaseSpec("benchmarks", "public", [{}], True, 60.0)
    progress.phase_start(bench)
    assert changes == ["tests 0/3", "tests 1/3", "benchmarks 0/1"]


@pytest.mark.slow
def test_a_multi_gpu_tasks_job_takes_a_slot_per_rank(tmp_path):
    """--jobs 3 and cases of 2 ranks: each job holds two CPU slots at once, never a slot
    another job holds; with cases of 4 ranks, more than there are slots, one slot each.
    (Files with a syntax error: their judge answers before any rank's worker starts; the
    slots are what is looked at.)"""
    folder = tmp_path / "subs"
    folder.mkdir()
    for name in ("a", "b"):  # a job of 2 ranks among 3 slots leaves too few for another
        (folder / f"{name}.py").write_text("#!POPCORN leaderboard all_gather\n"
                                           "def custom_kernel(data:\n")
    task = "all_gather"

    def batch(case: str) -> dict:
        out = tmp_path / "batch.json"
        r = run_cli("batch", str(folder), "--task", task, "--device", "cpu", "--jobs", "3",
                    "--mode", "test", "--case", case, "--json", str(out))
        assert r.rc == 1 and "Traceback" not in r.out, r.out
        return json.loads(out.read_text())

    doc = batch("world_size: 2; size: 64; seed: 11")
    assert {r["status"] for r in doc["results"]} == {"error"}, doc["results"]  # the syntax
    for result in doc["results"]:
        (where,) = result["where"]
        slots = where.split(" + ")
        assert len(slots) == 2 and len(set(slots)) == 2 and all(
            s.startswith("CPU slot ") for s in slots), where
    doc = batch("world_size: 4; size: 64; seed: 11")
    assert all(len(r["where"][0].split(" + ")) == 1 for r in doc["results"])


@pytest.mark.parametrize("need, use_gpu, cluster, asks", [
    (1, True, {"GPU": 8, "CPU": 64}, {"num_gpus": 1, "num_cpus": 1}),
    (4, True, {"GPU": 8, "CPU": 64}, {"num_gpus": 4, "num_cpus": 1}),
    (8, True, {"GPU": 2, "CPU": 64}, {"num_gpus": 1, "num_cpus": 1}),  # too few: one
    (2, False, {"CPU": 4}, {"num_gpus": 0, "num_cpus": 2}),
    (8, False, {"CPU": 4}, {"num_gpus": 0, "num_cpus": 1}),
])
def test_a_ray_task_asks_for_a_gpu_or_cpu_per_rank(need, use_gpu, cluster, asks):
    """The Ray backend's ask, as the local backend's slots: one per rank where the cluster
    has them, else one (the judge then says what the job needs)."""
    from harness.execution.backends import ray_resources

    assert ray_resources(need, use_gpu, cluster) == asks
