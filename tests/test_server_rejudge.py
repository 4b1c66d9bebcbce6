"""Rejudging through the contest server (harness/server/rejudging.py), on a real
`runner.py serve` with two CPU slots: an admin rejudges 10 stored submissions, which run
as jobs of the queue after a contestant's upload sent meanwhile; the server is killed
and started again meanwhile; each is judged once, its
new result kept beside its original until the rejudging is applied; applied, the 10 rank
on the task's current version; a contestant cannot start one; a rejudging's jobs are no
one's uploads."""

from __future__ import annotations

import json
import time

import pytest
from conftest import ROOT
from serverkit import CASE, Server, add_user, request, upload

from harness.consts import Mark
from harness.results.ranking import program_key
from harness.storage.store import NewSubmission, Store

pytest.importorskip("flask", reason="the server needs Flask")
pytestmark = pytest.mark.slow

COUNT = 10
CODE = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_text()


def run_row(seeds: str, score: float) -> dict:
    return {"mode": "leaderboard", "seeds": seeds, "device_kind": "CPU", "device_name": "CPU",
            "started_at": "t0", "ended_at": "t1", "passed": True, "score_ns": score,
            "cases": [], "messages": {}, "harness_version": "older", "system": {}}


def originals(db: str) -> list[int]:
    """COUNT submissions ranked on an older version of vectoradd, one per user."""
    store = Store(db)
    board = store.leaderboard("vectoradd", "an-older-version")
    ids = [store.record(board, NewSubmission(f"u{i:02d}", "add.py", CODE, f"sha{i}", "ok", [],
                                             None, program_key(CODE)),
                        [run_row("public", 1e5 + i), run_row("secret", 1e5 + i)])
           for i in range(COUNT)]
    store.close()
    return ids


def post(url: str, token: str, body: dict | None = None):
    return request(url, "POST", token, json.dumps(body or {}).encode(), "application/json",
                   bearer=True)


def organiser_page(base: str, rid: int, org: str, cam: str) -> None:
    """The board's page of the rejudging in a real browser: an admin's token shows every
    submission's change and the rankings; a contestant's is refused."""
    from test_web import need_browser

    executable = need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{base}/rejudgings/{rid}")
        page.fill("input[name=token]", cam)
        page.click("button[type=submit]")
        assert "an admin's token is needed" in page.locator("p.message").inner_text()
        page.fill("input[name=token]", org)
        page.click("button[type=submit]")
        assert page.locator("table.rejudged tbody tr").count() == COUNT
        assert page.locator("table.rejudged tbody tr").first.locator("td").nth(4) \
            .inner_text() == "passed"
        assert "Ranking on CPU: before and after" in page.locator("main").inner_text()
        assert org not in page.content()  # the token never written into the page
        browser.close()


def test_a_rejudging_of_ten_through_the_server_judges_each_once(tmp_path):
    db = str(tmp_path / "contest.db")
    ids = originals(db)
    org, cam, u00 = add_user(db, "org", admin=True), add_user(db, "cam"), add_user(db, "u00")
    config = tmp_path / "server.yaml"  # a killed server's running jobs come back soon
    config.write_text("server:\n  lease_seconds: 5\n")
    server = Server(db, tmp_path / "serve.log", "--workers", "2", "--device", "cpu", *CASE,
                    "--config", str(config)).start()
    base = server.base
    try:
        assert post(f"{base}/admin/rejudge/vectoradd", cam, {"all": True}).code == 403
        started = post(f"{base}/admin/rejudge/vectoradd", org, {"all": True})
        assert started.code == 200, started.body
        rid, jobs = started.body["id"], started.body["jobs"]
        assert len(jobs) == COUNT and started.body["skipped"] == []
        sent = upload(base, cam, "vectoradd", "CPU", "test", "mine.py", CODE.encode())
        assert sent.code == 200, sent.body
        # a contestant whose submission is rejudged sees nothing of it until it is applied
        assert request(f"{base}/user/submissions", token=u00).body == []
        assert request(f"{base}/user/submissions/{jobs[0]}", token=u00).code == 404
        queue_users = {r["user"] for r in request(f"{base}/api/queue").body}
        assert f"rejudging {rid}" in queue_users and "u00" not in queue_users
        # the server dies with the rejudging's jobs queued and running, judges and all,
        # and starts again: each job is judged once all the same
        time.sleep(3)
        server.kill()
        server.start()
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            report = request(f"{base}/admin/rejudgings/{rid}", token=org, bearer=True).body
            if report["jobs"].get("done", 0) + report["jobs"].get("failed", 0) == COUNT:
                break
            time.sleep(1)
        assert report["jobs"] == {"done": COUNT}, report["jobs"]
        changes = report["changes"]
        assert sorted(c["original"] for c in changes) == ids
        assert all(c["now"] == "passed" and c["new"] for c in changes), changes
        assert len({c["new"] for c in changes}) == COUNT  # each judged once
        assert report["rankings"]["CPU"]["after"] and report["rejudging"]["state"] == "open"
        organiser_page(base, rid, org, cam)
        assert post(f"{base}/admin/rejudgings/{rid}/apply", org).code == 200
        again = post(f"{base}/admin/rejudgings/{rid}/cancel", org)
        assert again.code == 409 and "applied already" in again.body["detail"]
    finally:
        server.stop()
    store = Store(db)
    board = store.current_board("vectoradd")
    # Each new result takes the mark admission gave it: `suspicious` where an integrity
    # check flagged a timing on these loaded cores, a mark that still ranks.
    marks = [e["status"] for e in store.entries("vectoradd", board["content_hash"])]
    assert len(marks) == COUNT and set(marks) <= {Mark.OK, Mark.SUSPICIOUS}, marks
    assert store.query("SELECT COUNT(*) AS n FROM submissions")[0]["n"] == 2 * COUNT
    assert {r["status"] for r in store.query(
        "SELECT status FROM submissions WHERE id <= ?", (max(ids),))} == {"superseded"}
    assert store.query("SELECT COUNT(*) AS n FROM uploads")[0]["n"] == 1  # cam's alone
    jobs_rows = store.query("SELECT rejudging_id, started_ts FROM jobs")
    mine = next(j["started_ts"] for j in jobs_rows if j["rejudging_id"] is None)
    assert mine < max(j["started_ts"] for j in jobs_rows if j["rejudging_id"])  # not last
    store.close()
