"""The HTTP server under `runner.py serve` (harness/web/serving.py), as a real process:
waitress with bounded threads, no Werkzeug development server without --debug; idle and
slow clients by the thousand hold no thread and are closed after web.channel_timeout while
a new client is served at once; security headers on every page and API answer; SIGTERM in
the middle of a job hands the job back to the queue."""

from __future__ import annotations

import io
import signal
import socket
import time
from pathlib import Path

import pytest
from serverkit import CASE, Server, add_user, request, upload

from harness.execution.stopping import EXIT_CODE
from harness.storage.store import Store

pytest.importorskip("flask", reason="the server needs Flask")
pytest.importorskip("waitress", reason="the server needs waitress")
from harness.web.app import SECURITY_HEADERS  # noqa: E402
from harness.web.serving import THREADS, AccessLog, redact_query  # noqa: E402

IDLE, SLOW = 1000, 1000
TIMEOUT = 10  # web.channel_timeout of these tests (s): long beside a loaded machine's answer


def _status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("Threads", "VmRSS"):
            fields[name] = int(value.split()[0])
    return fields


def _served(tmp_path: Path, *extra: str) -> tuple[Server, str]:
    """A server (not started) on a new database with one user, alice, and her token."""
    config = tmp_path / "web.yaml"
    config.write_text(f"web:\n  channel_timeout: {TIMEOUT}\nserver:\n  lease_seconds: 5\n")
    token = add_user(str(tmp_path / "s.db"), "alice")
    return Server(str(tmp_path / "s.db"), tmp_path / "serve.log", "--config", str(config),
                  *extra), token


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed this connection (EOF or a reset)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.xdist_group("loud")  # never beside another test of the group (conftest.py)
@pytest.mark.slow  # two thousand sockets, and a wait for the server's timeout
def test_thousands_of_idle_and_slow_clients_hold_no_thread_and_are_closed(tmp_path):
    server, _ = _served(tmp_path)
    server.start()
    opened: list[socket.socket] = []
    try:
        before = _status(server.proc.pid)
        for k in range(IDLE + SLOW):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            if k >= IDLE:  # a request whose headers never end
                sock.sendall(b"GET /api/queue HTTP/1.1\r\nHost: x\r\nX-Slow: 1")
            opened.append(sock)
        time.sleep(1.0)
        began = time.monotonic()
        reply = request(server.base + "/api/queue")
        served_in = time.monotonic() - began
        held = _status(server.proc.pid)
        # served long before a held thread could be freed by the clients' timeout: a
        # server with a thread per connection would answer only after TIMEOUT, if at all
        assert reply.code == 200 and served_in < TIMEOUT / 2, served_in
        # the threads of the server: its pool, its event loop, the process's own few
        assert held["Threads"] <= before["Threads"] + 2 <= THREADS + 16, (before, held)
        assert held["VmRSS"] - before["VmRSS"] < 150 * 1024, (before, held)  # KiB
        time.sleep(TIMEOUT + TIMEOUT // 3 + 3)  # the timeout, then the next cleanup
        still_open = [s for s in opened if not _closed(s)]
        assert not still_open, f"{len(still_open)} of {len(opened)} connections left open"
        assert request(server.base + "/api/queue").code == 200
    finally:
        for sock in opened:
            sock.close()
        server.stop()
    assert "Werkzeug" not in server.log.read_text()


def test_every_page_and_answer_carries_the_security_headers(tmp_path):
    """Pages, API answers, errors (404, 401) and the static style sheet, each with the
    security headers; the server says it is ours, not Werkzeug's."""
    server, token = _served(tmp_path)
    server.start()
    try:
        replies = {path: request(server.base + path) for path in
                   ("/", "/queue", "/api/queue", "/api/leaderboard/nothing", "/no/such/page",
                    "/static/style.css")}
        replies["upload"] = upload(server.base, token + "x", "vectoradd", "CPU", "test", "a.py",
                                   b"x")
    finally:
        server.stop()
    assert replies["/"].code == 200 and replies["/no/such/page"].code in (404, 405)
    assert replies["upload"].code == 401
    for path, reply in replies.items():
        for name, value in SECURITY_HEADERS.items():
            assert reply.headers.get(name) == value, (path, name, reply.headers)
        assert reply.headers.get("Server") == "kernel-harness", (path, reply.headers)


@pytest.mark.slow  # a real job, stopped in the middle
def test_sigterm_in_the_middle_of_a_job_hands_it_back_to_the_queue(tmp_path):
    db = str(tmp_path / "s.db")
    server, token = _served(tmp_path, "--workers", "1", "--device", "cpu", *CASE)
    server.start()
    slow = b"import time\ntime.sleep(30)\n" + Path("submissions/vectoradd/add_torch.py").read_bytes()
    reply = upload(server.base, token, "vectoradd", "CPU", "test", "slow.py", slow)
    assert reply.code == 200, reply.body
    job_id = reply.body["details"]["id"]
    deadline = time.monotonic() + 60
    while Store(db).query("SELECT status FROM jobs WHERE id = ?", (job_id,))[0]["status"] != (
            "running"):
        assert time.monotonic() < deadline, server.log.read_text()[-3000:]
        time.sleep(0.2)
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(timeout=30)
    job = Store(db).query("SELECT status, attempts, error FROM jobs WHERE id = ?", (job_id,))[0]
    assert code == EXIT_CODE, server.log.read_text()[-3000:]  # as a worker ends (143)
    assert (job["status"], job["attempts"], job["error"]) == ("queued", 0, None)


def test_the_access_log_hides_query_values():
    """A line per request, Werkzeug's shape, the query's keys kept and its values hidden."""
    def app(environ, start_response):
        start_response("204 No Content", [])
        return [b""]

    out = io.StringIO()
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/api/queue",
               "QUERY_STRING": "token=secret&limit=2", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1"}
    AccessLog(app, out)(environ, lambda status, headers, exc_info=None: None)
    line = out.getvalue()
    assert '"GET /api/queue?token=...&limit=... HTTP/1.1" 204' in line and "secret" not in line
    assert redact_query("/a?x=1&token=abc&flag") == "/a?x=...&token=...&flag=..."
