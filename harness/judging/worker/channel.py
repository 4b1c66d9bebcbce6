"""The per-call round trip between judge and worker: a shared mailbox, or the pipe."""

from __future__ import annotations

import time

from harness.judging.sandbox.sandbox import WorkerDied, WorkerProcess, WorkerTimeout
from harness.judging.worker.protocol import Event, Mailbox, ProtocolError, decode, encode


class Channel:
    """Asks a worker to run one call (or no-op) and times the answer on the judge's clock.

    With a mailbox, requests and answers are numbers in shared memory (no system calls
    on the way); errors still come on the pipe. Without one, everything uses the pipe,
    with sequence numbers so that stray or forged frames are caught.
    """

    def __init__(self, worker: WorkerProcess, mailbox_path: str | None, spin: float,
                 worker_spin: float = 0.0) -> None:
        self.worker = worker
        self.spin = spin
        self.worker_spin = worker_spin  # how long the worker polls without napping
        self.last_reply = float("-inf")  # perf_counter when the worker last answered
        self.seq = 0
        self.mailbox_path = mailbox_path
        self.mailbox = Mailbox(mailbox_path, create=True) if mailbox_path else None

    def roundtrip(self, message: dict, timeout: float) -> tuple[dict, float]:
        """The worker's reply to `message` and the round-trip time in ns.

        With the mailbox, the judge first wakes the worker where it may be napping (its last
        answer is older than most of its `worker_spin`) and waits for it off the clock;
        otherwise it writes the request at once."""
        if self.mailbox is not None:
            return self._mail(message, timeout)
        self.seq += 1
        message = dict(message, seq=self.seq)
        t0 = time.perf_counter_ns()
        self.worker.send(message)
        reply = self.worker.recv(timeout, self.spin)
        t1 = time.perf_counter_ns()
        if reply.get("seq") != self.seq:
            raise ProtocolError("the worker answered out of turn (a reply that was not asked "
                                "for: forged or stray protocol bytes)")
        return reply, float(t1 - t0)

    def _wait(self, ready, deadline: float, spin_until: float | None, what: str,
              timeout: float) -> None:
        """Poll `ready()` until it holds; every few hundred polls, check the deadline and
        that the worker lives, and after `spin_until` (if given) sleep a little between."""
        n = 0
        while not ready():
            n += 1
            if n % 256 == 0:
                now = time.perf_counter()
                if now > deadline:
                    raise WorkerTimeout(f"{what} within {timeout:.3g} s")
                if self.worker.proc.poll() is not None:
                    raise WorkerDied(self.worker.exit_description())
                if spin_until is not None and now > spin_until:
                    time.sleep(0.0001)

    def close(self) -> None:
        """Unmap the mailbox (the worker using it is gone)."""
        if self.mailbox is not None:
            self.mailbox.close()
            self.mailbox = None

    def _mail(self, message: dict, timeout: float) -> tuple[dict, float]:
        """The same round trip through the shared mailbox (no system calls on the way)."""
        self.seq += 1
        seq, box = self.seq, self.mailbox
        now = time.perf_counter()
        spin_until, deadline = now + self.spin, now + timeout
        if now - self.last_reply > 0.8 * self.worker_spin:
            box.wake(seq)  # the worker may be asleep after a long gap: wake it off the clock
            self._wait(lambda: box.awake(seq), deadline, None, "the worker did not answer",
                       timeout)
        t0 = time.perf_counter_ns()
        box.request(seq, message["op"], message["slot"], int(message.get("ahead", 0)))
        self._wait(lambda: box.reply_seq() == seq, deadline, spin_until, "no answer", timeout)
        t1 = time.perf_counter_ns()
        self.last_reply = time.perf_counter()
        reply = box.reply()
        if reply["status"] not in (Mailbox.DONE, Mailbox.SEE_PIPE):
            raise ProtocolError(f"the worker wrote an unknown status {reply['status']} in the "
                                "mailbox: forged or stray protocol bytes")
        if reply["status"] == Mailbox.SEE_PIPE:
            reply = self.worker.recv(max(deadline - time.perf_counter(), 1.0))
            if reply.get("event") != Event.ERROR:
                raise ProtocolError("the worker sent an unexpected message on the pipe: "
                                    f"forged or stray protocol bytes ({str(reply)[:200]})")
        else:
            reply = decode(encode(reply))  # the same validation as a pipe message
        return reply, float(t1 - t0)

