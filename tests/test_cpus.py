"""CPU pinning: cores read from a fake sysfs, shares for batch slots, and real processes
(the judge, its worker, a batch's judge subprocess) on the CPUs they were given."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import ROOT, gpu

from harness.judging import cpus

WHERE = textwrap.dedent("""
    import ctypes
    import os

    _cpu = ctypes.CDLL(None).sched_getcpu
    _seen = set()

    def custom_kernel(data):
        where = (_cpu(), tuple(sorted(os.sched_getaffinity(0))))
        if where not in _seen:
            _seen.add(where)
            print("CALLED ON", where[0], "AFFINITY", list(where[1]), flush=True)
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


def test_heap_frozen_when_asked(cli, tmp_path):
    r = _report(cli, tmp_path, "worker:\n  gc_freeze: true\n", "--device", "cpu")
    assert r.rc == 0, r.out
    default = _report(cli, tmp_path, None, "--device", "cpu")
    assert _frozen(r.doc) > _frozen(default.doc)


def test_batch_judge_runs_on_its_slot_cpus(tmp_path):
    """A batch slot's CPUs bind its judge subprocess and, through it, the worker."""
    from harness.frontends.judge_process import run_judge

    allowed = cpus.allowed_now()
    if not allowed or len(allowed) < 2:
        pytest.skip("needs two CPUs")
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
    later placed at the next apply, and all of them back on every CPU after place_all."""
    allowed = cpus.allowed_now()
    if not allowed or len(allowed) < 2:
        pytest.skip("needs two CPUs")
    held, stop = max(allowed), threading.Event()
    try:
        before = _threads_elsewhere(stop, 2)
        hold = cpus.Hold(held, allowed)
        assert hold.apply() >= 2
        assert os.sched_getaffinity(0) == {held}
        assert all(os.sched_getaffinity(t.native_id) == allowed - {held} for t in before)
        assert hold.apply() == 0  # nothing new: nothing placed again
        later = _threads_elsewhere(stop, 1)[0]
        assert os.sched_getaffinity(later.native_id) == {held}  # inherited from the caller
        assert hold.apply() == 1
        assert os.sched_getaffinity(later.native_id) == allowed - {held}
    finally:
        cpus.place_all(allowed)
        stop.set()
    assert os.sched_getaffinity(0) == allowed
    assert all(os.sched_getaffinity(t.native_id) == allowed for t in before + [later])


def test_held_cpu_is_the_last_of_two_or_more():
    assert cpus.held_cpu({0, 3, 5}) == 5
    assert cpus.held_cpu({2}) is None and cpus.held_cpu(None) is None and cpus.held_cpu(set()) is None


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


def test_hold_follows_the_settings_then_the_task_and_only_on_the_gpu():
    assert cpus.wants_hold(None, {}, "cuda")  # the default
    assert not cpus.wants_hold(None, {"hold_cpu": False}, "cuda")
    assert cpus.wants_hold(True, {"hold_cpu": False}, "cuda")  # the organiser's word wins
    assert not cpus.wants_hold(False, {}, "cuda")
    assert not cpus.wants_hold(True, {"hold_cpu": True}, "cpu")


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
    """Every call runs on the held CPU (the last allowed), alone there, and the result
    says which."""
    allowed = cpus.allowed_now()
    if not allowed or len(allowed) < 2:
        pytest.skip("needs two CPUs")
    r, said = _where(cli, tmp_path, "--task", "vectoradd")
    held = max(allowed)
    assert r.doc["harness"]["held_cpu"] == held
    assert all(line == f"CALLED ON {held} AFFINITY [{held}]" for line in said), said


@gpu
@pytest.mark.parametrize("how", ["setting", "task"])
def test_gpu_worker_not_held_when_turned_off(cli, tmp_path, how):
    """worker.hold_cpu: false, or a task's timing.hold_cpu: false under the default
    setting (null): the calling thread keeps every CPU."""
    allowed = cpus.allowed_now()
    if not allowed or len(allowed) < 2:
        pytest.skip("needs two CPUs")
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
    assert all(line.endswith(f"AFFINITY {sorted(allowed)}") for line in said), said
