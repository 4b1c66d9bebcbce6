"""The contest pages of the board in a real browser (Playwright on Debian's chromium): the
upload form of a task page, one's own submissions given one's token, and the queue page,
on a real `runner.py serve` with one CPU worker slot. Skipped without a browser, except in
CI (CI=true), where it fails."""

from __future__ import annotations

import time

import pytest
from conftest import ROOT
from serverkit import CASE, Server, add_user
from test_web import need_browser

from harness.storage.queue import JobQueue, NewJob
from harness.storage.store import Store

pytest.importorskip("flask", reason="the server needs Flask")

FILE = ROOT / "submissions" / "vectoradd" / "add_torch.py"


@pytest.mark.slow
def test_upload_form_own_submissions_and_queue(tmp_path, db_url):
    executable = need_browser()
    from playwright.sync_api import sync_playwright

    db = db_url
    token = add_user(db, "alice")
    other = add_user(db, "bob")
    queue = JobQueue(Store(db))
    queue.register_worker("parked", "H200")  # a kind with no slot: its jobs wait
    waiting = [queue.enqueue(NewJob("bob", "vectoradd", "test", "H200", f"b{i}.py", "x = 1\n"))
               for i in range(2)]
    server = Server(db, tmp_path / "serve.log", "--workers", "1", "--device", "cpu",
                    *CASE).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            # the queue: bob's two waiting jobs, in order, with positions
            page.goto(server.base + "/queue")
            rows = page.locator("table.queue tbody tr")
            assert [r.get_attribute("data-job") for r in rows.all()] == [str(i) for i in waiting]
            assert rows.locator("td.num").nth(0).inner_text() == "1"
            # the upload form of the task page
            page.goto(server.base + "/tasks/vectoradd")
            form = page.locator("section.upload form")
            form.locator('input[name="token"]').fill(token)
            form.locator('input[name="file"]').set_input_files(str(FILE))
            form.locator('select[name="mode"]').select_option("leaderboard")
            form.locator('select[name="gpu"]').select_option("CPU")
            form.locator('button[type="submit"]').click()
            page.wait_for_url("**/tasks/vectoradd/upload")
            message = page.locator("p.message").inner_text()
            assert "accepted" in message
            job_id = int(message.split()[1])
            # one's own submissions, given the token: judged, recorded, scored
            deadline = time.monotonic() + 120
            while True:
                page.goto(server.base + "/me")
                page.locator('input[name="token"]').fill(token)
                page.locator('form.token button').click()
                row = page.locator(f'table.mine tr[data-job="{job_id}"]')
                if row.get_attribute("data-status") == "succeeded":
                    break
                assert time.monotonic() < deadline, "not judged"
                time.sleep(1)
            assert "passed" in row.inner_text() and "recorded as" in row.inner_text()
            assert page.locator("table.mine tbody tr").count() == 1  # not bob's
            assert token not in page.content()  # the page never holds the token
            # a wrong token shows nothing; bob sees only his own
            page.goto(server.base + "/me")
            page.locator('input[name="token"]').fill("wrong")
            page.locator('form.token button').click()
            assert "unknown token" in page.locator("p.message").inner_text()
            assert page.locator("table.mine").count() == 0
            page.locator('input[name="token"]').fill(other)
            page.locator('form.token button').click()
            shown = [r.get_attribute("data-job") for r in page.locator("table.mine tbody tr").all()]
            assert shown == [str(i) for i in reversed(waiting)]
            # an upload refused by the rules: the reason, nothing queued
            page.goto(server.base + "/tasks/vectoradd")
            form = page.locator("section.upload form")
            form.locator('input[name="token"]').fill(token)
            form.locator('input[name="file"]').set_input_files(
                {"name": "k.cu", "mimeType": "text/plain", "buffer": b"__global__ void f(){}"})
            form.locator('button[type="submit"]').click()
            assert "not a Python file" in page.locator("p.message").inner_text()
            browser.close()
    finally:
        server.stop()
    assert len(JobQueue(Store(db)).of_user("alice")) == 1
