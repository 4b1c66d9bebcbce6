"""`--mode profile`: each benchmark case checked, then a few calls under the PyTorch
profiler (operators on the CPU, kernels on a GPU), as a table and in the result document."""

from pathlib import Path

import pytest
from conftest import ROOT, gpu

from harness.judging.profile import ncu, profiling


def _operators(case: dict) -> dict[str, dict]:
    return {r["name"]: r for r in case["profile"]["rows"]}


@pytest.mark.slow
def test_cpu_profile_of_the_vectoradd_example(cli, tmp_path):
    summary = tmp_path / "summary.md"
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "profile",
            "--device", "cpu", "--summary-md", str(summary))
    assert r.rc == 0, r.out
    doc = r.doc
    assert doc["mode"] == "profile" and doc["status"] == "passed"
    [phase] = doc["phases"]
    assert phase["name"] == "profile" and len(phase["cases"]) == 3  # every benchmark case
    for case in phase["cases"]:
        assert case["status"] == "passed" and case["checked_calls"] == 1
        p = case["profile"]
        assert p["tool"] == "torch.profiler" and p["kind"] == "operators" and p["calls"] == 5
        add = _operators(case)["aten::add"]
        assert add["calls"] > 0 and add["total_ns"] > 0
        assert 0 <= p["host_share"] <= 1 and p["wall_ns_per_call"] > 0
        assert "ncu" not in p  # Nsight Compute is for GPUs
    assert "aten::add" in r.out and "operator (CPU self time)" in r.out and "host share" in r.out
    assert "USDT" not in r.out  # the profiler's own log lines are not the submission's stderr
    assert not cli.db.exists()  # profile mode records nothing
    assert "top operators: `aten::add` (1 a call" in summary.read_text()
    document = next(tmp_path.glob("result*.json"))
    refused = cli("record", str(document), want_json=False)
    assert refused.rc == 2 and "never recorded" in refused.out


@pytest.mark.slow
def test_profile_mode_refuses_record(cli):
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "profile",
            "--device", "cpu", "--record")
    assert r.rc == 2 and "records nothing" in r.out


@pytest.mark.slow
def test_a_wrong_first_call_is_not_profiled(cli):
    from conftest import BAD

    r = cli("submit", str(BAD / "wrong_values.py"), "--task", "vectoradd", "--mode", "profile",
            "--device", "cpu", "--case", "size: 64; seed: 1")
    assert r.rc == 1
    case = r.doc["phases"][0]["cases"][0]
    assert case["status"] == "failed" and case["profile"] is None


def test_the_judge_cleans_what_the_worker_sends():
    raw = {"kind": "kernels", "calls": 3, "wall_ns_per_call": 10.0, "device_ns_per_call": 4.0,
           "host_share": 0.6, "rows_left_out": 0, "extra": "dropped",
           "rows": [{"name": "k" * 1000, "calls": 3, "total_ns": 12.0, "mean_ns": 4.0}] * 30}
    out = profiling.clean(raw, rows=20)
    assert len(out["rows"]) == 20 and len(out["rows"][0]["name"]) == profiling.NAME_LIMIT
    assert "extra" not in out and out["tool"] == "torch.profiler"
    for bad in ({"rows": "x"}, dict(raw, calls=float("nan")), dict(raw, calls=-1),
                dict(raw, rows=[["not", "a", "row"]]), dict(raw, wall_ns_per_call="1")):
        with pytest.raises(ValueError):
            profiling.clean(bad, rows=20)


def test_profiler_log_lines_are_recognised():
    assert profiling._PROFILER_LOG.match(
        "USDT:2026-11-30 09:55:24 20990:20990 SyncActivityProfilerHandler.cpp:52] profiler_start")
    assert not profiling._PROFILER_LOG.match("my kernel says hello")


def test_ncu_command_and_its_absence(tmp_path):
    import os

    target = ncu.target_args(tmp_path, tmp_path, "submission.py", {"size": 8, "seed": 1}, 2, "cuda")
    cmd = ncu.command("/opt/ncu", tmp_path / "r", 50, target)
    assert cmd[:2] == ["/opt/ncu", "--target-processes"] and f"{ncu.RANGE}/" in cmd
    assert cmd[cmd.index("-m") + 1] == "harness.judging.profile.ncu" and "--calls" in cmd
    assert target[-2:] == ["--judge", ncu.judge_ref()]  # the judge: the process that asks
    pid, started = ncu.judge_ref().split(":")
    assert int(pid) == os.getpid() and started.isdigit() and ncu.judge_ref(1) != ncu.judge_ref()
    missing = ncu.profile_case(None, tmp_path / "r", 50, target, {}, 10)
    assert missing["available"] is False and "not on the PATH" in missing["note"]


@pytest.mark.slow
def test_the_ncu_target_runs_a_case_on_the_cpu(tmp_path):
    """What ncu would run, run directly: the task staged, the input made, the calls run."""
    from harness.loading.task_folder import load_task

    task = load_task("vectoradd")
    staging = task.stage(tmp_path / "worker", ROOT / "submissions" / "vectoradd" / "add_torch.py",
                         for_worker=True)
    args = ncu.target_args(task.root, staging, task.submission_name,
                           {"size": 64, "seed": 3}, 2, "cpu")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "harness.judging.profile.ncu", *args], cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ran 2 calls of submission.py on cpu" in proc.stdout


FAKE_NCU = """#!/bin/sh
# Nsight Compute's command line, faked: its options skipped, the profiled command run as a
# child it waits for, or started by a launcher that exits at once, or in a session of its
# own; or run as a child after starting a process (in a session of its own) left behind.
# A report is written once the profiled command has ended by itself; it reads as empty.
[ "$1" = --import ] && exit 0
while [ "$1" != "$FAKE_NCU_TARGET" ]; do
  [ $# -gt 0 ] || exit 9; [ "$1" = --export ] && report=$2; shift
done
case "@LAUNCH@" in
  launcher) ("$@" &); while :; do sleep 1; done ;;
  escaping) setsid "$@" & while :; do sleep 1; done ;;
  litter) setsid sleep 600 & echo $! > "$TMPDIR/litter.pid" ;;
esac
"$@" &
wait $!
status=$?
: > "$report.ncu-rep"
exit $status
"""


def _hung_target(tmp_path, launch: str = "child", device: str = "cpu",
                 submission: str = "hang.py"):
    """A fake `ncu`, the arguments of a case whose call never returns (or `submission`'s),
    and the environment (temporary folder `tmp_path/temp`, where the profiled process makes
    its folder)."""
    import sys

    from harness.loading.task_folder import load_task

    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.replace("@LAUNCH@", launch))
    fake.chmod(0o755)
    task = load_task("vectoradd")
    staging = task.stage(tmp_path / "worker", ROOT / "tests" / "submissions" / "vectoradd" / submission,
                         for_worker=True)
    target = ncu.target_args(task.root, staging, task.submission_name, {"size": 64, "seed": 3}, 2,
                             device)
    (tmp_path / "temp").mkdir()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "temp"),
           "FAKE_NCU_TARGET": sys.executable}
    return fake, target, env


def _profiled(temp, judge: int) -> list[int]:
    """The profiled processes, named by the folders they made (leftovers.py)."""
    import re

    return [int(m.group(1)) for f in temp.glob("harness-ncu-*")
            if (m := re.match(r"harness-ncu-[0-9a-f]{12}-(\d+)-", f.name)) and int(m.group(1)) != judge]


def _parent(pid: int) -> int:
    from harness.judging.sandbox.procfs import stat_fields

    return int(stat_fields(pid)[1])


def _kill_all(pids):
    import os
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


_JUDGE = ("import json, os, sys; from pathlib import Path; from harness.judging.profile import ncu; "
          "target = json.loads(sys.argv[3]); target[target.index('--judge') + 1] = ncu.judge_ref(); "
          "{before}out = ncu.profile_case(sys.argv[1], Path(sys.argv[2]), 1, target, "
          "json.loads(sys.argv[4]), float(sys.argv[5])); {then}")


def _judge(fake, tmp_path, target, env, timeout: float, before: str = "", then: str = ""):
    """A judge process (its own pid in `--judge`, as ncu.target_args writes it there)."""
    import json
    import subprocess
    import sys

    code = _JUDGE.format(before=before, then=then)
    return subprocess.Popen([sys.executable, "-c", code, str(fake), str(tmp_path / "report"),
                             json.dumps(target), json.dumps(env), str(timeout)], cwd=ROOT,
                            env=dict(env, FAKE_NCU_TARGET=""), stdout=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("launch", ["child", "launcher"], ids=["child of ncu", "behind a launcher"])
def test_the_profiled_process_dies_with_a_judge_killed_outright(tmp_path, launch):
    """ncu and the process it profiles are tied to the judge: a judge killed by SIGKILL
    (no cleanup of its own) leaves neither running the submission, whether ncu runs it as
    its child or behind a launcher that has exited."""
    import os

    from test_stopping import _children, _left_alive, _wait_for

    from harness.judging.sandbox import leftovers

    fake, target, env = _hung_target(tmp_path, launch)
    judge = _judge(fake, tmp_path, target, env, 600)
    pids = []
    try:
        profiled = _wait_for(lambda: _profiled(tmp_path / "temp", judge.pid), 120)
        ncus = _children(judge.pid, str(fake))
        pids = profiled + ncus
        assert len(profiled) == 1, "the profiled process never started"
        assert len(ncus) == 1 and (_parent(profiled[0]) == ncus[0]) is (launch == "child")
        judge.kill()
        judge.wait(timeout=30)
        assert _left_alive(pids, 10) == []
        swept = leftovers.sweep([tmp_path / "temp"])  # the killed processes' folders
        assert {int(p.name.split("-")[3]) for p in swept} == {judge.pid, profiled[0]}
        assert not os.listdir(tmp_path / "temp")
    finally:
        _kill_all(pids)
        judge.kill()
        judge.wait()


# After a profile run in `_subreaper_judge`: its error, the profiled processes (named by
# their folders), whether each is alive, and the judge's children.
_WHAT_IS_LEFT = (
    "from harness.judging.sandbox.sandbox import children; from harness.judging.sandbox.leftovers import alive; "
    "import re; pids = [int(re.match(r'harness-ncu-\\w+-(\\d+)-', f.name).group(1)) "
    "for f in Path(json.loads(sys.argv[4])['TMPDIR']).glob('harness-ncu-*')]; "
    "pids = [p for p in pids if p != os.getpid()]; "
    "print(json.dumps({'error': out.get('error'), 'pids': pids, "
    "'alive': [alive(p) for p in pids], 'children': sorted(children())}))")


def _subreaper_judge(fake, tmp_path, target, env, timeout: float, then: str) -> dict:
    """A judge that adopts orphans (as the real one does) runs the profile, then `then`,
    which prints a JSON line: that line, read."""
    import json

    judge = _judge(fake, tmp_path, target, env, timeout, then=then,
                   before="from harness.judging.sandbox.sandbox import become_subreaper; become_subreaper(); ")
    try:
        printed, _ = judge.communicate(timeout=timeout + 120)
    finally:
        judge.kill()
    return json.loads(printed.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_profiled_process_that_leaves_the_group_is_killed_after_the_run(tmp_path):
    """Past its time the run's group is killed; a profiled process in a session of its own
    escapes that, and is killed and reaped as an orphan the judge (a subreaper) adopted,
    before the judge goes on: no process of the run is left, not even a zombie."""
    fake, target, env = _hung_target(tmp_path, "escaping")
    doc = _subreaper_judge(fake, tmp_path, target, env, 10, _WHAT_IS_LEFT)
    assert doc["error"].startswith("ncu ran past 10 s") and len(doc["pids"]) == 1, doc
    assert doc["alive"] == [False] and doc["children"] == [], doc


@pytest.mark.slow
def test_what_a_finished_run_left_running_is_killed_and_counted(tmp_path):
    """A run whose ncu exited by itself but left a process behind (in a session of its
    own, adopted by the judge): killed and reaped before the judge goes on, counted in the
    case's record, and said in the report."""
    import io

    from rich.console import Console
    from test_stopping import _left_alive

    from harness.results.document import CaseResult
    from harness.views.report import print_profile

    example = "../../../submissions/vectoradd/add_torch.py"  # from tests/submissions/vectoradd
    fake, target, env = _hung_target(tmp_path, "litter", submission=example)
    then = ("from harness.judging.sandbox.sandbox import children; "
            "print(json.dumps({'out': out, 'children': sorted(children())}))")
    doc = _subreaper_judge(fake, tmp_path, target, env, 60, then)
    litter = int((tmp_path / "temp" / "litter.pid").read_text())
    if _left_alive([litter], 0):
        _kill_all([litter])
    assert doc["children"] == [] and doc["out"]["left_running"] == 1, doc
    assert _left_alive([litter], 0) == []  # the one counted
    assert "error" not in doc["out"] and doc["out"]["report"].endswith(".ncu-rep"), doc
    profile = {"kind": "operators", "tool": "torch.profiler", "calls": 1, "rows": [],
               "wall_ns_per_call": 1e3, "device_ns_per_call": 1e3, "ncu": doc["out"]}
    console = Console(file=io.StringIO(), width=200)
    print_profile(console, CaseResult(0, {"size": 64}, "passed", profile=profile))
    text = console.file.getvalue()
    assert "killed 1 process(es) still running once ncu had exited" in text


STOPPED_JUDGE = """
import json, os, sys
from pathlib import Path
from harness.execution.stopping import stop_on_sigterm
from harness.judging.profile import ncu
from harness.judging.sandbox.sandbox import become_subreaper

become_subreaper()
stop_on_sigterm()
target = json.loads(sys.argv[3])
target[target.index("--judge") + 1] = ncu.judge_ref()
try:
    ncu.profile_case(sys.argv[1], Path(sys.argv[2]), 1, target, json.loads(sys.argv[4]), 600)
except SystemExit:
    out = {}
    """ + _WHAT_IS_LEFT


@pytest.mark.slow
def test_a_judge_stopped_during_the_run_kills_it_on_its_way_out(tmp_path):
    """SIGTERM (a CI job's limit) turns into SystemExit in the judge while it waits for ncu:
    the run's group is killed and reaped then, before the judge's own cleanup, not left
    to the ties that act once the judge has exited."""
    import json
    import signal
    import subprocess
    import sys

    from test_stopping import _wait_for

    fake, target, env = _hung_target(tmp_path)
    script = tmp_path / "judge.py"
    script.write_text(STOPPED_JUDGE)
    judge = subprocess.Popen([sys.executable, str(script), str(fake), str(tmp_path / "report"),
                              json.dumps(target), json.dumps(env)], cwd=ROOT,
                             env=dict(env, FAKE_NCU_TARGET=""), stdout=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: _profiled(tmp_path / "temp", judge.pid), 120)
        judge.send_signal(signal.SIGTERM)
        out, _ = judge.communicate(timeout=60)
    finally:
        judge.kill()
    doc = json.loads(out.strip().splitlines()[-1])
    assert len(doc["pids"]) == 1 and doc["alive"] == [False] and doc["children"] == [], doc


@pytest.mark.parametrize("judge", ["gone", "number reused"])
def test_the_profiled_process_does_not_start_once_its_judge_is_gone(tmp_path, judge):
    """A judge that ended before the profiled process could tie itself to it, or whose
    number now names another process (here this one, with a start time not its own)."""
    import os
    import subprocess
    import sys

    fake, target, env = _hung_target(tmp_path)
    if judge == "gone":
        ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                               capture_output=True, text=True, check=True)
        ref = ended.stdout.strip() + ":"
    else:
        ref = f"{os.getpid()}:1"
    target[target.index("--judge") + 1] = ref
    proc = subprocess.run([sys.executable, "-m", "harness.judging.profile.ncu", *target], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    assert not list((tmp_path / "temp").iterdir())  # it stopped before making anything


@pytest.mark.slow
def test_a_profile_past_its_time_kills_the_profiled_process_too(tmp_path):
    """Past the time allowed, the whole of ncu's process group goes, not ncu alone."""
    import os

    from test_stopping import _left_alive

    fake, target, env = _hung_target(tmp_path)
    out = ncu.profile_case(str(fake), tmp_path / "report", 1, target, env, 15)
    pids = _profiled(tmp_path / "temp", os.getpid())
    try:
        assert out["error"].startswith("ncu ran past 15 s") and out["report"] is None
        assert pids, "the profiled process did not start within 15 s"
        assert _left_alive(pids, 5) == []
    finally:
        _kill_all(pids)


real_ncu = pytest.mark.skipif(ncu.find_ncu() is None,
                              reason="needs Nsight Compute's ncu on the PATH")


def _descendants(pid: int) -> list[int]:
    """The live processes below `pid`, however deep (read from /proc)."""
    from pathlib import Path

    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier}
        found += sorted(frontier)
    return found


SPIN = """import os
from pathlib import Path


def custom_kernel(data):
    Path(os.environ["TMPDIR"], "spinning").touch()
    while True:
        pass
"""


def _real_ncu_target(tmp_path):
    """The arguments of a CUDA case whose call never returns, once it has said so (the file
    `spinning` in its temporary folder), and the worker's environment as the judge builds
    it, with the temporary folder at `tmp_path/temp` and the project importable."""
    from harness.judging.sandbox.sandbox import worker_env

    (tmp_path / "spin.py").write_text(SPIN)
    _, target, env = _hung_target(tmp_path, device="cuda", submission=str(tmp_path / "spin.py"))
    env = worker_env(tmp_path / "scratch", "cuda") | {"PYTHONPATH": str(ROOT),
                                                      "TMPDIR": env["TMPDIR"]}
    return target, env


@gpu
@real_ncu
def test_real_ncu_and_what_it_profiles_die_with_a_judge_killed_outright(tmp_path):
    """The ties under Nsight Compute itself, not the stand-in above: a judge killed by
    SIGKILL while `ncu` profiles a call that never returns leaves nothing of the run
    (whatever helpers of its own `ncu` puts between itself and the profiled process)."""
    from test_stopping import _left_alive, _wait_for

    target, env = _real_ncu_target(tmp_path)
    judge = _judge(ncu.find_ncu(), tmp_path, target, env, 600)
    pids = []
    try:
        assert _wait_for(lambda: (tmp_path / "temp" / "spinning").exists(), 240), \
            "the profiled call never started"
        profiled = _profiled(tmp_path / "temp", judge.pid)
        pids = _descendants(judge.pid)
        assert len(profiled) == 1 and profiled[0] in pids and len(pids) >= 2, (profiled, pids)
        judge.kill()
        judge.wait(timeout=30)
        assert _left_alive(pids, 20) == []
    finally:
        _kill_all(_left_alive(pids, 0))
        judge.kill()
        judge.wait()


@gpu
@real_ncu
def test_real_ncu_past_its_time_takes_what_it_profiles_along(tmp_path):
    """Under Nsight Compute itself, in a judge that adopts orphans as the real one does:
    past the time allowed, the profiled process goes too, and nothing of the run is left
    among the judge's children; the error carries the end of ncu's output."""
    target, env = _real_ncu_target(tmp_path)
    doc = _subreaper_judge(ncu.find_ncu(), tmp_path, target, env, 90, _WHAT_IS_LEFT)
    assert (tmp_path / "temp" / "spinning").exists(), doc  # the call had started
    assert doc["error"].startswith("ncu ran past 90 s") and len(doc["pids"]) == 1, doc
    assert doc["alive"] == [False] and doc["children"] == [], doc


@gpu
@pytest.mark.parametrize("example", ["add_torch.py", "add_triton.py"])
def test_gpu_profile_names_cuda_kernels(cli, tmp_path, example):
    """Run from another folder than the project's, as a contestant would: where Nsight
    Compute is installed, each case's report lands in `profiles/` there, its kernels'
    figures are in the record and the table; where ncu fails, so does the run."""
    r = cli("submit", str(ROOT / "submissions" / "vectoradd" / example), "--mode", "profile",
            cwd=tmp_path)
    cases = r.doc["phases"][0]["cases"]
    failed = " ".join(((c["profile"] or {}).get("ncu") or {}).get("error", "") for c in cases)
    if "ERR_NVGPUCTRPERM" in failed:
        assert r.rc != 0 and "Nsight Compute failed" in r.out, r.out
        pytest.skip("ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM)")
    assert r.rc == 0, r.out
    for case in cases:
        p = case["profile"]
        assert p["kind"] == "kernels" and p["rows"], p
        assert any(row["calls"] > 0 and row["total_ns"] > 0 for row in p["rows"])
        assert 0 <= p["host_share"] <= 1
        if ncu.find_ncu() is None:
            assert p["ncu"]["available"] is False, p["ncu"]
            continue
        # a report of the case's kernels where the output says, read back per kernel;
        # an honest run leaves no process behind (not even one of ncu's own)
        report = Path(p["ncu"]["report"])
        assert "error" not in p["ncu"] and report.is_file(), p["ncu"]
        assert report.parent == tmp_path / "profiles", report
        kernels = p["ncu"]["kernels"]
        assert kernels and all(k["duration_ns"] > 0 and k["launches"] > 0 for k in kernels), kernels
        assert all(k["registers_per_thread"] for k in kernels), kernels
        assert "left_running" not in p["ncu"], p["ncu"]
    names = " ".join(r["name"] for r in cases[0]["profile"]["rows"])
    assert any(word in names.lower() for word in ("elementwise", "add", "triton")), names
    assert "kernel (GPU time)" in r.out
    if ncu.find_ncu() is not None:
        assert "Nsight Compute, per kernel" in r.out, r.out


def test_summary_of_gpu_events_keeps_the_kernels():
    """On a GPU the rows are what ran on the device; CPU-side operators and the profiler's
    own step markers are left out, and the host share is the rest of the call."""
    from types import SimpleNamespace as Event

    def event(key, count, device, cpu_us=0.0, device_us=0.0, annotation=False):
        return Event(key=key, count=count, device_type=f"DeviceType.{device}",
                     self_cpu_time_total=cpu_us, self_device_time_total=device_us,
                     is_user_annotation=annotation)

    events = [event("ProfilerStep*", 4, "CPU", cpu_us=400), event("aten::add", 4, "CPU", 40),
              event("cudaLaunchKernel", 4, "CPU", 20),
              event("ProfilerStep*", 4, "CUDA", device_us=100, annotation=True),
              event("void at::native::vectorized_elementwise_kernel<4>", 4, "CUDA", device_us=8),
              event("Memcpy DtoD", 4, "CUDA", device_us=2)]
    s = profiling.summarize(events, [10_000.0] * 4, cuda=True, rows=1)
    assert s["kind"] == "kernels" and s["calls"] == 4
    assert [r["name"] for r in s["rows"]] == ["void at::native::vectorized_elementwise_kernel<4>"]
    assert s["rows"][0]["mean_ns"] == 2_000 and s["rows_left_out"] == 1
    assert s["device_ns_per_call"] == 2_500 and s["host_share"] == 0.75
    cpu = profiling.summarize(events[:3], [100_000.0] * 4, cuda=False, rows=5)
    assert [r["name"] for r in cpu["rows"]] == ["aten::add", "cudaLaunchKernel"]


# Nsight Compute faked as far as its report goes: `--import` prints the CSV of
# tests/test_ncu_report.py; a profile run writes `--export`'s path, relative to its
# working folder as ncu does (it makes no folder), or fails as ncu does where it cannot.
REPORTING_NCU = """#!/bin/sh
if [ "$1" = --import ]; then
  case "$*" in *"--page details"*) cat "@DIR@/details.csv" ;; *) cat "@DIR@/raw.csv" ;; esac
  exit 0
fi
while [ $# -gt 0 ]; do [ "$1" = --export ] && report=$2; shift; done
echo "==PROF== Connected to process 4242"
if [ -n "@FAIL@" ] || ! : > "$report.ncu-rep" 2>/dev/null; then
  echo "==ERROR== Unable to write to file $report.ncu-rep. Please verify this file is not locked, and writable."
  exit 1
fi
"""


def _stub_judge(tmp_path, monkeypatch, fail: bool = False):
    """A judge's state as `Judge._profile_case` reads it, on a GPU, with a worker that sends
    a profile at once and the stand-in ncu first on the PATH; the working folder is
    `tmp_path/work`, where `profiles/` does not exist yet."""
    from types import SimpleNamespace

    from test_ncu_report import DETAILS, RAW

    from harness.settings import Settings

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "raw.csv").write_text(RAW)
    (tmp_path / "details.csv").write_text(DETAILS)
    fake = bin_dir / "ncu"
    fake.write_text(REPORTING_NCU.replace("@DIR@", str(tmp_path)).replace("@FAIL@", "1" if fail else ""))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    profile = {"kind": "kernels", "calls": 5, "wall_ns_per_call": 9e3, "device_ns_per_call": 6e3,
               "host_share": 0.3, "rows_left_out": 0, "rows": []}
    worker = SimpleNamespace(send=lambda message: None,
                             recv=lambda timeout: {"event": "profile", "profile": profile})
    return SimpleNamespace(
        settings=Settings.load(), worker=worker, device=SimpleNamespace(kind="cuda"),
        task=SimpleNamespace(root=tmp_path, submission_name="submission.py", name="vectoradd"),
        staging=tmp_path, submission=Path("add_cuda.py"), shm_root=tmp_path / "shm",
        clock=lambda: 0.0)


def _profiled_case(judge):
    from harness.consts import Status
    from harness.judging.judge import Judge
    from harness.judging.seeds import SeedPlan
    from harness.results.document import CaseResult

    result = CaseResult(0, {"size": 64, "seed": 1}, Status.PASSED)
    Judge._profile_case(judge, 0, {"size": 64, "seed": 1}, SeedPlan(1, None, "profile"), [],
                        600.0, result)
    return result


def test_the_ncu_report_lands_where_the_output_says_with_its_kernels(tmp_path, monkeypatch):
    """`profile.reports_dir` is relative to the judge's working folder and ncu runs in a
    scratch folder: the report's path is made absolute, so ncu writes it there, the
    record names it, and its kernels are read back into the record and the table."""
    import io

    from rich.console import Console
    from test_ncu_report import ADD, COPY

    from harness.views.report import print_profile

    result = _profiled_case(_stub_judge(tmp_path, monkeypatch))
    out = result.profile["ncu"]
    written = tmp_path / "work" / "profiles" / "add_cuda-vectoradd-case0.ncu-rep"
    assert result.status == "passed" and "error" not in out, out
    assert out["report"] == str(written) and written.is_file()
    assert [k["name"] for k in out["kernels"]] == [ADD, COPY]
    assert out["kernels"][0]["findings"][0]["rule"] == "SOLBottleneck"
    console = Console(file=io.StringIO(), width=200)
    print_profile(console, result)
    text = console.file.getvalue()
    assert "Nsight Compute, per kernel" in text and "5.50 µs" in text and "89%" in text
    assert "ncu (kernel #1) SOLBottleneck (OPT, est. speedup 30%): Memory again." in text


def test_a_failed_ncu_run_fails_the_profile_case(tmp_path, monkeypatch):
    """ncu that cannot write its report: the case is an error with ncu's reason (a profile
    without its report is not passed), and the run's exit code is not 0."""
    from harness.consts import Status
    from harness.results.document import Evaluation, PhaseResult

    result = _profiled_case(_stub_judge(tmp_path, monkeypatch, fail=True))
    out = result.profile["ncu"]
    assert result.status == Status.ERROR and out["report"] is None, out
    assert out["error"].startswith("ncu exited with 1: ==ERROR== Unable to write to file")
    assert "Connected to process" in out["output"]  # the whole tail kept beside the reason
    assert result.message.startswith("Nsight Compute failed, so this case has no kernel "
                                     "report: ncu exited with 1: ==ERROR== Unable to write")
    ev = Evaluation(task={}, submission={}, device={}, mode="profile", started="",
                    phases=[PhaseResult("profile", "public", [result])])
    assert ev.exit_code != 0 and not ev.passed


def test_a_reports_folder_that_cannot_be_made_fails_the_case(tmp_path, monkeypatch):
    from harness.consts import Status

    judge = _stub_judge(tmp_path, monkeypatch)
    (tmp_path / "work" / "afile").write_text("")
    judge.settings.profile.reports_dir = "afile/profiles"  # a folder inside a file
    result = _profiled_case(judge)
    assert result.status == Status.ERROR and "cannot be made" in result.message, result.message
