"""A job that needs several slots of one `serve`/`worker` process at once: a multi-GPU
task's, one rank per GPU (or per CPU slot).

Each slot's thread claims jobs from the database's queue one at a time (slots.py). The
slot that claims a job needing N slots gathers N-1 of its process's other slots: each of
them, before it claims another job, lends itself instead (`lend_while_wanted`), an idle
one within a poll, a busy one as its job ends, and waits until the job is over. The job
then runs on all N, their GPUs visible to its judge, and no other job runs on any of them
meanwhile; nor do the jobs queued behind it overtake it on these slots, so a stream of
one-slot jobs never starves it. One job gathers at a time: a slot that claims a second
such job meanwhile gives it back to the queue (it is claimed again later) and lends
itself to the first. Slots of other processes (other machines) are never gathered: a
job runs on one machine.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.server.slots import Slot

_WAIT_S = 0.5  # how often a waiting slot looks at its stop event


class Gang:
    """The slots of one process, lent to the one job that gathers some of them."""

    def __init__(self, slots: list[Slot]) -> None:
        self.size = len(slots)
        self._by_name = {s.name: s for s in slots}
        self._cond = threading.Condition()
        self._gatherer: str | None = None
        self._wanted = 0
        self._lent: list[str] = []

    def lend_while_wanted(self, slot: Slot, stopping: threading.Event) -> None:
        """Before `slot` claims a job: while a job gathers slots and still wants one (or
        holds this one), lend it and wait."""
        with self._cond:
            while not stopping.is_set() and self._wants(slot.name):
                if slot.name not in self._lent:
                    self._lent.append(slot.name)
                    self._cond.notify_all()
                self._cond.wait(_WAIT_S)

    def gather(self, slot: Slot, others: int, stopping: threading.Event) -> list[Slot] | None:
        """`others` more slots for the job `slot` claimed, once they are lent to it; None
        where another job is gathering, or this process stops first (the caller gives
        the job back). Call `release` once the job is over."""
        with self._cond:
            if self._gatherer is not None:
                return None
            self._gatherer, self._wanted, self._lent = slot.name, others, []
            self._cond.notify_all()
            while len(self._lent) < others and not stopping.is_set():
                self._cond.wait(_WAIT_S)
            if len(self._lent) < others:
                self._reset()
                return None
            return [self._by_name[name] for name in self._lent]

    def release(self) -> None:
        """The gathering job is over: its lent slots claim jobs again."""
        with self._cond:
            self._reset()

    def _wants(self, name: str) -> bool:
        return (self._gatherer is not None and self._gatherer != name
                and (name in self._lent or len(self._lent) < self._wanted))

    def _reset(self) -> None:
        self._gatherer, self._wanted, self._lent = None, 0, []
        self._cond.notify_all()
