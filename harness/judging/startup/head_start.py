"""A worker started before the judge imports torch, so that the two imports overlap.

(A judge forked from a template, as every `submit`, batch and server job's is, has torch
already: its worker is then a fork of it, `sandbox/forked.py`, and one import serves both.)

A worker's start-up is mostly its own import of torch and its CUDA context (3.4-3.7 s
on an H200 machine that compiles torch's bytecode from source, `docs/benchmarks.md`); the
judge spends about as long on its own import of torch, the device and the task before it
would start one. Started first, with the same sandbox, the worker imports torch while
the judge does: the evaluation then waits for the later of the two, not for their sum
(nvfp4's start-up 0.8 s against 1.7 s, `docs/benchmarks.md`; nothing gained where the judge is the later one anyway, as with a public pmpp_v2 reference whose first
`use_deterministic_algorithms` imports torch._inductor).

Nothing of the task is in the worker's staging folder yet: the sandbox's rules name the
folder, and the judge stages the task there afterwards, before the worker is told to
load anything. This module imports no torch.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from harness.judging.sandbox.containment import expected_containment
from harness.judging.sandbox.leftovers import make_folder
from harness.judging.sandbox.sandbox import WorkerProcess, become_subreaper
from harness.judging.startup import compile_cache
from harness.settings import Settings

# NVIDIA's control node; AMD's ROCm compute node; WSL2's GPU paravirtualisation node
_GPU_NODES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")
# Made by the driver at a process's first CUDA use on hosts that do not make it at boot;
# a sandboxed worker cannot make it (no privilege changes) and its rules, built before,
# would leave it out: the judge's own first use then goes first, as without a head start.
_ON_DEMAND_NODE = "/dev/nvidia-uvm"


def guess_device(requested: str | None, env: Mapping[str, str] | None = None) -> str:
    """The device kind a run will most likely get, without importing torch: the one asked
    for, else "cuda" when a GPU driver's node exists and CUDA_VISIBLE_DEVICES (of `env`,
    this process's where not given) does not hide every GPU. The judge's own choice
    (torch's) decides; a wrong guess costs one process."""
    if requested:
        return requested
    hidden = (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return "cpu"
    return "cuda" if any(Path(node).exists() for node in _GPU_NODES) else "cpu"


def _device_files_ready(kind: str, control: str = _GPU_NODES[0],
                        on_demand: str = _ON_DEMAND_NODE) -> bool:
    """False where an NVIDIA GPU's unified-memory node does not exist yet."""
    return kind != "cuda" or not Path(control).exists() or Path(on_demand).exists()


def shm_folder() -> Path:
    """A new folder for a run's shared-memory files: under /dev/shm where it is writable."""
    shm = Path("/dev/shm")
    parent = str(shm) if shm.is_dir() and shm.stat().st_mode & 0o002 else None
    return make_folder("shm", parent)


class HeadStart:
    """The run's folders and a worker already starting in them, until the judge takes it.

    `work`: the run's folder (the worker's staging folder is `work / "worker"`);
    `shm_root`: the run's shared-memory folder. Call `close` (or leave its `with` block)
    when the evaluation is over: it kills a worker nobody took and removes both folders."""

    def __init__(self, kind: str, settings: Settings, source: str | None = None,
                 mode: str = "leaderboard") -> None:
        self.kind = kind
        self.worker: WorkerProcess | None = None
        self.shm_root: Path | None = None
        self.work = make_folder("run")
        self.staging = self.work / "worker"
        worker = settings.for_device(kind).worker
        # The submission's compiler-cache folder (compile_cache.py), named in the sandbox's
        # rules now: the judge takes it with the worker (`source` says for which text).
        self.source = source
        self.compile_cache: compile_cache.CompileCache | None = None
        self.cache_warning: str | None = None
        if source is not None:
            contained = expected_containment(worker, kind).level == "full"
            self.compile_cache, self.cache_warning = compile_cache.for_run(
                worker, mode, contained, source)
        try:
            self.staging.mkdir()
            self.shm_root = shm_folder()
            folder = self.compile_cache.folder if self.compile_cache else None
            self.worker = WorkerProcess(worker, kind, readable=[self.staging],
                                        writable=[self.shm_root], compile_cache=folder)
        except BaseException:
            self.close()
            raise

    @classmethod
    def begin(cls, settings: Settings, requested: str | None,
              submission: Path | None = None, mode: str = "leaderboard") -> HeadStart | None:
        """Start a worker for the device a run will most likely get (`submission`,
        `mode`: the file it will load and the run's mode, for its compiler-cache folder);
        None where
        `worker.head_start` is off, or before a GPU's first use on a host that makes its device
        files on demand (below), or where it could not start (the run then starts its own
        and reports what fails there)."""
        kind = guess_device(requested)
        worker = settings.for_device(kind).worker
        if not worker.head_start or not _device_files_ready(kind):
            return None
        become_subreaper()  # as the judge does: the worker's orphans stay ours to reap
        head = None
        try:
            source = submission.read_text() if submission is not None else None
            head = cls(kind, settings, source, mode)  # removes what it made if it fails
            head.worker.start()
        except BaseException as exc:
            if head is not None:
                head.close()
            if not isinstance(exc, Exception):  # an interrupt: not ours to swallow
                raise
            return None  # e.g. the sandbox could not be set up in the child
        return head

    def __enter__(self) -> HeadStart:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self, kind: str, source: str | None = None) -> WorkerProcess | None:
        """The started worker, for a run on `kind` of `source` (given once); None for
        another kind ("" for a run that needs no worker of this kind) or where the file read
        now is not the text the worker's cache folder was named for (a worker begun without
        a file has no folder, and serves any): that worker is then stopped at once. Its
        cache folder goes with it (`take_cache`)."""
        worker, self.worker = self.worker, None
        changed = self.source is not None and source != self.source
        if worker is None or kind != self.kind or changed:
            if worker is not None:
                worker.close()
            if self.compile_cache is not None:
                self.compile_cache.release()
            self.compile_cache = self.cache_warning = None
            return None
        return worker

    def take_cache(self) -> tuple[compile_cache.CompileCache | None, str | None]:
        """The taken worker's cache folder (held; the caller releases it) and the warning
        of its preparation, once."""
        cache, self.compile_cache = self.compile_cache, None
        warning, self.cache_warning = self.cache_warning, None
        return cache, warning

    def close(self) -> None:
        """Stop a worker nobody took, let go of a cache folder nobody took, and remove the
        run's folders."""
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        if self.compile_cache is not None:
            self.compile_cache.release()
            self.compile_cache = None
        shutil.rmtree(self.work, ignore_errors=True)
        if self.shm_root is not None:
            shutil.rmtree(self.shm_root, ignore_errors=True)
