"""benchmarks/mechanisms.py on the CPU: its variants load, its plan, its summary's figures,
and its loop's budget and records with the two evaluators replaced by fakes."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys

import pytest
from conftest import ROOT

from harness.settings import Settings

sys.path.insert(0, str(ROOT / "benchmarks"))
import mechanisms  # noqa: E402

# Stand-ins for the mechanisms under measurement: overrides of settings an organiser keeps,
# so that the machinery is tested whatever variants the script lists.
STAND_INS = {
    mechanisms.BASELINE: {},
    "fewer_calls": {"timing": {"max_calls": 50}},  # measured on nvfp4 only (ACTS_ON)
    "short_window": {"timing": {"hidden_window_us": 50}},  # on vectoradd only
    "counted": {"timing": {"host_launch": "counted"}},
    "longer": {"timing": {"max_seconds": 2.0}},
}


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch):
    """The stand-in variants in place of the script's own."""
    monkeypatch.setattr(mechanisms, "VARIANTS", dict(STAND_INS))
    monkeypatch.setattr(mechanisms, "ACTS_ON", {"fewer_calls": ("nvfp4",),
                                                "short_window": ("vectoradd",)})


def test_dry_run_loads_every_variant_and_prints_the_plan(tmp_path):
    """The script's own variants (baseline at least) load, and the plan is printed."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/mechanisms.py"), "--reference-kernels",
         str(tmp_path), "--pairs", "vectoradd_triton,nvfp4_triton", "--dry-run", "--out", str(out)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"variant {mechanisms.BASELINE}:" in proc.stdout
    assert "round 3 nvfp4_triton: public, " in proc.stdout
    assert "not found" in proc.stdout  # the empty stand-in for reference-kernels
    assert not out.exists()


def test_every_variant_file_is_what_runner_reads_and_changes_a_setting(tmp_path):
    configs = mechanisms.write_variants(list(mechanisms.VARIANTS), tmp_path)
    defaults = Settings.load()
    assert configs.pop(mechanisms.BASELINE) is None
    for name, path in configs.items():
        loaded = Settings.load(path)  # as runner.py --config loads it
        assert loaded.raw != defaults.raw, name


def test_a_real_run_refuses_missing_files_before_running_anything(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/mechanisms.py"), "--reference-kernels",
         str(tmp_path), "--pairs", "vectoradd_torch", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "is --reference-kernels right?" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_variants_refused_or_changing_nothing_stop_it_at_start(monkeypatch, tmp_path):
    monkeypatch.setitem(mechanisms.VARIANTS, "bad_value", {"timing": {"host_launch": "bogus"}})
    monkeypatch.setitem(mechanisms.VARIANTS, "bad_key", {"timing": {"no_such_key": 1}})
    monkeypatch.setitem(mechanisms.VARIANTS, "default_again", {"timing": {"host_launch": "hidden"}})
    with pytest.raises(SystemExit) as stop:
        mechanisms.write_variants(["baseline", "bad_value", "bad_key", "default_again", "nope",
                                   "counted"], tmp_path)
    text = str(stop.value)
    assert all(f"{name}:" in text for name in ("bad_value", "bad_key", "default_again", "nope"))
    assert "counted:" not in text
    configs = mechanisms.write_variants(["baseline", "counted"], tmp_path)
    assert configs["baseline"] is None and configs["counted"].is_file()


def test_pairs_by_short_name(tmp_path):
    chosen = mechanisms.choose_pairs(tmp_path, ["vectoradd_triton", "nvfp4"])
    assert list(chosen) == ["vectoradd_triton", "nvfp4_torch", "nvfp4_triton"]
    assert chosen["vectoradd_triton"]["sub"].name == "submission_triton.py"
    assert chosen["nvfp4_triton"]["sub"].name == "triton_hopper.py"
    assert mechanisms.choose_pairs(tmp_path, ["mxfp4_triton"])["mxfp4_triton"]["sub"].name \
        == "triton_dot_scaled.py"
    with pytest.raises(SystemExit, match="unknown pair 'vectoradd_cuda'"):
        mechanisms.choose_pairs(tmp_path, ["vectoradd_cuda"])


def test_plan_rotates_the_variants_and_leaves_out_those_that_cannot_act():
    variants = ["baseline", "fewer_calls", "short_window", "counted"]
    steps = mechanisms.plan(["vectoradd_triton", "nvfp4_triton"], variants, 3)
    orders = {(r, p): [w for rr, pp, w in steps if (rr, pp) == (r, p)]
              for r in range(3) for p in ("vectoradd_triton", "nvfp4_triton")}
    assert orders[0, "vectoradd_triton"] == ["public", "baseline", "short_window", "counted"]
    assert orders[0, "nvfp4_triton"] == ["public", "baseline", "fewer_calls", "counted"]
    assert orders[1, "nvfp4_triton"] == ["public", "fewer_calls", "counted", "baseline"]
    assert orders[2, "nvfp4_triton"] == ["public", "counted", "baseline", "fewer_calls"]
    assert len(steps) == 3 * 2 * 4


def _run(r, means, wall=10.0, flags=(), retried=()):
    return {"round": r, "means_ns": means, "wall_s": wall, "passed": True, "flags": list(flags),
            "retried_cases": list(retried)}


def test_summary_figures_on_synthetic_runs():
    entry = {
        "public": [_run(0, [100, 400]), _run(1, [110, 440]), _run(2, [100, 400])],
        "harness": {
            "baseline": [_run(0, [100, 400]), _run(1, [110, 440]), _run(2, [105, 420])],
            "slower": [_run(0, [130, 520]), _run(1, [143, 572]), _run(2, [136.5, 546])],
            "alike": [_run(0, [105, 420], flags=["x"]), _run(1, [110, 440], retried=[0]),
                      _run(2, [105, 420])],
            "one_run": [_run(0, [100, 400])],
        },
    }
    s = mechanisms.summarize(entry)
    base, slower, alike = (s["variants"][k] for k in ("baseline", "slower", "alike"))
    assert base["ratio_to_public"] == pytest.approx(1.0) and base["reading"] == "-"
    assert base["spread"] == pytest.approx(1.1)  # geomeans 200, 220, 210
    assert slower["vs_baseline"] == pytest.approx(1.3)
    assert slower["ratio_to_public"] == pytest.approx(1.3)  # 1.3, 1.3, 1.365
    assert slower["reading"] == "beyond noise"
    assert alike["vs_baseline"] == pytest.approx(1.0) and alike["reading"] == "within noise"
    assert alike["suspicious_runs"] == 2 and slower["suspicious_runs"] == 0
    assert math.isnan(s["variants"]["one_run"]["spread"])
    assert s["public_spread"] == pytest.approx(1.1)
    assert mechanisms.reading(math.nan, 1.1) == "unknown"
    text = mechanisms.summary_markdown({"pairs": {"p": entry}, "stopped": None})
    assert "| slower | 3 | 1.300 | 1.100 | 1.300 | 0 | 10.0 | beyond noise |" in text


def test_harness_record_counts_flags_retries_and_notes():
    doc = {"status": "passed", "passed": True, "score_ns": 5.0, "wall_seconds": 3.0,
           "phases": [{"cases": [
               {"flags": [], "integrity": {"retried": [{"flagged_by": ["clocks"]}]}},
               {"flags": ["two clocks"], "integrity": {}}]}]}
    rec = mechanisms.harness_record(1, [4.0, 9.0], 12.0, doc)
    assert rec["geomean_ns"] == pytest.approx(6.0) and rec["score_ns"] == 5.0
    assert rec["flags"] == ["two clocks"] and rec["retried_cases"] == [0] and rec["notes"] == 1
    assert mechanisms.suspicious(rec)
    empty = mechanisms.harness_record(0, [], 1.0, {})
    assert empty["status"] == "no result" and mechanisms.suspicious(empty)


def test_run_keeps_every_run_and_stops_within_its_budget(monkeypatch, tmp_path):
    now = [0.0]
    monkeypatch.setattr(mechanisms, "clock", lambda: now[0])

    def public_run(pair, mode, tmp):
        now[0] += 10
        return [100.0, 400.0], 10.0, True

    def harness_run(pair, mode, tmp, config, root):
        if config is not None and config.stem == "counted":
            raise RuntimeError("no worker")
        now[0] += 20
        doc = {"status": "passed", "passed": True, "score_ns": 200.0,
               "phases": [{"cases": [{"flags": [], "integrity": {}}] * 2}]}
        return [100.0, 400.0], 20.0, True, doc

    monkeypatch.setattr(mechanisms.parity, "public_run", public_run)
    monkeypatch.setattr(mechanisms.parity, "harness_run", harness_run)
    configs = mechanisms.write_variants(["baseline", "longer", "counted"], tmp_path / "c")
    steps = mechanisms.plan(["vectoradd_triton"], list(configs), 3)
    args = argparse.Namespace(out=tmp_path, runs=3, budget_seconds=100.0, checkouts={})
    report = mechanisms.run(args, {"vectoradd_triton": {}}, configs, steps)
    # round 1: public 10 s, baseline 20, longer 20, counted fails at once: 50 s spent;
    # round 2: public (10 + 20 expected), longer, counted, baseline: 100 s spent;
    # round 3's public anchor (with a harness run after it) would pass the budget
    entry = json.loads((tmp_path / "mechanisms.json").read_text())["pairs"]["vectoradd_triton"]
    assert [r["round"] for r in entry["public"]] == [0, 1]
    assert {k: len(v) for k, v in entry["harness"].items()} == {
        "baseline": 2, "longer": 2, "counted": 2}
    assert "no worker" in entry["harness"]["counted"][0]["error"]
    assert report["stopped"].startswith("the budget: 100 s spent, round 3 vectoradd_triton public")
    assert entry["summary"]["variants"]["longer"]["ratio_to_public"] == pytest.approx(1.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "mechanisms.json"]
    assert entry["harness"]["baseline"][0]["where_time_went"]["cases"][0]["flags"] == []


def test_a_run_cut_by_its_hard_stop_still_leaves_the_summary(monkeypatch, tmp_path):
    def public_run(pair, mode, tmp):
        return [100.0], 10.0, True

    def harness_run(pair, mode, tmp, config, root):
        raise mechanisms._Cut("SIGALRM")  # what the alarm past the budget raises

    monkeypatch.setattr(mechanisms.parity, "public_run", public_run)
    monkeypatch.setattr(mechanisms.parity, "harness_run", harness_run)
    steps = mechanisms.plan(["nvfp4_triton"], ["baseline"], 1)
    args = argparse.Namespace(out=tmp_path, runs=1, budget_seconds=100.0, checkouts={})
    report = mechanisms.run(args, {"nvfp4_triton": {}}, {"baseline": None}, steps)
    assert report["stopped"].startswith("cut in its run by SIGALRM")
    saved = json.loads((tmp_path / "mechanisms.json").read_text())
    assert len(saved["pairs"]["nvfp4_triton"]["public"]) == 1
    assert "summary" in saved["pairs"]["nvfp4_triton"]


def test_a_checkout_runs_as_a_variant_from_its_own_tree(monkeypatch, tmp_path):
    before = tmp_path / "before"
    before.mkdir()
    (before / "runner.py").write_text("")
    roots = []

    def harness_run(pair, mode, tmp, config, root):
        roots.append((config, root))
        doc = {"status": "passed", "passed": True,
               "phases": [{"cases": [{"flags": [], "integrity": {}}]}]}
        return [110.0 if root == before else 100.0], 1.0, True, doc

    monkeypatch.setattr(mechanisms.parity, "public_run", lambda pair, mode, tmp: ([100.0], 1.0, True))
    monkeypatch.setattr(mechanisms.parity, "harness_run", harness_run)
    checkouts = mechanisms.parse_checkouts([f"old={before}"])
    configs = {"baseline": None, "old": None}
    args = argparse.Namespace(out=tmp_path, runs=2, budget_seconds=100.0, checkouts=checkouts)
    report = mechanisms.run(args, {"vectoradd_torch": {}},
                            configs, mechanisms.plan(["vectoradd_torch"], list(configs), 2))
    assert sorted(roots, key=str) == sorted([(None, mechanisms.ROOT), (None, before)] * 2, key=str)
    row = report["pairs"]["vectoradd_torch"]["summary"]["variants"]["old"]
    assert row["vs_baseline"] == pytest.approx(1.1) and row["ratio_to_public"] == pytest.approx(1.1)
    assert report["variants"]["old"] == {"checkout": str(before)}


def test_checkouts_need_a_runner_and_a_name_of_their_own(tmp_path):
    with pytest.raises(SystemExit, match="no runner.py"):
        mechanisms.parse_checkouts([f"old={tmp_path}"])
    (tmp_path / "runner.py").write_text("")
    for taken in ("baseline", "public", ""):
        with pytest.raises(SystemExit, match="a name of its own"):
            mechanisms.parse_checkouts([f"{taken}={tmp_path}"])
    with pytest.raises(SystemExit, match="a name of its own"):
        mechanisms.parse_checkouts([f"a={tmp_path}", f"a={tmp_path}"])
