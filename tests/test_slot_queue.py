"""harness/execution/slot_queue.py: a batch's jobs handed to its slots in order, a
multi-GPU job on as many slots at once, never two jobs on one slot, none starved."""

from __future__ import annotations

import threading
import time

import pytest

from harness.execution.slot_queue import SlotQueue


def _run(jobs: list[tuple[str, int]], slots: int, seconds: float = 0.03,
         quits: int | None = None) -> list[tuple[str, str, list[int], float]]:
    """Every job through `slots` threads as the local backend runs them; the events
    (start or end, job, its slots, when). `quits`: a slot whose thread ends before it
    asks for any job."""
    work = SlotQueue(jobs, slots, lambda job: job[1])
    events, lock = [], threading.Lock()

    def serve(slot: int) -> None:
        try:
            if slot == quits:
                return
            while (taken := work.next(slot)) is not None:
                job, used = taken
                with lock:
                    events.append(("start", job[0], used, time.monotonic()))
                time.sleep(seconds)
                with lock:
                    events.append(("end", job[0], used, time.monotonic()))
                work.done(used)
        finally:
            work.retire(slot)

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads), "a slot never got its answer"
    return events


def _busy_slots_never_overlap(events) -> None:
    busy: set[int] = set()
    for kind, name, used, _ in events:
        if kind == "start":
            assert not busy & set(used), f"{name} took a busy slot"
            busy |= set(used)
        else:
            busy -= set(used)


def test_a_job_of_n_ranks_runs_on_n_slots_at_once_and_none_is_shared():
    jobs = [("one", 1), ("two", 2), ("a", 1), ("b", 1), ("three", 3), ("c", 1)]
    events = _run(jobs, 3)
    starts = {name: used for kind, name, used, _ in events if kind == "start"}
    assert set(starts) == {name for name, _ in jobs}  # each job ran once
    assert [len(starts[n]) for n, _ in jobs] == [1, 2, 1, 1, 3, 1]
    assert all(len(set(used)) == len(used) for used in starts.values())
    _busy_slots_never_overlap(events)


def test_one_slot_jobs_behind_a_wide_job_wait_for_it():
    """A stream of one-slot jobs never starves a job that needs every slot: it starts
    before any job queued after it."""
    jobs = [("a", 1), ("b", 1), ("wide", 2)] + [(f"s{i}", 1) for i in range(6)]
    events = _run(jobs, 2)
    order = [name for kind, name, _, _ in events if kind == "start"]
    assert order.index("wide") < min(order.index(f"s{i}") for i in range(6))
    _busy_slots_never_overlap(events)


@pytest.mark.parametrize("need", [0, 3, 8])
def test_a_job_needing_more_slots_than_there_are_gets_one(need):
    """Its judge then says what it needs ("needs 8 GPUs, this run has 1")."""
    events = _run([("big", need), ("a", 1)], 2)
    assert [len(used) for kind, _, used, _ in events if kind == "start"] == [1, 1]


def test_a_slot_that_leaves_early_does_not_hold_up_a_wide_job():
    """A slot whose thread ends leaves the job held for it to what is left: here, too few
    slots for it, so one (its judge says what it needs)."""
    events = _run([("a", 1), ("b", 1), ("wide", 3)], 3, quits=1)
    starts = {name: used for kind, name, used, _ in events if kind == "start"}
    assert set(starts) == {"a", "b", "wide"}
    assert len(starts["wide"]) == 1 and 1 not in starts["wide"]
