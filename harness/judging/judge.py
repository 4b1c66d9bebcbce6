"""The judge: owns seeds, inputs, references and verdicts; drives one worker at a time.

For each case: generate the input, compute the reference, share input slots and output
buffers with the worker once, then per call fill a slot with fresh values, flush the
caches, send the slot number, wait (with a deadline) for the worker's report, and check
the output against the judge's own pristine copy of the input.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.consts import Status
from harness.judging import needs
from harness.judging.checking import all_finite
from harness.judging.measure.devices import DeviceInfo, Flusher
from harness.judging.measure.gpu_share import ShareWatch
from harness.judging.measure.integrity import (
    Calibration,
    clock_note,
)
from harness.judging.measure.sampling import CaseRun, Sampling
from harness.judging.measure.timing import (
    SPIN_SECONDS,
    Laps,
)
from harness.judging.needs import TaskNeeds
from harness.judging.phases import PhaseSpec, Progress, run_cases
from harness.judging.ranks.seat import RankSeat
from harness.judging.sandbox.memory_cap import gb_to_bytes
from harness.judging.sandbox.sandbox import (
    WorkerDied,
    WorkerProcess,
    WorkerTimeout,
    become_subreaper,
)
from harness.judging.seeds import SeedPlan
from harness.judging.startup.compile_cache import CompileCache
from harness.judging.startup.head_start import shm_folder
from harness.judging.verdicts import (
    FATAL,
    STATUS_BY_KIND,
    CaseFailure,
    Where,
    compile_reason,
    load_error_verdict,
    out_of_memory,
    worker_start_verdict,
)
from harness.judging.worker.buffers import CaseBuffers, OutputLayout
from harness.judging.worker.channel import Channel
from harness.judging.worker.cuda_vmm import CudaVmmError
from harness.judging.worker.protocol import Event, ProtocolError
from harness.judging.worker.sharing import SharedAllocator, object_modules
from harness.judging.worker.structure import (
    clone,
    describe,
    fill_slot,
    layout_template,
    make_slot,
    nbytes,
)
from harness.loading.task_folder import Reference, Task, TaskError
from harness.results.document import CaseResult, PhaseResult
from harness.scores import combine
from harness.settings import Settings

# Input slots a case shares at least, used in turn: consecutive samples never read the
# same buffer (a rehearsal needs two samples' worth, `_run_case`).
RING_SLOTS = 2
# GPU runs: the judge runs the task's code once on the first case while the worker starts,
# so its one-off costs (imports: seconds for a reference that turns on deterministic
# algorithms) overlap the start. Not on the CPU, where a first case can cost more.
WARM_REFERENCE = True
# Per-call requests through the shared mailbox (polled) or the pipe, by device. GPU: the
# judge's per-sample overhead is 150 µs with it against 273 µs without on vectoradd (H200);
# CPU: a polling worker would take one of the few cores the submission's kernels need.
MAILBOX = {"cuda": True, "cpu": False}
# A case that ends with the SM clock below this share of its maximum gets a throttling warning.
THROTTLE_RATIO = 0.9
# Fresh workers an evaluation starts after crashes or CUDA faults; past them the remaining
# cases are skipped (a submission that always crashes is not retried for ever).
MAX_RESTARTS = 3


@dataclass
class Entry:
    """The submission as the judge runs it, and what its first worker starts with."""

    file: Path  # as the user named it: messages name it
    staging: Path  # the worker's staged task folder, the submission in it
    secret: bytes | None = None  # the leaderboard's: the secret phases' seeds
    # a worker already starting (head_start.py) with `staging` and `shm_root` in its
    # sandbox's rules: the first `Judge.start` uses it instead of a new one
    started: WorkerProcess | None = None
    shm_root: Path | None = None  # the run's shared-memory folder (None: a new one)
    # the submission's compiler-cache folder (compile_cache.py), held by the caller, for
    # the workers the judge starts
    compile_cache: CompileCache | None = None
    # the rank this judge's worker runs of a multi-GPU case (ranks/seat.py): it joins the
    # ranks' group before the import; a worker of a group is never started again alone
    seat: RankSeat | None = None


def score_phase(phase: PhaseResult, spec: PhaseSpec, ranking_by: str) -> None:
    """A timed phase's score, its cases' combined as the task ranks them, where every
    case passed with a score (one GPU's phases and a multi-GPU task's alike)."""
    scores = [c.score_ns for c in phase.cases]
    if spec.timed and phase.passed and all(s is not None for s in scores):
        phase.score_ns = combine(scores, ranking_by)


class Judge:
    """Runs phases of cases against a worker that holds the submission (the samples
    themselves: `Sampling`, which reads the judge through `SamplingHost`)."""

    def __init__(self, task: Task, reference: Reference, device: DeviceInfo,
                 settings: Settings, entry: Entry, progress: Progress | None = None) -> None:
        self.task, self.ref, self.device, self.settings = task, reference, device, settings
        self.submission, self.staging, self.secret = entry.file, entry.staging, entry.secret
        self.progress = progress or Progress()
        self.clock = time.perf_counter
        self.worker: WorkerProcess | None = None
        self.channel: Channel | None = None
        self.restarts = 0
        self.base_calibration: Calibration | None = None
        self.load_error: dict[str, Any] | None = None
        self.memory_cap: int | None = None  # the CPU worker's RLIMIT_AS (memory_cap.py)
        self.cpu_heap: int | None = None  # the CPU worker's heap touched up front (cpu_heap.py)
        self.flusher = Flusher(device)
        self.shm_root = entry.shm_root or shm_folder()
        self._started = entry.started
        self.modules_sent: set[str] = set()  # task modules the current worker holds
        self.compile_cache = entry.compile_cache
        self.seat = entry.seat
        self.stack_at_timeout = ""  # a rank's worker's stacks as its call timed out
        self.worker_output = {"stdout": "", "stderr": ""}
        # What the worker printed once the secret phases began, kept apart: organisers see it,
        # the submitter does not (harness/results/disclosure.py). The mark is the worker then
        # running and its output's sizes at that moment; a worker started later is all secret.
        self.secret_output = {"stdout": "", "stderr": ""}
        self.secret_mark: tuple[Any, tuple[int, int]] | None = None
        self.warnings: list[str] = []
        self.stray_pids: list[int] = []
        self.containment = None  # the sandbox's report (harness.judging.sandbox.landlock.Report)
        self.sampling = Sampling(self)
        self.gpu_watch = ShareWatch.for_device(device.kind, device.uuid)  # other GPU processes
        become_subreaper()
        if device.kind == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False

    # -- worker lifecycle -------------------------------------------------------------
    def start(self, timeout: float, warm_case: dict | None = None,
              died: str | None = None) -> bool:
        """Start a worker and load the submission; False (with `load_error`) if it fails.

        On a GPU run (`WARM_REFERENCE`), the judge runs the task's own code on
        `warm_case` while the worker starts, so that its one-off costs overlap the
        worker's start-up instead of adding to the first case. A worker that cannot start,
        or ends before the submission is loaded, is the harness's side (`worker_start`); one
        killed from outside while it loads the submission is started once more (`died`:
        how the first one ended)."""
        return self.prepare(timeout, warm_case) and self._load(self.worker, timeout, died)

    def prepare(self, timeout: float, warm_case: dict | None = None) -> bool:
        """`start` up to the submission's import: a worker started and ready; False (with
        `load_error`) where it failed. A multi-GPU case's ranks are prepared in turn, then
        loaded together (`load`): each joins the others before its import."""
        w = self._started_worker()
        if w is None:
            return False
        self.worker = w
        self.containment = w.containment
        self.warnings += [x for x in w.warnings if x not in self.warnings]  # a bound not held
        return self._make_ready(w, timeout, warm_case)

    def load(self, timeout: float) -> bool:
        """Have the prepared worker import the submission; False (with `load_error`)."""
        return self.worker is not None and self._load(self.worker, timeout)

    def _started_worker(self) -> WorkerProcess | None:
        """The head start's worker, or a new one started now; None (with `load_error`)
        where none could be started."""
        w, self._started = self._started, None
        self.modules_sent = set()  # a worker starting now holds none
        if w is not None:
            return w
        if self.compile_cache is not None:  # a build lock the last worker left
            self.compile_cache.clear_if_alone()
        w = WorkerProcess(self.settings.worker, self.device.kind,
                          readable=[self.staging], writable=[self.shm_root],
                          compile_cache=self.compile_cache and self.compile_cache.folder,
                          seat=self.seat)
        self.worker = w
        try:
            w.start()
        except (OSError, subprocess.SubprocessError) as exc:  # fork, exec, the sandbox
            self._worker_could_not_start(Status.CRASHED, f"the worker could not be started: {exc}")
            return None
        return w

    def _make_ready(self, w: WorkerProcess, timeout: float, warm_case: dict | None) -> bool:
        """Send the worker its settings, wait until it is ready, and calibrate on no-ops
        before the import; False (with `load_error`) where it failed or ended."""
        try:
            self._send_start(w)
            if warm_case is not None and WARM_REFERENCE and self.device.kind == "cuda":
                self.ref.warm(warm_case, self.device.kind)
            ready = w.recv(self.settings.worker.start_timeout)
            if ready.get("event") == Event.ERROR:
                self._worker_could_not_start(Status.CRASHED, str(ready.get("message", "")))
                return False
            self.memory_cap = _whole(ready.get("memory_cap_bytes"))
            self.cpu_heap = _whole(ready.get("cpu_heap_bytes"))
            self.base_calibration = self.sampling.calibrate_before_import(timeout)
        except WorkerDied:
            self._worker_could_not_start(Status.CRASHED, w.exit_description("as it started"))
            return False
        except WorkerTimeout as exc:
            self._worker_could_not_start(*self._fault(exc))
            return False
        except ProtocolError as exc:
            self._worker_could_not_start(Status.CRASHED, f"unreadable start: {exc}")
            return False
        except CaseFailure as exc:
            self._worker_could_not_start(Status.CRASHED, exc.message)
            return False
        return True

    def _load(self, w: WorkerProcess, timeout: float, died: str | None = None) -> bool:
        """Have the worker import the submission; False (with `load_error`) if it fails."""
        try:
            w.send({"op": "load", "group": self.seat and self.seat.to_wire()})
            loaded = w.recv(timeout)
        except (WorkerDied, WorkerTimeout, ProtocolError, CaseFailure) as exc:
            status, message = self._fault(exc)
            message = self._with_bounds(message)
            again = (isinstance(exc, WorkerDied) and w.killed_from_outside()
                     and self.seat is None)
            self.stop()
            if again and died is None:
                self.restarts += 1
                return self.start(timeout, died=message)
            if died is not None and isinstance(exc, WorkerDied):
                message = _died_twice(message, died)
            self.load_error = {"status": status, "kind": "load", "title":
                               "the submission stopped the worker while loading",
                               "hint": "", "message": message}
            return False
        if loaded.get("event") == Event.ERROR:
            self.load_error = load_error_verdict(
                loaded.get("kind", "load_error"),
                self._with_bounds(str(loaded.get("message", ""))), str(loaded.get("module", "")),
                self.where(),
            )
            self._collect_output()
            self.stop()
            return False
        return True

    def where(self) -> Where:
        """This run's machine and the submission's text, which a failure's verdict reads
        (harness.judging.needs)."""
        try:
            source = (self.staging / self.task.submission_name).read_text(errors="replace")
        except OSError:
            source = ""
        return Where(self.device.kind, self.device.capability, source)

    def _with_bounds(self, message: str) -> str:
        """A failure's message, led by the bounds the worker's processes meet now (its
        processes, its scratch quota: bounds.py), so that the verdict names them."""
        met = self.worker.bounds_reached() if self.worker is not None else []
        return "\n".join([*met, message]) if met else message

    def _send_start(self, w: WorkerProcess) -> None:
        """The worker's settings: its first message, before it reports ready."""
        w.send({
            "device": self.device.kind, "staging": str(self.staging),
            "submission": self.task.submission_name, "shown_name": self.submission.name,
            "gpu_memory_fraction": self.settings.worker.gpu_memory_fraction,
            "spin_seconds": SPIN_SECONDS[self.device.kind],
            "trace": self.settings.timing.trace_calls,
            "mailbox": self._open_channel(w),
            "memory_limit_bytes": (gb_to_bytes(self.settings.worker.cpu_memory_limit_gb)
                                   if self.device.kind == "cpu" else 0),
        })

    def _worker_could_not_start(self, status: str, message: str) -> None:
        """The verdict where the worker could not be started, or failed or ended before
        the submission was loaded: the harness's side (its settings, the machine), with
        the worker's own last error line from its stderr."""
        self._collect_output()
        lines = [line.strip() for line in self.worker_output["stderr"].splitlines()]
        said = [line for line in lines if "error" in line.lower()] or list(filter(None, lines))
        self.load_error = worker_start_verdict(status, message, said[-1] if said else "")
        self.stop()

    def _open_channel(self, worker: WorkerProcess) -> str | None:
        path = str(self.shm_root / f"mailbox{self.restarts}")
        self.channel = Channel(worker, path if MAILBOX[self.device.kind] else None,
                               SPIN_SECONDS[self.device.kind], SPIN_SECONDS[self.device.kind])
        return self.channel.mailbox_path

    def stop(self) -> None:
        # A clock reading still running is the judge's own child: end it before the
        # worker's strays are killed, or it would be counted as one of them.
        self.sampling.drop_clock_reading()
        if self._started is not None:  # a head start no phase came to use
            self._started.close()
            self._started = None
        if self.worker is None:
            return
        try:
            self.worker.send({"op": "exit"})
        except WorkerDied:
            pass
        self._collect_output()
        self.stray_pids += self.worker.close()
        if self.channel is not None:
            self.channel.close()
        self.worker = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.shm_root, ignore_errors=True)

    def _collect_output(self) -> None:
        if self.worker is None:
            return
        marked, mark = self.secret_mark or (self.worker, None)
        if marked is self.worker:  # this worker ran public phases: their output, to the mark
            out, err = self.worker.output(end=mark)
            self.worker_output = {"stdout": out, "stderr": err}
        if self.secret_mark is not None:
            out, err = self.worker.output(start=mark if marked is self.worker else (0, 0))
            self.secret_output = {"stdout": out, "stderr": err}

    def explain_compile_error(self, message: str) -> str:
        """A compile error's message, with what the compiler said in the worker's stderr."""
        self._collect_output()
        return compile_reason(message, self.worker_output["stderr"],
                              str(self.staging / self.task.submission_name),
                              self.submission.name, self.device.capability or "?")

    def _fault(self, exc: Exception) -> tuple[str, str]:
        if isinstance(exc, WorkerTimeout):
            return Status.TIMED_OUT, f"timed out: {exc}; the worker was killed"
        if isinstance(exc, WorkerDied):
            self._collect_output()
            return Status.CRASHED, f"crashed: {exc}"
        if isinstance(exc, ProtocolError):
            return Status.REJECTED, f"rejected: {exc}"
        return exc.status, exc.message

    # -- phases ---------------------------------------------------------------------
    def run_phase(self, spec: PhaseSpec) -> PhaseResult:
        """Run every case of a phase; a hang ends the phase, a crash only its case."""
        phase = PhaseResult(spec.name, spec.seeds)
        if spec.seeds == "secret" and self.secret_mark is None:
            self.secret_mark = (self.worker, self.worker.output_sizes() if self.worker else (0, 0))
        self.progress.phase_start(spec)
        before = self.gpu_watch.look(f"start of the {spec.name} phase ({spec.seeds} seeds)")
        phase_started = self.clock()
        deadline = phase_started + spec.timeout

        def after(result: CaseResult) -> str:
            nonlocal before
            if spec.timed:  # its flags excused where the GPU was shared (gpu_share.py)
                self.gpu_watch.after_case(spec.name, result, before)
                before = self.gpu_watch.last
            if result.status in (Status.NEEDS_GPU, Status.CANNOT_RUN):
                return f"not run: {result.message.split(':')[0]}"
            return "not run: the worker failed too many times" if self.restarts > MAX_RESTARTS else ""

        phase.cases = run_cases(spec, self.progress,
                                lambda index, case: self.run_case(spec, index, case, deadline),
                                after, self.clock)
        score_phase(phase, spec, self.task.ranking_by)
        phase.wall_seconds = self.clock() - phase_started
        return phase

    def run_case(self, spec: PhaseSpec, index: int, case: dict, deadline: float) -> CaseResult:
        """One case of `spec` (its verdict, whatever becomes of the worker), outside
        `run_phase`: a multi-GPU case's ranks each run theirs (ranks/ranked.py)."""
        return self._case_or_failure(spec, index, case, deadline)

    def _case_or_failure(self, spec: PhaseSpec, index: int, case: dict, deadline: float,
                         died: str | None = None) -> CaseResult:
        """The case's result, whatever becomes of its worker. A worker killed from outside
        for no cause the judge can name (`killed_from_outside`) may be the machine's doing,
        so the case runs once more in a fresh worker (`died`: how the first one ended); a
        second death is the verdict, and says it died twice."""
        if self.worker is None:
            self.restarts += 1
            if not self.start(max(deadline - self.clock(), 1.0)):
                err = self.load_error or {}
                return CaseResult(index, case, err.get("status", Status.CRASHED), err.get("message", ""))
        try:
            return self._run_case(spec, index, case, deadline)
        except CaseFailure as exc:
            message = self._with_bounds(exc.message)
            if exc.fatal or exc.status in FATAL:
                self.stop()
            return CaseResult(index, case, exc.status, message)
        except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
            status, message = self._fault(exc)
            message = self._with_bounds(message)
            if isinstance(exc, WorkerTimeout) and self.seat is not None:
                self.stack_at_timeout = self.worker.dump_stack()  # which rank hung
            again = (isinstance(exc, WorkerDied) and self.worker.killed_from_outside()
                     and self.seat is None)
            self.stop()
            if died is not None and isinstance(exc, WorkerDied):
                message = _died_twice(message, died)
            elif again and died is None:
                return self._case_or_failure(spec, index, case, deadline, died=message)
            return CaseResult(index, case, status, message)
        except (TaskError, torch.OutOfMemoryError, CudaVmmError) as exc:
            starved = self._starved(exc)
            if starved is not None:
                return CaseResult(index, case, Status.ERROR, starved)
            if isinstance(exc, TaskError) and not out_of_memory(exc):
                raise
            self.stop()  # the machine's fault, not the submission's
            what = ("share the case's GPU buffers with the worker" if isinstance(exc, CudaVmmError)
                    else "allocate the case's GPU memory")
            return CaseResult(index, case, Status.CRASHED, (
                f"the harness could not {what}: {exc}. The GPU may be full (other processes "
                "on it), or its driver may lack CUDA's virtual-memory API; run it again where "
                "the GPU is free."))

    def _starved(self, exc: BaseException) -> str | None:
        """Where the judge's own GPU memory ran out (its inputs, references, shared
        buffers, its check) while a worker lives: stop the worker, which frees what it held,
        and where that freed memory, the out-of-memory verdict that says so. None where
        the worker held none of it (another process fills the GPU): the caller's own
        verdict then."""
        if self.worker is None or self.device.kind != "cuda" or not out_of_memory(exc):
            return None
        free_before = torch.cuda.mem_get_info()[0]
        self.stop()
        held = torch.cuda.mem_get_info()[0] - free_before
        if held < 64 << 20:
            return None
        return (f"out of memory: the judge could not allocate this case's buffers while the "
                f"submission held {held / (1 << 30):.1f} GiB of the GPU's memory past its "
                "calls; its worker was stopped to free it (the next case gets a fresh one)")

    # -- one case -------------------------------------------------------------------
    def _run_case(self, spec: PhaseSpec, index: int, case: dict, deadline: float) -> CaseResult:
        self.sampling.drop_clock_reading()  # never another case's reading
        laps = Laps(self.clock)
        secret = self.secret if spec.seeds == "secret" else None
        plan = SeedPlan(int(case.get("seed", 0)), secret, stream=spec.name)
        data = self.generate(case, plan, 0)
        try:
            template = self.ref.reference(clone(data))
        except Exception as exc:  # noqa: BLE001 - the task's own code failed
            raise self.task_failure(exc, f"ref_kernel failed on case {case}") from exc
        self.device.release_cached()  # the reference's intermediates, for the worker
        laps.lap("inputs")
        per = max(1, int(self.task.timing.get("calls_per_sample", 1))) if spec.timed else 1
        # Rehearsals run the previous sample's slots while the next sample's hold fresh
        # inputs: two samples' worth of slots.
        ring = max(RING_SLOTS, 2 * per if spec.timed else per)
        alloc = SharedAllocator(Path(tempfile.mkdtemp(dir=self.shm_root)))
        slots = [make_slot(data, alloc) for _ in range(ring)]
        box = CaseBuffers(alloc, slots, template, all_finite(template), per)
        wired = [alloc.to_wire(s) for s in slots]
        self._share(alloc, {
            "op": "case", "slots": wired, "modules": self._modules_for(wired),
            "outputs": box.wire_outputs(), "expected": describe(template),
            "calls_per_sample": per,
        })
        self._expect_ack(deadline)
        laps.lap("sharing")
        result = CaseResult(index, case, Status.PASSED, wall_parts=laps.parts)
        run = CaseRun(case, plan, box, deadline, laps)
        try:
            calibration = self.sampling.calibrate(deadline) if spec.timed else None
            laps.lap("calibration")
            first = self._first_call(run, data)
            laps.lap("first_call")
            result.checked_calls = per
            if spec.profile:
                self._profile_case(index, case, plan, box.slots, deadline, result)
                laps.lap("profile")
            if spec.timed:
                result = self.sampling.time_case(run, calibration, first, result)
        except CaseFailure as exc:
            if not (exc.fatal or exc.status in FATAL):
                self._release(deadline)
            raise
        self._release(deadline)
        laps.lap("release")
        self._note_clocks(case, result)
        laps.lap("clock_reading")
        return result

    def _first_call(self, run: CaseRun, data: Any) -> dict:
        """The first (checked, untimed) sample, on the case's own input `data`. An output
        laid out unlike the reference (another dtype or shape) is not wrong in itself: the
        task's check decides. The judge then shares buffers of the submission's layout and
        calls again."""
        box = run.box
        try:
            return self.sampling.sample(run, 0, 0, "the first call", first=data)
        except OutputLayout as layout:
            limit = max(4 * nbytes(box.template), 64 << 20)
            template = layout_template(layout.layout, self.device.kind, limit)
            if template is None:
                raise CaseFailure(Status.FAILED, f"the first call: wrong output\n{layout}") from None
            box.relayout(template)
            self._share(box.alloc, {"op": "outputs", "outputs": box.wire_outputs(),
                                    "expected": describe(template)})
            self._expect_ack(run.deadline)
            return self.sampling.sample(run, 0, 0, "the first call", first=data,
                                        relayout=False)

    def _modules_for(self, wired: list[Any]) -> dict[str, str]:
        """The text of each module of the task that the input's objects are instances of
        and that the worker's folder leaves out (the reference), not yet sent to this
        worker: it loads them privately (harness.judging.worker.input_objects)."""
        judge_dir = Path(self.ref.module.__file__).parent
        out = {}
        for name in sorted(object_modules(wired) - self.modules_sent):
            mine, theirs = judge_dir / f"{name}.py", self.staging / f"{name}.py"
            if "." not in name and mine.is_file() and not theirs.exists():
                out[name] = mine.read_text()
        self.modules_sent.update(out)
        return out

    def _share(self, alloc: SharedAllocator, message: dict) -> None:
        """Send a message naming shared buffers, with the descriptors of new GPU arenas."""
        notices, fds = alloc.pending()
        self.worker.send(dict(message, arenas=notices), fds)
        alloc.forget_fds()

    def _release(self, deadline: float) -> None:
        """Tell the worker to drop the case's buffers (only while it is healthy)."""
        self.worker.send({"op": "release"})
        self._expect_ack(deadline + 30)

    def together(self, wants: bool) -> bool:
        """A timed case's decision (one more sample, say): `wants` for one GPU; for a
        multi-GPU case's rank, True where every rank wants it (ranks/ranked.py), so that
        every rank makes the same calls."""
        agree = getattr(self.ref, "together", None)
        return agree(wants) if agree is not None else wants

    def generate(self, case: dict, plan: SeedPlan, call: int) -> Any:
        """The inputs of call number `call` of `case`, made by the task's own code."""
        kwargs = dict(case)
        kwargs["seed"] = plan.seed(call)
        try:
            return self.ref.generate(kwargs, self.device.kind)
        except Exception as exc:  # noqa: BLE001 - the task's own code (or the case) failed
            raise self.task_failure(exc, f"generate_input failed on case {case}") from exc

    def task_failure(self, exc: Exception, what: str) -> TaskError | TaskNeeds:
        """What the task's own code failing with `exc` means: that this machine lacks what
        the task needs (`TaskNeeds`), or that the folder is broken (`TaskError`)."""
        need = needs.of_exception(exc, self.device.kind, self.device.capability,
                                  self.ref.source())
        if need is None:
            return TaskError(f"{self.task.name}: {what}: {exc!r}")
        return TaskNeeds(need, f"{self.task.name}: {what}: {needs.brief(exc)}")

    def _expect_ack(self, deadline: float) -> None:
        reply = self.worker.recv(max(deadline - self.clock(), 1.0))
        if reply.get("event") not in (Event.ERROR, Event.ACK):
            raise ProtocolError(f"expected an acknowledgement, got {reply.get('event')!r}: "
                                "forged or stray protocol bytes")
        if reply.get("event") == Event.ERROR:
            raise CaseFailure(STATUS_BY_KIND.get(reply.get("kind"), Status.ERROR),
                              str(reply.get("message", "")))

    def _note_clocks(self, case: dict, result: CaseResult) -> None:
        """Store the SM clock read as the case's timed calls ended; warn if it throttled."""
        reading = self.sampling.take_clock_reading()
        if reading is None:
            return
        record, warning = clock_note(case, reading.result(), THROTTLE_RATIO)
        if record:
            result.integrity["sm_mhz"] = record
        if warning:
            self.warnings.append(warning)

    # -- --mode profile ----------------------------------------------------------------
    def _profile_case(self, index: int, case: dict, plan: SeedPlan, slots: list, deadline: float,
                      result: CaseResult) -> None:
        """After the checked first call: a few calls under the PyTorch profiler in the worker
        (harness.judging.profile.profiling), then under Nsight Compute where `ncu` is installed."""
        from harness.judging.profile import ncu, profiling

        settings = self.settings.profile
        for i, slot in enumerate(slots):
            fill_slot(slot, self.generate(case, plan, i + 1))
        self.worker.send({"op": "profile", "calls": settings.calls,
                          "rows": profiling.ROWS})
        reply = self.worker.recv(max(deadline - self.clock(), 1.0))
        if reply.get("event") == Event.ERROR:
            raise CaseFailure(STATUS_BY_KIND.get(reply.get("kind"), Status.ERROR),
                              f"a profiled call failed\n{reply.get('message', '')}".rstrip())
        if reply.get("event") != Event.PROFILE:
            raise ProtocolError(f"expected a profile, got {reply.get('event')!r}")
        try:
            result.profile = profiling.clean(reply.get("profile"), profiling.ROWS)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from exc
        if self.device.kind != "cuda" or not settings.ncu:
            return
        from harness.judging.sandbox.sandbox import worker_env

        target = ncu.target_args(self.task.root, self.staging, self.task.submission_name,
                                 dict(case, seed=plan.seed(1)), ncu.NCU_CALLS, self.device.kind)
        report = ncu.report_path(Path(settings.reports_dir), self.submission.name,
                                 self.task.name, index)
        env = worker_env(self.shm_root, self.device.kind, self.settings.worker.env_pass)
        result.profile["ncu"] = ncu.profile_case(
            ncu.find_ncu(), report, ncu.NCU_LAUNCH_COUNT, target, env,
            max(deadline - self.clock(), 30.0))
        failed = ncu.failure(result.profile["ncu"])  # no report: the case does not pass
        if failed:
            result.status, result.message = failed


def _died_twice(message: str, died: str) -> str:
    """A worker's second death's message, which says how the first one ended."""
    first = "the same way" if died == message else died.removeprefix("crashed: ")
    return (f"{message}\n(the worker died twice, the first time {first}: a death the judge "
            "cannot explain may be the machine's, so it ran again in a fresh worker)")


def _whole(value: object) -> int | None:
    """A whole number the worker reported, or None (its messages are diagnostics only)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
