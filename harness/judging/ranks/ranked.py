"""A multi-GPU task's cases judged: each case runs `world_size` ranks, each rank a judge of
its own (judge.py) with a sandboxed worker in the case's network (seat.py, network.py),
and the task's reference in the judge's own rank processes (group.py).

Each rank's judge runs in a thread of its own, the case as for one GPU. Its reference is
a `RankReference`: its requests (the inputs, the expected output, the check of an output)
meet the other ranks' at the case's `Meeting`, which asks the reference's group once for
every rank, since the reference calls collectives itself. The workers are started in
turn, then load and run the case together: a submission's collectives need every rank at
once. A case's verdict is its first failing rank's, named; on that failure every other
rank's worker is stopped, since it may wait in a collective that will never complete.
Each case has its own network, group and workers (the cases of one task may have other
world sizes). A timed case's ranks take each sampling decision together (`RankReference.
together`), each sample starting behind a barrier in the workers; rank 0's times are the
case's, as the public evaluators' rank 0 decides.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.consts import Status
from harness.judging import needs
from harness.judging.judge import Entry, Judge, score_phase
from harness.judging.measure.devices import DeviceInfo
from harness.judging.needs import TaskNeeds
from harness.judging.phases import PhaseSpec, Progress, run_cases
from harness.judging.ranks.group import RankError, RankGroup
from harness.judging.ranks.network import NetworkError, RankNetwork
from harness.judging.ranks.seat import RankSeat
from harness.loading.task_folder import Reference, Task, TaskError
from harness.results.document import CaseResult, PhaseResult
from harness.settings import Settings

GROUP_GRACE_SECONDS = 60.0
# What torch's TCP store warns of every connection in a network holding loopback alone,
# where no name resolves: the harness's doing, not the submission's, and left out of the
# output shown.
NETWORK_NOISE = "The hostname of the client socket cannot be retrieved"


class RanksApart(RuntimeError):
    """A rank's request that the other ranks will never meet: one of them failed first."""


class Meeting:
    """Where the ranks' judges meet for each request to the reference's group: each asks
    (`ask`) and waits; the last to come asks the group for all, and each takes its own
    rank's answer. A rank that fails `leave`s: the others' requests then end at once."""

    def __init__(self, group: RankGroup, world: int) -> None:
        self.group, self.world = group, world
        self.deadline = float("inf")  # set once every rank has loaded (`_together`)
        self.cond = threading.Condition()
        self.pending: dict[int, tuple[str, Any]] = {}
        self.answers: list[Any] = []
        self.turn = 0
        self.apart: str | None = None  # why the ranks cannot meet again
        self.task_error: RankError | None = None  # the reference itself failed
        self.first: tuple[int, CaseResult] | None = None  # the first rank that failed

    def ask(self, rank: int, op: str, value: Any) -> Any:
        """Rank `rank`'s answer to `op` ("generate": `value` is the case; "reference";
        "check": `value` is its output; "all": `value` is its wish, the answer whether
        every rank wished so), once every rank has asked."""
        with self.cond:
            if self.apart is not None:
                raise RanksApart(self.apart)
            self.pending[rank] = (op, value)
            if len(self.pending) == self.world:
                self._answer()
            else:
                turn = self.turn
                self.cond.wait_for(lambda: self.turn != turn or self.apart is not None,
                                   max(self.deadline - time.perf_counter(), 0.0))
                if self.turn == turn:
                    self.apart = self.apart or "the other ranks did not come in time"
                    raise RanksApart(self.apart)
            return self.answers[rank]

    def _answer(self) -> None:
        """Ask the group for every rank (the lock held: the others wait for it)."""
        ops = {op for op, _ in self.pending.values()}
        values = [self.pending[r][1] for r in range(self.world)]
        self.pending = {}
        timeout = max(self.deadline - time.perf_counter(), 1.0)
        try:
            if len(ops) != 1:
                raise RankError(0, f"the ranks asked for different things at once: {sorted(ops)}")
            (op,) = ops
            if op == "all":  # a decision every rank takes alike: yes where all say yes
                self.answers = [all(values)] * self.world
            elif op == "generate":
                self.answers = self.group.generate(values[0], timeout)
            elif op == "reference":
                self.answers = self.group.reference(timeout)
            else:
                self.answers = self.group.check(values, timeout)
        except RankError as exc:
            self.task_error, self.apart = exc, f"the reference's {exc}"
            self.cond.notify_all()
            raise RanksApart(self.apart) from exc
        self.turn += 1
        self.cond.notify_all()

    def leave(self, rank: int, result: CaseResult) -> bool:
        """Rank `rank` failed its case (`result`): True where it is the first to."""
        with self.cond:
            first = self.first is None
            if first:
                self.first = (rank, result)
            self.apart = self.apart or f"rank {rank} failed first"
            self.cond.notify_all()
            return first


@dataclass
class RankReference:
    """Rank `rank`'s view of the task's reference (as judge.py reads a `Reference`): its
    inputs, expected output and checks come from the group through the `meeting`; the
    rest (the module, its source, a case's work) from the judge's own import, `local`."""

    local: Reference
    meeting: Meeting
    rank: int

    @property
    def module(self) -> Any:
        return self.local.module

    def generate(self, case: dict[str, Any], device: str) -> Any:
        return self.meeting.ask(self.rank, "generate", dict(case))

    def reference(self, data: Any) -> Any:
        return self.meeting.ask(self.rank, "reference", None)

    def check(self, data: Any, output: Any) -> tuple[bool, str]:
        ok, message = self.meeting.ask(self.rank, "check", output)
        return bool(ok), str(message or "")

    def together(self, wants: bool) -> bool:
        """A timed case's decision (one more sample, say), taken alike by every rank: True
        where every rank `wants` it. The ranks then make the same calls, in which the
        submission's collectives meet."""
        return bool(self.meeting.ask(self.rank, "all", bool(wants)))

    def work(self, case: dict[str, Any]) -> dict[str, float] | None:
        return self.local.work(case)

    def source(self) -> str:
        return self.local.source()

    def warm(self, case: dict[str, Any], device: str) -> str | None:
        return None  # its code runs in the group, with the case


@dataclass
class RankedRun:
    """What every case of a multi-GPU evaluation shares: the task, its staged copies (the
    judge's, `judge_dir`; the workers', `worker_dir`), the judge's own import of the
    reference, the machine, the submission and the run's folder. What the ranks' workers
    said, their sandbox's report and the warnings gather here across cases."""

    task: Task
    judge_dir: Path
    worker_dir: Path
    local: Reference
    device: DeviceInfo
    settings: Settings
    entry: Entry  # the submission's file and secret; each rank gets its seat
    folder: Path
    progress: Progress = field(default_factory=Progress)
    output: dict[str, str] = field(default_factory=lambda: {"stdout": "", "stderr": ""})
    containment: Any = None
    warnings: list[str] = field(default_factory=list)
    stray_pids: list[int] = field(default_factory=list)

    def run_phase(self, spec: PhaseSpec) -> PhaseResult:
        """Every case of `spec`, each on its ranks; a timed-out case ends the phase, as for one
        GPU. The phase's time limit counts the cases' runs, not their workers' start-ups (as
        for one GPU, whose worker starts before the phases)."""
        phase = PhaseResult(spec.name, spec.seeds)
        self.progress.phase_start(spec)
        started = time.perf_counter()
        used = 0.0

        def after(result: CaseResult) -> str:
            nonlocal used
            used += result.wall_seconds - result.wall_parts.get("startup", 0.0)
            return ""

        phase.cases = run_cases(spec, self.progress, lambda index, case: judge_case(
            self, spec, index, case, spec.timeout - used), after, time.perf_counter)
        score_phase(phase, spec, self.task.ranking_by)
        phase.wall_seconds = time.perf_counter() - started
        return phase


def judge_case(run: RankedRun, spec: PhaseSpec, index: int, case: dict,
               budget: float) -> CaseResult:
    """One case on its `world_size` ranks: its network, the reference's group, a judge
    per rank; the verdict of the first rank that failed, named, else passed. `budget`:
    the seconds it may run once every rank's worker has loaded the submission."""
    world = int(case["world_size"])
    try:
        network = RankNetwork()
        network.start()
    except NetworkError as exc:
        return CaseResult(index, case, Status.CANNOT_RUN, f"{exc}: the ranks need a network "
                          "namespace of their own (run the harness as root, or with "
                          "CAP_SYS_ADMIN)")
    judges: list[Judge] = []
    group = RankGroup(run.judge_dir, world, run.device.kind, run.folder)
    try:
        try:
            group.start()
        except RankError as exc:
            raise TaskError(f"{run.task.name}: the reference's ranks: {exc}") from exc
        meeting = Meeting(group, world)
        judges = [_rank_judge(run, meeting, network.path, rank, world, budget)
                  for rank in range(world)]
        return _together(judges, meeting, spec, index, case, budget)
    except TaskError as exc:  # the reference's ranks failed: for want of what, if anything
        raise _lacking(run, exc, case) from exc
    finally:  # the judge's other children first: a judge's close kills every stray
        group.close()
        network.close()
        for rank, judge in enumerate(judges):
            judge.close()
            _gather(run, rank, judge)


def _lacking(run: RankedRun, exc: TaskError, case: dict) -> TaskError | TaskNeeds:
    """What the task's own code failing in its ranks means (as judge.task_failure reads
    it for one GPU): that this machine lacks what it needs (a GPU per rank, where it asks
    for CUDA, as the public folders' references do), else that the folder is broken."""
    text = str(exc)
    need = needs.of_failure(text, run.device.kind, run.device.capability, run.local.source(),
                            task=True)
    if need is None:
        return exc
    if need.status == Status.NEEDS_GPU and run.device.kind != "cuda":
        need = needs.rank_gpus(Status.NEEDS_GPU, int(case.get("world_size", 1)), 0,
                               "its reference asks for CUDA on every rank (CUDA tensors or "
                               "generators, one GPU per rank): run it where that many GPUs "
                               "are visible")
    first = next((line for line in text.splitlines() if line.strip()), text)
    cut = first.find(". ", 120)
    return TaskNeeds(need, first[:cut + 1] + " [...]" if cut > 0 else first)


def _rank_judge(run: RankedRun, meeting: Meeting, network: Path, rank: int, world: int,
                budget: float) -> Judge:
    backend = "nccl" if run.device.kind == "cuda" else "gloo"
    # The group's own time-out past the judge's: a rank waiting for a hung one is still
    # waiting, in the collective, when the judge looks (`hung_rank`).
    seat = RankSeat(rank, world, network, backend, run.settings.worker.start_timeout
                    + max(budget, 1.0) + GROUP_GRACE_SECONDS)
    entry = Entry(run.entry.file, run.worker_dir, run.entry.secret, seat=seat)
    return Judge(run.task, RankReference(run.local, meeting, rank), run.device, run.settings,
                 entry)


def _together(judges: list[Judge], meeting: Meeting, spec: PhaseSpec, index: int,
              case: dict, budget: float) -> CaseResult:
    """Prepare every rank's worker in turn (forks from this thread alone), then load and
    run the case on every rank at once, a thread each, the case's time counted from the
    moment every rank has loaded; the merged verdict, its start-up in its wall parts."""
    began, limit = time.perf_counter(), judges[0].settings.worker.start_timeout
    for rank, judge in enumerate(judges):
        if not judge.prepare(limit):
            return _load_failure(judge, rank, index, case)
    outcomes: list[CaseResult | BaseException | None] = [None] * len(judges)
    stacks: dict[int, str] = {}  # by rank, where one timed out
    startup: list[float] = []

    def all_loaded() -> None:  # run by one thread, once every rank has loaded
        startup.append(time.perf_counter() - began)
        meeting.deadline = time.perf_counter() + budget

    loaded = threading.Barrier(len(judges), action=all_loaded)

    def one(rank: int) -> None:
        outcome = _one_rank(judges[rank], rank, loaded, meeting, (spec, index, case), limit)
        outcomes[rank] = outcome
        if not (isinstance(outcome, CaseResult) and outcome.passed):
            loaded.abort()
            failed = outcome if isinstance(outcome, CaseResult) else CaseResult(
                index, case, Status.CRASHED, f"the judge failed: {outcome!r}")
            if meeting.leave(rank, failed):
                _stop_others(judges, rank, stacks)

    threads = [threading.Thread(target=one, args=(r,), daemon=True) for r in range(len(judges))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for rank, judge in enumerate(judges):  # a rank whose own call timed out meanwhile
        if stacks and not stacks.get(rank) and judge.stack_at_timeout:
            stacks[rank] = judge.stack_at_timeout
    result = _merged(outcomes, meeting, index, case, hung_rank(stacks))
    if startup:
        result.wall_parts = {"startup": startup[0], **result.wall_parts}
    return result


def _one_rank(judge: Judge, rank: int, loaded: threading.Barrier, meeting: Meeting,
              at: tuple[PhaseSpec, int, dict], limit: float) -> CaseResult | BaseException:
    """One rank's part of case `at` (its phase, index and case): load the submission,
    wait until every rank has, run the case."""
    spec, index, case = at
    try:
        if not judge.load(limit):
            return _load_failure(judge, rank, index, case)
        try:
            loaded.wait(limit)
        except threading.BrokenBarrierError:
            return CaseResult(index, case, Status.CRASHED, "another rank did not load")
        return judge.run_case(spec, index, case, meeting.deadline)
    except TaskError as exc:
        return _apart(exc, index, case)
    except BaseException as exc:  # noqa: BLE001 - taken up once every rank is done
        return exc


def _apart(exc: TaskError, index: int, case: dict) -> CaseResult | TaskError:
    """A rank's request to the reference that the others never met (judge.py reads it as
    the task's code failing): the case's verdict, not the task's; any other `exc` as is."""
    cause = exc.__cause__
    if not isinstance(cause, RanksApart):
        return exc
    status = Status.TIMED_OUT if "in time" in str(cause) else Status.CRASHED
    return CaseResult(index, case, status, str(cause))


def _load_failure(judge: Judge, rank: int, index: int, case: dict) -> CaseResult:
    error = judge.load_error or {}
    title, message = error.get("title", ""), error.get("message", "")
    return CaseResult(index, case, error.get("status", Status.CRASHED),
                      f"rank {rank}: {title}" + (f"\n{message}" if message else ""))


def _stop_others(judges: list[Judge], rank: int, stacks: dict[int, str]) -> None:
    """Kill every other rank's worker: it may wait for `rank` in a collective. Its judge
    then sees its worker gone and ends its case. Where `rank` timed out, every one's stacks
    first, into `stacks`, all asked for at once (each dump waits for its worker to finish
    writing): the hung rank is the one not waiting in a collective."""
    timed_out = judges[rank].stack_at_timeout or None
    workers = {other: judge.worker for other, judge in enumerate(judges)
               if other != rank and judge.worker is not None and judge.worker.pid is not None}
    if timed_out is not None:
        stacks[rank] = timed_out
        with ThreadPoolExecutor(max_workers=max(len(workers), 1)) as pool:
            dumps = {other: pool.submit(worker.dump_stack) for other, worker in workers.items()}
        stacks.update((other, dump.result()) for other, dump in dumps.items())
    for worker in workers.values():
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def hung_rank(stacks: dict[int, str]) -> int | None:
    """The rank whose dumped stacks are not inside torch.distributed, where exactly one's
    are not: the others wait for it in a collective. None where that does not tell."""
    outside = [r for r, text in sorted(stacks.items())
               if text.strip() and "torch/distributed" not in text]
    return outside[0] if len(outside) == 1 else None


def _merged(outcomes: list, meeting: Meeting, index: int, case: dict,
            hung: int | None) -> CaseResult:
    """The case's verdict: the reference's failure (the task's), else the first failing
    rank's, named (a time-out names the rank that hung, `hung`, where its stacks tell),
    else rank 0's pass."""
    if meeting.task_error is not None:
        raise TaskError(f"the reference failed on case {case}: {meeting.task_error}")
    if meeting.first is not None:
        rank, result = meeting.first
        if isinstance(outcomes[rank], BaseException):
            raise outcomes[rank]
        if result.status == Status.TIMED_OUT and hung is not None:
            result.message = (f"rank {hung}: timed out: its call never returned while the "
                              "other ranks waited for it in a collective; every rank's "
                              "worker was killed")
        elif result.status == Status.TIMED_OUT:  # the others wait for a hung rank: all end so
            result.message = (f"every rank ran past the time allowed (rank {rank} first; "
                              f"their stacks do not tell which hung): {result.message}")
        elif not result.message.startswith(f"rank {rank}:"):
            result.message = f"rank {rank}: {result.message}".rstrip()
        return result
    return outcomes[0]


def _gather(run: RankedRun, rank: int, judge: Judge) -> None:
    """What a rank's judge learned, into the run: its worker's output (each line led by
    its rank, less the group's own noise: `NETWORK_NOISE`), its sandbox's report (the
    first rank's), its warnings and strays."""
    for stream in ("stdout", "stderr"):
        text = judge.worker_output.get(stream, "")
        run.output[stream] += "".join(f"[rank {rank}] {line}\n" for line in text.splitlines()
                                      if NETWORK_NOISE not in line)
    if run.containment is None:
        run.containment = judge.containment
    run.warnings += [w for w in judge.warnings if w not in run.warnings]
    run.stray_pids += judge.stray_pids
