"""Messages between judge and worker.

Judge to worker: pickled dicts (tensors travel as CUDA IPC handles or shared-memory file
names). Worker to judge: JSON only, because the judge must never unpickle what untrusted
code could have written.
"""

from __future__ import annotations

import json
import math
from enum import StrEnum
from typing import Any


class Event(StrEnum):
    """What a worker message says happened (never a verdict: see harness.consts.Status)."""

    READY = "ready"
    LOADED = "loaded"
    DONE = "done"
    ERROR = "error"
    ACK = "ack"
    PROFILE = "profile"  # --mode profile: a summary of profiled calls (harness.judging.profile.profiling)


# The kinds of error a worker reports.
ERROR_KINDS = {
    "syntax_error", "import_error", "missing_entry", "exception", "wrong_output",
    "cuda_error", "compile_error", "needs_gpu", "out_of_memory", "load_error", "protocol",
    "output_layout", "group",
}


class ProtocolError(ValueError):
    """A worker message that is not well-formed."""


def encode(message: dict[str, Any]) -> bytes:
    """The bytes a worker sends."""
    return json.dumps(message, separators=(",", ":"), default=str).encode()


def decode(raw: bytes) -> dict[str, Any]:
    """Parse and validate a worker message without trusting it."""
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # deep nesting too
        raise ProtocolError(f"unreadable message from the worker ({len(raw)} bytes)") from exc
    if not isinstance(message, dict) or not isinstance(message.get("event"), str):
        raise ProtocolError("a worker message without an event")
    if message["event"] == Event.DONE:
        ns = message.get("ns")
        if not _is_time(ns):
            raise ProtocolError(f"the worker reported an impossible time: {str(ns)[:80]}")
    kind = message.get("kind")
    if message["event"] == Event.ERROR and not (isinstance(kind, str) and kind in ERROR_KINDS):
        raise ProtocolError(f"the worker reported an unknown error kind {str(kind)[:80]!r}")
    return message


def _is_time(ns: Any) -> bool:
    """A finite, non-negative number of nanoseconds (a bool is no time; a huge integer,
    which float() cannot hold, is none either)."""
    if isinstance(ns, bool) or not isinstance(ns, (int, float)):
        return False
    try:
        return math.isfinite(ns) and ns >= 0
    except OverflowError:
        return False


class Mailbox:
    """A few shared bytes for the per-call round trip, polled instead of sent.

    Pipe messages cost system calls and wake-ups (tens of microseconds on some
    machines); a call needs only "run op on slot n" and "done in t ns". The judge writes
    the request and then bumps its sequence number; the worker polls it, answers in the
    reply fields and then bumps its own. Only numbers cross here, read with struct: the
    judge still trusts nothing the worker writes. Errors travel on the pipe.
    """

    SIZE = 192
    _REQ_SEQ, _REQ_OP, _REQ_SLOT, _REP_SEQ, _REP_STATUS, _REP_NS = 0, 8, 12, 16, 24, 32
    _REQ_AHEAD = 88  # GPU sleep (cycles) before the start event: the hidden launch window
    # The worker's own breakdown of a call (diagnostics, never trusted).
    BREAKDOWN = {"busy_ns": 40, "host_ns": 48, "sync_ns": 56, "copy_ns": 64, "threads": 96,
                 "pre_ns": 128, "lead_ns": 136}
    # What a sample lacked (the warm-up's memory): in a reply only where set.
    FLAGS = {"unwarmed": 112}
    # The worker's per-sample account of its host (worker._ThreadUsage), where the judge
    # asked for a trace: in a reply only where the worker wrote one (TRACED set).
    TRACE = {"vcsw": 144, "ivcsw": 152, "minflt": 160, "gc": 168, "cpu_before": 176,
             "cpu_after": 184}
    _TRACED = 104
    # Before starting its clock the judge makes sure the worker is polling, not asleep.
    _WAKE_REQ, _WAKE_ACK = 72, 80
    OPS = {"call": 1, "noop": 2, "rehearse": 3}
    DONE, SEE_PIPE = 0, 1

    def __init__(self, path: str, create: bool = False) -> None:
        import mmap
        import os

        if create:
            with open(path, "wb") as fh:
                fh.write(b"\0" * self.SIZE)
        fd = os.open(path, os.O_RDWR)
        try:
            self.mm = mmap.mmap(fd, self.SIZE)
        finally:
            os.close(fd)
        self.path = path
        self._fields: dict = {}

    _TYPES = {"<Q": "c_uint64", "<q": "c_int64", "<i": "c_int32", "<d": "c_double"}

    def _field(self, fmt: str, offset: int):
        """A ctypes view of one aligned field: loads and stores of it are single machine
        accesses, never torn (struct.pack_into zeroes a field before writing it)."""
        import ctypes

        key = (fmt, offset)
        field = self._fields.get(key)
        if field is None:
            field = getattr(ctypes, self._TYPES[fmt]).from_buffer(self.mm, offset)
            self._fields[key] = field
        return field

    def _get(self, fmt: str, offset: int):
        return self._field(fmt, offset).value

    def _put(self, fmt: str, offset: int, value) -> None:
        self._field(fmt, offset).value = value

    # judge side
    def request(self, seq: int, op: str, slot: int, ahead: int = 0) -> None:
        self._put("<i", self._REQ_OP, self.OPS[op])
        self._put("<i", self._REQ_SLOT, slot)
        self._put("<Q", self._REQ_AHEAD, ahead)
        self._put("<Q", self._REQ_SEQ, seq)

    def wake(self, n: int) -> None:
        self._put("<Q", self._WAKE_REQ, n)

    def awake(self, n: int) -> bool:
        return self._get("<Q", self._WAKE_ACK) == n

    def reply_seq(self) -> int:
        return self._get("<Q", self._REP_SEQ)

    def reply(self) -> dict:
        """The last answer, as the worker would have sent it on the pipe."""
        out = {"status": self._get("<q", self._REP_STATUS), "event": Event.DONE,
               "ns": self._get("<d", self._REP_NS)}
        for key, offset in self.BREAKDOWN.items():
            out[key] = self._get("<d", offset)
        for key, offset in self.FLAGS.items():
            if self._get("<d", offset):
                out[key] = True
        if self._get("<d", self._TRACED):
            out["trace"] = {key: int(self._get("<d", offset))
                            for key, offset in self.TRACE.items()}
        return out

    # worker side
    def wake_pending(self) -> bool:
        """True (once acknowledged) when the judge asked the worker to poll hard."""
        req = self._get("<Q", self._WAKE_REQ)
        if req == self._get("<Q", self._WAKE_ACK):
            return False
        self._put("<Q", self._WAKE_ACK, req)
        return True

    def pending(self, last: int) -> tuple[int, str, int, int] | None:
        """A new request: (sequence number, op, first slot, GPU sleep cycles)."""
        seq = self._get("<Q", self._REQ_SEQ)
        if seq == last:
            return None
        op = {v: k for k, v in self.OPS.items()}.get(self._get("<i", self._REQ_OP), "unknown")
        return seq, op, self._get("<i", self._REQ_SLOT), self._get("<Q", self._REQ_AHEAD)

    def answer(self, seq: int, status: int, reply: dict | None = None) -> None:
        reply = reply or {}
        self._put("<q", self._REP_STATUS, status)
        self._put("<d", self._REP_NS, float(reply.get("ns", 0.0)))
        for key, offset in self.BREAKDOWN.items():
            self._put("<d", offset, float(reply.get(key, 0.0)))
        for key, offset in self.FLAGS.items():
            self._put("<d", offset, 1.0 if reply.get(key) else 0.0)
        trace = reply.get("trace") or {}
        for key, offset in self.TRACE.items() if trace else ():
            self._put("<d", offset, float(trace.get(key, 0)))
        self._put("<d", self._TRACED, 1.0 if trace else 0.0)
        self._put("<Q", self._REP_SEQ, seq)

    def close(self) -> None:
        self._fields.clear()
        try:
            self.mm.close()
        except BufferError:  # a field view still alive somewhere: the unmap waits for exit
            pass
