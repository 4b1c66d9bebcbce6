"""harness/judging/worker/protocol.py: worker messages (encode/decode) and the shared Mailbox.

Everything a worker writes is untrusted: decode must turn every forged or torn frame into
a ProtocolError (the judge's "rejected" verdict), never accept it and never let another
exception escape into the judge. The Mailbox tests play both sides on one file.
"""

from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path

import pytest

from harness.judging.worker.protocol import (
    ERROR_KINDS,
    Event,
    Mailbox,
    ProtocolError,
    decode,
    encode,
)

DONE = {"event": "done", "ns": 1234.5, "seq": 7}


def raw(text: str) -> bytes:
    return text.encode()


# -- encode / decode -------------------------------------------------------------------

def test_encode_is_compact_json_bytes():
    out = encode({"event": Event.DONE, "ns": 1.5})
    assert out == b'{"event":"done","ns":1.5}'


def test_encode_writes_unknown_types_as_strings():
    assert json.loads(encode({"event": "error", "path": Path("/tmp/x")}))["path"] == "/tmp/x"


@pytest.mark.parametrize("message", [
    {"event": "ready", "torch": "2.5", "python": "3.11"},
    {"event": "loaded"},
    {"event": "ack"},
    DONE,
    {"event": "done", "ns": 0},
    {"event": "error", "kind": "exception", "message": "boom"},
])
def test_round_trip(message):
    assert decode(encode(message)) == message


@pytest.mark.parametrize("junk", [
    b"", b" ", b"\x80\xff\xfe", b"\x00" * 8, b"not json", b"{'event': 'done'}",
    b'{"event": "done", "ns": 1,}', b'{"event": "done"} trailing',
])
def test_unreadable_bytes_are_rejected(junk):
    with pytest.raises(ProtocolError, match="unreadable message"):
        decode(junk)


def test_every_truncation_of_a_frame_is_rejected():
    frame = encode({"event": "error", "kind": "exception", "message": "a \u00e9 b"})
    for cut in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode(frame[:cut])


@pytest.mark.parametrize("text", [
    "[]", '["event", "done"]', '"done"', "1", "null", "true",
    '{"ns": 1}', '{"event": null}', '{"event": 1}', '{"event": ["done"]}',
    '{"Event": "done"}', "{}",
])
def test_a_message_without_an_event_is_rejected(text):
    with pytest.raises(ProtocolError, match="without an event"):
        decode(raw(text))


@pytest.mark.parametrize("ns", [
    "-1", "-1e-9", "NaN", "Infinity", "-Infinity", "1e400", '"100"', "null", "[1]", "{}",
])
def test_done_with_an_impossible_time_is_rejected(ns):
    with pytest.raises(ProtocolError, match="impossible time"):
        decode(raw(f'{{"event": "done", "ns": {ns}}}'))


def test_done_without_a_time_is_rejected():
    with pytest.raises(ProtocolError, match="impossible time"):
        decode(raw('{"event": "done"}'))


@pytest.mark.parametrize("ns", ["0", "0.0", "12", "1.5e9", "-0.0"])
def test_done_with_a_possible_time_is_accepted(ns):
    assert decode(raw(f'{{"event": "done", "ns": {ns}}}'))["ns"] == float(ns)


def test_done_with_a_number_too_long_to_read_is_rejected():
    # Python refuses to read ints of more than 4300 digits (a ValueError).
    with pytest.raises(ProtocolError, match="unreadable"):
        decode(raw('{"event": "done", "ns": ' + "1" * 5000 + "}"))


def test_done_with_a_huge_integer_time_is_rejected():
    with pytest.raises(ProtocolError):
        decode(raw('{"event": "done", "ns": ' + "9" * 400 + "}"))


def test_done_with_a_boolean_time_is_rejected():
    with pytest.raises(ProtocolError):
        decode(raw('{"event": "done", "ns": true}'))


@pytest.mark.parametrize("kind", sorted(ERROR_KINDS))
def test_every_known_error_kind_is_accepted(kind):
    assert decode(encode({"event": "error", "kind": kind}))["kind"] == kind


@pytest.mark.parametrize("kind", ['"segfault"', '""', '"EXCEPTION"', "null", "1", "true"])
def test_error_with_an_unknown_kind_is_rejected(kind):
    with pytest.raises(ProtocolError, match="unknown error kind"):
        decode(raw(f'{{"event": "error", "kind": {kind}, "message": "x"}}'))


def test_error_without_a_kind_is_rejected():
    with pytest.raises(ProtocolError, match="unknown error kind"):
        decode(raw('{"event": "error", "message": "x"}'))


@pytest.mark.parametrize("kind", ["[]", "{}"])
def test_error_with_an_unhashable_kind_is_rejected(kind):
    with pytest.raises(ProtocolError):
        decode(raw(f'{{"event": "error", "kind": {kind}}}'))


def test_deeply_nested_frame_is_rejected():
    with pytest.raises(ProtocolError):
        decode(b"[" * 100_000)


def test_huge_frames():
    """decode has no size limit of its own (the pipe's 1 MiB is the limit): a large valid
    message is read whole, a large junk one is rejected with its size."""
    message = {"event": "error", "kind": "exception", "message": "x" * (1 << 20)}
    assert decode(encode(message))["message"] == message["message"]
    with pytest.raises(ProtocolError, match=r"\(1048576 bytes\)"):
        decode(b"x" * (1 << 20))


# -- Mailbox ---------------------------------------------------------------------------

@pytest.fixture
def boxes(tmp_path):
    """(judge side, worker side): two maps of one mailbox file."""
    path = str(tmp_path / "mailbox")
    judge = Mailbox(path, create=True)
    worker = Mailbox(path)
    yield judge, worker
    worker.close()
    judge.close()


def test_a_new_mailbox_is_zeroed(tmp_path, boxes):
    judge, worker = boxes
    assert (tmp_path / "mailbox").read_bytes() == b"\0" * Mailbox.SIZE
    assert judge.reply_seq() == 0 and worker.pending(0) is None
    assert not worker.wake_pending() and judge.awake(0)


def test_request_pending_answer_reply_round_trip(boxes):
    judge, worker = boxes
    judge.request(1, "call", 3)
    assert worker.pending(0) == (1, "call", 3, 0)
    assert judge.reply_seq() == 0  # nothing answered yet
    worker.answer(1, Mailbox.DONE, {"ns": 1500.0, "busy_ns": 1.0, "host_ns": 2.0,
                                    "sync_ns": 3.0, "copy_ns": 4.0, "threads": 2,
                                    "pre_ns": 5.0, "lead_ns": 6.0, "ignored": 9.0})
    assert judge.reply_seq() == 1
    assert judge.reply() == {"status": Mailbox.DONE, "event": Event.DONE, "ns": 1500.0,
                             "busy_ns": 1.0, "host_ns": 2.0, "sync_ns": 3.0, "copy_ns": 4.0,
                             "threads": 2.0, "pre_ns": 5.0, "lead_ns": 6.0}


def test_pending_sees_each_request_once(boxes):
    judge, worker = boxes
    judge.request(1, "noop", 0)
    assert worker.pending(0) == (1, "noop", 0, 0)
    assert worker.pending(1) is None
    judge.request(2, "call", 5)
    assert worker.pending(1) == (2, "call", 5, 0)


def test_reply_is_what_the_judge_validates(boxes):
    """reply() reads like a pipe DONE message and passes decode; zeros without details."""
    judge, worker = boxes
    worker.answer(4, Mailbox.DONE)
    reply = judge.reply()
    assert set(reply) == {"status", "event", "ns", *Mailbox.BREAKDOWN}
    assert decode(encode(reply)) == {"status": 0, "event": "done", "ns": 0.0, "busy_ns": 0.0,
                                     "host_ns": 0.0, "sync_ns": 0.0, "copy_ns": 0.0,
                                     "threads": 0.0, "pre_ns": 0.0, "lead_ns": 0.0}


@pytest.mark.parametrize("ns", [-1.0, math.nan, math.inf])
def test_forged_times_in_the_mailbox_fail_validation(boxes, ns):
    judge, worker = boxes
    worker.answer(1, Mailbox.DONE, {"ns": ns})
    with pytest.raises(ProtocolError, match="impossible time"):
        decode(encode(judge.reply()))


def test_status_is_signed_and_see_pipe_is_kept(boxes):
    judge, worker = boxes
    worker.answer(1, -1)
    assert judge.reply()["status"] == -1
    worker.answer(2, Mailbox.SEE_PIPE)
    assert judge.reply()["status"] == Mailbox.SEE_PIPE and judge.reply_seq() == 2


def test_sequence_numbers_use_all_64_bits(boxes):
    judge, worker = boxes
    seq = (1 << 64) - 1
    judge.request(seq, "call", 1)
    assert worker.pending(0) == (seq, "call", 1, 0)
    worker.answer(seq, Mailbox.DONE)
    assert judge.reply_seq() == seq


def test_an_old_answer_is_not_the_answer_to_a_new_request(boxes):
    judge, worker = boxes
    judge.request(1, "call", 0)
    worker.answer(1, Mailbox.DONE, {"ns": 5.0})
    judge.request(2, "call", 0)
    assert judge.reply_seq() == 1  # still the last answer's number, never 2
    worker.answer(2, Mailbox.DONE, {"ns": 6.0})
    assert judge.reply_seq() == 2 and judge.reply()["ns"] == 6.0


def test_a_torn_sequence_number_reads_as_neither_old_nor_new(boxes):
    """Half of a 64-bit seq written (low word only) never equals the number asked for."""
    judge, worker = boxes
    seq = (1 << 32) + 1
    low = ctypes.c_uint32.from_buffer(worker.mm, Mailbox._REP_SEQ)
    low.value = seq & 0xFFFFFFFF
    assert judge.reply_seq() not in (0, seq)
    del low


class Recording(Mailbox):
    """A Mailbox that records the offsets it writes, in order."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.writes: list[int] = []

    def _put(self, fmt, offset, value) -> None:
        self.writes.append(offset)
        super()._put(fmt, offset, value)


def test_sequence_numbers_are_published_last(tmp_path):
    """The judge bumps the request seq after op, slot and window; the worker bumps the
    reply after every reply field: a poller never sees a new number with old fields."""
    box = Recording(str(tmp_path / "mailbox"), create=True)
    box.request(1, "call", 2)
    assert box.writes == [Mailbox._REQ_OP, Mailbox._REQ_SLOT, Mailbox._REQ_AHEAD,
                          Mailbox._REQ_SEQ]
    box.writes.clear()
    box.answer(1, Mailbox.DONE, {"ns": 1.0})
    fields = {Mailbox._REP_STATUS, Mailbox._REP_NS, *Mailbox.BREAKDOWN.values(),
              *Mailbox.FLAGS.values(), Mailbox._TRACED}
    assert set(box.writes[:-1]) == fields and box.writes[-1] == Mailbox._REP_SEQ
    box.writes.clear()
    box.answer(2, Mailbox.DONE, {"ns": 1.0, "trace": {"vcsw": 1}})
    assert set(box.writes[:-1]) == fields | set(Mailbox.TRACE.values())
    assert box.writes[-1] == Mailbox._REP_SEQ
    box.close()


def test_wake_and_awake(boxes):
    judge, worker = boxes
    judge.wake(3)
    assert not judge.awake(3)
    assert worker.wake_pending()
    assert judge.awake(3)
    assert not worker.wake_pending()  # acknowledged once
    judge.wake(4)
    assert not judge.awake(4) and worker.wake_pending() and judge.awake(4)


def test_close_with_a_view_still_alive(tmp_path):
    box = Mailbox(str(tmp_path / "mailbox"), create=True)
    box.request(1, "call", 0)
    view = ctypes.c_uint64.from_buffer(box.mm, 0)
    box.close()  # the unmap waits, but close does not raise
    assert view.value == 1
    del view


def test_the_hidden_window_travels_with_the_request(boxes):
    judge, worker = boxes
    judge.request(1, "call", 2, ahead=39_600_000)  # 20 ms of GPU sleep at 1980 MHz
    assert worker.pending(0) == (1, "call", 2, 39_600_000)


def test_what_a_sample_lacked_crosses_the_mailbox_only_where_set(boxes):
    """The worker's `unwarmed` (no memory for the warm-up fill) reaches the judge through
    the mailbox as through the pipe: present and true where set, absent otherwise."""
    judge, worker = boxes
    worker.answer(1, Mailbox.DONE, {"ns": 5.0, "unwarmed": True})
    assert judge.reply()["unwarmed"] is True
    worker.answer(2, Mailbox.DONE, {"ns": 5.0})
    assert "unwarmed" not in judge.reply()


def test_the_mailbox_fields_fit_and_do_not_overlap():
    """Every field of the mailbox (8 bytes, 4 for op and slot) lies inside SIZE, apart."""
    wide = [Mailbox._REQ_SEQ, Mailbox._REP_SEQ, Mailbox._REP_STATUS, Mailbox._REP_NS,
            Mailbox._REQ_AHEAD, Mailbox._WAKE_REQ, Mailbox._WAKE_ACK,
            *Mailbox.BREAKDOWN.values(), *Mailbox.FLAGS.values()]
    spans = sorted([(o, o + 8) for o in wide] + [(Mailbox._REQ_OP, Mailbox._REQ_OP + 4),
                                                  (Mailbox._REQ_SLOT, Mailbox._REQ_SLOT + 4)])
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert spans[-1][1] <= Mailbox.SIZE and all(o % 4 == 0 for o, _ in spans)
