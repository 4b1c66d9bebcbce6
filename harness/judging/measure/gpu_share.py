"""Other processes on the judge's GPU, read before and during timing: a GPU another program
uses slows the calls and can trip the integrity checks that a slow host trips, so the
report names the sharing instead of blaming the submission, and a ranked run made on a
shared GPU is not recorded (`--allow-shared-gpu` records it anyway).

The driver lists the processes with a context on a GPU (NVML through pynvml where it
imports, else `nvidia-smi --query-compute-apps`). The judge's own family is left out: the
judge, its worker and everything below them, and the processes that started the judge (a
batch driver, a test runner). Inside a container with its own PID namespace the driver
gives the host's numbers, which name none of ours: there the other processes are counted
as those listed less ours that hold the GPU open, and their memory is not known.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.judging.measure.integrity import noise_flagged
from harness.judging.sandbox.procfs import family

# (pid, MiB used or None) per process with a context on the GPU; None: could not be read
Reader = Callable[[], "list[tuple[int, float | None]] | None"]
_DEVICE_FILE = re.compile(r"^/dev/nvidia\d+$")


def parse_compute_apps(text: str) -> list[tuple[int, float | None]]:
    """`nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits`
    read: a (pid, MiB) per line; a memory of `[N/A]` is None, a line without a pid is
    left out."""
    apps = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        try:
            memory: float | None = float(cells[1])
        except ValueError:
            memory = None
        apps.append((int(cells[0]), memory))
    return apps


def smi_reader(gpu: str) -> Reader:
    """A reader through nvidia-smi for the GPU `gpu` (its UUID: nvidia-smi ignores
    CUDA_VISIBLE_DEVICES)."""
    def read() -> list[tuple[int, float | None]] | None:
        try:
            proc = subprocess.run(
                ["nvidia-smi", "--query-compute-apps=pid,used_memory",
                 "--format=csv,noheader,nounits", "-i", gpu or "0"],
                capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return parse_compute_apps(proc.stdout) if proc.returncode == 0 else None
    return read


def nvml_reader(gpu: str) -> Reader | None:
    """A reader through NVML (pynvml) for the GPU `gpu`, or None where pynvml does not
    import or NVML does not know the GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = (pynvml.nvmlDeviceGetHandleByUUID(gpu) if gpu
                  else pynvml.nvmlDeviceGetHandleByIndex(0))
    except Exception:  # noqa: BLE001 - no pynvml, no NVML library, an unknown GPU
        return None

    def read() -> list[tuple[int, float | None]] | None:
        try:
            found = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:  # noqa: BLE001 - NVML's errors, a version mismatch
            return None
        return [(int(p.pid), p.usedGpuMemory / 2**20 if p.usedGpuMemory else None)
                for p in found]
    return read


def device_reader(gpu: str) -> Reader:
    """NVML where pynvml imports (no process to start per look), else, and wherever a
    look through NVML fails, nvidia-smi."""
    nvml, smi = nvml_reader(gpu), smi_reader(gpu)
    if nvml is None:
        return smi

    def read() -> list[tuple[int, float | None]] | None:
        apps = nvml()
        return apps if apps is not None else smi()
    return read


def holds_gpu(pid: int) -> bool:
    """Whether process `pid` has a GPU's device file open; True where its files cannot be
    read (the worker's, under some sandboxes): it is one of ours either way."""
    try:
        return any(_DEVICE_FILE.match(os.readlink(f"/proc/{pid}/fd/{fd}") or "")
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return os.path.exists(f"/proc/{pid}")


@dataclass
class Look:
    """One reading: when, and the other processes seen (pids None where the driver gives
    another PID namespace's numbers), with their memory (None where unknown)."""

    when: str
    processes: int
    memory_mib: float | None
    pids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"when": self.when, "processes": self.processes,
                "memory_mib": self.memory_mib, "pids": self.pids}


def others(apps: list[tuple[int, float | None]], ours: set[int],
           holds: Callable[[int], bool] = holds_gpu) -> tuple[int, float | None, list[int]]:
    """The processes of `apps` that are not `ours`: their count, memory (MiB) and pids.
    Where none of `apps` is ours, though the judge holds a context itself, the numbers are
    another PID namespace's: the count is then those listed less ours that hold the GPU
    open, with no memory and no pids."""
    if any(pid in ours for pid, _ in apps) or not apps:
        rest = [(pid, mib) for pid, mib in apps if pid not in ours]
        known = [mib for _, mib in rest if mib is not None]
        memory = sum(known) if len(known) == len(rest) else None
        return len(rest), memory, [pid for pid, _ in rest]
    mine = sum(1 for pid in ours if holds(pid))
    return max(0, len(apps) - mine), None, []


class ShareWatch:
    """Looks for other processes on the GPU at moments the judge names (a phase's start,
    after each timed case) and keeps what it saw; each case timed while the GPU was shared
    has its noise flags made notes (`excuse`)."""

    def __init__(self, reader: Reader | None, root: int | None = None,
                 ours: Callable[[int], set[int]] = family,
                 holds: Callable[[int], bool] = holds_gpu) -> None:
        self.reader, self.root = reader, os.getpid() if root is None else root
        self.ours, self.holds = ours, holds
        self.looks: list[Look] = []  # the looks that saw another process
        self.unreadable = False  # a look could not read the driver's list
        self.last: Look | None = None  # the latest look, shared or not

    @classmethod
    def for_device(cls, kind: str, gpu: str) -> ShareWatch:
        """A watch of the run's GPU; one that never looks on the CPU."""
        return cls(device_reader(gpu) if kind == "cuda" else None)

    def look(self, when: str) -> Look | None:
        """Read the other processes on the GPU now; the look, or None where there is
        nothing to read (the CPU) or the driver's list could not be read."""
        if self.reader is None:
            return None
        apps = self.reader()
        if apps is None:
            self.unreadable = True
            self.last = None
            return None
        count, memory, pids = others(apps, self.ours(self.root), self.holds)
        self.last = Look(when, count, memory, pids)
        if count:
            self.looks.append(self.last)
        return self.last

    def after_case(self, phase: str, result: Any, before: Look | None) -> None:
        """Look once a timed case is done; where this look or the one `before` it saw
        another process, the case was timed on a shared GPU: say so in its record and
        excuse its noise flags (`excuse`)."""
        after = self.look(f"after {phase} case {result.index}")
        shared = [look for look in (before, after) if look is not None and look.processes]
        if shared:
            excuse(result, max(shared, key=lambda look: look.processes))

    def summary(self) -> dict[str, Any] | None:
        """The evaluation's `gpu_shared`: the most other processes seen at once, the most
        memory they held at once (None where unknown), and every look that saw any; None
        where none did."""
        if not self.looks:
            return None
        memories = [look.memory_mib for look in self.looks]
        return {"processes": max(look.processes for look in self.looks),
                "memory_mib": None if None in memories else max(memories),
                "seen": [look.to_dict() for look in self.looks]}


def excuse(result: Any, look: Look) -> None:
    """A timed case seen on a shared GPU: `integrity.gpu_shared` says by how many other
    processes; where each of its flags comes from a check that a slow host or a busy GPU
    trips in honest code (`noise_flagged`: the two clocks, the calibration),
    they move there (`flags`), and the report prints them as notes, not suspicion. Flags
    that say what the submission does (a thread left running) stand."""
    record = {"processes": look.processes, "memory_mib": look.memory_mib}
    if result.flags and len(noise_flagged(result.integrity)) == len(result.flags):
        record["flags"], result.flags = list(result.flags), []
    result.integrity["gpu_shared"] = record


def describe(shared: dict[str, Any]) -> str:
    """One line for people: how many other processes used the GPU, and their memory."""
    n, memory = shared["processes"], shared.get("memory_mib")
    held = f", holding {memory:,.0f} MiB" if memory is not None else ""
    return (f"the GPU was shared: {n} other process{'es' if n > 1 else ''} used it during "
            f"this run{held}; its times may be slow, and flags of the checks a busy GPU "
            "trips are notes, not suspicion of the submission")
