"""What the results say about the run device (`DeviceInfo`), without torch: the reports
read it from a document. Its methods that use the GPU import torch when called; finding
the device is harness/judging/measure/devices.py's."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.judging.measure.devices import ClockReading

# Freed GPU memory the judge's allocator may keep cached between its own uses; beyond it
# the judge gives it back (DeviceInfo.release_cached), as the worker shares the GPU.
CACHE_KEPT_BYTES = 1 << 30


@dataclass
class DeviceInfo:
    """What the results say about the run device."""

    kind: str  # "cuda" or "cpu"
    name: str
    chosen_by: str  # "flag" or "default"
    capability: str = ""
    sm_count: int = 0
    l2_bytes: int = 0
    memory_bytes: int = 0
    clocks: dict[str, Any] = field(default_factory=dict)
    software: dict[str, str] = field(default_factory=dict)
    uuid: str = ""  # "GPU-...": how nvidia-smi names this GPU whatever CUDA_VISIBLE_DEVICES says

    @property
    def ranking_kind(self) -> str:
        """Results rank only against results of the same device kind."""
        if self.kind == "cpu":
            return "CPU"
        return re.sub(r"^NVIDIA\s+|^AMD\s+", "", self.name).strip()

    def describe(self) -> str:
        """One plain line for people."""
        why = "chosen with --device" if self.chosen_by == "flag" else (
            "the default: a GPU was found" if self.kind == "cuda" else "the default: no GPU found"
        )
        if self.kind == "cpu":
            return f"CPU ({self.name}), {why}; timings use the host clock"
        clock = self.clocks.get("sm_mhz")
        extra = (f", SM clock {clock:.0f} MHz before the run (max "
                 f"{self.clocks.get('sm_max_mhz', 0):.0f} MHz; read per case in the JSON)"
                 if clock else "")
        return f"{self.name} (sm_{self.capability}){extra}, {why}; timings use CUDA events"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "name": self.name, "ranking_kind": self.ranking_kind,
            "chosen_by": self.chosen_by, "capability": self.capability,
            "sm_count": self.sm_count, "l2_bytes": self.l2_bytes,
            "memory_bytes": self.memory_bytes, "clocks": self.clocks, "software": self.software,
            "uuid": self.uuid,
        }

    def synchronize(self) -> None:
        """Wait until the GPU is idle; nothing to wait for on the CPU."""
        if self.kind == "cuda":
            import torch

            torch.cuda.synchronize()

    def release_cached(self) -> bool:
        """Give back to the GPU the memory this (the judge's) process holds freed in its
        allocator's cache, where that is more than `CACHE_KEPT_BYTES`: the worker, another
        process, needs it for the submission (a reference's intermediates can be tens of
        GiB). Whether it did; a host-side check otherwise, nothing on the CPU."""
        if self.kind != "cuda":
            return False
        import torch

        if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() <= CACHE_KEPT_BYTES:
            return False
        torch.cuda.empty_cache()
        return True

    def sleep_ns_per_cycle(self, cycles: int) -> float:
        """The GPU sleep's length per cycle (ns), as this process times `cycles` of it in
        its own context now: the shorter of two (a submission's GPU work still running would
        lengthen one; nothing of the worker's should run between samples)."""
        import torch

        rates = []
        for _ in range(2):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            rates.append(start.elapsed_time(end) * 1e6 / max(cycles, 1))
        return min(rates)

    def clock_reading(self) -> ClockReading | None:
        """A reading of the GPU's clocks started now, collected later (`ClockReading`);
        none on the CPU."""
        from harness.judging.measure.devices import ClockReading

        return ClockReading(self.uuid or None) if self.kind == "cuda" else None
