"""Helpers of the contest server's tests: a real `runner.py serve` process on a free port,
users made with `runner.py users add`, and requests sent as popcorn-cli sends them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT, run_cli, warm_env

CASE = ["--case", "size: 64; seed: 1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_user(db: str, name: str, admin: bool = False) -> str:
    """`runner.py users add`: the token alone on stdout."""
    proc = subprocess.run([sys.executable, str(ROOT / "runner.py"), "users", "add", name, "--db",
                           db, *(["--admin"] if admin else [])], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    token = proc.stdout.strip()
    assert proc.stdout == token + "\n" and len(token) >= 40
    return token


@dataclass
class Reply:
    code: int
    body: object
    headers: dict


def request(url: str, method: str = "GET", token: str | None = None, body: bytes | None = None,
            content_type: str | None = None, bearer: bool = False) -> Reply:
    headers = {}
    if token is not None:
        headers["Authorization" if bearer else "X-Popcorn-Cli-Id"] = (
            f"Bearer {token}" if bearer else token)
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw, code, hdrs = r.read(), r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        raw, code, hdrs = exc.read(), exc.code, dict(exc.headers)
    try:
        return Reply(code, json.loads(raw), hdrs)
    except ValueError:
        return Reply(code, raw.decode("utf-8", "replace"), hdrs)


def multipart(name: str, data: bytes, field: str = "file") -> tuple[bytes, str]:
    """A body as reqwest's `Form::new().part("file", Part::bytes(..).file_name(..))` sends it."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; "
            f"filename=\"{name}\"\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def upload(base: str, token: str, task: str, gpu: str, mode: str, name: str,
           data: bytes) -> Reply:
    body, ctype = multipart(name, data)
    return request(f"{base}/submission/{task}/{gpu}/{mode}", "POST", token, body, ctype)


class Server:
    """`runner.py serve` as a real process (its own process group)."""

    def __init__(self, db: str, log: Path, *extra: str, port: int | None = None) -> None:
        self.db, self.log, self.extra = db, log, extra
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> Server:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "runner.py"), "serve", "--db", self.db, "--port",
             str(self.port), *self.extra], cwd=ROOT, stdout=self.log.open("a"),
            stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **warm_env()})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("serve ended: " + self.log.read_text()[-3000:])
            try:
                if request(self.base + "/api/queue").code == 200:
                    return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError("serve did not start: " + self.log.read_text()[-3000:])

    def kill(self) -> None:
        """SIGKILL the server and its judges at once."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def cli_json(db: str, *args: str):
    r = run_cli(*args, env={"HARNESS_DB": db})
    assert r.rc == 0, r.out
    return json.loads(r.out)
