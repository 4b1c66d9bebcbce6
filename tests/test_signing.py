"""Signed result documents (harness/results/signing.py): with the organiser's key set,
`submit --json` signs what it writes and `record` refuses a document unsigned or altered."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from harness.results.signing import KEY_ENV, SignatureError, canonical, sign, verify

OLD = ROOT / "tests" / "data" / "result_668f69d.json"


def test_a_signature_holds_through_a_file_and_breaks_on_any_change(tmp_path):
    doc = sign(json.loads(OLD.read_text()), b"organiser key")
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, indent=2))
    read = json.loads(path.read_text())
    verify(read, b"organiser key")
    assert canonical(read) == canonical(doc)
    read["phases"][3]["cases"][0]["score_ns"] *= 0.5
    with pytest.raises(SignatureError, match="altered"):
        verify(read, b"organiser key")
    with pytest.raises(SignatureError, match="altered"):
        verify(doc, b"another key")
    with pytest.raises(SignatureError, match="unsigned"):
        verify(json.loads(OLD.read_text()), b"organiser key")


@pytest.mark.slow
def test_submit_signs_and_record_refuses_an_altered_or_unsigned_copy(cli, tmp_path):
    env = {KEY_ENV: "organiser key"}
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "leaderboard",
            "--device", "cpu", "--no-record", "--case", "size: 64; seed: 5", env=env)
    assert r.rc == 0 and r.doc["signature"]["alg"] == "hmac-sha256", r.out
    signed = tmp_path / "signed.json"
    signed.write_text(json.dumps(r.doc))
    altered = tmp_path / "altered.json"
    faster = json.loads(json.dumps(r.doc))
    for phase in faster["phases"]:
        phase["score_ns"] = phase["score_ns"] and phase["score_ns"] / 2
    altered.write_text(json.dumps(faster))
    recorded = cli("record", str(signed), env=env, want_json=False)
    assert recorded.rc == 0 and "recorded" in recorded.out, recorded.out
    refused = cli("record", str(altered), env=env, want_json=False)
    assert refused.rc == 2 and "altered" in refused.out, refused.out
    unsigned = cli("record", str(OLD), env=env, want_json=False)
    assert unsigned.rc == 2 and "unsigned" in unsigned.out, unsigned.out
    without_a_key = cli("record", str(OLD), want_json=False)  # no key set: not asked
    assert without_a_key.rc == 0 and "recorded" in without_a_key.out, without_a_key.out
