"""The worker's sandbox as a whole (harness/judging/sandbox/sandbox.py and containment.py):
the policy's paths, the sandbox switch, partial containment and recording, the refusals
read from the output, the worker's environment and compilers. Landlock and the seccomp
filter themselves: tests/test_landlock.py, tests/test_seccomp.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from harness.judging.sandbox import landlock
from harness.judging.sandbox.containment import (
    build_policy,
    expected_containment,
    python_paths,
    recording_refusal,
    refusals,
)
from harness.settings import Settings

CASE = ["--case", "size: 256; seed: 1"]



def test_policy_reads_the_harness_package_but_never_the_project(tmp_path):
    policy = build_policy(tmp_path / "scratch", [tmp_path / "staged"], [tmp_path / "shm"],
                          "cpu", ["/srv/extra"])
    assert ROOT / "harness" in policy.read and Path("/srv/extra") in policy.read
    for path in policy.read + policy.write:
        assert path != ROOT and path not in ROOT.parents and path != Path.cwd()
        assert path not in (Path("/"), Path("/tmp"), Path.home(), Path("/etc"), Path("/proc"))
    assert policy.write == [tmp_path / "scratch", tmp_path / "shm"]
    assert Path("/dev/null") in policy.devices
    assert all(Path(p).is_dir() for p in python_paths())


def test_settings_know_the_sandbox_switch():
    raw = Settings.load().raw
    assert Settings.from_dict(raw).worker.sandbox == "landlock"
    off = Settings.from_dict({**raw, "worker": {**raw["worker"], "sandbox": False}})
    assert off.worker.sandbox == "off"  # YAML's bare `off`
    with pytest.raises(ValueError, match="landlock or off"):
        Settings.from_dict({**raw, "worker": {**raw["worker"], "sandbox": "bubblewrap"}})


def test_an_allowed_path_holding_the_project_makes_containment_partial(tmp_path):
    worker = Settings.load().worker
    worker.sandbox_read = [str(ROOT.parent)]
    report = expected_containment(worker)
    assert report.level == "partial"
    assert any("project folder" in m for m in report.missing)
    assert "--allow-partial-containment" in recording_refusal(worker, "leaderboard", False)


def test_recording_refusal_only_in_leaderboard_mode_without_the_flag():
    worker = Settings.load().worker
    worker.sandbox = "off"
    assert "--allow-partial-containment" in recording_refusal(worker, "leaderboard", False)
    assert recording_refusal(worker, "leaderboard", True) is None
    assert recording_refusal(worker, "test", False) is None


def test_refusals_are_read_from_the_output():
    err = ("sandbox refused: read /x\nsandbox refused: read /x\n"
           "PermissionError: [Errno 13] Permission denied: '/y'\nother\n")
    assert refusals(err, "") == ["read /x", "PermissionError: [Errno 13] Permission denied: '/y'"]
    many = "\n".join(f"sandbox refused: read /{i}" for i in range(20))
    assert refusals(many, limit=3)[-1] == "... and 17 more"


def test_the_sandboxs_sitecustomize_runs_the_one_it_hides(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    (ours / "sitecustomize.py").write_text(
        "from harness.judging.sandbox.refusals import run_shadowed_sitecustomize\n"
        "run_shadowed_sitecustomize(__file__)\n")
    (theirs / "sitecustomize.py").write_text("print('THEIRS RAN')\n")
    out = subprocess.run([sys.executable, "-c", "pass"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": f"{ours}:{theirs}:{ROOT}"})
    assert out.stdout.strip() == "THEIRS RAN", out.stderr


@pytest.mark.slow
def test_partial_containment_refuses_to_record_unless_allowed(tmp_path):
    """End to end, with the sandbox switched off (so on any kernel)."""
    config = tmp_path / "off.yaml"
    config.write_text("worker:\n  sandbox: off\n")
    env = {"HARNESS_DB": str(tmp_path / "results.db")}
    sub = str(ROOT / "submissions" / "vectoradd" / "add_torch.py")
    refused = run_cli("submit", sub, "--task", "vectoradd", "--device", "cpu", *CASE,
                      "--config", str(config), env=env)
    assert refused.rc == 2 and "--allow-partial-containment" in refused.out
    assert not (tmp_path / "results.db").exists()  # refused before the database opened
    batch = run_cli("batch", sub, "--task", "vectoradd", "--device", "cpu", *CASE,
                    "--config", str(config), env=env)
    assert batch.rc == 2 and "--allow-partial-containment" in batch.out
    allowed = run_cli("submit", sub, "--task", "vectoradd", "--device", "cpu", *CASE,
                      "--config", str(config), "--allow-partial-containment",
                      json_path=tmp_path / "r.json", env=env)
    assert allowed.rc == 0, allowed.out
    assert allowed.doc["harness"]["containment"]["level"] == "off"
    assert "containment: off" in allowed.out
    assert allowed.doc["record"]["submission_id"]
    # test mode records nothing, so it needs no flag
    plain = run_cli("submit", sub, "--task", "vectoradd", "--device", "cpu", "--mode", "test",
                    *CASE, "--config", str(config), env=env)
    assert plain.rc == 0, plain.out


def test_gpu_workers_get_the_same_sandbox_as_cpu_workers():
    """GPU buffers travel as descriptors (harness.judging.worker.sharing), so a GPU worker runs
    under the same Landlock rules as a CPU one, with the NVIDIA device files added, and
    writes nothing in /dev/shm (torch's own CUDA sharing needed that, and failed under
    Landlock on the H200)."""
    from harness.judging.sandbox.containment import build_policy, expected_containment
    from harness.judging.sandbox.sandbox import Folders, contain
    from harness.settings import Settings

    settings = Settings.load().worker
    assert expected_containment(settings, "cuda").level == expected_containment(settings).level
    policy = build_policy(Path(tempfile.mkdtemp()), [], [], "cuda", [])
    assert not any(str(p).startswith("/dev/shm") for p in policy.write)
    env, limits, contained = contain(settings, "cuda", Folders(Path(tempfile.mkdtemp())))
    if landlock.abi_version() >= 1:
        assert limits.ruleset is not None and limits.drop_capabilities
    limits.close()


def test_a_scratch_folder_can_be_prepared_twice(tmp_path):
    """Profile mode prepares one folder for every Nsight Compute run of an evaluation."""
    from harness.judging.sandbox.containment import prepare_scratch

    first = prepare_scratch(tmp_path)
    assert prepare_scratch(tmp_path) == first
    assert (tmp_path / ".harness-path" / "harness").is_symlink()


def test_the_workers_environment_passes_what_the_organiser_names(tmp_path, monkeypatch):
    """The allow-list, torch's allocator configuration (it changes timings, and the public
    evaluators' process sees it), and `worker.env_pass` (names and `*` prefixes); the
    dropped prefixes stay out whatever the lists say."""
    from harness.judging.sandbox.sandbox import worker_env

    for key, value in {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                       "MALLOC_ARENA_MAX": "2", "MALLOC_TRIM_THRESHOLD_": "0",
                       "LD_PRELOAD": "/opt/lib/libfast.so", "HARNESS_DB": "/secret.db",
                       "AWS_SECRET_ACCESS_KEY": "hunter2", "UNRELATED": "x"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")
    plain = worker_env(tmp_path, "cuda")
    assert plain["PYTORCH_CUDA_ALLOC_CONF"] == plain["PYTORCH_ALLOC_CONF"] == "expandable_segments:True"
    assert not {"MALLOC_ARENA_MAX", "LD_PRELOAD", "UNRELATED", "HARNESS_DB"} & set(plain)
    named = worker_env(tmp_path, "cuda", ["MALLOC_*", "LD_PRELOAD", "HARNESS_*", "AWS_*"])
    assert named["MALLOC_ARENA_MAX"] == "2" and named["MALLOC_TRIM_THRESHOLD_"] == "0"
    assert named["LD_PRELOAD"] == "/opt/lib/libfast.so"
    assert not {"HARNESS_DB", "AWS_SECRET_ACCESS_KEY", "UNRELATED"} & set(named)
    assert named["HOME"] == str(tmp_path)  # the scratch entries still win


def test_the_machines_compiler_settings_reach_the_worker(tmp_path, monkeypatch):
    """The compilers as the machine names them (the H200 machines: CC, CXX and CUDAHOSTCXX
    under /opt/gcc, TORCH_CUDA_ARCH_LIST=9.0a): an extension built with load_inline is
    built as under the contest's own process, which sees them."""
    from harness.judging.sandbox.sandbox import worker_env

    names = {"CC": "/opt/gcc/bin/gcc", "CXX": "/opt/gcc/bin/g++", "CUDAHOSTCXX": "/opt/gcc/bin/g++",
             "TORCH_CUDA_ARCH_LIST": "9.0a", "LIBRARY_PATH": "/usr/local/cuda/lib64/stubs",
             "CPATH": "/opt/include", "MAX_JOBS": "4", "NVCC_APPEND_FLAGS": "-lineinfo"}
    for key, value in names.items():
        monkeypatch.setenv(key, value)
    env = worker_env(tmp_path, "cuda")
    assert {key: env.get(key) for key in names} == names


@pytest.mark.slow
def test_a_submission_that_asks_its_user_name_gets_the_workers(cli, tmp_path, monkeypatch):
    """The worker's user is in no passwd file; getpass.getuser() (torch.compile asks it for
    its caches' folders) reads the name the worker's environment gives, not the judge's
    (a forked worker and one started from scratch both take worker_env's)."""
    from harness.judging.sandbox.sandbox import WORKER_USER_NAME, worker_env

    monkeypatch.setenv("USER", "the-judges-user")
    env = worker_env(tmp_path, "cpu")
    assert env["USER"] == env["LOGNAME"] == WORKER_USER_NAME
    r = cli("submit", str(ROOT / "tests" / "submissions" / "vectoradd" / "asks_its_user_name.py"),
            "--task", "vectoradd", "--device", "cpu", "--mode", "test", "--no-record")
    assert r.rc == 0, r.out


@pytest.mark.slow
def test_a_load_inline_build_uses_the_judges_compiler(tmp_path):
    """End to end: the worker's torch builds a submission's extension in the sandbox with
    the compiler the judge's environment names (one that does not exist: the build fails
    saying so). The build that passes with the judge's own compiler is the first run of
    test_compile_cache.py's rerun test."""
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("torch's load_inline needs ninja and a C++ compiler")
    sub = ROOT / "tests" / "submissions" / "vectoradd" / "load_inline_cpp.py"
    env = {"CXX": str(tmp_path / "cxx-named-by-the-judge")}
    r = run_cli("submit", str(sub), "--task", "vectoradd", "--device", "cpu", "--mode", "test",
                "--no-record", json_path=tmp_path / "r.json", env=env)
    assert r.rc == 1 and "cxx-named-by-the-judge" in r.out, r.out


@pytest.mark.parametrize("value", ["['*']", "['A*']", "['']", "MALLOC_ARENA_MAX", "5", "[5]",
                                   "['MALLOC_*_X']", "[[LD_PRELOAD]]"])
def test_env_pass_refuses_what_is_not_a_list_of_names(tmp_path, value):
    """The whole environment, a prefix too short to say what it is for (tokens would pass),
    a bare string (read letter by letter otherwise), numbers and nested lists."""
    extra = tmp_path / "bad.yaml"
    extra.write_text(f"worker:\n  env_pass: {value}\n")
    with pytest.raises(ValueError, match="env_pass"):
        Settings.load(extra)


def test_env_pass_takes_names_and_prefixes(tmp_path):
    extra = tmp_path / "good.yaml"
    extra.write_text("worker:\n  env_pass: [MALLOC_*, LD_PRELOAD, _X]\n")
    assert Settings.load(extra).worker.env_pass == ["MALLOC_*", "LD_PRELOAD", "_X"]


@pytest.mark.slow
def test_the_judge_works_in_its_callers_folder(cli, tmp_path):
    """A judge process starts in the project's folder and works in the one its caller
    was run in: there a relative profile.reports_dir lands, and that folder is the
    working directory the sandbox keeps from the worker, so that one inside a folder
    the worker may read (here: Python's own) makes the containment partial, saying so."""
    from harness.judging.sandbox.landlock import probe

    if probe().level != "full":
        pytest.skip("needs Landlock ABI 6 or later (full containment)")
    try:
        inside = Path(tempfile.mkdtemp(dir=sys.prefix, prefix="harness-test-"))
    except OSError:
        pytest.skip(f"cannot make a folder in {sys.prefix}")
    try:
        r = cli("submit", str(ROOT / "submissions" / "vectoradd" / "add_torch.py"), "--task",
                "vectoradd", "--device", "cpu", "--mode", "test", "--no-record", cwd=inside)
        assert r.rc == 0, r.out
        containment = r.doc["harness"]["containment"]
        assert containment["level"] == "partial"
        assert any("the judge's working directory" in m and str(inside) in m
                   for m in containment["missing"]), containment
    finally:
        shutil.rmtree(inside, ignore_errors=True)
