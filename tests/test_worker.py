"""The worker's wait for its next call (harness/judging/worker.py), on the CPU: a real
Worker polls a real mailbox in a child process while the test plays the judge."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from harness.judging.protocol import Mailbox
from harness.judging.worker import Worker


def _wait(conn, init: dict) -> None:
    worker = Worker(conn, init)
    conn.send_bytes(b"ready")
    worker._wait_mail()


@pytest.fixture
def waiting(tmp_path):
    """Start a worker process in `_wait_mail` with the given settings; yield the judge's
    mailbox once it waits."""
    started = []

    def start(spin: float, rewarm: float) -> Mailbox:
        path = str(tmp_path / "mailbox")
        judge = Mailbox(path, create=True)
        judge_end, worker_end = multiprocessing.Pipe()
        init = {"device": "cpu", "staging": str(tmp_path), "submission": "submission.py",
                "mailbox": path, "spin_seconds": spin, "rewarm_seconds": rewarm}
        child = multiprocessing.get_context("fork").Process(target=_wait, args=(worker_end, init))
        child.start()
        assert judge_end.poll(60) and judge_end.recv_bytes() == b"ready"
        started.append((judge, judge_end, child))
        return judge

    yield start
    for judge, judge_end, child in started:
        judge_end.send_bytes(b"stop")  # a pipe message ends the wait
        child.join(timeout=10)
        assert child.exitcode == 0
        judge.close()


def _wake_delay(judge: Mailbox, n: int) -> float:
    t0 = time.perf_counter()
    judge.wake(n)
    while not judge.awake(n):
        assert time.perf_counter() - t0 < 10, "the worker never said it was awake"
    return time.perf_counter() - t0


def test_a_worker_woken_from_naps_polls_before_it_says_it_is_awake(waiting):
    judge = waiting(spin=0.0, rewarm=0.3)
    time.sleep(0.05)  # napping: its spin ended at once
    assert _wake_delay(judge, 1) >= 0.3


def test_a_polling_worker_says_it_is_awake_at_once(waiting):
    judge = waiting(spin=30.0, rewarm=0.3)
    time.sleep(0.05)  # still inside its spin
    assert _wake_delay(judge, 1) < 0.3


def test_after_a_wake_the_worker_polls_again_for_its_spin(waiting):
    judge = waiting(spin=0.0, rewarm=0.2)
    time.sleep(0.05)
    assert _wake_delay(judge, 1) >= 0.2
    time.sleep(0.05)  # napping again (its spin is 0)
    assert _wake_delay(judge, 2) >= 0.2


def test_without_rewarm_a_napping_worker_answers_promptly(waiting):
    judge = waiting(spin=0.0, rewarm=0.0)
    time.sleep(0.05)
    assert _wake_delay(judge, 1) < 0.3
