"""kernelguard as a second opinion (harness/loading/guard.py): its findings beside the
screen's, marked as its own, counting only where the organiser says so; nothing changes
without the package. CI installs the `guard` extra."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run_cli
from test_admission import GUARDS, HARD, evaluation

from harness.loading import guard
from harness.results.admission import Outcome, Policy, admit
from harness.settings import Settings

REPLAY = (ROOT / "tests" / "adversarial" / "cache_by_id.py").read_text()
HONEST = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_text()


def test_its_findings_are_marked_as_its_own():
    pytest.importorskip("kernelguard")
    found = guard.second_opinion(REPLAY)
    assert found and {f["by"] for f in found} == {"kernelguard"}
    assert {f["severity"] for f in found} <= set(guard.GUARD_SEVERITIES)
    assert any(f["severity"] in ("critical", "high") for f in found)
    assert guard.second_opinion(HONEST) == []


def test_without_the_package_nothing_is_added(monkeypatch):
    monkeypatch.setattr(guard, "installed", lambda: False)
    assert guard.second_opinion(REPLAY) == []


def test_it_counts_only_where_the_organiser_lists_it():
    doc = evaluation(screen=(GUARDS,)).to_dict()
    shown = admit(doc, Policy(refuse_ranking_on=("hard",)))
    assert shown.outcome == Outcome.RANKED and shown.mark == "ok"
    counted = admit(doc, Policy(refuse_ranking_on=("hard", "kernelguard:high")))
    assert counted.outcome == Outcome.UNRANKED and counted.mark == "suspicious"
    assert counted.reason == "static screen: kernelguard:OUTPUT_REPLAY_CACHE"
    # the screen's own `hard` is not kernelguard's `high`, nor the other way round
    assert admit(evaluation(screen=(HARD,)).to_dict(),
                 Policy(refuse_ranking_on=("kernelguard:high",))).outcome == Outcome.RANKED


def test_settings_name_what_may_count(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("integrity:\n  refuse_ranking_on: [hard, kernelguard:severe]\n")
    with pytest.raises(ValueError, match="kernelguard:severe"):
        Settings.load(config)
    config.write_text("integrity:\n  refuse_ranking_on: [hard, kernelguard:critical]\n")
    assert Settings.load(config).integrity.refuse_ranking_on == ["hard", "kernelguard:critical"]


@pytest.mark.slow
def test_submit_reports_it_beside_the_screen(tmp_path):
    pytest.importorskip("kernelguard")
    cheat = tmp_path / "replay.py"
    cheat.write_text(REPLAY)
    r = run_cli("submit", str(cheat), "--task", "vectoradd", "--mode", "test", "--device",
                "cpu", "--case", "size: 64; seed: 1", json_path=tmp_path / "r.json")
    by = {f.get("by", "screen") for f in r.doc["screen"]}
    assert by == {"screen", "kernelguard"}, json.dumps(r.doc["screen"])[:2000]
    assert "kernelguard: " in r.out
