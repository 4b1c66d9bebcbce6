"""The worker's wait for its next call (harness/judging/worker.py), on the CPU: a real
Worker polls a real mailbox in a child process while the test plays the judge."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from harness.judging.protocol import Event, Mailbox
from harness.judging.worker import Worker


def _wait(conn, init: dict) -> None:
    worker = Worker(conn, init)
    conn.send_bytes(b"ready")
    served = worker._wait_mail()
    conn.send_bytes(b"served" if served else b"pipe")


@pytest.fixture
def waiting(tmp_path):
    """Start a worker process in `_wait_mail` polling `spin` seconds before it naps;
    yield the judge's mailbox and the judge's end of the pipe once it waits."""
    started = []

    def start(spin: float):
        path = str(tmp_path / "mailbox")
        judge = Mailbox(path, create=True)
        judge_end, worker_end = multiprocessing.Pipe()
        init = {"device": "cpu", "staging": str(tmp_path), "submission": "submission.py",
                "mailbox": path, "spin_seconds": spin}
        child = multiprocessing.get_context("spawn").Process(
            target=_wait, args=(worker_end, init), daemon=True)
        started.append((judge, judge_end, child))
        child.start()
        worker_end.close()  # the child's now: a child that dies closes the pipe
        deadline = time.monotonic() + 60
        while not judge_end.poll(0.1):
            assert child.exitcode is None, f"the worker exited with {child.exitcode}"
            assert time.monotonic() < deadline, "the worker never started"
        assert judge_end.recv_bytes() == b"ready"
        return judge, judge_end

    yield start
    for judge, judge_end, child in started:
        judge_end.close()
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
            child.join(timeout=10)
        judge.close()


def _wake_delay(judge: Mailbox, n: int) -> float:
    t0 = time.perf_counter()
    judge.wake(n)
    while not judge.awake(n):
        assert time.perf_counter() - t0 < 10, "the worker never said it was awake"
        time.sleep(0)  # let a polling worker have the core on a two-core machine
    return time.perf_counter() - t0


@pytest.mark.parametrize("spin", [0.0, 30.0], ids=["napping", "polling"])
def test_the_worker_answers_a_wake_within_a_nap(waiting, spin):
    judge, judge_end = waiting(spin)
    time.sleep(0.05)
    assert _wake_delay(judge, 1) < 1.0  # naps of 0.1 ms, never a blocking read
    judge_end.send_bytes(b"next")
    assert judge_end.poll(10) and judge_end.recv_bytes() == b"pipe"


def test_a_pipe_message_ends_the_wait(waiting):
    _, judge_end = waiting(0.0)
    judge_end.send_bytes(b"next")
    assert judge_end.poll(10) and judge_end.recv_bytes() == b"pipe"


class _FakeEvent:
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def record(self) -> None:
        self.log.append(f"{self.name}.record")

    def synchronize(self) -> None:
        self.log.append(f"{self.name}.synchronize")

    def elapsed_time(self, other) -> float:
        return 0.001


class _FakeTorch:
    """torch, as far as a sample's sequence before the clock uses it, writing a log."""
    int64 = "int64"

    def __init__(self, log: list) -> None:
        self.log = log
        self.cuda = self

    def _sleep(self, cycles: int) -> None:
        self.log.append(f"sleep({cycles})")

    def synchronize(self) -> None:
        self.log.append("synchronize")

    def empty(self, n, dtype, device):
        log = self.log
        log.append(f"empty({n}, {dtype}, {device})")

        class _Tensor:
            def fill_(self, value):
                log.append(f"fill_({value})")
        return _Tensor()


@pytest.mark.parametrize("warm,before", [
    ("torch", ["sleep(1)", "empty(131072, int64, cuda)", "fill_(42)"]),
    ("kernel", ["sleep(1)"]),
    ("event", []),
])
def test_the_sequence_before_the_start_event(tmp_path, warm, before):
    """timing.warm: the warm-up work comes before the event the worker waits for, so a
    probe (no GPU sleep) still starts its clock on an idle GPU; then the sleep, the start
    event, the call."""
    log: list = []
    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py"})
    worker.torch, worker.cuda, worker.warm = _FakeTorch(log), True, warm
    worker.warm_event = _FakeEvent("warm", log)
    worker.start_event, worker.end_event = _FakeEvent("start", log), _FakeEvent("end", log)
    reply = worker._run(lambda data: log.append("call"), 0, 500, check=False)
    assert reply["event"] == Event.DONE, reply
    assert log == [*before, "warm.record", "warm.synchronize", "sleep(500)", "start.record",
                   "call", "end.record", "synchronize"]
    judge_end.close()
