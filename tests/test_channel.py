"""harness/judging/worker/channel.py: Channel.roundtrip over the pipe and over the shared mailbox.

No worker process: a fake worker (proc.poll(), send/recv, exit_description) with scripted
pipe replies, or a real multiprocessing Pipe read by WorkerProcess's own send/recv; for
the mailbox a real Mailbox file under tmp_path with a thread playing the worker's side.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from multiprocessing import Pipe

import pytest

from harness.judging.sandbox.sandbox import WorkerDied, WorkerProcess, WorkerTimeout
from harness.judging.worker.channel import Channel
from harness.judging.worker.protocol import Event, Mailbox, ProtocolError, encode

DIED = "the worker was killed by SIGSEGV (fake)"


class FakeProc:
    """What the channel asks of a Popen: poll() is None while the worker lives."""

    def __init__(self, code: int | None = None) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code


class FakeWorker:
    """A worker whose pipe replies are scripted: a dict, a function of the last message
    sent, or an exception to raise; an empty script times out."""

    def __init__(self, replies=(), code: int | None = None) -> None:
        self.proc = FakeProc(code)
        self.replies = list(replies)
        self.sent: list[dict] = []
        self.recv_timeouts: list[float] = []

    def send(self, message: dict) -> None:
        self.sent.append(message)

    def recv(self, timeout: float, spin: float = 0.0) -> dict:
        self.recv_timeouts.append(timeout)
        if not self.replies:
            raise WorkerTimeout(f"no answer within {timeout:.3g} s")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply(self.sent[-1]) if callable(reply) else reply

    def exit_description(self) -> str:
        return DIED


def echo(ns: float = 100.0):
    """A pipe reply that answers in turn."""
    return lambda sent: {"event": "done", "ns": ns, "seq": sent["seq"]}


# -- over the pipe ---------------------------------------------------------------------

def test_pipe_round_trip_numbers_each_request():
    worker = FakeWorker([echo(100.0), echo(200.0), echo(300.0)])
    channel = Channel(worker, None, spin=0.0)
    assert channel.mailbox is None
    for n, ns in enumerate((100.0, 200.0, 300.0), start=1):
        reply, rt = channel.roundtrip({"op": "call", "slot": n}, timeout=1.0)
        assert reply == {"event": "done", "ns": ns, "seq": n}
        assert worker.sent[-1] == {"op": "call", "slot": n, "seq": n}
        assert rt >= 0


@pytest.mark.parametrize("seq", [0, 2, None, "1", 1.5])
def test_pipe_reply_out_of_turn_is_a_protocol_error(seq):
    """The first request is number 1: any other (or no) number was not asked for."""
    reply = {"event": "done", "ns": 5.0}
    if seq is not None:
        reply["seq"] = seq
    channel = Channel(FakeWorker([reply]), None, spin=0.0)
    with pytest.raises(ProtocolError, match="out of turn"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=1.0)


def test_pipe_stale_reply_to_an_earlier_request_is_a_protocol_error():
    first = {"event": "done", "ns": 5.0, "seq": 1}
    channel = Channel(FakeWorker([first, dict(first)]), None, spin=0.0)
    channel.roundtrip({"op": "call", "slot": 0}, timeout=1.0)
    with pytest.raises(ProtocolError, match="out of turn"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=1.0)


@pytest.mark.parametrize("exc", [WorkerDied(DIED), WorkerTimeout("no answer"),
                                 ProtocolError("junk")])
def test_pipe_errors_of_the_transport_propagate(exc):
    channel = Channel(FakeWorker([exc]), None, spin=0.0)
    with pytest.raises(type(exc)):
        channel.roundtrip({"op": "noop", "slot": 0}, timeout=1.0)


class PipeWorker:
    """A worker without a process: WorkerProcess's own send/recv on a real Pipe."""

    send = WorkerProcess.send
    recv = WorkerProcess.recv

    def __init__(self) -> None:
        self.conn, self.child = Pipe(duplex=True)
        self.proc = FakeProc()

    def exit_description(self) -> str:
        return DIED


@pytest.fixture
def pipe_worker():
    worker = PipeWorker()
    yield worker
    worker.conn.close()
    worker.child.close()


def play(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_real_pipe_round_trip(pipe_worker):
    def serve(conn):
        for _ in range(2):
            message = conn.recv()
            conn.send_bytes(encode({"event": "done", "ns": 10.0 * message["slot"],
                                    "seq": message["seq"]}))

    thread = play(serve, pipe_worker.child)
    channel = Channel(pipe_worker, None, spin=0.001)
    assert channel.roundtrip({"op": "call", "slot": 1}, 5.0)[0]["ns"] == 10.0
    assert channel.roundtrip({"op": "call", "slot": 2}, 5.0)[0] == {
        "event": "done", "ns": 20.0, "seq": 2}
    thread.join(5)


@pytest.mark.parametrize("frame", [b"\x80junk", b'{"event":"done","ns":1', b'{"ns":1,"seq":1}',
                                   b'{"event":"done","ns":-5,"seq":1}'])
def test_real_pipe_forged_frames_are_protocol_errors(pipe_worker, frame):
    pipe_worker.child.send_bytes(frame)
    with pytest.raises(ProtocolError):
        Channel(pipe_worker, None, spin=0.0).roundtrip({"op": "call", "slot": 0}, 5.0)


def test_real_pipe_no_answer_times_out(pipe_worker):
    t0 = time.monotonic()
    with pytest.raises(WorkerTimeout):
        Channel(pipe_worker, None, spin=0.0).roundtrip({"op": "call", "slot": 0}, 0.2)
    assert 0.2 <= time.monotonic() - t0 < 3


def test_real_pipe_worker_that_closes_its_end_died(pipe_worker):
    pipe_worker.proc.code = -11
    pipe_worker.child.close()
    with pytest.raises(WorkerDied, match="SIGSEGV"):
        Channel(pipe_worker, None, spin=0.0).roundtrip({"op": "call", "slot": 0}, 5.0)


def test_real_pipe_worker_that_exits_silently_died(pipe_worker):
    """The pipe stays open (a stray child holds it) but the worker has exited: found at
    the next check of proc.poll(), well before the timeout."""
    pipe_worker.proc.code = 1
    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match="SIGSEGV"):
        Channel(pipe_worker, None, spin=0.0).roundtrip({"op": "call", "slot": 0}, 30.0)
    assert time.monotonic() - t0 < 10


def test_real_pipe_huge_frame_is_refused(pipe_worker):
    """A frame over the 1 MiB limit is never decoded: the judge drops the connection."""
    def flood(conn):
        try:
            conn.send_bytes(encode({"event": "done", "ns": 1, "seq": 1, "pad": "x" * (2 << 20)}))
        except OSError:
            pass  # the judge closed its end

    thread = play(flood, pipe_worker.child)
    with pytest.raises(WorkerDied):
        Channel(pipe_worker, None, spin=0.0).roundtrip({"op": "call", "slot": 0}, 5.0)
    pipe_worker.conn.close()  # as the judge does when it kills the worker
    thread.join(5)
    assert not thread.is_alive()


def test_real_pipe_large_frame_under_the_limit_is_read(pipe_worker):
    pad = "x" * ((1 << 20) - 200)
    thread = play(pipe_worker.child.send_bytes,
                  encode({"event": "done", "ns": 1, "seq": 1, "pad": pad}))
    reply, _ = Channel(pipe_worker, None, spin=0.0).roundtrip({"op": "call", "slot": 0}, 5.0)
    assert reply["pad"] == pad
    thread.join(5)


# -- over the mailbox ------------------------------------------------------------------

class MailWorker:
    """Plays the worker's side of a mailbox in a thread: acknowledges wake-ups (after
    `wake_delay` seconds, or never when None) and hands each request to `handle`
    (default: answer DONE with ns = 1000 + slot)."""

    def __init__(self, path: str, handle=None, wake_delay: float | None = 0.0) -> None:
        self.path = path
        self.handle = handle or (lambda box, seq, op, slot, *_: box.answer(
            seq, Mailbox.DONE, {"ns": 1000.0 + slot, "busy_ns": 1.0, "host_ns": 2.0}))
        self.wake_delay = wake_delay
        self.seen: list[tuple[int, str, int, int]] = []
        self.stop = threading.Event()
        self.thread = play(self.serve)

    def serve(self) -> None:
        box = Mailbox(self.path)
        start, last = time.monotonic(), 0
        try:
            while not self.stop.is_set():
                if self.wake_delay is not None and time.monotonic() - start >= self.wake_delay:
                    box.wake_pending()
                request = box.pending(last)
                if request is None:
                    time.sleep(0.0002)
                    continue
                last = request[0]
                self.seen.append(request)
                self.handle(box, *request)
        finally:
            box.close()

    def join(self) -> None:
        self.stop.set()
        self.thread.join(5)
        assert not self.thread.is_alive()


@pytest.fixture
def mail(tmp_path):
    """mail(worker=None, **MailWorker options) -> (channel, fake worker, mail worker or None);
    `serve=False` starts no thread (a worker that never polls)."""
    made: list = []

    def make(worker: FakeWorker | None = None, serve: bool = True, **kw):
        worker = worker or FakeWorker()
        channel = Channel(worker, str(tmp_path / "mailbox"), spin=0.001)
        mailer = MailWorker(channel.mailbox_path, **kw) if serve else None
        made.append((channel, mailer))
        return channel, worker, mailer

    yield make
    for channel, mailer in made:
        if mailer is not None:
            mailer.join()
        channel.close()


def test_mailbox_round_trip(mail, tmp_path):
    channel, worker, mailer = mail()
    assert (tmp_path / "mailbox").stat().st_size == Mailbox.SIZE
    for n in (1, 2, 3):
        reply, rt = channel.roundtrip({"op": "call", "slot": n}, timeout=5.0)
        assert reply == {"status": Mailbox.DONE, "event": Event.DONE, "ns": 1000.0 + n,
                         "busy_ns": 1.0, "host_ns": 2.0, "sync_ns": 0.0, "copy_ns": 0.0,
                         "threads": 0.0, "pre_ns": 0.0, "lead_ns": 0.0}
        assert rt > 0
    assert mailer.seen == [(1, "call", 1, 0), (2, "call", 2, 0), (3, "call", 3, 0)]
    assert worker.sent == [] and worker.recv_timeouts == []  # no pipe traffic at all


def test_mailbox_noop_reaches_the_worker_as_noop(mail):
    channel, _, mailer = mail()
    channel.roundtrip({"op": "noop", "slot": 0}, timeout=5.0)
    assert mailer.seen == [(1, "noop", 0, 0)]


def test_mailbox_round_trip_time_covers_the_worker_call(mail):
    def slow(box, seq, op, slot, ahead, key=0):
        time.sleep(0.05)
        box.answer(seq, Mailbox.DONE, {"ns": 1.0})

    channel, _, _ = mail(handle=slow)
    _, rt = channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)
    assert rt >= 0.05e9


def test_mailbox_wake_up_is_off_the_clock(mail):
    """A worker slow to wake delays the call, not its measured round trip."""
    t0 = time.monotonic()  # before the worker's thread starts counting its delay
    channel, _, _ = mail(wake_delay=0.6)
    _, rt = channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)
    assert time.monotonic() - t0 >= 0.6
    assert rt < 0.3e9, rt  # the wait for the wake-up would put it past 0.6 s


def test_mailbox_worker_that_never_wakes_times_out(mail):
    channel, _, _ = mail(serve=False)
    t0 = time.monotonic()
    with pytest.raises(WorkerTimeout, match="did not answer"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=0.2)
    assert time.monotonic() - t0 < 3


def test_mailbox_no_answer_within_the_timeout(mail):
    channel, _, mailer = mail(handle=lambda *a: None)
    with pytest.raises(WorkerTimeout, match="no answer"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=0.2)
    assert mailer.seen == [(1, "call", 0, 0)]


@pytest.mark.parametrize("offset", [-1, 1])
def test_mailbox_answer_with_a_stale_or_wrong_sequence_is_never_taken(mail, offset):
    channel, _, _ = mail(handle=lambda box, seq, op, slot, *_: box.answer(
        seq + offset, Mailbox.DONE, {"ns": 1.0}))
    with pytest.raises(WorkerTimeout, match="no answer"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=0.2)


def write_seq_halves(both: bool, pause: float):
    """A handler that writes the reply, then the reply seq's low word only, and (if
    `both`) its high word `pause` seconds later: a torn 64-bit store."""
    def handle(box, seq, op, slot, ahead, key=0):
        box.answer(0, Mailbox.DONE, {"ns": 7.0})
        halves = (ctypes.c_uint32 * 2).from_buffer(box.mm, Mailbox._REP_SEQ)
        halves[0] = seq & 0xFFFFFFFF
        if both:
            time.sleep(pause)
            halves[1] = seq >> 32
        del halves
    return handle


def test_mailbox_torn_sequence_is_taken_only_once_whole(mail):
    channel, _, _ = mail(handle=write_seq_halves(both=True, pause=0.1))
    channel.seq = 1 << 32  # the next request is number 2**32 + 1
    reply, rt = channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)
    assert reply["ns"] == 7.0 and rt >= 0.1e9


def test_mailbox_torn_sequence_is_never_taken(mail):
    channel, _, _ = mail(handle=write_seq_halves(both=False, pause=0))
    channel.seq = 1 << 32
    with pytest.raises(WorkerTimeout, match="no answer"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=0.2)


def test_mailbox_worker_dead_before_waking(mail):
    channel, _, _ = mail(FakeWorker(code=-11), serve=False)
    with pytest.raises(WorkerDied, match="SIGSEGV"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=30.0)


def test_mailbox_worker_dies_while_the_judge_waits(mail):
    worker = FakeWorker()

    def die(box, seq, op, slot, ahead, key=0):
        worker.proc.code = -11

    channel, _, _ = mail(worker, handle=die)
    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match="SIGSEGV"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=30.0)
    assert time.monotonic() - t0 < 10


def see_pipe(box, seq, op, slot, ahead=0, key=0):
    box.answer(seq, Mailbox.SEE_PIPE)


def test_mailbox_see_pipe_reads_the_error_from_the_pipe(mail):
    error = {"event": "error", "kind": "exception", "message": "boom"}
    channel, worker, _ = mail(FakeWorker([error]), handle=see_pipe)
    reply, _ = channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)
    assert reply == error
    assert worker.recv_timeouts and worker.recv_timeouts[0] >= 1.0


@pytest.mark.parametrize("message", [{"event": "done", "ns": 5.0}, {"event": "ack"},
                                     {"event": "ready"}, {"event": "loaded"}])
def test_mailbox_see_pipe_with_a_non_error_on_the_pipe_is_a_protocol_error(mail, message):
    channel, _, _ = mail(FakeWorker([message]), handle=see_pipe)
    with pytest.raises(ProtocolError, match="unexpected message on the pipe"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)


@pytest.mark.parametrize("exc", [WorkerDied(DIED), WorkerTimeout("no answer")])
def test_mailbox_see_pipe_with_nothing_on_the_pipe(mail, exc):
    channel, _, _ = mail(FakeWorker([exc]), handle=see_pipe)
    with pytest.raises(type(exc)):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)


@pytest.mark.parametrize("ns", [-1.0, math.nan, math.inf, -math.inf])
def test_mailbox_forged_time_is_a_protocol_error(mail, ns):
    channel, _, _ = mail(handle=lambda box, seq, op, slot, *_: box.answer(
        seq, Mailbox.DONE, {"ns": ns}))
    with pytest.raises(ProtocolError, match="impossible time"):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)


def test_mailbox_unknown_status_is_a_protocol_error(mail):
    channel, _, _ = mail(handle=lambda box, seq, op, slot, *_: box.answer(seq, 7, {"ns": 1.0}))
    with pytest.raises(ProtocolError):
        channel.roundtrip({"op": "call", "slot": 0}, timeout=5.0)


def test_close_unmaps_once(tmp_path):
    channel = Channel(FakeWorker(), str(tmp_path / "mailbox"), spin=0.0)
    channel.close()
    assert channel.mailbox is None
    channel.close()  # a second close is harmless


def test_no_wake_handshake_while_the_worker_still_polls(tmp_path):
    """A request soon after the worker's last answer (within most of its spin) is written
    at once, its pickup on the clock: the fresh inputs are written by then, and a worker
    that delays a wake acknowledgement must not work off the clock there. Long after (the
    worker may nap), the handshake comes first, off the clock."""
    channel = Channel(FakeWorker(), str(tmp_path / "mailbox"), spin=0.001, worker_spin=0.3)
    mailer = MailWorker(channel.mailbox_path, wake_delay=None)  # never acknowledges a wake
    try:
        channel.last_reply = time.perf_counter()  # as if the worker had just answered
        reply, _ = channel.roundtrip({"op": "rehearse", "slot": 0}, timeout=5.0)
        reply, _ = channel.roundtrip({"op": "call", "slot": 1}, timeout=5.0)  # right after
        assert reply["ns"] == 1001.0
        time.sleep(0.3)
        with pytest.raises(WorkerTimeout, match="did not answer"):
            channel.roundtrip({"op": "call", "slot": 2}, timeout=0.2)
    finally:
        mailer.join()
        channel.close()


def test_mailbox_carries_a_trace_only_where_the_worker_wrote_one(tmp_path):
    """timing.trace_calls: the worker's host account crosses the mailbox as numbers; a
    reply without one has no trace (the judge then records none)."""
    path = str(tmp_path / "mailbox")
    judge, worker = Mailbox(path, create=True), Mailbox(path)
    try:
        usage = {"vcsw": 1, "ivcsw": 2, "minflt": 3, "gc": 0, "cpu_before": 5, "cpu_after": 0}
        worker.answer(1, Mailbox.DONE, {"ns": 10.0, "trace": usage})
        assert judge.reply()["trace"] == usage
        worker.answer(2, Mailbox.DONE, {"ns": 10.0})
        assert "trace" not in judge.reply()
    finally:
        worker.close()
        judge.close()
