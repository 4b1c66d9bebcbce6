"""CPU pinning: cores read from a fake sysfs, shares for batch slots, and real processes
(the judge, its worker, a batch's judge subprocess) on the CPUs they were given."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import ROOT, gpu

from harness.judging.measure import cpus

WHERE = textwrap.dedent("""
    import ctypes
    import os
    import threading

    _cpu = ctypes.CDLL(None).sched_getcpu
    _seen = set()

    def _others():
        me, found = threading.get_native_id(), set()
        for tid in os.listdir("/proc/self/task"):
            try:
                found |= os.sched_getaffinity(int(tid)) if int(tid) != me else set()
            except OSError:
                pass
        return tuple(sorted(found))

    def custom_kernel(data):
        where = (_cpu(), tuple(sorted(os.sched_getaffinity(0))), _others())
        if where not in _seen:
            _seen.add(where)
            print("CALLED ON", where[0], "AFFINITY", list(where[1]), "OTHERS", list(where[2]),
                  flush=True)
        a, b = data
        return a + b
""")

REPORTER = textwrap.dedent("""
    import gc
    import os

    import torch

    _said = False

    def custom_kernel(data):
        global _said
        if not _said:
            print("AFFINITY", sorted(os.sched_getaffinity(0)), "FROZEN", gc.get_freeze_count(),
                  flush=True)
            _said = True
        a, b = data
        return a + b
""")


def fake_sysfs(root: Path, cores_of: dict[int, tuple[int, int]]) -> Path:
    """cpuN/topology with (package, core) per logical CPU."""
    for cpu, (package, core) in cores_of.items():
        topology = root / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    return root


def test_hyperthreads_share_a_core(tmp_path):
    # 4 cores x 2 threads, numbered as Linux does on most VMs: siblings are N and N+4
    sysfs = fake_sysfs(tmp_path, {c: (0, c % 4) for c in range(8)})
    assert cpus.cores(set(range(8)), sysfs) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    p = cpus.plan(set(range(8)), sysfs)
    assert p.worker == {3, 7} and p.judge == {0, 1, 2, 4, 5, 6}
    assert p.to_dict() == {"judge": [0, 1, 2, 4, 5, 6], "worker": [3, 7]}


def test_nothing_to_separate_on_one_core(tmp_path):
    sysfs = fake_sysfs(tmp_path, {0: (0, 0), 1: (0, 0)})
    assert cpus.plan({0, 1}, sysfs) is None


def test_unreadable_topology_counts_each_cpu_as_a_core(tmp_path):
    assert cpus.cores({0, 3}, tmp_path / "missing") == [[0], [3]]


def test_shares_for_slots_are_disjoint(tmp_path):
    sysfs = fake_sysfs(tmp_path, {c: (c // 8, c % 8) for c in range(16)})
    shares = [cpus.share(set(range(16)), i, 2, sysfs) for i in range(2)]
    assert shares[0] == set(range(8)) and shares[1] == set(range(8, 16))
    # four slots on four cores: a share would be under two cores, so every slot gets all
    assert cpus.share(set(range(4)), 1, 4, fake_sysfs(tmp_path / "b", {c: (0, c) for c in range(4)})) \
        == set(range(4))


def test_slot_strings_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(cpus, "SYSFS", fake_sysfs(tmp_path, {c: (0, c) for c in range(8)}))
    monkeypatch.setattr(cpus, "allowed_now", lambda: set(range(8)))
    assert [cpus.parse(cpus.slot_cpus(i, 2)) for i in range(2)] == [{0, 1, 2, 3}, {4, 5, 6, 7}]
    assert cpus.parse("") == set()


def test_gpu_slots_get_shares_of_the_cores(tmp_path, monkeypatch):
    import torch

    from harness.frontends.backends import local_slots

    monkeypatch.setattr(cpus, "SYSFS", fake_sysfs(tmp_path, {c: (0, c) for c in range(8)}))
    monkeypatch.setattr(cpus, "allowed_now", lambda: set(range(8)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert [s["_cpus"] for s in local_slots(None, None)] == ["0,1,2,3", "4,5,6,7"]
    assert [s["_cpus"] for s in local_slots(None, None, pin=False)] == ["", ""]


def _two_cores() -> cpus.CpuPlan:
    allowed = cpus.allowed_now()
    found = cpus.plan(allowed) if allowed else None
    if found is None:
        pytest.skip("needs two physical cores")
    return found


def _two_cpus() -> set[int]:
    allowed = cpus.allowed_now()
    if not allowed or len(allowed) < 2:
        pytest.skip("needs two CPUs")
    return allowed


def _said(doc: dict) -> str:
    return next(line for line in doc["worker_output"]["stdout"].splitlines() if "AFFINITY" in line)


def _affinity(doc: dict) -> str:
    return _said(doc).partition(" FROZEN ")[0]


def _frozen(doc: dict) -> int:
    """Objects in the worker's frozen heap at its first call. Not always 0 by default: a
    library may freeze it at import (on the H200 machine it was above 0 under the defaults)."""
    return int(_said(doc).rpartition(" ")[2])


def _reporter(tmp_path: Path) -> Path:
    sub = tmp_path / "reporter.py"
    sub.write_text(REPORTER)
    return sub


def _report(cli, tmp_path: Path, settings: str | None = None, *args: str):
    """`submit` the reporter in test mode, with `settings` (YAML text) as --config."""
    if settings is not None:
        config = tmp_path / "settings.yaml"
        config.write_text(settings)
        args = (*args, "--config", str(config))
    return cli("submit", str(_reporter(tmp_path)), "--task", "vectoradd", "--mode", "test", *args)


@pytest.mark.slow
def test_worker_runs_on_its_own_core(cli, tmp_path):
    """Pinning on: the worker sees only its core, the judge records the plan, and the
    runner's own CPUs are as they were (a pinned judge is restored when it closes)."""
    expected = _two_cores()
    r = _report(cli, tmp_path, "cpu:\n  worker:\n    pin_cpus: true\n    gc_freeze: true\n",
                "--device", "cpu")
    assert r.rc == 0, r.out
    assert r.doc["harness"]["cpus"] == expected.to_dict()
    assert _affinity(r.doc) == f"AFFINITY {sorted(expected.worker)}"
    frozen = _frozen(r.doc)

    r = _report(cli, tmp_path, None, "--device", "cpu")  # the defaults
    assert "cpus" not in r.doc["harness"]
    assert _affinity(r.doc) == f"AFFINITY {sorted(cpus.allowed_now())}"
    assert _frozen(r.doc) < frozen


@pytest.mark.slow
def test_heap_frozen_when_asked(cli, tmp_path):
    r = _report(cli, tmp_path, "worker:\n  gc_freeze: true\n", "--device", "cpu")
    assert r.rc == 0, r.out
    default = _report(cli, tmp_path, None, "--device", "cpu")
    assert _frozen(r.doc) > _frozen(default.doc)


@pytest.mark.slow
def test_batch_judge_runs_on_its_slot_cpus(tmp_path):
    """A batch slot's CPUs bind its judge subprocess and, through it, the worker."""
    from harness.frontends.judge_process import run_judge

    allowed = _two_cpus()
    one = max(allowed)
    request = {"file": str(_reporter(tmp_path)), "task": str(ROOT / "tasks" / "vectoradd"), "mode": "test",
               "device": "cpu", "timeout": None, "cases": [], "config": None, "secret": None}
    doc = run_judge(request, {"CUDA_VISIBLE_DEVICES": "", "_cpus": str(one)}, 300)
    assert doc.get("status") == "passed", json.dumps(doc)[:2000]
    assert _said(doc).startswith(f"AFFINITY [{one}]")
    assert os.sched_getaffinity(0) == allowed  # this process is untouched


@gpu
def test_gpu_worker_pinned_when_asked(cli, tmp_path):
    expected = _two_cores()
    r = _report(cli, tmp_path, "worker:\n  pin_cpus: true\n  gc_freeze: true\n")
    assert r.rc == 0, r.out
    assert r.doc["device"]["kind"] == "cuda"
    assert r.doc["harness"]["cpus"] == expected.to_dict()
    assert _affinity(r.doc) == f"AFFINITY {sorted(expected.worker)}" and _frozen(r.doc) > 0


def _threads_elsewhere(stop: threading.Event, count: int) -> list[threading.Thread]:
    started = [threading.Thread(target=stop.wait, daemon=True) for _ in range(count)]
    for t in started:
        t.start()
    return started


def test_hold_keeps_the_calling_thread_alone_on_its_cpu():
    """The calling thread on the held CPU, every other thread off it, a thread it starts
    later placed at the next apply, the calling thread put back if it moved itself, and
    all of them back on every CPU after place_all."""
    allowed = _two_cpus()
    held, stop = max(allowed), threading.Event()
    others = allowed - {held}
    before, later = [], None
    try:
        before = _threads_elsewhere(stop, 2)
        hold = cpus.Hold(held, others)
        hold.apply()
        assert os.sched_getaffinity(0) == {held}
        assert all(os.sched_getaffinity(t.native_id) == others for t in before)
        later = _threads_elsewhere(stop, 1)[0]
        assert os.sched_getaffinity(later.native_id) == {held}  # inherited from the caller
        hold.apply()
        assert os.sched_getaffinity(later.native_id) == others
        os.sched_setaffinity(0, allowed)  # code in the call moved its own thread
        hold.apply()
        assert os.sched_getaffinity(0) == {held}
    finally:
        cpus.place_all(allowed)
        stop.set()
    assert os.sched_getaffinity(0) == allowed
    assert all(os.sched_getaffinity(t.native_id) == allowed for t in before + [later])


def test_hold_plan_keeps_the_held_cores_sibling_idle(tmp_path):
    """The held CPU is the first of the last physical core; its hyperthread sibling is
    left to no thread, so the judge's polling never shares the held CPU's core."""
    sysfs = fake_sysfs(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1)})
    assert cpus.hold_plan({0, 1, 2, 3}, sysfs) == (1, frozenset({0, 2}))
    one_core = fake_sysfs(tmp_path / "one", {0: (0, 0), 1: (0, 0)})
    assert cpus.hold_plan({0, 1}, one_core) is None  # nothing to keep apart
    assert cpus.hold_plan(None) is None and cpus.hold_plan(set()) is None


def test_evaluations_at_once_claim_different_cores_and_keep_off_each_others(tmp_path):
    """Two evaluations sharing a machine's CPUs (two submits) hold different cores: the
    second takes the last core the first does not hold and keeps its other threads off
    the first's; when every core is held the last is shared as before; a claim ended
    frees its core."""
    sysfs = fake_sysfs(tmp_path / "sys", {c: (0, c % 3) for c in range(6)})  # 3 cores x 2
    allowed = set(range(6))
    first, second, third = (cpus.CoreClaims(tmp_path / "claims") for _ in range(3))
    assert cpus.hold_plan(allowed, sysfs, first) == (2, frozenset({0, 1, 3, 4}))
    assert cpus.hold_plan(allowed, sysfs, second) == (1, frozenset({0, 3}))
    # no core left free of others' claims: its other threads go where they may
    assert cpus.hold_plan(allowed, sysfs, third) == (0, frozenset({1, 2, 4, 5}))
    fourth = cpus.CoreClaims(tmp_path / "claims")  # every core held: the last, shared
    assert cpus.hold_plan(allowed, sysfs, fourth) == (2, frozenset({0, 1, 3, 4}))
    assert fourth.held == []
    first.release()
    assert cpus.hold_plan(allowed, sysfs, fourth) == (2, frozenset({0, 1, 3, 4}))
    assert len(fourth.held) == 1  # the freed core, claimed
    third.release()
    fifth = cpus.CoreClaims(tmp_path / "claims")
    assert cpus.hold_plan(allowed, sysfs, fifth) == (0, frozenset({1, 2, 4, 5}))  # freed
    for c in (second, fourth, fifth):
        c.release()
    assert cpus.hold_plan(allowed, sysfs, cpus.CoreClaims(tmp_path / "claims")) == (
        2, frozenset({0, 1, 3, 4}))


def test_a_claim_is_seen_from_another_process_and_ends_with_it(tmp_path):
    """Claims are machine-wide: a core another process holds is not taken, and the
    kernel ends the claim when that process dies (no stale lock)."""
    sysfs = fake_sysfs(tmp_path / "sys", {0: (0, 0), 1: (0, 1)})
    folder = tmp_path / "claims"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from harness.judging.measure import cpus; "
         f"c = cpus.CoreClaims(Path({str(folder)!r})); "
         f"print(cpus.hold_plan({{0, 1}}, Path({str(sysfs)!r}), c), flush=True); "
         "time.sleep(60)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "(1, frozenset({0}))"
        mine = cpus.CoreClaims(folder)
        assert cpus.hold_plan({0, 1}, sysfs, mine) == (0, frozenset({1}))
        mine.release()
    finally:
        holder.kill()
        holder.wait()
    assert cpus.hold_plan({0, 1}, sysfs, cpus.CoreClaims(folder)) == (1, frozenset({0}))


def test_claims_that_cannot_be_made_leave_holding_as_before(tmp_path):
    """A claims folder that cannot be made (a file in its place) claims nothing, and the
    plan is the one without claims."""
    sysfs = fake_sysfs(tmp_path / "sys", {c: (0, c % 2) for c in range(4)})
    (tmp_path / "claims").write_text("not a folder")
    claims = cpus.CoreClaims(tmp_path / "claims" / "sub")
    assert cpus.hold_plan({0, 1, 2, 3}, sysfs, claims) == cpus.hold_plan({0, 1, 2, 3}, sysfs)
    assert claims.held == [] and not claims.taken_elsewhere("core-0-0")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)  # a link in the folder's place is not followed
    linked = cpus.CoreClaims(tmp_path / "link")
    assert cpus.hold_plan({0, 1, 2, 3}, sysfs, linked) == cpus.hold_plan({0, 1, 2, 3}, sysfs)
    assert linked.held == [] and list(real.iterdir()) == []


def test_a_claim_file_that_cannot_be_used_reads_as_held_and_never_blocks(tmp_path):
    """A FIFO (or anything but a plain file) at a core's claim file makes that core look
    held, at once (opening a FIFO would otherwise wait for a writer); claim files are
    made readable by every user whatever the umask."""
    sysfs = fake_sysfs(tmp_path / "sys", {c: (0, c % 2) for c in range(4)})
    folder = tmp_path / "claims"
    folder.mkdir()
    os.mkfifo(folder / "core-0-1")  # the last core's name
    claims = cpus.CoreClaims(folder)
    assert cpus.hold_plan({0, 1, 2, 3}, sysfs, claims) == (0, frozenset({1, 3}))
    assert oct((folder / "core-0-0").stat().st_mode & 0o777) == oct(0o644)
    assert oct(folder.stat().st_mode & 0o7777) == oct(0o1777)
    claims.release()
    old = os.umask(0o077)
    try:
        (folder / "core-0-0").unlink()
        made = cpus.CoreClaims(folder)
        assert made.take("core-0-0")
        made.release()
    finally:
        os.umask(old)
    assert oct((folder / "core-0-0").stat().st_mode & 0o777) == oct(0o644)


def test_gpu_slots_share_out_the_cores_where_a_cpu_may_be_held():
    from types import SimpleNamespace

    from harness.frontends.backends import shares_cores

    def worker(pin, hold):
        return SimpleNamespace(pin_cpus=pin, hold_cpu=hold)

    assert shares_cores(worker(False, None))  # the defaults: held CPUs must differ
    assert shares_cores(worker(False, True)) and shares_cores(worker(True, False))
    assert not shares_cores(worker(False, False))


def test_hold_follows_the_settings_then_the_task_and_only_on_the_gpu():
    assert cpus.wants_hold(None, {}, "cuda")  # the default
    assert not cpus.wants_hold(None, {"hold_cpu": False}, "cuda")
    assert cpus.wants_hold(True, {"hold_cpu": False}, "cuda")  # the organiser's word wins
    assert not cpus.wants_hold(False, {}, "cuda")
    assert not cpus.wants_hold(True, {"hold_cpu": True}, "cpu")


def _judge_stub(hold_cpu: bool | None, pin_cpus: bool = False):
    """A Judge with only what its CPU placement reads (a GPU device faked by its kind)."""
    from types import SimpleNamespace

    from harness.judging.judge import Judge

    judge = Judge.__new__(Judge)
    judge.settings = SimpleNamespace(worker=SimpleNamespace(hold_cpu=hold_cpu, pin_cpus=pin_cpus))
    judge.task = SimpleNamespace(timing={})
    judge.device = SimpleNamespace(kind="cuda")
    judge.cpus, judge._cpus_before = None, None
    judge.held, judge._hold_others = None, frozenset()
    judge._claims = None
    return judge


def test_judge_keeps_its_threads_off_the_held_core_and_restores_them(monkeypatch, tmp_path):
    monkeypatch.setattr(cpus, "CLAIMS", tmp_path / "claims")  # not the machine's folder
    allowed = _two_cpus()
    found = cpus.hold_plan(allowed)
    if found is None:
        pytest.skip("needs two physical cores")
    held, others = found
    stop = threading.Event()
    started = _threads_elsewhere(stop, 2)
    judge = _judge_stub(None)
    try:
        judge._hold_cpu()
        assert judge.held == held and judge._hold_others == others
        core = cpus.core_name(cpus.cores(allowed)[-1])
        assert cpus.CoreClaims().taken_elsewhere(core)  # claimed machine-wide
        assert all(os.sched_getaffinity(t) == set(others) for t in cpus.threads())
        later = _threads_elsewhere(stop, 1)[0]  # started after: inherits the judge's CPUs
        assert os.sched_getaffinity(later.native_id) == set(others)
    finally:
        judge._restore_cpus()
        stop.set()
    assert all(os.sched_getaffinity(t.native_id) == allowed for t in started)
    assert os.sched_getaffinity(0) == allowed
    assert judge._claims is None and not cpus.CoreClaims().taken_elsewhere(core)
    off, pinned = _judge_stub(False), _judge_stub(None, pin_cpus=True)
    off._hold_cpu()
    pinned._hold_cpu()
    assert off.held is None and pinned.held is None and os.sched_getaffinity(0) == allowed


@pytest.mark.slow
def test_hold_is_off_on_the_cpu(cli, tmp_path):
    """On the CPU (no GPU run) nothing is held, whatever the setting says: the
    submission's own CPU kernels need every core."""
    sub = tmp_path / "where.py"
    sub.write_text(WHERE)
    config = tmp_path / "hold.yaml"
    config.write_text("cpu:\n  worker:\n    hold_cpu: true\n")
    r = cli("submit", str(sub), "--task", "vectoradd", "--mode", "test", "--device", "cpu",
            "--config", str(config))
    assert r.rc == 0, r.out
    assert "held_cpu" not in r.doc["harness"]
    assert f"AFFINITY {sorted(cpus.allowed_now())}" in r.doc["worker_output"]["stdout"]


def _where(cli, tmp_path: Path, *args: str):
    sub = tmp_path / "where.py"
    sub.write_text(WHERE)
    r = cli("submit", str(sub), *args, "--mode", "benchmark")
    assert r.rc == 0, r.out
    said = [line for line in r.doc["worker_output"]["stdout"].splitlines() if "CALLED ON" in line]
    assert said
    return r, said


@gpu
def test_gpu_worker_holds_its_cpu_by_default(cli, tmp_path):
    """From the second sample on, every call runs on the held CPU (the first of the last
    physical core), alone there, and the result says which."""
    allowed = _two_cpus()
    found = cpus.hold_plan(allowed)
    if found is None:
        pytest.skip("needs two physical cores")
    held, others = found
    r, said = _where(cli, tmp_path, "--task", "vectoradd")
    assert r.doc["harness"]["held_cpu"] == held
    # The first sample is not held (a build there keeps every CPU); every later one is,
    # with every other thread of the worker elsewhere.
    expected = f"CALLED ON {held} AFFINITY [{held}] OTHERS {sorted(others)}"
    assert expected in said, said
    assert all(line.startswith(f"CALLED ON {held} AFFINITY [{held}] ")
               for line in said[said.index(expected):]), said


@gpu
@pytest.mark.parametrize("how", ["setting", "task"])
def test_gpu_worker_not_held_when_turned_off(cli, tmp_path, how):
    """worker.hold_cpu: false, or a task's timing.hold_cpu: false under the default
    setting (null): the calling thread keeps every CPU."""
    allowed = _two_cpus()
    if how == "setting":
        config = tmp_path / "hold.yaml"
        config.write_text("worker:\n  hold_cpu: false\n")
        args = ("--task", "vectoradd", "--config", str(config))
    else:
        shutil.copytree(ROOT / "tasks", tmp_path / "tasks")  # with ../utils.py
        yml = tmp_path / "tasks" / "vectoradd" / "task.yml"
        lines = yml.read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith("timing:"))
        yml.write_text("".join(lines[:at + 1] + ["  hold_cpu: false\n"] + lines[at + 1:]))
        args = ("--task", str(yml.parent))
    r, said = _where(cli, tmp_path, *args)
    assert "held_cpu" not in r.doc["harness"]
    assert all(f"AFFINITY {sorted(allowed)} OTHERS" in line for line in said), said
