"""The Landlock module and the worker's policy, unit by unit: ABI detection, what a report
says, the policy's paths, and a forked child under a ruleset (it cannot read outside,
connect to a listener, or read its parent's /proc entries; it can write its scratch)."""

from __future__ import annotations

import errno
import os
import shutil
import socket
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
from harness.judging.sandbox.seccomp import NoIpSockets
from harness.settings import Settings

CASE = ["--case", "size: 256; seed: 1"]

needs_landlock = pytest.mark.skipif(landlock.abi_version() < 1, reason="no Landlock here")
needs_abi = {n: pytest.mark.skipif(landlock.abi_version() < n, reason=f"needs Landlock ABI {n}")
             for n in (4, 6)}


def test_abi_and_reports_by_version():
    assert landlock.abi_version() >= 0
    assert landlock.probe(0).level == "partial" and "landlock" in landlock.probe(0).missing[0]
    three = landlock.probe(3)
    assert three.level == "partial" and three.enforced == ["filesystem", "truncate"]
    assert [m.split()[0] for m in three.missing] == ["tcp", "scopes"]
    assert landlock.probe(7).to_dict() == {"level": "full", "abi": 7, "missing": [],
                                           "enforced": ["filesystem", "truncate", "tcp", "scopes"]}
    assert "missing: tcp" in three.summary
    assert landlock.off().level == "off"


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


def _in_child(confine, action) -> int:
    """Run `action` in a forked child after `confine` (a ruleset, or a function that
    confines the child); its errno (0: it worked)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 100
        try:
            if isinstance(confine, landlock.Ruleset):
                confine.restrict_self(drop_capabilities=False)
            else:
                confine()
            action()
            code = 0
        except OSError as exc:
            code = exc.errno or 99
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@needs_landlock
def test_a_child_reads_and_writes_only_what_it_is_allowed(tmp_path):
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    ruleset = landlock.Ruleset.build(read=python_paths(), write=[scratch])
    try:
        assert _in_child(ruleset, lambda: (scratch / "ok.txt").write_text("ok")) == 0
        assert _in_child(ruleset, lambda: (outside / "secret.txt").read_text()) == errno.EACCES
        assert _in_child(ruleset, lambda: (outside / "new.txt").write_text("x")) == errno.EACCES
        assert _in_child(ruleset, lambda: os.listdir(outside)) == errno.EACCES
        # no device nodes, even for root: a block device would read the disk around the rules
        assert _in_child(ruleset, lambda: os.mknod(scratch / "disk", 0o600 | 0o060000,
                                                   os.makedev(8, 0))) in (errno.EACCES, errno.EPERM)
    finally:
        ruleset.close()
    assert (scratch / "ok.txt").read_text() == "ok" and not (outside / "new.txt").exists()


@needs_abi[4]
def test_a_child_cannot_connect_or_bind_tcp(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    ruleset = landlock.Ruleset.build(read=python_paths(), write=[tmp_path])
    try:
        assert _in_child(ruleset, lambda: socket.create_connection(("127.0.0.1", port), 2)) \
            == errno.EACCES
        assert _in_child(ruleset, lambda: socket.socket().bind(("127.0.0.1", 0))) == errno.EACCES
    finally:
        ruleset.close()
        server.close()


@needs_abi[6]
def test_a_child_cannot_read_its_parents_memory_or_signal_it(tmp_path):
    """Landlock's own rule (ptrace attach, signal scope), with all of /proc readable.
    It does not cover environ and maps (a ptrace *read* check on Linux 6.18): the
    worker's policy keeps /proc/<other pid> out instead (next test)."""
    parent = os.getpid()
    ruleset = landlock.Ruleset.build(read=python_paths() + [Path("/proc")], write=[tmp_path])
    try:
        assert _in_child(ruleset, lambda: open(f"/proc/{parent}/mem", "rb").read(1)) \
            == errno.EACCES
        assert _in_child(ruleset, lambda: os.kill(parent, 0)) == errno.EPERM
    finally:
        ruleset.close()


@needs_landlock
def test_the_worker_policy_keeps_other_processes_proc_entries_out(tmp_path):
    parent = os.getpid()
    policy = build_policy(tmp_path, [], [], "cpu", [])
    ruleset = landlock.Ruleset.build(policy.read, policy.write, policy.devices)
    try:
        for entry in ("environ", "maps", "mem", "cmdline", "fd"):
            assert _in_child(ruleset, lambda e=entry: os.stat(f"/proc/{parent}/{e}")
                             and open(f"/proc/{parent}/{e}", "rb")) == errno.EACCES, entry
        assert _in_child(ruleset, lambda: Path("/proc/self/status").read_text()) == 0
        assert _in_child(ruleset, lambda: Path("/proc/cpuinfo").read_text()) == 0
        assert _in_child(ruleset, lambda: open("/proc/kcore", "rb")) in (errno.EACCES,
                                                                         errno.ENOENT)
    finally:
        ruleset.close()


@pytest.mark.skipif(not NoIpSockets.available(), reason="no seccomp filter here")
def test_the_seccomp_filter_refuses_ip_sockets_only(tmp_path):
    def no_ip() -> None:
        landlock.no_new_privs()
        NoIpSockets().install()

    def child(action) -> int:
        return _in_child(no_ip, action)

    assert child(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) == errno.EACCES
    assert child(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM)) == errno.EACCES
    assert child(lambda: socket.socketpair()) == 0
    assert child(lambda: (tmp_path / "f").write_text("x")) == 0


def _speculation() -> list[str]:
    lines = Path("/proc/self/status").read_text().splitlines()
    return [line for line in lines if line.startswith(("Speculation", "Seccomp:"))]


@pytest.mark.skipif(not NoIpSockets.available(), reason="no seccomp filter here")
@pytest.mark.parametrize("mitigations", [False, True])
def test_the_filter_leaves_speculation_as_the_kernel_has_it_unless_asked(tmp_path, mitigations):
    """Both ways of installing the filter hold; by default the child's speculation state
    is its parent's (kernels that tie mitigations to seccomp would slow its host code)."""
    out = tmp_path / "status"

    def filtered() -> None:
        landlock.no_new_privs()
        NoIpSockets(speculation_mitigations=mitigations).install()

    def record() -> None:
        out.write_text("\n".join(_speculation()))

    assert _in_child(filtered, record) == 0
    lines = out.read_text().splitlines()
    assert "Seccomp:\t2" in lines
    assert _in_child(filtered, lambda: socket.socket(socket.AF_INET)) == errno.EACCES
    if not mitigations:
        parent = [line for line in _speculation() if not line.startswith("Seccomp:")]
        assert [line for line in lines if not line.startswith("Seccomp:")] == parent


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
    from harness.judging.sandbox import landlock
    from harness.judging.sandbox.containment import build_policy, expected_containment
    from harness.judging.sandbox.sandbox import contain
    from harness.settings import Settings

    settings = Settings.load().worker
    assert expected_containment(settings, "cuda").level == expected_containment(settings).level
    policy = build_policy(Path(tempfile.mkdtemp()), [], [], "cuda", [])
    assert not any(str(p).startswith("/dev/shm") for p in policy.write)
    env, limits, contained = contain(settings, "cuda", Path(tempfile.mkdtemp()), [], [])
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
@pytest.mark.parametrize("named", [False, True])
def test_a_load_inline_build_uses_the_judges_compiler(tmp_path, named):
    """End to end: the worker's torch builds a submission's extension in the sandbox
    (tests/submissions/vectoradd/load_inline_cpp.py passes), with the compiler the judge's
    environment names (one that does not exist: the build fails saying so)."""
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("torch's load_inline needs ninja and a C++ compiler")
    sub = ROOT / "tests" / "submissions" / "vectoradd" / "load_inline_cpp.py"
    env = {"CXX": str(tmp_path / "cxx-named-by-the-judge")} if named else {}
    r = run_cli("submit", str(sub), "--task", "vectoradd", "--device", "cpu", "--mode", "test",
                "--no-record", json_path=tmp_path / "r.json", env=env)
    if named:
        assert r.rc == 1 and "cxx-named-by-the-judge" in r.out, r.out
    else:
        assert r.rc == 0 and r.doc["passed"], r.out


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
