"""Every bad submission gets a clear verdict and exit code, through runner.py, on the CPU.
The GPU-only ones (a CUDA fault, a kernel that fails to compile) are in test_gpu.py."""

import json

import pytest
from conftest import BAD, ROOT, case_statuses

from harness.execution.protocol import Judged
from harness.frontends.batch import Batch
from harness.options import RunOptions
from harness.settings import Settings
from harness.storage.store import Store

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

FAST = ["--task", "vectoradd", "--mode", "test", "--device", "cpu", "--timeout", "30"]


def submit(cli, name, *extra):
    return cli("submit", str(BAD / f"{name}.py"), *FAST, *extra)


def test_syntax_error(cli):
    r = submit(cli, "syntax_error")
    assert r.rc == 1 and r.doc["load_error"]["kind"] == "syntax_error"
    assert r.doc["harness"]["head_start"] is False  # no worker was used
    assert "line 6" in r.doc["load_error"]["message"]
    assert "Traceback" not in r.out  # no harness traceback, only the verdict
    assert "syntax error" in r.out


def test_missing_module_names_it(cli):
    r = submit(cli, "import_missing")
    assert r.rc == 1 and r.doc["load_error"]["kind"] == "import_error"
    assert "kernel_magic_that_does_not_exist" in r.doc["load_error"]["title"]


def test_aiter_is_explained_as_amd_rocm_only(cli):
    r = submit(cli, "import_aiter")
    err = r.doc["load_error"]
    assert r.rc == 1 and r.doc["status"] == "cannot run here"
    assert err["title"] == "the submission needs a ROCm GPU and aiter"
    assert "ROCm" in err["hint"] and "amd-aiter" in err["hint"] and "not on this one" in err["hint"]


def test_no_custom_kernel(cli):
    r = submit(cli, "no_kernel")
    assert r.rc == 1 and "no custom_kernel" in r.doc["load_error"]["title"]
    assert "my_kernel" in r.doc["load_error"]["message"]  # what it does define


def test_exception_shows_the_submission_frames_only(cli):
    r = submit(cli, "raises")
    assert r.rc == 1 and set(case_statuses(r.doc)) == {"error"}
    message = r.doc["phases"][0]["cases"][1]["message"]
    assert 'File "raises.py", line 10, in custom_kernel' in message
    assert 'File "raises.py", line 5, in _helper' in message
    assert "harness" not in message and "RuntimeError" in message


@pytest.mark.parametrize("name,needle", [
    ("wrong_type", "expected a tensor, got list"),
    ("wrong_count", "expected a tensor, got tuple"),
    ("wrong_shape", "shape [16129], expected [127, 127]"),
    ("wrong_dtype", "dtype float32, expected float16"),
])
def test_wrong_output_form(cli, name, needle):
    r = submit(cli, name)
    assert r.rc == 1 and set(case_statuses(r.doc)) == {"failed"}
    assert any(needle in c["message"] for c in r.doc["phases"][0]["cases"])


def test_wrong_values_report_the_worst_elements(cli):
    r = submit(cli, "wrong_values")
    assert r.rc == 1
    message = r.doc["phases"][0]["cases"][2]["message"]
    assert "elements differ" in message and "the worst" in message
    assert "expected" in message and "got" in message and "at (" in message


def test_nan_output(cli):
    r = submit(cli, "returns_nan")
    assert r.rc == 1 and "NaN" in r.doc["phases"][0]["cases"][0]["message"]


def test_hang_is_killed_at_the_timeout(cli):
    r = cli("submit", str(BAD / "hang.py"), "--task", "vectoradd", "--mode", "test",
            "--device", "cpu", "--timeout", "5")
    assert r.rc == 3
    assert case_statuses(r.doc)[0] == "timed out"
    assert set(case_statuses(r.doc)[1:]) == {"skipped"}
    assert r.doc["phases"][0]["wall_seconds"] < 5 + 10  # the phase: killed at its limit
    assert r.doc["wall_seconds"] < 60


@pytest.mark.parametrize("name,needle", [
    ("abort", "SIGABRT"), ("segfault", "SIGSEGV"), ("exit_zero", "exited with status 0"),
])
def test_hard_crashes(cli, name, needle):
    """On one case: after a crash each further case starts a fresh worker (seconds each)."""
    r = submit(cli, name, "--case", "size: 127; seed: 1")
    assert r.rc == 3 and set(case_statuses(r.doc)) == {"crashed"}
    assert needle in r.doc["phases"][0]["cases"][0]["message"]
    assert "Traceback" not in r.out


@pytest.mark.parametrize("name", ["cuda_oob", "compile_fail"])
def test_gpu_kernels_on_the_cpu_need_a_gpu(cli, name):
    r = submit(cli, name)
    assert r.rc == 1 and case_statuses(r.doc)[0] == "needs a GPU"
    assert "needs a GPU" in r.doc["phases"][0]["cases"][0]["message"]


def test_usage_errors_exit_2(cli, tmp_path):
    assert cli("submit", "no/such/file.py", "--task", "vectoradd", want_json=False).rc == 2
    plain = tmp_path / "plain.py"
    plain.write_text("def custom_kernel(data):\n    return data\n")
    r = cli("submit", str(plain), want_json=False)
    assert r.rc == 2 and "#!POPCORN leaderboard" in r.out
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--task", "mxfp4_mm", want_json=False)
    assert r.rc == 2 and "remove one of them" in r.out
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--task", "nope", want_json=False)
    assert r.rc == 2 and "known tasks" in r.out
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test", "--case", "size 3",
            want_json=False)
    assert r.rc == 2 and "key: value" in r.out
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--db", "/proc/no/such/results.db",
            want_json=False)
    assert r.rc == 2 and "cannot open the results database" in r.out
    assert "Traceback" not in r.out



def test_a_worker_that_dies_before_the_submission_loads_is_the_harnesss_side(cli, tmp_path):
    """A worker that cannot start (here: an environment that the organiser passes on and
    that stops every interpreter at once; runner.py itself runs with -E, blind to it, and
    the judge's interpreter starts without it) is a clean verdict that says so and shows
    the worker's own words, not an internal error, and does not blame the submission. No
    head start: the worker is then a new interpreter, not a fork of the judge (which never
    reads the variable)."""
    config = tmp_path / "broken.yaml"
    config.write_text("worker:\n  env_pass: [PYTHONMALLOC]\n  head_start: false\n")
    r = cli("submit", "submissions/vectoradd/add_torch.py", *FAST, "--config", str(config),
            "--record", env={"PYTHONMALLOC": "no-such-allocator"}, python=("-E",))
    assert r.rc == 3 and "Traceback" not in r.out and "internal harness error" not in r.out
    assert r.doc["load_error"]["kind"] == "worker_start"
    assert "not the submission's doing" in r.doc["load_error"]["hint"]
    assert r.doc["status"] == "crashed" and r.doc["phases"] == []
    message = r.doc["load_error"]["message"]
    assert "exited with status 1 as it started" in message and "PYTHONMALLOC" in message
    assert "the worker could not start" in r.out and "the worker's stderr" in r.out
    # never recorded against the submission: not by submit, `record` or a batch's driver
    assert "not recorded: the worker could not start" in r.out
    document = tmp_path / "result0.json"
    again = cli("record", str(document), "--db", str(cli.db), want_json=False)
    assert again.rc == 0 and "skipped" in again.out and "not recorded" in again.out
    batch = Batch([ROOT / "submissions/vectoradd/add_torch.py"],
                  RunOptions(task="vectoradd", mode="test", db=str(cli.db)), Settings.load())
    batch.finish(batch.jobs[0], Judged(json.loads(document.read_text())))
    assert batch.jobs[0].status == "harness error" and "PYTHONMALLOC" in batch.jobs[0].error
    assert batch.jobs[0].submission_id is None
    assert Store(str(cli.db)).entries("vectoradd", batch.tasks["vectoradd"].content_hash) == []


def test_a_worker_that_does_not_answer_at_its_start_times_out_cleanly(cli, tmp_path):
    config = tmp_path / "impatient.yaml"
    config.write_text("worker:\n  start_timeout: 0.001\n  head_start: false\n")
    r = cli("submit", "submissions/vectoradd/add_torch.py", *FAST, "--config", str(config))
    assert r.rc == 3 and "Traceback" not in r.out
    assert r.doc["load_error"]["kind"] == "worker_start"
    assert r.doc["status"] == "timed out" and "no answer within" in r.doc["load_error"]["message"]


def test_a_worker_that_cannot_be_started_at_all_is_a_clean_verdict(cli, tmp_path):
    """Its limits fail between fork and exec (a file-size limit no kernel takes): no
    process to talk to, still the same clean verdict, and its scratch folder goes."""
    config = tmp_path / "refused.yaml"
    config.write_text(f"worker:\n  file_size_limit_bytes: {1 << 65}\n  head_start: false\n")
    temp = tmp_path / "temp"  # the run's own temporary folder: what it leaves is seen
    temp.mkdir()
    r = cli("submit", "submissions/vectoradd/add_torch.py", *FAST, "--config", str(config),
            env={"TMPDIR": str(temp)})
    assert r.rc == 3 and "Traceback" not in r.out
    assert r.doc["load_error"]["kind"] == "worker_start"
    assert "could not be started" in r.doc["load_error"]["message"]
    assert list(temp.glob("harness-worker-*")) == []
