"""The worker: a fresh process that imports the submission and calls `custom_kernel`.

It runs untrusted code, so it decides nothing: it times calls with device events (or
the host clock on the CPU), copies outputs into the judge's shared buffers and reports.
The judge checks every claim against its own clock and its own reference.

Usage (by the judge only): python -m harness.judging.worker.worker FD DEVICE
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple

from harness.judging.measure.call_trace import HostUsage
from harness.judging.needs import needs_gpu
from harness.judging.worker.protocol import Event, encode

_TRACE_LIMIT = 12000
_WARM_ELEMENTS = 1 << 17  # the warm-up before the start event: a 1 MiB tensor of int64
# The mailbox's polling past its spin: short naps at first (a request comes within
# microseconds of the judge's wake), long ones once nothing has come for a while, when the
# judge always wakes the worker off the clock before its next request (Channel._mail): an
# idle worker then wakes rarely instead of keeping a core busy.
_NAP_SECONDS = 0.0001
_NAP_LONGER_AFTER_SECONDS = 0.005
_LONG_NAP_SECONDS = 0.002
_POLLS_PER_LOOK = 64  # mailbox polls between looks at the clock and the pipe, awake
_COMPILE_SIGNS = ("PassManager::run failed", "CompilationError", "ptxas", "LLVM ERROR")
_CUDA_SIGNS = (
    "CUDA error", "illegal memory access", "device-side assert", "misaligned address",
    "unspecified launch failure", "an illegal instruction",
)


@dataclass(frozen=True)
class TorchCalls:
    """What the worker calls on torch around a sample, outside the timed region, taken as
    the worker starts, before any submission is imported. A submission that later
    replaces one of them (`torch.empty`, `Tensor.fill_`, `Tensor.copy_`,
    `torch.cuda._sleep`, `torch.cuda.synchronize`, an event's methods) does not get its
    code run in their place: before the start event or between the end event and the
    reply, where the no-op calibration would run it too and so widen the two-clock
    allowance by its cost; nor can it forge the event time. (The static screen refuses
    such assignments where it can read them; this holds where it cannot.)"""

    copy: Callable[[Any, Any], Any]
    sleep: Callable[[int], None] | None = None
    empty: Callable[..., Any] | None = None
    fill: Callable[[Any, Any], Any] | None = None
    int64: Any = None
    synchronize: Callable[[], None] | None = None
    warm_record: Callable[[], None] | None = None
    warm_synchronize: Callable[[], None] | None = None
    start_record: Callable[[], None] | None = None
    end_record: Callable[[], None] | None = None
    elapsed_ms: Callable[[Any], float] | None = None
    out_of_memory: type[BaseException] = MemoryError

    @classmethod
    def of(cls, torch: Any, warm: Any = None, start: Any = None, end: Any = None) -> TorchCalls:
        """torch's functions now; with the worker's three CUDA events, the GPU's too. The
        copy is structure's, which its copy of outputs uses: taken as that is imported."""
        from harness.judging.worker.structure import tensor_copy

        if warm is None:
            return cls(tensor_copy, empty=torch.empty, fill=torch.Tensor.fill_, int64=torch.int64)
        oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError",
                                                                  MemoryError)
        return cls(tensor_copy, torch.cuda._sleep, torch.empty, torch.Tensor.fill_,
                   torch.int64, torch.cuda.synchronize, warm.record, warm.synchronize,
                   start.record, end.record, start.elapsed_time, oom)

    def warm_torch(self, elements: int = _WARM_ELEMENTS) -> bool:
        """A new tensor of `elements` int64 from torch's allocator on the GPU, written by one
        of torch's kernels (`fill_(42)`), then dropped: pmpp_v2's flush before every call is
        this with 256 MiB. With the default 1 MiB it is a miniature of the public evaluators' flush (theirs: 256 MiB, or a
        `torch.randn` of GBs), so the call's own operators start on warm code paths. The
        harness's protocol between samples leaves them cold (`A + B` took 14-21 µs as a
        sample's first operator, 7-10 µs right after another).

        False where torch's allocator has not that much left (a submission that keeps the
        GPU's memory full between calls): the sample then goes on without it, rather than
        failing on the harness's own allocation."""
        try:
            scratch = self.empty(elements, dtype=self.int64, device="cuda")
        except self.out_of_memory:
            return False
        self.fill(scratch, 42)
        del scratch
        return True


class _Timed(NamedTuple):
    """One sample's calls as timed: their outputs, the host clock around them (ns), the
    events' time (ms, GPU runs), and whether the warming found no memory."""

    outs: list[Any]
    t0: int
    t_ret: int
    event_ms: float = 0.0
    unwarmed: bool = False


class Worker:
    """State of one worker: the submission, the current case's buffers, the timers."""

    def __init__(self, conn: Connection, init: dict[str, Any]) -> None:
        import torch

        self.torch = torch
        self.conn = conn
        self.device = init["device"]
        self.staging = Path(init["staging"])
        self.shown_name = init.get("shown_name", "submission.py")
        self.submission_path = self.staging / init["submission"]
        self.kernel: Callable[[Any], Any] | None = None
        self.slots: list[Any] = []
        self.outputs: list[Any] = []  # one set of output buffers per input slot
        self.refresh: list[list[tuple[Any, Any]]] = []  # per slot: (shared, private) CPU tensors
        self.expected: dict | None = None
        self.noop_output: Any = None
        from harness.judging.worker.input_objects import TaskModules, put_back
        from harness.judging.worker.sharing import WorkerArenas

        self.put_back = put_back
        self.task_modules = TaskModules(self.staging)
        self.arenas = WorkerArenas(self.task_modules.find)
        self.saved: list[list[tuple[Any, Any]]] = []  # per slot: its objects' state
        self.calls_per_sample = 1
        self.cuda = self.device == "cuda"
        self.spin_seconds = float(init.get("spin_seconds", 0.0))  # the polling loop's
        # The clock and the nap of the polling loop, taken before the import too: a
        # submission that replaces time.perf_counter (under another name than the screen
        # reads) would otherwise run in the loop, off the judge's clock, while the fresh
        # inputs of the next call are readable.
        self._clock, self._nap = time.perf_counter, time.sleep
        # The clock of every timed call (the only one on the CPU), taken before the import
        # likewise: a submission that replaces time.perf_counter_ns changes its own clock,
        # never the one its calls are timed with.
        self._ns = time.perf_counter_ns
        # Where the judge traces its samples: this thread's host around each sample (a
        # diagnostic, the worker's own account, never trusted).
        self._usage = HostUsage() if init.get("trace") else None
        # A multi-GPU case's rank: the barrier every timed sample starts behind, taken as
        # the group is joined, before the import (`load`); None for one GPU.
        self._barrier: Callable[[], Any] | None = None
        self.mailbox = None
        self.mail_seq = 0
        # Taken before the submission is imported (see _threads_left).
        self.current_frames, self.main_thread = sys._current_frames, threading.get_ident()
        if init.get("mailbox"):
            from harness.judging.worker.protocol import Mailbox

            self.mailbox = Mailbox(init["mailbox"])
        self._open_device(init)
        self._before_import(init)

    def _open_device(self, init: dict[str, Any]) -> None:
        """The GPU's context, its memory share and the events of the timed region; the
        calls the timing makes, taken before the submission is imported."""
        torch = self.torch
        if self.cuda:
            torch.cuda.set_device(0)
            torch.cuda.init()
            fraction = init.get("gpu_memory_fraction")
            if fraction:
                torch.cuda.set_per_process_memory_fraction(float(fraction))
            self.start_event = torch.cuda.Event(enable_timing=True)
            self.end_event = torch.cuda.Event(enable_timing=True)
            self.warm_event = torch.cuda.Event()
        self.calls = (TorchCalls.of(torch, self.warm_event, self.start_event, self.end_event)
                      if self.cuda else TorchCalls.of(torch))

    def _before_import(self, init: dict[str, Any]) -> None:
        """The submission's compiler caches pointed at its folder, and (on the CPU) the
        heap touched and the address space capped: all before the submission is imported."""
        from harness.judging.startup.compile_cache import device_tag, point_worker
        from harness.judging.worker.cpu_heap import heap_size, touch_heap

        torch = self.torch
        # Before the submission is imported: its compiler caches into its file's folder.
        point_worker(device_tag(torch, self.device))
        memory_limit = int(init.get("memory_limit_bytes") or 0)
        # On the CPU, outputs reuse touched heap pages (cpu_heap.py), counted in the allowance.
        self.heap_bytes = 0 if self.cuda else touch_heap(heap_size(memory_limit))
        self.memory_cap = None
        if memory_limit > 0:
            from harness.judging.sandbox.memory_cap import cap_self

            torch.ones(1 << 16).add_(1)  # torch's CPU thread pool starts here, not under the cap
            self.memory_cap = cap_self(memory_limit - self.heap_bytes)

    def send(self, message: dict[str, Any]) -> None:
        self.conn.send_bytes(encode(message))

    def serve(self) -> None:
        info = {"event": Event.READY, "torch": self.torch.__version__, "python": sys.version.split()[0],
                "memory_cap_bytes": self.memory_cap, "cpu_heap_bytes": self.heap_bytes}
        if self.cuda:
            info["device_name"] = self.torch.cuda.get_device_name(0)
        self.send(info)
        handlers = {
            "load": self.load, "case": self.set_case, "call": self.call,
            "noop": self.noop, "release": self.release, "outputs": self.outputs_at,
            "rehearse": self.rehearse,
            "profile": self.profile,
        }
        while True:
            if self.mailbox is not None and self._wait_mail():
                continue
            try:
                message = self.conn.recv()
                if message.get("arenas"):  # their descriptors follow the message
                    self._map_arenas(message["arenas"])
            except EOFError:
                return
            op = message.get("op")
            if op == "exit":
                return
            handlers[op](message)

    def _wait_mail(self) -> bool:
        """Poll the mailbox and the pipe; True once a mailbox call was served.

        Polls without pause for `spin_seconds`, then with short sleeps, then, once idle
        for `_NAP_LONGER_AFTER_SECONDS` more, longer ones: a call must never wait for a
        wake-up from a blocking read, and the judge wakes a worker that may nap long."""
        clock, nap = self._clock, self._nap
        spin_until = clock() + self.spin_seconds
        n, polls = 0, _POLLS_PER_LOOK
        while True:
            pending = self.mailbox.pending(self.mail_seq)
            if pending is not None:
                self.mail_seq = pending[0]
                self._mail(*pending)
                return True
            if self.mailbox.wake_pending():
                spin_until, polls = clock() + self.spin_seconds, _POLLS_PER_LOOK
            n += 1
            if n % polls == 0:
                if self.conn.poll(0):
                    return False
                idle = clock() - spin_until
                if idle > 0:
                    long = idle >= _NAP_LONGER_AFTER_SECONDS
                    polls = 1 if long else _POLLS_PER_LOOK  # one look per long nap
                    nap(_LONG_NAP_SECONDS if long else _NAP_SECONDS)

    # -- loading ---------------------------------------------------------------------
    def load(self, message: dict[str, Any]) -> None:
        if message.get("group"):  # a multi-GPU case's rank: the group first, as publicly
            from harness.judging.ranks.seat import join_group

            failed = join_group(message["group"])
            if failed:
                self.send({"event": Event.ERROR, "kind": "group", "message": failed})
                return
            import torch.distributed as dist

            self._barrier = dist.barrier
        sys.path.insert(0, str(self.staging))
        try:
            compile(self.submission_path.read_text(), str(self.submission_path), "exec")
        except SyntaxError as exc:
            self.send({"event": Event.ERROR, "kind": "syntax_error", "message": _syntax(exc)})
            return
        # A real file on disk, so that tools reading their own source (Triton's @jit) work.
        spec = importlib.util.spec_from_file_location("submission", self.submission_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = module
        try:
            spec.loader.exec_module(module)
        except ModuleNotFoundError as exc:
            self.send({
                "event": Event.ERROR, "kind": "import_error", "module": exc.name or "",
                "message": self._trace(exc),
            })
            return
        except BaseException as exc:  # noqa: BLE001 - any failure is the submission's
            self.send({"event": Event.ERROR, "kind": self._classify(exc, "load_error"),
                       "message": self._trace(exc)})
            return
        kernel = getattr(module, "custom_kernel", None)
        if not callable(kernel):
            names = sorted(n for n in vars(module) if not n.startswith("_"))[:20]
            self.send({"event": Event.ERROR, "kind": "missing_entry",
                       "message": f"no callable custom_kernel; the module defines {names}"})
            return
        self.kernel = kernel
        self.send({"event": Event.LOADED})

    def _map_arenas(self, notices: list) -> None:
        """Map the judge's new GPU arenas from the descriptors that follow the message."""
        import socket
        from multiprocessing.reduction import recvfds

        with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
            fds = recvfds(sock, len(notices))
        self.arenas.add(notices, fds)

    # -- cases and calls -------------------------------------------------------------
    def set_case(self, message: dict[str, Any]) -> None:
        from harness.judging.worker.input_objects import saved_state

        self.task_modules.load(message.get("modules") or {})
        self.slots = [self.arenas.from_wire(s) for s in message["slots"]]
        self.refresh = [[] for _ in self.slots]
        if self.cuda:
            self.slots = [self._private_host(s, k) for k, s in enumerate(self.slots)]
        self.saved = [saved_state(s) for s in self.slots]
        self._take_outputs(message)
        self.calls_per_sample = max(1, int(message.get("calls_per_sample", 1)))
        self.send({"event": Event.ACK})

    def _private_host(self, slot: Any, k: int) -> Any:
        """On a GPU run, the input's CPU tensors as this process's own memory, refreshed
        from the shared slot before each call (off the clock): a submission that copies
        them to the GPU reads ordinary pageable memory, as under the contests' evaluators,
        not a shared-file mapping."""
        from harness.judging.worker.structure import map_tensors

        def private(t: Any) -> Any:
            if t.device.type != "cpu":
                return t
            mine = t.clone()
            self.refresh[k].append((t, mine))
            return mine

        return map_tensors(slot, private)

    def release(self, message: dict[str, Any]) -> None:
        self.slots, self.outputs, self.noop_output, self.refresh = [], [], None, []
        self.saved = []
        self.arenas.clear()
        if self.cuda:
            self.torch.cuda.synchronize()
        self.send({"event": Event.ACK})

    def noop(self, message: dict[str, Any]) -> None:
        self.send(self._noop(message["slot"]) | {"seq": message.get("seq")})

    def call(self, message: dict[str, Any]) -> None:
        reply = self._run(self.kernel, message["slot"], int(message.get("ahead", 0)), check=True)
        self.send(reply | {"seq": message.get("seq")})

    def rehearse(self, message: dict[str, Any]) -> None:
        self.send(self._rehearse(message["slot"]) | {"seq": message.get("seq")})

    def outputs_at(self, message: dict[str, Any]) -> None:
        """New output buffers, laid out like the submission's own output (see the judge)."""
        self._take_outputs(message)
        self.send({"event": Event.ACK})

    def _take_outputs(self, message: dict[str, Any]) -> None:
        """The case's output buffers (one set per slot), their expected layout, and the
        no-op's output of the same layout."""
        from harness.judging.worker.structure import clone

        self.outputs = [self.arenas.from_wire(o) for o in message["outputs"]]
        self.expected = message["expected"]
        self.noop_output = clone(self.outputs[0])

    def _noop(self, slot: int) -> dict[str, Any]:
        """The same protocol as one sample (its slots' inputs refreshed, every output
        copied: the work outside the timed region), around a function that returns at
        once."""
        output = self.noop_output
        return self._run(lambda data: output, slot, 0, check=output is not None)

    def _mail(self, seq: int, op: str, slot: int, ahead: int) -> None:
        """A call requested through the mailbox: answer there, errors on the pipe."""
        from harness.judging.worker.protocol import Mailbox

        if op == "noop":
            reply = self._noop(slot)
        elif op == "rehearse":
            reply = self._rehearse(slot)
        elif op == "call":
            reply = self._run(self.kernel, slot, ahead, check=True)
        else:  # never run a call the judge did not ask for
            reply = {"event": Event.ERROR, "kind": "protocol",
                     "message": f"the mailbox held an unknown request ({op})"}
        if reply["event"] == Event.DONE:
            self.mailbox.answer(seq, Mailbox.DONE, reply)
        else:
            self.send(reply)
            self.mailbox.answer(seq, Mailbox.SEE_PIPE)

    def _inputs(self, slot: int, count: int) -> tuple[list[int], list[Any]]:
        """The slots of `count` calls from `slot` (around the ring) and their inputs."""
        ring = len(self.slots) or 1
        picks = [(slot + j) % ring for j in range(count)]
        return picks, [self.slots[i] if self.slots else None for i in picks]

    def _put_back(self, picks: list[int]) -> None:
        """Put back what earlier calls changed in the objects of these slots' inputs."""
        for i in picks if self.saved else ():
            if self.saved[i]:
                self.put_back(self.saved[i])

    def _rehearse(self, slot: int) -> dict[str, Any]:
        """The calls of an earlier sample (from `slot`) again: untimed, outputs unchecked
        and dropped. The next sample's calls then start on the host
        state of a process that has just run the submission, as in the public evaluators,
        whose repeats run back to back. Its inputs were timed and checked already, and the
        judge writes the next sample's inputs only after this reply, so nothing
        these calls compute can answer a timed call (a thread left running is another
        matter: the screen flags threads, and the judge's clock sees work outside the timed
        region)."""
        picks, data = self._inputs(slot, self.calls_per_sample)
        self._put_back(picks)
        try:
            for d in data:
                self.kernel(d)
            if self.cuda:
                self.calls.synchronize()
        except BaseException as exc:  # noqa: BLE001
            return self._exception(exc)
        return {"event": Event.DONE, "ns": 0.0}

    def _run(self, fn: Callable[[Any], Any], slot: int, ahead: int, check: bool,
             count: int | None = None) -> dict[str, Any]:
        """One timed sample: `count` calls on consecutive slots from `slot`, back to back.

        On the GPU, `ahead` cycles of GPU sleep go before the start event: the host enqueues
        the calls while the GPU is still busy, so their launch time is hidden up to that
        length, as the public contests' asynchronous L2 flush hides it. The reported time is
        the mean per call; `host_ns` is this process's CPU clock around the calls, per call.
        """
        t_req = self._ns()
        count = count or self.calls_per_sample
        picks, data = self._inputs(slot, count)
        calls = self.calls
        for i in picks if self.slots else ():
            for shared, mine in self.refresh[i]:
                calls.copy(mine, shared)
        self._put_back(picks)
        used = self._usage.now() if self._usage is not None else None
        t_in = self._ns()
        try:
            if self._barrier is not None:  # every rank starts the sample together, as the
                self._barrier()  # public evaluators' ranks do: the clock starts after it
            if self.cuda:
                timed = self._timed_on_gpu(fn, data, ahead)
            else:
                t0 = self._ns()
                outs = [fn(d) for d in data]
                timed = _Timed(outs, t0, self._ns())
        except BaseException as exc:  # noqa: BLE001
            return self._exception(exc)
        t_synced = self._ns()
        if check:
            failed = self._copy_outputs(picks, timed.outs)
            if failed is not None:
                return failed
        t_out = self._ns()
        t0, t_ret = timed.t0, timed.t_ret
        ns = timed.event_ms * 1e6 / count if self.cuda else (t_ret - t0) / count
        # The breakdown is the worker's own account: diagnostics, never trusted.
        reply = {"event": Event.DONE, "ns": ns, "host_ns": (t_ret - t0) / count,
                 "sync_ns": t_synced - t_ret, "copy_ns": t_out - t_synced,
                 "busy_ns": self._ns() - t_in,
                 "pre_ns": t_in - t_req, "lead_ns": t0 - t_in}
        # Counted after the judge's no-op calls too (their count is not read): the two-clock
        # check's calibration must do all the work outside the timed region that a sample
        # does, or the difference reads as the submission's.
        reply["threads"] = self._threads_left()
        if timed.unwarmed:  # no memory for the warm-up's 1 MiB: this sample ran without it
            reply["unwarmed"] = True
        if used is not None:
            reply["trace"] = self._usage.since(used)
        return reply

    def _timed_on_gpu(self, fn: Callable[[Any], Any], data: list[Any], ahead: int) -> _Timed:
        """The calls of one sample on the GPU, between the start and end events, after the
        warming and the GPU sleep that hides their launch (`ahead` cycles); the device
        waited for."""
        calls = self.calls
        # Bring this process's context onto the GPU (after the judge's flush) before the
        # clock starts: an event alone does not (the switch then happens after the start
        # event, overlapping, hiding, host launch time). Then a miniature of the public
        # evaluators' pre-call flush (TorchCalls.warm_torch). All of it before the event
        # waited for, so a probe (no sleep) starts its clock on an idle GPU.
        calls.sleep(1)
        unwarmed = not calls.warm_torch()
        calls.warm_record()
        calls.warm_synchronize()
        if ahead:
            # the host enqueues the calls while the GPU still sleeps: their launch hidden
            calls.sleep(ahead)
        calls.start_record()
        t0 = self._ns()
        outs = [fn(d) for d in data]
        t_ret = self._ns()
        calls.end_record()
        calls.synchronize()  # the whole device: work left on other streams is waited for
        return _Timed(outs, t0, t_ret, calls.elapsed_ms(self.end_event), unwarmed)

    def _copy_outputs(self, picks: list[int], outs: list[Any]) -> dict[str, Any] | None:
        """Copy each call's output into the judge's buffers of its slot (the device waited
        for); the error reply where one is laid out unlike the expected or cannot be copied."""
        from harness.judging.worker.structure import copy_into, structure_error

        for i, out in zip(picks, outs):
            problem = structure_error(self.expected, out)
            if problem:
                return self._layout_error(problem, out)
            try:
                copy_into(self.outputs[i], out)
            except BaseException as exc:  # noqa: BLE001
                return self._exception(exc)
        try:
            if self.cuda:
                self.calls.synchronize()
        except BaseException as exc:  # noqa: BLE001
            return self._exception(exc)
        return None

    def _threads_left(self) -> int:
        """Python threads other than this one that are running code of the staged folder
        (the submission's) now that its calls have returned and their outputs are copied:
        work that could go on outside the timed region (the judge flags it). Threads of
        torch, Triton or the driver run no code of the folder and are not counted."""
        root = str(self.staging)
        alive = 0
        for ident, frame in self.current_frames().items():
            if ident == self.main_thread:
                continue
            while frame is not None:
                if frame.f_code.co_filename.startswith(root):
                    alive += 1
                    break
                frame = frame.f_back
        return alive

    def _exception(self, exc: BaseException) -> dict[str, Any]:
        """The reply for an exception raised by a call (or by copying its output)."""
        return {"event": Event.ERROR, "kind": self._classify(exc, "exception"),
                "message": self._trace(exc)}

    def _layout_error(self, problem: str, out: Any) -> dict[str, Any]:
        """An output whose layout differs from the reference's: the judge decides whether
        that is allowed (the task's check is the authority) and may send new buffers."""
        from harness.judging.worker.structure import tensor_layout

        layout = tensor_layout(out)
        if layout is None:  # not tensors alone: no buffers can hold it, the output is wrong
            return {"event": Event.ERROR, "kind": "wrong_output", "message": problem}
        return {"event": Event.ERROR, "kind": "output_layout", "message": problem,
                "layout": layout}

    # -- errors ----------------------------------------------------------------------
    def _classify(self, exc: BaseException, default: str) -> str:
        text = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
        if not self.cuda and needs_gpu(text):
            return "needs_gpu"
        if isinstance(exc, MemoryError) or "OutOfMemoryError" in text:
            return "out_of_memory"
        if any(s in text for s in _COMPILE_SIGNS) or type(exc).__module__.startswith(
            "triton.compiler"
        ):
            return "compile_error"
        if any(s in text for s in _CUDA_SIGNS) or type(exc).__name__ == "AcceleratorError":
            return "cuda_error"
        return default

    def _trace(self, exc: BaseException) -> str:
        return trim_traceback(exc, str(self.submission_path), self.shown_name)[-_TRACE_LIMIT:]

    # -- --mode profile ----------------------------------------------------------------
    def profile(self, message: dict[str, Any]) -> None:
        """`--mode profile`: calls on the case's input slots under the PyTorch profiler."""
        from harness.judging.profile.profiling import profile_calls

        try:
            summary = profile_calls(self.torch, self.kernel, self.slots, int(message["calls"]),
                                    self.cuda, int(message["rows"]))
        except BaseException as exc:  # noqa: BLE001 - the submission's (or the profiler's)
            self.send(self._exception(exc))
            return
        self.send({"event": Event.PROFILE, "profile": summary})


def trim_traceback(exc: BaseException, path: str, shown: str) -> str:
    """The traceback of `exc` cut to the frames of the submission's own file."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in (path, shown)]
    lines = []
    if frames:
        lines.append("Traceback (the submission's frames):")
        for f in frames:
            lines.append(f'  File "{shown}", line {f.lineno}, in {f.name}')
            if f.line:
                lines.append(f"    {f.line.strip()}")
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "\n".join(line.rstrip("\n") for line in lines)


def _syntax(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
    text = (exc.text or "").rstrip()
    pointer = f"\n    {text}" if text else ""
    return f"{exc.msg} ({where}){pointer}"


def _preload(device: str) -> str:
    """Import torch and open the GPU's context before the judge's first message: a worker
    started ahead of the judge (head_start.py) does this while the judge imports torch.
    A failure is reported later, with the judge listening: its description is returned
    (empty when none), since `Worker`'s second try may fail otherwise."""
    try:
        import torch

        if device == "cuda":
            torch.cuda.set_device(0)  # as Worker.__init__: the context is created here
            torch.cuda.init()
    except BaseException as exc:  # noqa: BLE001 - reported once the judge listens
        return repr(exc)
    return ""


def main() -> None:
    from harness.judging.sandbox.procfs import WORKER_NAME, name_self
    from harness.quiet import hush_numpy_warning

    name_self(WORKER_NAME)
    hush_numpy_warning()  # torch is imported next: no NumPy warning as the submission's
    conn = Connection(int(sys.argv[1]))
    preload_error = _preload(sys.argv[2] if len(sys.argv) > 2 else "cpu")
    try:
        init = conn.recv()
    except EOFError:  # the judge stopped before it needed this worker (a head start)
        return
    try:
        worker = Worker(conn, init)
    except BaseException as exc:  # noqa: BLE001 - e.g. no usable GPU
        first = f" (first attempt: {preload_error})" if preload_error else ""
        conn.send_bytes(encode({"event": Event.ERROR, "kind": "protocol",
                                "message": f"the worker could not start: {exc!r}{first}"}))
        return
    worker.serve()


if __name__ == "__main__":
    main()
