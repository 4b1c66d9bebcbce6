"""A batch's jobs handed to its slots in order, a multi-GPU job on as many slots at once.

Each slot (a GPU, or a CPU slot) has a thread of its own that asks `SlotQueue.next` for
work, and keeps its judge template across its jobs (a template dies with the thread that
started it). A job that needs one slot goes to the first slot that asks. A job that needs
N (a multi-GPU task: one rank per GPU) holds each slot that asks until N are held, then
runs on all of them: one of the N threads runs it, the others wait for it to end. The
jobs behind it wait too, so that a stream of one-slot jobs never starves it, and no two
jobs ever share a slot. A job that needs more slots than there are gets one: its judge
then says what it needs ("needs 8 GPUs, this run has 1").
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

Job = TypeVar("Job")


def ranks_of(task: Any, cases: Sequence[str] = ()) -> int:
    """The slots a job of `task` needs at once: a multi-GPU task's largest case's ranks
    (the `--case` cases where given), one GPU or CPU slot each; else one."""
    from harness.loading.cases import parse_case

    if not task.multi_gpu:
        return 1
    given = [int(parse_case(c).get("world_size", 1)) for c in cases]
    return max(given or task.world_sizes)


def slots_taken(need: int, have: int) -> int:
    """The slots a job runs on: what it needs, or one where there are not enough (its
    judge then says what it needs)."""
    return need if 1 <= need <= have else 1


class SlotQueue(Generic[Job]):
    """`jobs` in order for `slots` slots (numbered 0 to slots-1); `need(job)`: how many
    slots a job takes at once."""

    def __init__(self, jobs: Iterable[Job], slots: int, need: Callable[[Job], int]) -> None:
        self.slots = slots
        self._todo = deque(jobs)
        self._need = need
        self._held: list[int] = []  # slots held for the job at the head, not yet enough
        self._busy: set[int] = set()  # slots lent to another slot's running job
        self._cond = threading.Condition()

    def need(self, job: Job) -> int:
        """The slots `job` runs on: what it needs, or one where there are not enough."""
        return slots_taken(self._need(job), self.slots)

    def next(self, slot: int) -> tuple[Job, list[int]] | None:
        """The next job for `slot` and the slots it runs on (`slot` first), or None when
        no job is left. Blocks while `slot` is held for a job or lent to one."""
        with self._cond:
            while True:
                while slot in self._busy or slot in self._held:
                    self._cond.wait()
                if not self._todo:
                    return None
                job = self._todo[0]
                if self.need(job) == 1:
                    self._todo.popleft()
                    return job, [slot]
                self._held.append(slot)
                if len(self._held) < self.need(job):
                    continue  # waits above until the job runs and ends
                self._todo.popleft()
                others = [s for s in self._held if s != slot]
                self._busy.update(others)
                self._held = []
                return job, [slot, *others]

    def retire(self, slot: int) -> None:
        """`slot` asks for no more work (its thread ends early): a job held for more slots
        than are left then takes what is left, or one."""
        with self._cond:
            self.slots -= 1
            self._held = []  # the slots held ask again, for the job as it now stands
            self._cond.notify_all()

    def done(self, slots: list[int]) -> None:
        """The job that ran on `slots` (as `next` gave them) ended: the slots it held
        beside the one that ran it ask for work again."""
        with self._cond:
            self._busy.difference_update(slots[1:])
            self._cond.notify_all()
