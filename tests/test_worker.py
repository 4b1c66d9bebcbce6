"""The worker's wait for its next call (harness/judging/worker/worker.py), on the CPU: a real
Worker polls a real mailbox in a child process while the test plays the judge."""

from __future__ import annotations

import multiprocessing
import threading
import time
from dataclasses import replace

import pytest

from harness.judging.worker import cpu_heap
from harness.judging.worker.protocol import Event, Mailbox
from harness.judging.worker.worker import TorchCalls, Worker


@pytest.fixture(autouse=True)
def _untouched_heap(monkeypatch):
    """Workers built in this process leave its heap as it is (cpu_heap.py's settings would
    stay for the rest of the session)."""
    monkeypatch.setattr(cpu_heap, "touch_heap", lambda total=0: 0)


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


@pytest.mark.slow
@pytest.mark.parametrize("spin", [0.0, 30.0], ids=["napping", "polling"])
def test_the_worker_answers_a_wake_within_a_nap(waiting, spin):
    judge, judge_end = waiting(spin)
    time.sleep(0.05)
    assert _wake_delay(judge, 1) < 1.0  # naps of 0.1 ms, never a blocking read
    judge_end.send_bytes(b"next")
    assert judge_end.poll(10) and judge_end.recv_bytes() == b"pipe"


def test_an_idle_worker_naps_longer_until_the_judge_wakes_it(tmp_path):
    """Past its spin the polling loop naps briefly, then, idle a while, longer (the judge
    wakes it off the clock before a request after such a gap); a wake brings the short
    naps back at once."""
    path = str(tmp_path / "mailbox")
    judge, judge_end, worker_end = Mailbox(path, create=True), *multiprocessing.Pipe()
    naps: list[float] = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        time.sleep(seconds)
        if len(naps) == 80:
            judge.wake(1)
        if len(naps) == 90:
            judge_end.send_bytes(b"next")

    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py", "mailbox": path,
                                 "spin_seconds": 0.0})
    worker._nap = nap
    assert worker._wait_mail() is False  # the pipe's message ended it
    short, long = min(naps), max(naps)
    assert short < long and naps[0] == short and naps[79] == long
    assert naps[80] == short and judge.awake(1)
    judge.close()


@pytest.mark.slow
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


def _fake_torch(log: list, memory_full: bool = False):
    """torch, as far as a sample's work outside the call uses it, writing a log; with
    `memory_full`, its allocator has nothing left."""

    class OutOfMemoryError(RuntimeError):
        pass

    class Tensor:
        def copy_(self, src):
            log.append("copy_")

        def fill_(self, value):
            log.append(f"fill_({value})")

    class Cuda:
        @staticmethod
        def _sleep(cycles: int) -> None:
            log.append(f"sleep({cycles})")

        @staticmethod
        def synchronize() -> None:
            log.append("synchronize")

    class Torch:
        int64 = "int64"
        cuda = Cuda

        @staticmethod
        def empty(n, dtype, device):
            log.append(f"empty({n}, {dtype}, {device})")
            if memory_full:
                raise OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 MiB")
            return Tensor()

    Torch.OutOfMemoryError = OutOfMemoryError

    Torch.Tensor = Tensor
    return Torch


def _mail_worker(tmp_path, **init):
    """A CPU worker with a mailbox, and the judge's views: the mailbox and the pipe's end."""
    from harness.judging.worker.protocol import Mailbox

    box = Mailbox(str(tmp_path / "box"), create=True)
    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py", "mailbox": str(tmp_path / "box"),
                                 **init})
    return box, worker, judge_end


def _gpu_worker(tmp_path, log: list, memory_full: bool = False, **init):
    """A worker run as on a GPU, its torch and CUDA events fakes that write to `log`
    (`_fake_torch`, `_FakeEvent`); `init`, more of its start message. With the judge's end
    of its pipe, to close at the end."""
    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py", **init})
    events = [_FakeEvent(name, log) for name in ("warm", "start", "end")]
    worker.cuda, worker.end_event = True, events[2]
    worker.calls = TorchCalls.of(_fake_torch(log, memory_full), *events)
    return worker, judge_end


@pytest.mark.parametrize("ahead", [500, 0])
def test_the_sequence_before_the_start_event(tmp_path, ahead):
    """The warm-up work comes before the event the worker waits for, so a probe (ahead 0:
    no GPU sleep) still starts its clock on an idle GPU; then the sleep, the start event,
    the call."""
    before = ["sleep(1)", "empty(131072, int64, cuda)", "fill_(42)"]
    log: list = []
    worker, judge_end = _gpu_worker(tmp_path, log)
    reply = worker._run(lambda data: log.append("call"), 0, ahead, check=False)
    assert reply["event"] == Event.DONE, reply
    sleep = [f"sleep({ahead})"] if ahead else []
    assert log == [*before, "warm.record", "warm.synchronize", *sleep, "start.record",
                   "call", "end.record", "synchronize"]
    judge_end.close()


def test_a_full_gpu_memory_skips_the_warm_up_not_the_sample(tmp_path):
    """The warm-up's 1 MiB cannot be had (a submission keeps the memory full between calls):
    the sample goes on without it, says so, and is not the submission's error."""
    log: list = []
    worker, judge_end = _gpu_worker(tmp_path, log, memory_full=True)
    reply = worker._run(lambda data: log.append("call"), 0, 0, check=False)
    assert reply["event"] == Event.DONE and reply["unwarmed"], reply
    assert log == ["sleep(1)", "empty(131072, int64, cuda)", "warm.record", "warm.synchronize",
                   "start.record", "call", "end.record", "synchronize"]
    worker.calls = replace(worker.calls, empty=_fake_torch(log).empty)  # memory to spare
    assert "unwarmed" not in worker._run(lambda data: None, 0, 0, check=False)
    judge_end.close()


def test_what_a_submission_replaces_later_is_not_what_the_worker_runs(tmp_path, monkeypatch):
    """The worker takes torch's functions as it starts: a submission that then replaces
    Tensor.copy_ does not get its code run in the worker's copies of inputs and outputs,
    outside the timed region."""
    import torch

    from harness.judging.worker.structure import copy_into

    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py"})
    hooked = []
    monkeypatch.setattr(torch.Tensor, "copy_", lambda self, src: hooked.append(1))
    shared, mine = torch.arange(4.0), torch.zeros(4)
    worker.slots, worker.refresh = [(mine,)], [[(shared, mine)]]
    reply = worker._run(lambda data: data[0] * 2, 0, 0, check=False)
    assert reply["event"] == Event.DONE and torch.equal(mine, shared)
    out = torch.zeros(4)
    copy_into(out, torch.ones(4))
    assert torch.equal(out, torch.ones(4)) and not hooked
    judge_end.close()


def test_a_rehearsal_runs_the_earlier_sample_again_untimed(tmp_path):
    """The rehearsal: the op runs the calls of the sample that starts at the given slot
    (calls_per_sample of them, around the ring), times nothing, copies no output."""
    import torch

    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py"})
    worker.slots = [(torch.full((2,), float(i)),) for i in range(4)]
    worker.refresh = [[] for _ in worker.slots]
    worker.calls_per_sample = 2
    seen = []
    worker.kernel = lambda data: seen.append(int(data[0][0])) or data[0] * 2
    reply = worker._rehearse(3)
    assert reply == {"event": Event.DONE, "ns": 0.0}
    assert seen == [3, 0]
    judge_end.close()


def test_a_rehearsal_that_raises_is_the_submissions_error(tmp_path):
    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py"})

    def kernel(data):
        raise ValueError("only on the second look")

    worker.kernel = kernel
    reply = worker._rehearse(0)
    assert reply["event"] == Event.ERROR and reply["kind"] == "exception"
    assert "only on the second look" in reply["message"]
    judge_end.close()


@pytest.mark.parametrize("op", ["rehearse", "unknown"])
def test_the_mailbox_carries_the_rehearsal_and_nothing_unknown_runs(tmp_path, op):
    """A rehearsal asked through the mailbox runs the earlier slots' calls, never a timed
    and checked one; an op code the worker does not know runs nothing and answers an
    error on the pipe."""
    import torch

    from harness.judging.worker.protocol import Mailbox

    box, worker, judge_end = _mail_worker(tmp_path)
    worker.slots = [(torch.full((2,), float(i)),) for i in range(2)]
    worker.refresh = [[] for _ in worker.slots]
    seen = []
    worker.kernel = lambda data: seen.append(int(data[0][0]))

    def no_timed_call(*args, **kwargs):
        raise AssertionError("a timed call ran")

    worker._run = no_timed_call
    if op == "unknown":
        box._put("<i", Mailbox._REQ_OP, 99)
        box._put("<i", Mailbox._REQ_SLOT, 1)
        box._put("<Q", Mailbox._REQ_SEQ, 7)
    else:
        box.request(7, op, 1)
    pending = worker.mailbox.pending(0)
    assert pending == (7, op, 1, 0)
    worker._mail(*pending)
    assert box.reply_seq() == 7
    if op == "rehearse":
        assert seen == [1] and box.reply()["status"] == Mailbox.DONE
    else:
        assert seen == [] and box.reply()["status"] == Mailbox.SEE_PIPE
        assert judge_end.poll(5) and b"unknown request" in judge_end.recv_bytes()
    worker.mailbox.close()
    box.close()
    judge_end.close()


def test_a_no_op_does_a_samples_work_outside_the_timed_region(tmp_path):
    """The judge calibrates its clock check on no-op calls: whatever a sample does around
    the calls (here the census of lingering threads) a no-op does too, or the difference
    reads as work the submission hides."""
    import torch

    judge_end, worker_end = multiprocessing.Pipe()
    worker = Worker(worker_end, {"device": "cpu", "staging": str(tmp_path),
                                 "submission": "submission.py"})
    worker.slots, worker.refresh = [(torch.ones(2),)], [[]]
    worker.kernel = lambda data: data[0] * 2
    census = []
    worker._threads_left = lambda: census.append(1) or 0
    noop = worker._run(lambda data: data[0], 0, 0, check=False)
    sample = worker._run(worker.kernel, 0, 0, check=False)
    assert census == [1, 1] and noop.keys() == sample.keys()
    judge_end.close()


def test_the_polling_loop_runs_no_time_function_replaced_after_the_start(tmp_path, monkeypatch):
    """A submission that replaces time.perf_counter or time.sleep (past the screen: under a
    name built at run time, say) would have its code run in the worker's polling loop, off the judge's
    clock, while the next call's fresh inputs are readable: the loop uses the functions
    taken as the worker started."""
    import time as clock_module

    import torch

    box, worker, judge_end = _mail_worker(tmp_path, spin_seconds=0.0)
    worker.slots = [(torch.zeros(2),)]
    worker.refresh, worker.shared = [[]], [[]]
    worker.kernel = lambda data: None
    hooked = []
    real_clock, real_sleep, here = clock_module.perf_counter, clock_module.sleep, threading.get_ident()

    def clock() -> float:  # another thread of this process (a test's) keeps the real ones
        return hooked.append(1) or 0.0 if threading.get_ident() == here else real_clock()

    def sleep(seconds: float) -> None:
        return hooked.append(2) if threading.get_ident() == here else real_sleep(seconds)

    monkeypatch.setattr(clock_module, "perf_counter", clock)
    monkeypatch.setattr(clock_module, "sleep", sleep)
    box.request(1, "rehearse", 0)
    assert worker._wait_mail() and box.reply_seq() == 1
    assert hooked == []
    worker.mailbox.close()
    box.close()
    judge_end.close()

