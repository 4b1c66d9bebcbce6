"""What a submitter may see of a result (harness/results/disclosure.py): of a secret phase,
each case's status and the phase's score; nothing it printed, no spec, message, timing or
flag. The public phases and the organiser's own copy are untouched."""

from harness.results.disclosure import public_document, public_submission
from harness.results.document import document_to_evaluation


def case(index, status, seed):
    return {"index": index, "case": {"size": 64, "seed": seed}, "status": status,
            "message": f"mismatch at [3]: got 1.25, expected {seed}.5", "stats": {"mean": 9.0},
            "score_ns": 9.0, "checked_calls": 4, "integrity": {"floor_ns": 1.0},
            "flags": [f"value {seed}"], "wall_seconds": 0.5, "wall_parts": {}, "samples": {"ns": [9.0]}}


def document():
    phase = lambda name, seeds, cases: {"name": name, "seeds": seeds, "cases": cases,
                                        "score_ns": 9.0, "wall_seconds": 1.0}
    return {"schema": "kernel-harness/result", "version": 1, "task": {"name": "vectoradd", "content_hash": "h"},
            "submission": {"name": "a.py", "sha256": "0" * 64},
            "device": {"kind": "cpu", "name": "CPU", "ranking_kind": "CPU"},
            "mode": "leaderboard", "started": "t",
            "phases": [phase("test", "public", [case(0, "passed", 11)]),
                       phase("benchmark", "secret", [case(0, "passed", 77), case(1, "failed", 78)])],
            "worker_output": {"stdout": "public line", "stderr": ""},
            "secret_output": {"stdout": "secret line 77", "stderr": "secret err"},
            "record": {"database": "/srv/results.db", "submission_id": 3}}


def test_a_secret_phase_shows_each_cases_status_and_the_score_alone():
    doc = document()
    shown = public_document(doc)
    text = str(shown)
    for secret in ("77", "78", "secret line", "secret err", "/srv/results.db"):
        assert secret not in text
    public, hidden = shown["phases"]
    assert public == doc["phases"][0]  # the public phase as it was
    assert [(c["index"], c["status"]) for c in hidden["cases"]] == [(0, "passed"), (1, "failed")]
    assert all(c["case"] == {} and c["message"] == "" and c["stats"] is None and not c["flags"]
               and c["samples"] is None for c in hidden["cases"])
    assert hidden["score_ns"] == 9.0 and shown["worker_output"] == doc["worker_output"]
    assert doc["secret_output"]["stdout"] == "secret line 77"  # the organiser's copy unchanged
    document_to_evaluation(shown)  # the report reads it, as submit --server prints it


def test_the_public_board_shows_a_secret_runs_statuses_and_no_messages():
    sub = {"id": 3, "runs": [
        {"seeds": "public", "cases": [{"phase": "test"} | case(0, "passed", 11)],
         "messages": {"output": {"stdout": "public line"}, "flags": [], "warnings": [],
                      "load_error": None}},
        {"seeds": "secret", "cases": [{"phase": "benchmark"} | case(0, "failed", 77)],
         "messages": {"output": {"stdout": "secret line 77"}, "flags": ["value 77"],
                      "warnings": ["w"], "load_error": None}}]}
    shown = public_submission(sub)
    assert "77" not in str(shown) and shown["runs"][0] == sub["runs"][0]
    [hidden] = shown["runs"][1]["cases"]
    assert (hidden["phase"], hidden["index"], hidden["status"]) == ("benchmark", 0, "failed")
    assert shown["runs"][1]["messages"]["output"] == {}
    assert sub["runs"][1]["messages"]["output"]["stdout"] == "secret line 77"
