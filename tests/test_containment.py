"""The worker's sandbox, end to end: real attacking submissions (tests/containment/) run in
leaderboard mode through `runner.py submit`, from a working directory that holds the
results database. Each attempt is refused, no database changes by a byte, the secret
appears nowhere the submission could print, the run says what was refused, and the
honest examples still pass with the sandbox on.

Skipped where the kernel has no full Landlock (ABI 6 or later).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from harness.judging.sandbox.landlock import probe

pytestmark = [
    pytest.mark.slow,  # each test runs runner.py end to end
    pytest.mark.xdist_group("containment"),  # under -n, one process builds the module's arena
    pytest.mark.skipif(probe().level != "full",
                       reason="needs Landlock ABI 6 or later (full containment)"),
]

ATTACKS = ROOT / "tests" / "containment"
CASE = ["--case", "size: 256; seed: 1"]
PLANTED = ("PLANTED_BY_SUBMISSION", "PLANTED_BY_CHILD")


def materialize(name: str, folder: Path, port: int = 0, db: Path | None = None) -> Path:
    """The attack as one file (a submission is one file): the shared moves, then its own."""
    shared = (ATTACKS / "_attack.py").read_text()
    own = "\n".join(line for line in (ATTACKS / f"{name}.py").read_text().splitlines()
                    if not line.startswith("from _attack import"))
    path = folder / f"{name}.py"
    text = (shared + "\n" + own).replace("__PORT__", str(port)).replace("__DB__", str(db))
    text = text.replace("__CACHES__", os.environ.get("HARNESS_COMPILE_CACHE", ""))
    path.write_text(text)
    return path


# The attacks run on the CPU in CI; CONTAINMENT_DEVICE=cuda runs them with the worker on the
# GPU (the H200 session does).
DEVICE = os.environ.get("CONTAINMENT_DEVICE", "cpu")


class Arena:
    """A working directory holding results.db (from an honest leaderboard run) and
    copies of it elsewhere, each checksummed around every attack."""

    def __init__(self, base: Path) -> None:
        self.work, self.home = base / "work", base / "home"
        self.work.mkdir()
        self.home.mkdir()
        self.canary = "CANARY-" + secrets.token_hex(8)
        honest = self.submit(ROOT / "submissions" / "vectoradd" / "add_torch.py", "honest")
        assert honest.rc == 0, honest.out
        self.db = self.work / "results.db"
        self.victims = [self.work / "victim.db", self.home / "victim.db"]
        for victim in self.victims:
            shutil.copy(self.db, victim)
        with sqlite3.connect(self.db) as con:
            self.secret = con.execute("SELECT secret FROM leaderboards").fetchone()[0]

    def submit(self, path: Path, user: str, *extra: str):
        json_path = self.work / f"{user}-{time.monotonic_ns()}.json"
        return run_cli("submit", str(path), "--task", "vectoradd", "--device", DEVICE,
                       "--user", user, *CASE, *extra, json_path=json_path, cwd=self.work,
                       env={"HARNESS_DB": "", "CANARY": self.canary})

    def snapshot(self, upto: int | None = None) -> dict:
        """Checksums of the copies; the recorded rows (up to submission `upto`) and
        secrets of the database the runs record into."""
        sums = {str(v): hashlib.sha256(v.read_bytes()).hexdigest() for v in self.victims}
        with sqlite3.connect(self.db) as con:
            upto = upto or con.execute("SELECT max(id) FROM submissions").fetchone()[0]
            rows = con.execute("SELECT * FROM runs WHERE submission_id <= ? ORDER BY id",
                               (upto,)).fetchall()
            boards = con.execute("SELECT * FROM leaderboards ORDER BY id").fetchall()
        return {"copies": sums, "rows": rows, "boards": boards, "upto": upto}


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    return Arena(tmp_path_factory.mktemp("arena"))


@pytest.fixture
def listener():
    """A TCP listener on this machine that counts the connections it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list[tuple] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def attack(arena: Arena, tmp_path: Path, name: str, port: int = 0, extra: tuple = ()):
    """Run one attack; check what every attack must leave untouched."""
    before = arena.snapshot()
    r = arena.submit(materialize(name, tmp_path, port, arena.db), name, *extra)
    assert "Traceback (most recent call last)" not in r.out, r.out
    assert r.doc is not None, r.out
    assert arena.snapshot(before["upto"]) == before  # no database changed by a byte
    doc = json.dumps(r.doc)
    for text in (r.out, doc):
        assert arena.secret not in text
        assert arena.canary not in text
    assert r.doc["harness"]["containment"]["level"] == "full"
    stdout = r.doc["worker_output"]["stdout"]
    assert "ESCAPED 0" in stdout, stdout
    refused = [w for w in r.doc["warnings"] if w.startswith("the sandbox refused")]
    assert refused, r.doc["warnings"]
    for folder in (ROOT, ROOT / "harness", Path.home(), Path("/tmp"), Path("/dev/shm")):
        for name_ in PLANTED:
            planted = folder / name_
            exists = planted.exists()
            planted.unlink(missing_ok=True)
            assert not exists, f"{planted} was written"
    return r, refused


def test_rewriting_every_database_is_refused(arena, tmp_path):
    r, refused = attack(arena, tmp_path, "rewrite_databases")
    assert r.rc == 0  # contained, the submission itself is correct: it passes
    assert any("read" in w for w in refused)


def test_reading_the_secret_is_refused(arena, tmp_path):
    r, refused = attack(arena, tmp_path, "read_secret")
    assert "SECRET" not in r.doc["worker_output"]["stdout"]
    assert f"read {arena.db}" in refused[0]


def test_writing_outside_scratch_is_refused(arena, tmp_path):
    r, refused = attack(arena, tmp_path, "write_outside")
    assert "SCRATCH_WRITE" in r.doc["worker_output"]["stdout"]
    assert str(ROOT) in refused[0] and "write" in refused[0]


def test_another_files_compiler_caches_are_out_of_reach(arena, tmp_path, compile_caches):
    """A file's compiler-cache folder outlives its unranked runs (compile_cache.py):
    another file's is neither listed, read nor written, and no folder can be made for
    another source. What the sandbox cannot refuse (chmod of the root, links planted in
    its own folder to a lock outside) neither misleads the judge's clean-up nor stops the
    next evaluation."""
    victim = compile_caches / ("0" * 40)
    victim.mkdir()
    (victim / "kernel.cubin").write_bytes(b"the victim's code")
    outside = compile_caches.parent / "outside-victim" / "x"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "lock").write_text("not the cache's")
    os.utime(outside / "lock", (0, 0))  # old: a lock a judge would clear, were it inside
    r, refused = attack(arena, tmp_path, "plant_compiled_code", extra=("--mode", "test"))
    assert r.rc == 0, r.out
    assert sorted(p.name for p in victim.iterdir()) == ["kernel.cubin"]
    assert not (compile_caches / ("f" * 40)).exists()
    own = compile_caches / r.doc["harness"]["compile_cache"]["name"]
    assert (own / "PLANTED_BY_SUBMISSION").exists()
    assert "the victim's code" not in r.doc["worker_output"]["stdout"]
    assert any(f"write {victim}" in w for w in refused), refused
    assert (outside / "lock").read_text() == "not the cache's"
    honest = arena.submit(ROOT / "submissions" / "vectoradd" / "add_torch.py", "after",
                          "--mode", "test")
    assert honest.rc == 0, honest.out
    assert honest.doc["harness"]["compile_cache"]["mode"] == "per_file"


def test_reading_the_judges_memory_and_environment_is_refused(arena, tmp_path):
    r, refused = attack(arena, tmp_path, "read_judge_memory")
    out = r.doc["worker_output"]["stdout"]
    assert "JUDGE_ENV" not in out and "JUDGE_MEM" not in out
    assert "environ" in refused[0] and "signal" in refused[0]


def test_tcp_connect_and_bind_are_refused(arena, tmp_path, listener):
    port, accepted = listener
    r, refused = attack(arena, tmp_path, "connect_socket", port)
    time.sleep(0.5)
    assert accepted == []
    assert "an IP socket (tcp)" in refused[0] or "tcp connect" in refused[0]


def test_a_child_process_is_contained_too(arena, tmp_path, listener):
    port, accepted = listener
    r, _ = attack(arena, tmp_path, "child_attacks", port)
    assert "CHILD_ESCAPED 0" in r.doc["worker_output"]["stdout"], r.doc["worker_output"]
    time.sleep(0.5)
    assert accepted == []


def test_another_runs_scratch_is_unreadable_while_it_runs(arena, tmp_path):
    known = set(glob.glob("/tmp/harness-worker-*/VICTIM_MARKER.txt"))
    victim = subprocess.Popen(
        [sys.executable, str(ROOT / "runner.py"), "submit", str(ATTACKS / "slow_honest.py"),
         "--task", "vectoradd", "--device", DEVICE, "--mode", "test", "--no-record", *CASE],
        cwd=arena.work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (marker := set(glob.glob("/tmp/harness-worker-*/VICTIM_MARKER.txt")) - known):
            assert victim.poll() is None and time.monotonic() < deadline, "the victim never ran"
            time.sleep(0.2)
        r, refused = attack(arena, tmp_path, "read_other_scratch")
        assert "victim's private" not in json.dumps(r.doc)
        assert victim.poll() is None  # the attack ran while the victim did
        (Path(marker.pop()).parent / "ATTACK_DONE").write_text("")  # the victim goes on
        assert victim.wait(timeout=300) == 0  # and the victim's own run was undisturbed
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()


@pytest.mark.parametrize("path", [
    "vectoradd/add_torch.py", "vectoradd/add_inplace.py",
    "mxfp4_mm/torch_dequant.py", "nvfp4_group_gemm/torch_dequant.py",
])
def test_honest_examples_pass_with_the_sandbox_on(tmp_path, path):
    r = run_cli("submit", str(ROOT / "submissions" / path), "--device", DEVICE, "--mode", "test",
                "--no-record", json_path=tmp_path / "r.json", cwd=tmp_path)
    assert r.rc == 0, r.out
    assert r.doc["harness"]["containment"]["level"] == "full"
    assert not [w for w in r.doc["warnings"] if "sandbox" in w or "containment" in w]
