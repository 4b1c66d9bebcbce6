"""The contest server's API on a real `runner.py serve` (one CPU worker slot): popcorn-cli's
requests replayed as its source sends them, every bad input answered with the right 4xx
and nothing recorded, the contest rules (deadline, modes, closing, rate limit) and the
admin endpoints. popcorn-cli: github.com/gpu-mode/popcorn-cli, src/service/mod.rs."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request

import pytest
from conftest import PG_URL, ROOT, fresh_postgres_url, run_cli
from serverkit import CASE, Server, add_user, multipart, request, upload

from harness.storage.queue import JobQueue
from harness.storage.store import Store

pytest.importorskip("flask", reason="the server needs Flask")
# One server for the module (`served`): under `-n`, one test process runs every test of it,
# in order, as its users' uploads and rate limits assume.
pytestmark = pytest.mark.xdist_group("server_api")

TRIVIAL = (ROOT / "submissions" / "vectoradd" / "add_torch.py").read_bytes()
PARKED = "H200"  # a GPU kind registered with no slot running: its jobs wait, never judged


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request, tmp_path_factory):
    """The server over SQLite, then over PostgreSQL where $HARNESS_TEST_POSTGRES is set."""
    if request.param == "postgres" and not PG_URL:
        pytest.skip("set HARNESS_TEST_POSTGRES to a postgresql:// URL to run these")
    tmp = tmp_path_factory.mktemp("api")
    db = str(tmp / "api.db") if request.param == "sqlite" else fresh_postgres_url()
    config = tmp / "server.yaml"
    config.write_text("server:\n  rate_limit: 3\n  rate_window_seconds: 3600\n")
    tokens = {name: add_user(db, name)
              for name in ("alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank",
                           "ivan")}
    tokens["root"] = add_user(db, "root", admin=True)
    JobQueue(Store(db)).register_worker("parked", PARKED)
    server = Server(db, tmp / "serve.log", "--workers", "1", "--device", "cpu", *CASE,
                    "--config", str(config)).start()
    yield {"db": db, "base": server.base, "tokens": tokens, "log": tmp / "serve.log"}
    server.stop()


def counts(db: str) -> tuple[int, int]:
    store = Store(db)
    try:
        return tuple(store.query(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"]
                     for t in ("jobs", "submissions"))
    finally:
        store.close()


def wait_done(base: str, token: str, job_id: int, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = request(f"{base}/user/submissions/{job_id}", token=token)
        assert reply.code == 200, reply.body
        if reply.body["done"]:
            return reply.body
        time.sleep(0.3)
    pytest.fail(f"submission {job_id} was not judged in {timeout} s")


def sse_events(text: str) -> list[tuple[str, dict]]:
    """A body of server-sent events as popcorn-cli's `submit_solution_streaming` splits it:
    messages on a blank line, then the `event:` and `data:` lines of each."""
    events = []
    for message in filter(None, text.split("\n\n")):
        fields = {}
        for line in message.splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.mark.slow
def test_popcorn_cli_profile_mode_streams_its_progress_and_result(served):
    """popcorn-cli's `submit_solution_streaming` (its profile mode): POST
    {base}/{leaderboard lowercased}/{gpu}/{mode}, the multipart `file`; a text/event-stream
    of `status` events ({"message"}), then `result`, whose results[i].runs["profile.*"] it
    reads through `handle_profile_result` and whose `reports` it prints."""
    base, erin = served["base"], served["tokens"]["erin"]
    body, ctype = multipart("add_torch.py", TRIVIAL)
    req = urllib.request.Request(f"{base}/vectoradd/CPU/profile", data=body, method="POST",
                                 headers={"X-Popcorn-Cli-Id": erin, "Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=180) as reply:
        assert reply.headers["Content-Type"].startswith("text/event-stream")
        events = sse_events(reply.read().decode())
    assert [e for e, _ in events[:-1]] == ["status"] * (len(events) - 1) and events[:-1]
    assert all(isinstance(d["message"], str) for _, d in events[:-1])
    name, result = events[-1]
    assert name == "result", result
    run = result["results"][0]["runs"]["profile.0"]
    assert run["profile"]["profiler"] == "torch.profiler"  # no Nsight Compute on a CPU
    cases = run["run"]["result"]
    assert cases["benchmark-count"] == 1 and cases["benchmark.0.spec"] == "size: 64; seed: 1"
    assert "aten::add" in base64.b64decode(cases["benchmark.0.report"]).decode()
    assert "Task vectoradd" in result["reports"][0] and "Mode profile" in result["reports"][0]
    # refusals come before any stream, as popcorn-cli reads them: a 4xx and its `detail`
    unknown = request(f"{base}/nosuchtask/CPU/profile", "POST", erin, body, ctype)
    assert unknown.code == 404 and "unknown leaderboard" in unknown.body["detail"]
    assert request(f"{base}/vectoradd/CPU/profile", "POST", None, body, ctype).code == 401


@pytest.mark.slow
def test_popcorn_cli_requests(served):
    """Each step mirrors the popcorn-cli function named, and reads what it reads."""
    base, alice = served["base"], served["tokens"]["alice"]
    # fetch_leaderboards: a list; each has a `task` object, `name` and `description` strings
    boards = request(f"{base}/leaderboards", token=alice)
    assert boards.code == 200
    assert all(isinstance(b["task"], dict) and isinstance(b["name"], str)
               and isinstance(b["description"], str) for b in boards.body)
    assert "vectoradd" in [b["name"] for b in boards.body]
    # fetch_gpus: a list of strings
    gpus = request(f"{base}/gpus/vectoradd", token=alice)
    assert gpus.code == 200 and sorted(gpus.body) == ["CPU", PARKED]
    # submit_solution_background: POST {base}/submission/{leaderboard lowercased}/{gpu}/{mode}
    # with Form::new().part("file", Part::bytes(..).file_name(name)); reads details.id (i64)
    # and runner_queue {runner, gpu, queued_jobs}
    body, ctype = multipart("add_torch.py", TRIVIAL)
    accepted = request(f"{base}/submission/{'VectorAdd'.lower()}/CPU/leaderboard", "POST", alice,
                       body, ctype)
    assert accepted.code == 200, accepted.body
    job_id = accepted.body["details"]["id"]
    assert isinstance(job_id, int)
    queue = accepted.body["runner_queue"]
    assert isinstance(queue["runner"], str) and queue["gpu"] == "CPU"
    assert isinstance(queue["queued_jobs"], int)
    # get_user_submission, polled until `done`: job.status, runs[] with start_time,
    # end_time, mode, secret, runner, score (a number or a string), passed
    details = wait_done(base, alice, job_id)
    assert details["job"] == {"status": "succeeded", "error": None}
    board_ids = Store(served["db"]).query("SELECT leaderboard_id FROM submissions")
    assert details["leaderboard_id"] in {r["leaderboard_id"] for r in board_ids} - {0}
    assert details["id"] == job_id and details["leaderboard_name"] == "vectoradd"
    assert details["user_id"] == "alice" and details["code"] == TRIVIAL.decode()
    runs = details["runs"]
    assert [(r["mode"], r["secret"], r["runner"], r["passed"]) for r in runs] == [
        ("leaderboard", False, "CPU", True), ("leaderboard", True, "CPU", True)]
    assert all(isinstance(r["score"], float) and 0 < r["score"] < 1 for r in runs)
    assert all(isinstance(r["start_time"], str) and isinstance(r["end_time"], str) for r in runs)
    # get_user_submissions with ?leaderboard=&limit=: id, leaderboard_name, file_name,
    # submission_time, done, runs[{gpu_type, score}]
    listed = request(f"{base}/user/submissions?leaderboard=vectoradd&limit=5", token=alice)
    assert listed.code == 200
    mine = next(s for s in listed.body if s["id"] == job_id)
    assert (mine["leaderboard_name"], mine["file_name"], mine["done"]) == (
        "vectoradd", "add_torch.py", True)
    assert isinstance(mine["submission_time"], str)
    assert [r["gpu_type"] for r in mine["runs"]] == ["CPU", "CPU"]
    # our own endpoint: the result document, without the secret seeds
    doc = request(f"{base}/api/jobs/{job_id}", token=alice).body["document"]
    secret = [c for p in doc["phases"] if p["seeds"] == "secret" for c in p["cases"]]
    public = [c for p in doc["phases"] if p["seeds"] == "public" for c in p["cases"]]
    assert secret and all("seed" not in c["case"] for c in secret)
    assert all("seed" in c["case"] for c in public) and "database" not in doc["record"]
    # the ranking served is the command line's
    ranked = request(f"{base}/api/leaderboard/vectoradd").body
    assert ranked["devices"]["CPU"][0]["submission_id"] == doc["record"]["submission_id"]
    # another user sees neither the code nor the submission
    bob = served["tokens"]["bob"]
    assert request(f"{base}/user/submissions/{job_id}", token=bob).code == 404
    assert request(f"{base}/api/jobs/{job_id}", token=bob).code == 404
    assert job_id not in [s["id"] for s in request(f"{base}/user/submissions", token=bob).body]
    assert request(f"{base}/user/submissions/{job_id}", "DELETE", bob).code == 404
    # delete_user_submission: one's own; its recorded result leaves the ranking
    gone = request(f"{base}/user/submissions/{job_id}", "DELETE", alice)
    assert gone.code == 200 and gone.body["status"] == "ok"  # the public service's word
    assert request(f"{base}/user/submissions/{job_id}", token=alice).code == 404
    ranked = request(f"{base}/api/leaderboard/vectoradd").body["devices"].get("CPU", [])
    assert doc["record"]["submission_id"] not in [r["submission_id"] for r in ranked]


BAD = [  # (why, token, path, file name, bytes, code, words in the detail)
    ("no token", None, "vectoradd/H200/test", "a.py", TRIVIAL, 401, "token"),
    ("unknown token", "nope", "vectoradd/H200/test", "a.py", TRIVIAL, 401, "token"),
    ("unknown leaderboard", "carol", "nosuch/H200/test", "a.py", TRIVIAL, 404, "nosuch"),
    ("GPU kind not run here", "carol", "vectoradd/B200/test", "a.py", TRIVIAL, 400, "B200"),
    ("unknown mode", "carol", "vectoradd/H200/race", "a.py", TRIVIAL, 400, "race"),
    ("too large", "carol", "vectoradd/H200/test", "a.py", b"#" * (1048576 + 1), 413, "1048576"),
    ("not UTF-8", "carol", "vectoradd/H200/test", "a.py", b"x = '\xff'\n", 400, "UTF-8"),
    ("not Python", "carol", "vectoradd/H200/test", "a.cu", b"__global__ void f() {}\n", 400,
     "Python"),
    ("binary", "carol", "vectoradd/H200/test", "a.py", b"x = 1\x00\n", 400, "NUL"),
    ("empty", "carol", "vectoradd/H200/test", "a.py", b" \n\n", 400, "empty"),
    ("long name, not Python", "carol", "vectoradd/H200/test", "x" * 300 + ".cu", TRIVIAL, 400,
     "not a Python file"),
]


@pytest.mark.slow  # judged runs, end to end
def test_a_file_that_does_not_load_is_a_failed_job_with_the_loaders_message(served):
    """popcorn-cli prints `Submission N failed: <job.error>` for a failed job and a success
    otherwise: a file with a syntax error must reach it as failed, in every mode."""
    base, gina = served["base"], served["tokens"]["gina"]
    broken = b"def custom_kernel(data:\n    return data\n"
    ids = {}
    for mode in ("test", "benchmark", "leaderboard"):
        body, ctype = multipart("broken.py", broken)
        accepted = request(f"{base}/submission/vectoradd/CPU/{mode}", "POST", gina, body, ctype)
        assert accepted.code == 200, accepted.body
        ids[mode] = accepted.body["details"]["id"]
    for mode, job_id in ids.items():
        details = wait_done(base, gina, job_id)
        assert details["job"]["status"] == "failed", (mode, details["job"])
        assert "syntax error" in details["job"]["error"], (mode, details["job"])
        assert all(r["passed"] is False for r in details["runs"]), (mode, details["runs"])
        listed = request(f"{base}/user/submissions", token=gina).body
        assert next(s for s in listed if s["id"] == job_id)["status"] == "failed"
        ours = request(f"{base}/api/jobs/{job_id}", token=gina).body
        assert ours["status"] == "failed" and "syntax error" in ours["error"]


@pytest.mark.parametrize("why,who,path,name,data,code,words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_with_nothing_recorded(served, why, who, path, name, data, code,
                                                     words):
    before = counts(served["db"])
    token = served["tokens"].get(who, who)
    body, ctype = multipart(name, data)
    reply = request(f"{served['base']}/submission/{path}", "POST", token, body, ctype)
    assert reply.code == code, reply.body
    assert words in reply.body["detail"]
    assert counts(served["db"]) == before


def test_an_upload_of_thousands_of_parts_is_refused_for_its_parts(served):
    before = counts(served["db"])
    boundary = "b0undary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nx\r\n'
             for i in range(5000)]
    body = ("".join(parts) + f"--{boundary}--\r\n").encode()
    reply = request(f"{served['base']}/submission/vectoradd/{PARKED}/test", "POST",
                    served["tokens"]["carol"], body, f"multipart/form-data; boundary={boundary}")
    assert reply.code == 413 and "form parts" in reply.body["detail"], reply.body
    assert counts(served["db"]) == before


def test_a_huge_body_is_cut_off_with_413(served):
    before = counts(served["db"])
    try:
        reply = upload(served["base"], served["tokens"]["carol"], "vectoradd", PARKED, "test",
                       "a.py", b"#" * (4 << 20))
        assert reply.code == 413 and "bytes" in reply.body["detail"]
    except (ConnectionError, OSError):
        pass  # the server may close the connection before the client has sent it all
    assert counts(served["db"]) == before


def test_file_names_lose_their_path(served):
    reply = upload(served["base"], served["tokens"]["carol"], "vectoradd", PARKED, "test",
                   "../../etc/evil name.py", TRIVIAL)
    assert reply.code == 200 and reply.body["details"]["file_name"] == "evil_name.py"
    long = upload(served["base"], served["tokens"]["ivan"], "vectoradd", PARKED, "test",
                  "k" * 300 + ".py", TRIVIAL)  # cut to 100 characters, still a .py
    assert long.code == 200 and long.body["details"]["file_name"] == "k" * 97 + ".py"


def test_rate_limit_answers_429_with_retry_after(served):
    base, dave = served["base"], served["tokens"]["dave"]
    for _ in range(3):
        assert upload(base, dave, "vectoradd", PARKED, "test", "a.py", TRIVIAL).code == 200
    before = counts(served["db"])
    reply = upload(base, dave, "vectoradd", PARKED, "test", "a.py", TRIVIAL)
    assert reply.code == 429 and "rate limit" in reply.body["detail"]
    assert 3500 <= int(reply.headers["Retry-After"]) <= 3600
    assert counts(served["db"]) == before


def test_deleting_ones_own_uploads_frees_no_quota_an_admins_delete_refunds_one(served):
    """The limit (3 an hour here) counts accepted uploads, whatever became of them."""
    base, frank, root = served["base"], served["tokens"]["frank"], served["tokens"]["root"]

    def send(name="a.py"):
        return upload(base, frank, "vectoradd", PARKED, "test", name, TRIVIAL)

    ids = []
    for _ in range(3):
        reply = send()
        assert reply.code == 200, reply.body
        ids.append(reply.body["details"]["id"])
    for job_id in ids[:2]:
        assert request(f"{base}/user/submissions/{job_id}", "DELETE", frank).code == 200
    before = counts(served["db"])
    for _ in range(2):  # her deletes freed nothing; a refusal is no upload and frees nothing
        refused = send()
        assert refused.code == 429 and "rate limit" in refused.body["detail"]
        assert counts(served["db"]) == before
    # the organiser's delete refunds the upload: one more is accepted, then the limit again
    assert request(f"{base}/admin/submissions/{ids[2]}", "DELETE", root, bearer=True).code == 200
    assert send("b.py").code == 200
    assert send("c.py").code == 429


@pytest.mark.slow
def test_contest_rules_and_admin(served):
    base, db, tokens = served["base"], served["db"], served["tokens"]
    carol, root = tokens["carol"], tokens["root"]

    def try_upload(mode="test"):
        return upload(base, carol, "vectoradd", PARKED, mode, "a.py", TRIVIAL)

    # a deadline passed: 403 with the deadline in the message
    assert run_cli("contest", "set", "vectoradd", "--deadline", "2000-01-01T00:00:00Z",
                   "--db", db).rc == 0
    before = counts(db)
    reply = try_upload()
    assert reply.code == 403 and "2000-01-01" in reply.body["detail"]
    assert counts(db) == before
    assert run_cli("contest", "set", "vectoradd", "--deadline", "none", "--db", db).rc == 0
    # allowed modes
    assert run_cli("contest", "set", "vectoradd", "--modes", "test,benchmark", "--db", db).rc == 0
    reply = try_upload("leaderboard")
    assert reply.code == 403 and "not allowed" in reply.body["detail"]
    assert run_cli("contest", "set", "vectoradd", "--modes", "all", "--db", db).rc == 0
    # rules of the wrong shape: 400 with what is wanted, nothing changed
    rules = f"{base}/admin/leaderboards/vectoradd/rules"
    for bad, words in ((b'{"deadline": 123}', "deadline"), (b'{"modes": "test"}', "modes"),
                       (b'[1, 2]', "send JSON"), (b'{"deadline": "soon"}', "bad deadline")):
        reply = request(rules, "POST", root, bad, "application/json", bearer=True)
        assert reply.code == 400 and words in reply.body["detail"], (bad, reply.body)
    assert try_upload().code == 200  # still open, no deadline, every mode
    # close and reopen: admins only (Authorization: Bearer)
    assert request(f"{base}/admin/leaderboards/vectoradd/close", "POST", carol,
                   bearer=True).code == 403
    assert request(f"{base}/admin/leaderboards/vectoradd/close", "POST", None).code == 401
    closed = request(f"{base}/admin/leaderboards/vectoradd/close", "POST", root, bearer=True)
    assert closed.code == 200 and closed.body["closed"] is True
    reply = try_upload()
    assert reply.code == 403 and "closed" in reply.body["detail"]
    assert request(f"{base}/admin/leaderboards/vectoradd/open", "POST", root,
                   bearer=True).code == 200
    accepted = try_upload()
    assert accepted.code == 200
    job_id = accepted.body["details"]["id"]
    # an admin deletes it (popcorn-cli's admin_delete_submission); then it is gone
    assert request(f"{base}/admin/submissions/{job_id}", "DELETE", carol, bearer=True).code == 403
    assert request(f"{base}/admin/submissions/{job_id}", "DELETE", root, bearer=True).code == 200
    assert request(f"{base}/user/submissions/{job_id}", token=carol).code == 404
    assert request(f"{base}/admin/submissions/{job_id}", "DELETE", root, bearer=True).code == 404
    # and from the command line
    again = try_upload().body["details"]["id"]
    assert run_cli("contest", "delete", str(again), "--db", db).rc == 0
    assert run_cli("contest", "delete", str(again), "--db", db).rc == 2


PROBE = b'''import sys
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    print("PROBE-OUT", a.flatten()[:4].tolist())
    print("PROBE-ERR", b.flatten()[:4].tolist(), file=sys.stderr)
    return a + b
'''


@pytest.mark.slow  # judged runs, end to end
def test_nothing_printed_in_a_secret_phase_reaches_the_submitter(served):
    """A submission that prints its inputs in every call: after its leaderboard run, the lines
    it printed only in the secret phases (the organiser's document has them) appear in no
    response of popcorn-cli's routes, ours, the web pages and their JSON, nor in what
    `submit --server` prints; the public phases' lines do reach the submitter."""
    base, hank, root = served["base"], served["tokens"]["hank"], served["tokens"]["root"]
    accepted = upload(base, hank, "vectoradd", "CPU", "leaderboard", "probe.py", PROBE)
    assert accepted.code == 200, accepted.body
    job_id = accepted.body["details"]["id"]
    details = wait_done(base, hank, job_id)
    assert details["job"]["status"] == "succeeded", details["job"]
    full = request(f"{base}/admin/submissions/{job_id}", token=root, bearer=True).body["document"]
    public_lines = set((full["worker_output"]["stdout"] + full["worker_output"]["stderr"]).splitlines())
    secret_lines = set((full["secret_output"]["stdout"] + full["secret_output"]["stderr"]).splitlines())
    only_secret = {line for line in secret_lines - public_lines if line.startswith("PROBE-")}
    assert only_secret and any(line.startswith("PROBE-") for line in public_lines)
    ours = request(f"{base}/api/jobs/{job_id}", token=hank).body
    sub_id = ours["submission_id"]
    seen = {
        "popcorn-cli's submission": json.dumps(details),
        "popcorn-cli's list": json.dumps(request(f"{base}/user/submissions", token=hank).body),
        "our job": json.dumps(ours),
        "the web page": urllib.request.urlopen(f"{base}/submissions/{sub_id}").read().decode(),
        "its JSON": urllib.request.urlopen(f"{base}/api/submissions/{sub_id}").read().decode(),
    }
    for where, text in seen.items():
        leaked = [line for line in only_secret if line in text or json.dumps(line)[1:-1] in text]
        assert not leaked, f"{where} shows what the secret phases printed: {leaked[:2]}"
    assert "PROBE-OUT" in seen["our job"] and "PROBE-OUT" in seen["the web page"]
    secret_cases = [c for p in ours["document"]["phases"] if p["seeds"] == "secret"
                    for c in p["cases"]]
    assert secret_cases and all(c["case"] == {} and c["stats"] is None and not c["message"]
                                for c in secret_cases)
    assert all(p["score_ns"] for p in ours["document"]["phases"] if p["name"] == "benchmark")
    # the same file through `runner.py submit --server`: its report shows the public prints only
    probe = served["log"].with_name("probe.py")
    probe.write_bytes(PROBE)
    client = run_cli("submit", str(probe), "--task", "vectoradd", "--mode", "leaderboard",
                     "--server", base, "--token", hank)
    assert client.rc == 0, client.out
    latest = max(s["id"] for s in request(f"{base}/user/submissions", token=hank).body)
    full = request(f"{base}/admin/submissions/{latest}", token=root, bearer=True).body["document"]
    printed = set(full["secret_output"]["stdout"].splitlines()) - set(
        full["worker_output"]["stdout"].splitlines())
    assert printed and not [line for line in printed if line in client.out]
    assert "PROBE-OUT" in client.out


def test_every_error_is_json_and_popcorn_routes_not_offered_say_so(served):
    """An unknown path, a method a route does not take, and popcorn-cli's routes this server
    lacks answer `{"detail": ...}` with their code, which popcorn-cli prints; a browser
    asking for a page gets one."""
    base, alice, root = served["base"], served["tokens"]["alice"], served["tokens"]["root"]
    before = counts(served["db"])
    unknown = request(f"{base}/no-such-page", token=alice)
    assert unknown.code == 404 and isinstance(unknown.body["detail"], str)
    wrong_method = request(f"{base}/user/submissions", "PUT", alice)
    assert wrong_method.code == 405 and "method" in wrong_method.body["detail"].lower()
    from harness.server.api import NOT_OFFERED
    for method, path, _ in NOT_OFFERED:
        url = base + path.replace("<code>", "abc").replace("<name>", "vectoradd").replace(
            "<job_id>", "1")
        reply = request(url, method, root, b"{}" if method == "POST" else None,
                        "application/json" if method == "POST" else None, bearer=True)
        assert reply.code == 501, (method, path, reply.body)
        assert "not offered by this server" in reply.body["detail"], (method, path)
    assert counts(served["db"]) == before
    page = urllib.request.Request(f"{base}/no-such-page", headers={"Accept": "text/html"})
    try:
        urllib.request.urlopen(page, timeout=30)
    except urllib.error.HTTPError as exc:
        assert exc.code == 404 and b"<html" in exc.read().lower()
    else:
        raise AssertionError("a page that does not exist answered 200")


def test_the_access_log_never_holds_a_query_strings_values(served):
    """A client that puts its token in a query string (the server reads tokens from headers
    only) does not leave it in the server's log."""
    secret = "tok-" + "q" * 30
    assert request(f"{served['base']}/api/queue?token={secret}&limit=2").code == 200
    time.sleep(0.5)
    log = served["log"].read_text()
    assert "/api/queue?token=...&limit=..." in log and secret not in log


def test_redact_query_keeps_the_path_and_the_keys():
    from harness.web.serving import redact_query

    assert redact_query("/a/b") == "/a/b"
    assert redact_query("/a?x=1&token=abc&flag") == "/a?x=...&token=...&flag=..."


def test_admin_stats_counts_jobs_uploads_users_and_workers(served):
    """popcorn-cli's `admin stats`: admins only; `last_day_only` counts the last 24 hours."""
    base, root, carol = served["base"], served["tokens"]["root"], served["tokens"]["carol"]
    assert request(f"{base}/admin/stats", token=carol, bearer=True).code == 403
    stats = request(f"{base}/admin/stats", token=root, bearer=True)
    assert stats.code == 200, stats.body
    body = stats.body
    store = Store(served["db"])
    uploads = store.query("SELECT COUNT(*) AS n FROM uploads")[0]["n"]
    jobs = store.query("SELECT COUNT(*) AS n FROM jobs")[0]["n"]
    assert body["since"] is None and body["uploads"] == uploads >= 1
    assert sum(body["jobs"].values()) == jobs and body["users"] >= 10
    assert {w["gpu"] for w in body["workers"]} == {"CPU", PARKED}
    day = request(f"{base}/admin/stats?last_day_only=true", token=root, bearer=True).body
    assert day["since"] is not None and day["uploads"] == uploads  # all made just now
