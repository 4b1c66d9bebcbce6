"""The result document's schema (harness/results/schema.py): a document the harness writes
is valid, one written by an older harness (668f69d) still reads, a malformed one is refused
with the path of the field that is wrong, and the JSON Schema in docs/ is current."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import ROOT

from harness.results.document import document_to_evaluation
from harness.results.schema import DocumentError, json_schema, validate

OLD = ROOT / "tests" / "data" / "result_668f69d.json"  # written by runner.py at 668f69d


def old_document() -> dict:
    return json.loads(OLD.read_text())


def test_a_document_written_by_668f69d_still_reads_and_writes_back_the_same():
    doc = old_document()
    validate(doc)
    ev = document_to_evaluation(doc)
    assert ev.mode == "leaderboard" and ev.passed and len(ev.phases) == 4
    again = ev.to_dict()
    validate(again)
    assert again["phases"] == doc["phases"] and again["score_ns"] == doc["score_ns"]


@pytest.mark.parametrize("change,path", [
    (lambda d: d["phases"][1]["cases"][0].update(status="fine"),
     "phases[1].cases[0].status: expected one of"),
    (lambda d: d["phases"][0]["cases"][0].update(score_ns="fast"),
     "phases[0].cases[0].score_ns: expected a number, got str 'fast'"),
    (lambda d: d["task"].pop("content_hash"), "task.content_hash: expected a string, got null"),
    (lambda d: d.update(mode="ranked"), "mode: expected one of"),
    (lambda d: d.pop("device"), "device: missing"),
    (lambda d: d["phases"][0].update(cases={}), "phases[0].cases: expected a list, got dict"),
    (lambda d: d.update(warnings=[1]), "warnings[0]: expected a string, got int 1"),
    (lambda d: d["phases"][0]["cases"][0].update(flags=[None]),
     "phases[0].cases[0].flags[0]: expected a string, got null"),
    (lambda d: d.update(version=2), "version: expected 1, got 2"),
])
def test_a_malformed_document_is_refused_naming_the_field(change, path):
    doc = old_document()
    change(doc)
    with pytest.raises(DocumentError) as raised:
        document_to_evaluation(doc)
    assert str(raised.value).startswith(path), str(raised.value)


def test_fields_a_newer_harness_adds_are_left_alone():
    doc = copy.deepcopy(old_document())
    doc["a_later_field"] = {"anything": [1, 2]}
    doc["phases"][0]["cases"][0]["later"] = 3
    validate(doc)


def test_the_json_schema_in_docs_is_current():
    written = json.loads((ROOT / "docs" / "result-document.schema.json").read_text())
    assert written == json_schema(), ("docs/result-document.schema.json is stale: write "
                                      "json.dumps(harness.results.schema.json_schema(), indent=2)")
    assert set(written["required"]) >= {"schema", "version", "task", "mode"}
