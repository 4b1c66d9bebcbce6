"""The run device: which one, its name and clocks, waiting for it and timing its sleep, and
the cache flush between calls."""

from __future__ import annotations

import platform
import subprocess
import sys
from typing import Any

import torch

from harness.judging.measure.device_info import DeviceInfo


class DeviceError(ValueError):
    """A device that was asked for but is not there."""


def pick_device(requested: str | None) -> DeviceInfo:
    """The device asked for, else the GPU when there is one, else the CPU."""
    if requested not in (None, "cpu", "cuda"):
        raise DeviceError(f"unknown device {requested!r}: use cpu or cuda")
    has_gpu = torch.cuda.is_available()
    if requested == "cuda" and not has_gpu:
        raise DeviceError("--device cuda was asked for, but no CUDA GPU is visible here")
    kind = requested or ("cuda" if has_gpu else "cpu")
    software = {"torch": torch.__version__, "python": platform.python_version()}
    triton = triton_version()
    if triton:
        software["triton"] = triton
    chosen = "flag" if requested else "default"
    if kind == "cpu":
        return DeviceInfo("cpu", _cpu_name(), chosen, software=software)
    props = torch.cuda.get_device_properties(0)
    uuid = _smi_uuid(props)
    software["cuda"] = str(torch.version.cuda)
    return DeviceInfo(
        kind="cuda",
        name=props.name,
        chosen_by=chosen,
        capability=f"{props.major}{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
        memory_bytes=int(props.total_memory),
        clocks=read_clocks(uuid),
        uuid=uuid,
        software=software,
    )


def triton_version() -> str:
    """Triton's version, read from its package metadata: importing triton only to ask
    would cost the judge a second or so where its bytecode is compiled afresh. "" when no
    Triton is installed (it is optional on the CPU)."""
    from importlib import metadata

    for dist in ("triton", "pytorch-triton-rocm", "pytorch-triton"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    module = sys.modules.get("triton")
    return str(getattr(module, "__version__", "")) if module is not None else ""


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_CLOCK_QUERY = ("clocks.sm", "clocks.max.sm", "clocks.mem", "temperature.gpu", "power.draw")
_CLOCK_KEYS = ("sm_mhz", "sm_max_mhz", "mem_mhz", "temp_c", "power_w")


class ClockReading:
    """One nvidia-smi reading of a GPU's clocks, started now and collected later.

    The caller goes on while nvidia-smi runs (tens of milliseconds): the judge starts
    one when a case's timed calls end and collects it after the case is released.
    `gpu` names the GPU for nvidia-smi (a UUID such as "GPU-..."): nvidia-smi ignores
    CUDA_VISIBLE_DEVICES, so an index would name the wrong GPU in a pinned batch."""

    def __init__(self, gpu: str | None = None) -> None:
        try:
            self.proc: subprocess.Popen | None = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={','.join(_CLOCK_QUERY)}",
                 "--format=csv,noheader,nounits", "-i", gpu or "0"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None

    def cancel(self) -> None:
        """Stop and reap nvidia-smi if it still runs (before the judge kills strays)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.communicate()

    def result(self, timeout: float = 10.0) -> dict[str, Any]:
        """SM and memory clocks (MHz), temperature (C) and power (W); {} when unreadable."""
        if self.proc is None:
            return {}
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return {}
        lines = out.strip().splitlines()
        if self.proc.returncode != 0 or not lines:
            return {}
        values = {}
        for key, raw in zip(_CLOCK_KEYS, lines[0].split(",")):
            try:
                values[key] = float(raw.strip())
            except ValueError:
                continue
        return values


def read_clocks(gpu: str | None = None) -> dict[str, Any]:
    """A GPU's clocks now (see ClockReading), waiting for the answer."""
    return ClockReading(gpu).result()


def _smi_uuid(props: Any) -> str:
    """A GPU's UUID as nvidia-smi writes it ("GPU-..."), or "" when torch does not say."""
    uuid = str(getattr(props, "uuid", "") or "")
    if not uuid:
        return ""
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


# The GPU flush writes this many times the L2's size (at least 50 MiB's worth), so that
# nothing of the last call stays in the cache.
L2_FLUSH_FACTOR = 2
# Bytes the CPU flush writes between calls, more than a host's last-level cache.
CPU_FLUSH_BYTES = 32 << 20


class Flusher:
    """Evicts caches between calls: writes a buffer larger than L2 (or the CPU's caches)."""

    def __init__(self, device: DeviceInfo, l2_factor: float = L2_FLUSH_FACTOR,
                 cpu_bytes: int = CPU_FLUSH_BYTES) -> None:
        if device.kind == "cuda":
            size = int(max(device.l2_bytes, 50 << 20) * l2_factor)
            self.buffer = torch.empty(size // 4, dtype=torch.int32, device="cuda")
        else:
            self.buffer = torch.empty(cpu_bytes // 4, dtype=torch.int32)
        self.cuda = device.kind == "cuda"

    @property
    def nbytes(self) -> int:
        """The bytes each flush writes."""
        return self.buffer.numel() * self.buffer.element_size()

    def flush(self) -> None:
        """Write the buffer and wait until the device is idle."""
        self.buffer.zero_()
        if self.cuda:
            torch.cuda.synchronize()
