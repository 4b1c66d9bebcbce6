"""harness/server/gang.py: a job that needs several slots of one server process gathers
them (each lends itself before it would claim another job), runs on them alone, and gives
them back; and through a real `runner.py serve` with four CPU slots, the multi-GPU
all-gather example runs on four slots at once beside one-slot jobs."""

from __future__ import annotations

import re
import threading
import time

import pytest
from conftest import ROOT
from serverkit import Server, add_user, request, upload

from harness.server.gang import Gang
from harness.server.slots import Slot

SLOTS = [Slot(f"host:CPU slot {i}", "CPU", {"CUDA_VISIBLE_DEVICES": "", "_where": f"CPU slot {i}"})
         for i in range(3)]


def lending(gang: Gang, slot: Slot, stopping: threading.Event, back: list[str]) -> threading.Thread:
    """`slot`'s loop before a claim, in a thread: it lends itself while wanted, then
    says it is back."""
    def run() -> None:
        gang.lend_while_wanted(slot, stopping)
        back.append(slot.name)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_job_gathers_the_slots_it_needs_and_no_more_then_gives_them_back():
    gang, stopping, back = Gang(SLOTS), threading.Event(), []
    a, b, c = SLOTS
    got: list = []
    gatherer = threading.Thread(target=lambda: got.append(gang.gather(a, 1, stopping)))
    gatherer.start()
    time.sleep(0.2)  # it waits: nobody has lent a slot yet
    assert gatherer.is_alive() and not got
    first = lending(gang, b, stopping, back)
    gatherer.join(5)
    assert got == [[b]]
    time.sleep(0.2)
    assert first.is_alive() and back == []  # b is held for the job, not claiming
    second = lending(gang, c, stopping, back)
    second.join(5)
    assert back == [c.name]  # c was not wanted: it claims on
    assert gang.gather(c, 1, stopping) is None  # one job gathers at a time
    gang.release()
    first.join(5)
    assert back == [c.name, b.name]  # b claims again once the job is over


def test_a_stopping_process_gathers_nothing():
    gang, stopping = Gang(SLOTS), threading.Event()
    stopping.set()
    assert gang.gather(SLOTS[0], 2, stopping) is None
    gang.lend_while_wanted(SLOTS[1], stopping)  # returns at once


@pytest.mark.slow
def test_the_server_runs_a_multi_gpu_job_on_four_slots_beside_one_slot_jobs(tmp_path):
    pytest.importorskip("flask", reason="the server needs Flask")
    db, log = str(tmp_path / "gang.db"), tmp_path / "serve.log"
    token = add_user(db, "alice")
    server = Server(db, log, "--workers", "4", "--device", "cpu").start()
    try:
        files = [("vectoradd", "add_a.py", ROOT / "submissions" / "vectoradd" / "add_torch.py"),
                 ("all_gather", "gather.py",
                  ROOT / "submissions" / "all_gather" / "all_gather_torch.py"),
                 ("vectoradd", "add_b.py", ROOT / "submissions" / "vectoradd" / "add_torch.py")]
        ids = []
        for task, name, path in files:
            reply = upload(server.base, token, task, "CPU", "test", name, path.read_bytes())
            assert reply.code == 200, reply.body
            ids.append(reply.body["details"]["id"])
        deadline = time.monotonic() + 300
        verdicts: dict = {}
        while time.monotonic() < deadline and len(verdicts) < len(ids):
            for job in ids:
                body = request(f"{server.base}/user/submissions/{job}", token=token).body
                if body.get("done"):
                    verdicts[job] = body
            time.sleep(0.5)
    finally:
        server.stop()
    assert len(verdicts) == len(ids), log.read_text()[-3000:]
    text = log.read_text()
    gathered = re.search(r"job \d+ \(alice, all_gather test\) on ([^:]+): passed", text)
    assert gathered, text[-3000:]
    assert sorted(gathered.group(1).split(" + ")) == [f"CPU slot {i}" for i in range(4)]
    assert len(re.findall(r"\(alice, vectoradd test\) on CPU slot \d: passed", text)) == 2, text
