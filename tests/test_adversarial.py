"""The corpus of cheats and faults in tests/adversarial/: each one is caught (failed,
rejected or flagged), no clean score is recorded, and the harness carries on.

Each runs in leaderboard mode (so that it is recorded) against vectoradd, on a small
benchmark case. The GPU-only attacks are marked and run on the GPU machine.
"""

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import BAD, HAS_GPU, MAILBOX_ON_CPU, ROOT, gpu, patched_runner, run_cli

from harness.results.document import case_flags

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

CORPUS = ROOT / "tests" / "adversarial"
CASE = ["--case", "size: 256; seed: 1"]


def attack(cli, name, *extra, device="cpu", env=None, python=()):
    r = cli("submit", str(CORPUS / f"{name}.py"), "--task", "vectoradd", "--device", device,
            "--user", name, *CASE, *extra, env=env, python=python)
    assert "Traceback (most recent call last)" not in r.out, r.out
    return r


def statuses(doc):
    return {c["status"] for p in doc["phases"] for c in p["cases"]}


def screen_rules(doc):
    return {f["rule"]: f["severity"] for f in doc["screen"]}


def assert_not_clean(cli, name, db=None):
    """Recorded (in `cli`'s database, or `db`), and not ranked with a clean status."""
    env = {"HARNESS_DB": str(db or cli.db), "COLUMNS": "200"}
    board = json.loads(run_cli("leaderboard", "vectoradd", "--json", env=env).out)
    rows = [r for rows in board["devices"].values() for r in rows if r["user"] == name]
    assert all(r["status"] != "ok" for r in rows), rows
    history = run_cli("history", "--user", name, env=env)
    assert name in history.out  # it was recorded


WRONG_OUTPUTS = {  # each attack, and the screen's rule that names it where one does
    "cache_by_id": "cache-by-id", "cache_by_data_ptr": "cache-by-pointer",
    "cache_by_shape": None, "precompute_all": None, "mutate_input": None,
    "patch_allclose": "sys-modules", "walk_gc": "gc-walk", "lazy_output": "tensor-subclass",
    "thread_finishes": "threads"}


@pytest.fixture(scope="module")
def wrong_outputs(tmp_path_factory):
    """The attacks that return wrong outputs, judged by one `runner.py batch` (one judge
    template forks every judge) as leaderboard runs recorded under their files' names:
    its exit code and output, each file's result, and the database."""
    folder = tmp_path_factory.mktemp("wrong_outputs")
    db, out = folder / "results.db", folder / "batch.json"
    r = run_cli("batch", *(str(CORPUS / f"{name}.py") for name in WRONG_OUTPUTS),
                "--task", "vectoradd", "--device", "cpu", "--jobs", "1", *CASE,
                "--db", str(db), "--json", str(out))
    results = {Path(res["file"]).stem: res for res in json.loads(out.read_text())["results"]}
    return r, results, db


@pytest.mark.xdist_group("wrong_outputs")  # one process judges the batch for all nine
@pytest.mark.parametrize("name", list(WRONG_OUTPUTS))
def test_wrong_outputs_fail(wrong_outputs, name):
    r, results, db = wrong_outputs
    assert r.rc == 1 and "Traceback (most recent call last)" not in r.out, r.out
    assert results[name]["status"] == "failed", results[name]
    if WRONG_OUTPUTS[name]:
        assert WRONG_OUTPUTS[name] in {f["rule"] for f in results[name]["screen"]}
    assert_not_clean(None, name, db)


@pytest.mark.parametrize("name", ["cache_by_id", "cache_by_data_ptr", "cache_by_shape"])
def test_result_caches_fail_in_benchmark_mode_too(cli, name):
    """Every timed output is checked in benchmark mode as well: a cache never shows a
    fake time there (it used to, where only leaderboard mode checked them)."""
    r = attack(cli, name, "--mode", "benchmark")
    assert r.rc == 1, r.out
    assert statuses(r.doc) == {"failed"} and r.doc["score_ns"] is None


def test_work_done_in_the_rehearsal_cannot_answer_a_timed_call(cli):
    """The rehearsal gives the submission untimed calls between samples; the inputs of
    the sample to come are written only after them, so what it precomputes there is
    stale (with the inputs written first, this attack passed with a free output)."""
    r = attack(cli, "rehearsal_precompute", "--mode", "benchmark")
    assert r.rc == 1, r.out
    assert statuses(r.doc) == {"failed"} and r.doc["score_ns"] is None


@pytest.fixture
def three_per_sample(tmp_path):
    """vectoradd with three calls per sample, back to back on three inputs (as the nvfp4
    contest's fifteen): six input slots, the previous sample's three rehearsed."""
    import shutil

    folder = tmp_path / "vectoradd3"
    shutil.copytree(ROOT / "tasks" / "vectoradd", folder)
    (folder / "utils.py").write_text((ROOT / "tasks" / "utils.py").read_text())
    yml = folder / "task.yml"
    yml.write_text(yml.read_text().replace("source: ../utils.py", "source: utils.py")
                   .replace("  hidden_window_us: 100\n", "  hidden_window_us: 100\n  calls_per_sample: 3\n"))
    return folder


_TRACING = """
_ids = {}


def custom_kernel(data):
    a, b = data
    print("slot", _ids.setdefault(a.data_ptr(), len(_ids)))
    return a + b
"""


@pytest.mark.parametrize("name,passes", [("honest", True), ("cache_by_data_ptr", False),
                                         ("rehearsal_precompute", False)])
def test_several_calls_per_sample_with_rehearsals(cli, three_per_sample, name, passes):
    """The honest submission prints the input slot of every call: the case's first sample
    (slots 0-2), then each sample's rehearsal of the previous sample's three slots followed
    by its own three timed calls on the other three."""
    sub = CORPUS / f"{name}.py"
    if name == "honest":
        sub = three_per_sample / "honest.py"
        sub.write_text(_TRACING)
    r = cli("submit", str(sub), "--task", str(three_per_sample), "--device", "cpu",
            "--mode", "benchmark", "--no-record", *CASE)
    assert "Traceback (most recent call last)" not in r.out, r.out
    assert (r.rc == 0) == passes, r.out
    if not passes:
        assert statuses(r.doc) == {"failed"}
        return
    [case] = r.doc["phases"][0]["cases"]
    assert case["integrity"]["calls_per_sample"] == 3
    slots = [int(line.split()[1]) for line in r.doc["worker_output"]["stdout"].splitlines()
             if line.startswith("slot ")]
    samples = [tuple(slots[i:i + 3]) for i in range(0, len(slots) - len(slots) % 3, 3)]
    halves = [(0, 1, 2), (3, 4, 5)]
    assert len(samples) >= 7 and samples[0] == halves[0], samples
    # after the first: (rehearsal, timed) pairs, the timed half alternating
    for k, i in enumerate(range(1, len(samples) - 1, 2)):
        assert samples[i] == halves[k % 2] and samples[i + 1] == halves[(k + 1) % 2], samples


def test_a_thread_left_running_the_submissions_code_is_flagged(cli):
    """Whatever the screen reads of the imports, the worker sees the thread after the calls.
    Recorded, the flag is what `show` prints under the case, as the report did."""
    r = attack(cli, "thread_lingers", "--mode", "benchmark", "--record")
    assert r.rc == 0, r.out  # right outputs: flagged, not failed
    [case] = r.doc["phases"][0]["cases"]
    assert case["integrity"]["threads_after_calls"] >= 1
    assert any("still alive after" in f for f in case["flags"])
    shown = run_cli("show", str(r.doc["record"]["submission_id"]),
                    env={"HARNESS_DB": str(cli.db), "COLUMNS": "300"})
    assert shown.rc == 0 and "flag: " in shown.out and "still alive after" in shown.out


def test_outputs_stored_in_the_compiler_caches_never_reach_a_ranked_run(cli):
    """A file's compiler caches outlive its unranked runs (compile_cache.py): the attack
    finds what its last test run stored (so it could have replayed it), but a ranked run
    starts with nothing stored and leaves nothing for the next."""
    stored = lambda r: r.doc["worker_output"]["stdout"].split("REPLAY STORED ")[1].split()[0]
    tests = [attack(cli, "replay_across_runs", "--mode", "test") for _ in range(2)]
    assert all(r.rc == 0 for r in tests), tests[-1].out
    assert stored(tests[0]) == "0" and int(stored(tests[1])) > 0
    ranked = [attack(cli, "replay_across_runs") for _ in range(2)]
    assert all(r.rc == 0 for r in ranked), ranked[-1].out
    assert [stored(r) for r in ranked] == ["0", "0"]
    assert all(r.doc["harness"]["compile_cache"] == {"mode": "private"} for r in ranked)


def test_child_finishing_the_work_fails(cli):
    """Under the sandbox the attack fails earlier still: torch's share_memory_() makes a new
    object in /dev/shm, which the worker may not (an error, and the run says so)."""
    r = attack(cli, "child_finishes")
    assert r.rc == 1, r.out
    assert statuses(r.doc) & {"failed", "error"}
    if "error" in statuses(r.doc):
        assert any(w.startswith("the sandbox refused") for w in r.doc["warnings"])
    assert screen_rules(r.doc)["spawns-processes"] == "flag"
    assert_not_clean(cli, "child_finishes")


def test_host_timer_patch_never_reaches_the_workers_clock(cli):
    """The worker took its clock before the import: the forged `time.perf_counter_ns` is
    the submission's own, and its calls are timed at their real 10 ms on both clocks."""
    r = attack(cli, "patch_host_timer")
    assert screen_rules(r.doc)["patches-timing"] == "hard"
    bench = [p for p in r.doc["phases"] if p["name"] == "benchmark"]
    for phase in bench:
        for c in phase["cases"]:
            assert c["stats"]["mean"] > 8_000_000  # the worker's clock: 10 ms, not 1 µs
            assert c["score_ns"] > 8_000_000
    assert r.doc["record"]["refused"]  # hard screen match: no rank
    assert_not_clean(cli, "patch_host_timer")


def test_content_cache_is_flagged(cli):
    r = attack(cli, "cache_by_content")
    assert screen_rules(r.doc)["cache-by-content"] == "flag"
    assert_not_clean(cli, "cache_by_content")


def test_forged_output_and_protocol_bytes(cli):
    r = attack(cli, "fake_output")
    assert r.rc in (1, 4) and statuses(r.doc) & {"rejected", "failed"}
    assert "PASSED all tests" in r.doc["worker_output"]["stdout"]  # shown, never believed
    assert "writes-fds" in screen_rules(r.doc)
    assert_not_clean(cli, "fake_output")


def test_exit_midway_is_a_crash(cli):
    r = attack(cli, "exit_midway")
    assert r.rc == 3 and "crashed" in statuses(r.doc)
    assert_not_clean(cli, "exit_midway")


def test_orphan_process_is_killed(cli):
    r = attack(cli, "orphan_process", "--mode", "test")
    pids = [int(line.split("=")[1]) for line in r.doc["worker_output"]["stdout"].splitlines()
            if line.startswith("ORPHAN_PID=")]
    assert pids
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"process {pid} outlived the run")
    assert any("left running" in w for w in r.doc["warnings"])
    assert screen_rules(r.doc)["spawns-processes"] == "flag"
    r = attack(cli, "orphan_process")
    assert_not_clean(cli, "orphan_process")


def test_a_fork_chain_does_not_outlive_the_run(cli, compile_caches):
    """The chain beats a heartbeat each second into its source's compiler-cache folder
    (test mode: the one folder that outlives the run): no beat once the run is over."""
    import time

    r = attack(cli, "fork_chain", "--mode", "test")
    ended = time.time()
    assert r.rc == 0, r.out
    [beat] = list(compile_caches.glob("*/heartbeat"))
    time.sleep(2.5)
    last = float(beat.read_text())
    if last > ended:  # alive: wait for it to stop by itself (20 s) before failing
        time.sleep(20)
        pytest.fail(f"the chain outlived the run ({r.doc['worker_output']['stdout']})")
    assert any("left running" in w for w in r.doc["warnings"])


def test_environment_holds_no_secret(cli):
    secret_db = str(cli.db)
    r = attack(cli, "read_environment", env={"HARNESS_SECRET_TOKEN": "hunter2"})
    dump = r.doc["worker_output"]["stdout"]
    assert "ENV_DUMP" in dump
    assert secret_db not in dump and "HARNESS_DB" not in dump and "hunter2" not in dump
    assert screen_rules(r.doc)["reads-environment"] == "flag"
    assert_not_clean(cli, "read_environment")


def test_the_organiser_passes_variables_and_never_a_secret(cli, tmp_path):
    """`worker.env_pass` gives the worker what the contest's own process would see; a
    dropped prefix stays out even when named."""
    config = tmp_path / "pass.yaml"
    config.write_text("worker:\n  env_pass: [CONTEST_*, HARNESS_SECRET_TOKEN]\n")
    r = attack(cli, "read_environment", "--config", str(config),
               env={"CONTEST_ALLOC": "arena:4", "HARNESS_SECRET_TOKEN": "hunter2"})
    dump = r.doc["worker_output"]["stdout"]
    assert "CONTEST_ALLOC=arena:4" in dump
    assert "hunter2" not in dump and "HARNESS_SECRET_TOKEN" not in dump


def test_reference_cannot_be_imported(cli):
    r = attack(cli, "import_reference")
    assert r.rc == 1 and r.doc["load_error"]["kind"] == "import_error"
    assert "reference" in r.doc["load_error"]["hint"]
    assert screen_rules(r.doc)["touches-harness"] == "hard"
    assert_not_clean(cli, "import_reference")


def test_memory_hog_is_contained(cli, tmp_path):
    """The cap is what the submission may map beyond the worker's start: 1 GB, however
    much torch's libraries and the BLAS threads' buffers map first (a 3 GB cap on the
    whole process killed the worker before it was ready on a 16-core GPU machine). The
    allocator's own refusal, not the kernel's out-of-memory kill."""
    config = tmp_path / "limits.yaml"
    config.write_text("cpu:\n  worker:\n    cpu_memory_limit_gb: 1\n")
    r = attack(cli, "allocate_forever", "--mode", "test", "--config", str(config))
    assert r.rc == 1 and r.doc["phases"][0]["cases"][0]["status"] == "error"
    assert "can't allocate memory" in r.doc["phases"][0]["cases"][0]["message"]


def test_the_submission_sees_the_cap_set_over_the_workers_start(cli, tmp_path):
    """A quarter of a GB, less than the worker maps importing torch: the worker starts,
    and the submission's own process is capped at what it mapped then plus that, the
    figure the result records."""
    config = tmp_path / "limits.yaml"
    config.write_text("cpu:\n  worker:\n    cpu_memory_limit_gb: 0.25\n")
    r = cli("submit", str(BAD / "reports_memory_cap.py"), "--task", "vectoradd", "--device",
            "cpu", "--mode", "test", "--config", str(config))
    assert r.rc == 0 and set(statuses(r.doc)) == {"passed"}, r.out
    told = r.doc["worker_output"]["stdout"].split()
    cap, mapped = int(told[told.index("cap") + 1]), int(told[told.index("mapped") + 1])
    assert cap == r.doc["harness"]["memory_cap_bytes"]
    assert mapped < cap <= mapped + (1 << 30) // 4  # set over what the worker had mapped


def test_endless_loop_times_out(cli):
    r = attack(cli, "endless_loop", "--timeout", "8")
    assert r.rc == 3 and "timed out" in statuses(r.doc)
    assert_not_clean(cli, "endless_loop")


@gpu
def test_patched_event_timer_is_caught(cli):
    """The worker takes its events' elapsed_time before the import, so the patch never
    reaches the timing: each score stays on the judge's own clock's scale (a forged one
    would be a hundredth of it; run 94 read 1.07 and 1.12 ms, unflagged), unless the case
    is flagged or rejected anyway; the screen keeps it off the board."""
    r = attack(cli, "patch_event_timer", device="cuda")
    assert screen_rules(r.doc)["patches-timing"] == "hard"
    for case in [c for p in r.doc["phases"] if p["name"] == "benchmark" for c in p["cases"]]:
        if case["flags"] or case["status"] == "rejected":
            continue
        judge_ns = case["integrity"]["clocks"]["judge_mean_ns"]
        assert case["score_ns"] > 0.2 * judge_ns, (case["score_ns"], judge_ns, r.out)
    assert_not_clean(cli, "patch_event_timer")


@gpu
def test_side_stream_work_is_seen(cli):
    """The worker synchronizes the whole device before it reports, so side-stream work is
    either inside the reported time or on the judge's clock (flagged): never hidden."""
    r = attack(cli, "side_stream", device="cuda")
    flagged = any("outside the timed region" in f for f in case_flags(r.doc))
    for phase in (p for p in r.doc["phases"] if p["name"] == "benchmark"):
        for c in phase["cases"]:
            judge = c["integrity"]["clocks"]["judge_mean_ns"]
            assert flagged or c["score_ns"] >= 0.75 * judge, (c["score_ns"], judge)
    assert "side-streams" in screen_rules(r.doc)
    assert_not_clean(cli, "side_stream")


@gpu
def test_work_in_the_slack_of_a_long_sleep_is_seen_when_the_judge_times_it(cli, tmp_path):
    """Behind a 20 ms window a call that waits for the GPU stretches its sleep to the
    window, and a quarter of that (5 ms) was slack on the scored samples' two clocks: 3 ms
    of work on a side stream, on scored samples only, hid there. The judge times the sleep
    itself (sampling.SLEEP_MEASURED) and allows 2% of it: the attack is flagged (on its retry too), and honest submissions
    behind the same window are not, one of them waiting for the GPU as each call starts
    (its sleep grows to the window too: where 2% is likeliest to flag honest code)."""
    import shutil

    task = tmp_path / "long" / "vectoradd"  # its name as the examples' headers say
    shutil.copytree(ROOT / "tasks" / "vectoradd", task)
    (task / "utils.py").write_text((ROOT / "tasks" / "utils.py").read_text())
    spec = task / "task.yml"
    spec.write_text(spec.read_text().replace("source: ../utils.py", "source: utils.py")
                    .replace("hidden_window_us: 100", "hidden_window_us: 20000"))

    def run(path, user):
        r = cli("submit", str(path), "--task", str(task), "--device", "cuda", "--user", user,
                *CASE)
        assert "Traceback (most recent call last)" not in r.out, r.out
        return r

    r = run(CORPUS / "sleep_slack.py", "sleep_slack")
    assert any("on the scored samples" in f for f in case_flags(r.doc)), r.out
    for case in [c for p in r.doc["phases"] if p["name"] == "benchmark" for c in p["cases"]]:
        assert case["flags"] and case["integrity"]["retried"], r.out  # flagged on both
    waits = tmp_path / "add_waiting.py"
    waits.write_text("import torch\nfrom task import input_t, output_t\n\n\n"
                     "def custom_kernel(data: input_t) -> output_t:\n    a, b = data\n"
                     "    torch.cuda.synchronize()  # waits for the sleep: it grows\n"
                     "    return a + b\n")
    for path in (ROOT / "submissions" / "vectoradd" / "add_torch.py", waits):
        honest = run(path, path.stem)
        assert not case_flags(honest.doc), honest.out
        for case in [c for p in honest.doc["phases"] if p["name"] == "benchmark"
                     for c in p["cases"]]:
            assert case["integrity"]["scored_clocks"]["sleep"]["measured"] is True


def test_gpu_marker_consistent():
    assert isinstance(HAS_GPU, bool)


def test_a_replaced_time_function_never_runs_while_fresh_inputs_wait(cli):
    """With the mailbox (the GPU runs' default; here on the CPU), the worker polls between
    calls, and the judge may have written the next call's fresh inputs meanwhile. A hook
    in time.perf_counter / time.sleep would compute their outputs there, off the clock;
    its outputs are wrong on purpose (a tracer), so the case would fail if it ran. The
    polling loop uses the functions taken before the import: the hook never runs, and the
    submission is timed as the honest code it then is."""
    r = attack(cli, "poll_hook", "--mode", "benchmark", "--no-record",
               python=patched_runner(*MAILBOX_ON_CPU))
    assert statuses(r.doc) == {"passed"}, r.out
    assert screen_rules(r.doc)["patches-timing"] == "hard"  # read through the alias


@gpu
def test_hooks_in_the_workers_mailbox_are_caught(cli, tmp_path):
    """Hooks in the worker's own mailbox (reached through importlib) compute outputs where
    no clock looked before: on scored calls only (the probes honest). Flagged by the scored
    samples' clocks, and refused a rank by the screen."""
    sub = tmp_path / "mailbox_hook_scored.py"
    sub.write_text((CORPUS / "mailbox_hook.py").read_text())
    r = cli("submit", str(sub), "--task", "vectoradd", "--device", "cuda", "--user", sub.stem,
            "--case", "size: 256; seed: 1")
    assert "Traceback (most recent call last)" not in r.out, r.out
    assert screen_rules(r.doc)["touches-harness"] == "hard"
    assert any("on the scored samples" in f for f in case_flags(r.doc)), r.out
    assert_not_clean(cli, sub.stem)
