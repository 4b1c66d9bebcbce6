"""The web leaderboard (`runner.py serve`): a real server on a database filled by real CPU
submits (several users, a failure, a flagged one whose stalls earn a note, a hacked one),
driven through every page by a real browser (Playwright on Debian's chromium), with the
rankings shown checked against `runner.py leaderboard --json`. With
$WEB_SCREENSHOTS=docs/web the screenshots that docs/web.md shows are written anew (else to
a temporary folder).

Without chromium or playwright the browser test is skipped, except in CI (CI=true), where
it fails: CI must run it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from harness.results.disclosure import public_submission

# Each test runs runner.py end to end; under `-n` one test process runs them all, so that the
# module's database (`filled`, a dozen judged runs) is built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("web")]

flask = pytest.importorskip("flask", reason="the web leaderboard needs Flask")

SUBS = ROOT / "tests" / "submissions"
CASE = ["--case", "size: 64; seed: 1"]
# docs/web.md shows these; a plain test run keeps the committed ones and writes elsewhere.
SHOTS = Path(os.environ.get("WEB_SCREENSHOTS", "")) if os.environ.get("WEB_SCREENSHOTS") else None
TASK = "vectoradd"
# who submits what, two at a time, in about this order (alice improves at the end)
SUBMITS = [("alice", "leaderboard/sleep_3ms.py"), ("bob", "leaderboard/sleep_1ms.py"),
           ("carol", "web/chatty.py"), ("dave", "leaderboard/wrong.py"),
           ("mallory", "leaderboard/fast.py"), ("alice", "leaderboard/fast.py")]


def chromium_path() -> str | None:
    """Debian's chromium (or $HARNESS_CHROMIUM)."""
    return os.environ.get("HARNESS_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")


def need_browser() -> str:
    """The chromium executable; skip without one, but fail in CI, which must run this."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package")
    path = chromium_path()
    if path is None:
        missing.append("chromium (apt-get install chromium)")
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI must run them)")
        pytest.skip(message)
    return path


def cli_json(db: Path, *args: str):
    r = run_cli(*args, env={"HARNESS_DB": str(db)})
    assert r.rc == 0, r.out
    return json.loads(r.out)


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> dict:
    """A database filled by real `runner.py submit` runs on the CPU; who got which id."""
    db = tmp_path_factory.mktemp("web") / "results.db"
    env = {"HARNESS_DB": str(db)}

    docs = [db.with_name(f"{i}.json") for i in range(len(SUBMITS))]

    def submit(i: int):
        user, file = SUBMITS[i]
        return run_cli("submit", str(SUBS / file), "--task", TASK, "--device", "cpu",
                       "--user", user, *CASE, env=env, json_path=docs[i])

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(submit, range(len(SUBMITS))))
    for (user, file), r in zip(SUBMITS, results):
        assert r.rc == (1 if user == "dave" else 0), (user, file, r.out)
    ids = {}
    for row in cli_json(db, "history", "--json"):
        ids.setdefault(row["user_name"], []).append(row["id"])
    mallory = ids["mallory"][0]
    assert run_cli("mark", str(mallory), "--status", "hacked", env=env).rc == 0
    return {"db": db, "ids": ids, "docs": docs}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


@pytest.fixture(scope="module")
def server(filled):
    """`runner.py serve` as a real process on a free port, until the tests are done."""
    port = free_port()
    log = filled["db"].with_name("serve.log").open("w+")  # a file: a full pipe would block it
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "runner.py"), "serve", "--db", str(filled["db"]),
         "--port", str(port)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            get(base + "/api/tasks")
            break
        except (urllib.error.URLError, ConnectionError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.seek(0)
                pytest.fail(f"serve did not answer: {log.read()}")
            time.sleep(0.2)
    yield base
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def test_json_endpoints_equal_the_commands(server, filled):
    db, ids = filled["db"], filled["ids"]
    board = cli_json(db, "leaderboard", TASK, "--json")
    assert get(f"{server}/api/leaderboard/{TASK}") == board
    assert get(f"{server}/api/leaderboard/{TASK}?device=CPU") == cli_json(
        db, "leaderboard", TASK, "--device", "CPU", "--json")
    assert get(f"{server}/api/history") == cli_json(db, "history", "--json")
    assert get(f"{server}/api/history?task={TASK}&user=bob") == cli_json(
        db, "history", "--task", TASK, "--user", "bob", "--json")
    assert get(f"{server}/api/users/alice") == cli_json(db, "history", "--user", "alice", "--json")
    for sid in (ids["alice"][0], ids["dave"][0]):
        shown = get(f"{server}/api/submissions/{sid}")
        organiser = cli_json(db, "show", str(sid), "--json")
        # the organiser's `show`, less what the public may not see of the secret runs
        assert shown == public_submission(organiser)
        secret = [c for r in shown["runs"] if r["seeds"] == "secret" for c in r["cases"]]
        assert secret and all(c["stats"] is None and c["case"] == {} for c in secret)
        assert all(c["case"] for r in organiser["runs"] if r["seeds"] == "secret"
                   for c in r["cases"])
        assert "code" not in shown  # the organiser's default: code hidden
    ranked = [r["user"] for r in board["devices"]["CPU"]]
    assert "mallory" not in ranked and "dave" not in ranked and len(ranked) == 3
    tiles = get(f"{server}/api/tasks")
    tile = next(t for t in tiles if t["task"] == TASK)
    assert tile["devices"]["CPU"] == board["devices"]["CPU"][:3]
    assert tile["submissions"] == len(SUBMITS)
    trend = get(f"{server}/api/tasks/{TASK}/trend/CPU")
    assert trend["overall"][-1]["user"] == ranked[0]
    # each user's line ends at the score they rank with; hacked and failed ones draw none
    assert {u: pts[-1]["score_ns"] for u, pts in trend["users"].items()} == {
        r["user"]: r["score_ns"] for r in board["devices"]["CPU"]}
    assert len(trend["users"]["alice"]) == 2  # sleep_3ms.py, then the faster fast.py
    with pytest.raises(urllib.error.HTTPError) as missing:
        get(f"{server}/api/submissions/9999")
    assert missing.value.code == 404


def test_every_page_in_a_browser(server, filled, tmp_path):
    executable = need_browser()
    shots = SHOTS or tmp_path
    from playwright.sync_api import sync_playwright

    db, ids = filled["db"], filled["ids"]
    board = cli_json(db, "leaderboard", TASK, "--json")["devices"]["CPU"]
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        offline = []  # every request must go to the app itself
        page.on("request", lambda r: None if r.url.startswith(server) else offline.append(r.url))

        def shot(name: str) -> None:
            page.screenshot(path=str(shots / f"{name}.png"))

        # home: a tile per task with the top three
        page.goto(server + "/")
        tile = page.locator(f'section.tile[data-task="{TASK}"]')
        top = tile.locator("ol.top li a").all_inner_texts()
        assert top == [r["user"] for r in board[:3]]
        assert f"{len(SUBMITS)} submissions" in tile.inner_text()
        shot("home")

        # the task page: the ranking shown is the command's
        tile.locator("h2 a").click()
        page.wait_for_url(f"**/tasks/{TASK}")
        rows = page.locator('section.board[data-device="CPU"] table.ranking tbody tr')
        shown = [(int(r.get_attribute("data-submission")), r.get_attribute("data-user"),
                  r.locator("td.score").inner_text()) for r in rows.all()]
        assert shown == [(r["submission_id"], r["user"], f"{r['score_ns'] / 1e3:,.2f} µs")
                         for r in board]
        gaps = rows.locator("td.gap").all_inner_texts()
        assert gaps[0] == "" and all(g.startswith("+") and g.endswith("µs") for g in gaps[1:])
        assert rows.locator(".medal.gold").count() == 1
        assert page.locator("svg.trend").count() == 1
        assert "size: 1024; seed: 54352" in page.locator("section.cases").inner_text()
        assert page.locator(f'table.submissions tr[data-submission="{ids["mallory"][0]}"]'
                            ).inner_text().count("hacked") == 1
        shot("task")

        # the leader's submission, through the link of its score
        rows.first.locator("td.score a").click()
        page.wait_for_url(f"**/submissions/{board[0]['submission_id']}")
        text = page.locator("main").inner_text()
        assert "passed" in text and "mean ± std" in text and "host launch" in text
        assert "Device:" in text
        assert page.locator("section.code").count() == 0  # code hidden by default
        shot("submission")

        # the user's page, through the user link
        user = board[0]["user"]
        page.locator("dl.facts a").first.click()
        page.wait_for_url(f"**/users/{user}")
        assert "rank 1" in page.locator("ul.ranks").inner_text()
        assert page.locator("table.submissions tbody tr").count() == len(ids[user])
        shot("user")

        # a failing submission, and a flagged one with its screen finding and output
        page.goto(f"{server}/submissions/{ids['dave'][0]}")
        assert "failed" in page.locator("dl.facts").inner_text()
        assert "wrong output" in page.locator("main").inner_text()
        shot("submission-failed")
        page.goto(f"{server}/submissions/{ids['carol'][0]}")
        text = page.locator("main").inner_text()
        assert "counts-calls" in text and "suspicious" in text
        assert "samples took over 4x the median" in page.locator("p.note").first.inner_text()
        assert "hello from the worker" in page.locator("section.output").inner_text()
        shot("submission-flagged")
        page.goto(f"{server}/submissions/{ids['mallory'][0]}")
        assert "hacked" in page.locator("dl.facts").inner_text()
        assert "not ranked" in page.locator("dl.facts").inner_text()
        browser.close()
    assert offline == []


def test_views_and_the_code_setting(filled):
    from harness.results.document import case_notes
    from harness.web import charts, create_app

    db, ids = filled["db"], filled["ids"]
    hidden = create_app(str(db), show_code=False).test_client()
    shown = create_app(str(db), show_code=True).test_client()
    sid = ids["alice"][0]
    assert "code" not in hidden.get(f"/api/submissions/{sid}").get_json()
    assert "custom_kernel" in shown.get(f"/api/submissions/{sid}").get_json()["code"]
    assert b"custom_kernel" in shown.get(f"/submissions/{sid}").data
    assert b"custom_kernel" not in hidden.get(f"/submissions/{sid}").data
    # a case moved by long samples (carol's every 15th call stalls) gets a note
    assert b'class="note">note: ' in hidden.get(f"/submissions/{ids['carol'][0]}").data
    # every page shows exactly the notes its record holds, no more (a sleep of alice's or
    # bob's stretched by a busy host may earn one on a loaded CI machine: the record says so)
    for user, sids in ids.items():
        for n in sids:
            record = hidden.get(f"/api/submissions/{n}").get_json()
            held = sum(len(case_notes(c.get("integrity"))) for run in record["runs"]
                       for c in run.get("cases") or [])
            page = hidden.get(f"/submissions/{n}").data
            assert page.count(b'class="note">note: ') == held, (user, n, held)
    for url in ("/tasks/no_such_task", "/submissions/9999", "/users/nobody"):
        assert hidden.get(url).status_code == 404
    assert hidden.get("/api/leaderboard/no_such_task").get_json()["detail"].startswith("no task")
    assert hidden.get("/static/style.css").status_code == 200
    assert hidden.get(f"/tasks/{TASK}").data.count(b"<svg") == 1
    assert charts.trend_svg({"device": "CPU", "overall": [], "users": {}}, 600, 200) == ""


@pytest.mark.postgres
def test_the_same_pages_on_postgresql(filled):
    """The documents recorded again in PostgreSQL: the app serves them as the commands show."""
    from conftest import PG_URL, fresh_postgres_url

    from harness.web import create_app

    if not PG_URL:
        pytest.skip("set HARNESS_TEST_POSTGRES to a postgresql:// URL to run this")
    url = fresh_postgres_url()
    docs = sorted(filled["docs"], key=lambda d: json.loads(d.read_text())["record"]["submission_id"])
    assert run_cli("record", *map(str, docs), "--db", url).rc == 0
    hacked = filled["ids"]["mallory"][0]  # recorded in the same order: the same ids
    assert run_cli("mark", str(hacked), "--status", "hacked", "--db", url).rc == 0
    client = create_app(url, show_code=False).test_client()
    assert client.get(f"/api/leaderboard/{TASK}").get_json() == cli_json(
        filled["db"], "leaderboard", TASK, "--json", "--db", url)
    assert client.get("/api/history").get_json() == cli_json(filled["db"], "history", "--json",
                                                            "--db", url)
    for page in ("/", f"/tasks/{TASK}", f"/submissions/{hacked}", "/users/alice"):
        assert client.get(page).status_code == 200, page


def test_serve_refuses_what_it_cannot_serve(tmp_path, filled):
    missing = run_cli("serve", "--db", str(tmp_path / "none.db"))
    assert missing.rc == 2 and "no results database" in missing.out
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = run_cli("serve", "--db", str(filled["db"]), "--port", str(taken.getsockname()[1]))
    assert busy.rc == 2 and "cannot listen" in busy.out
    no_flask = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['flask'] = None; sys.argv[0] = 'runner.py'; "
         "import runner; runner.cli()", "serve", "--db", str(tmp_path / "x.db")],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert no_flask.returncode == 2 and "pip install -e '.[web]'" in no_flask.stdout
