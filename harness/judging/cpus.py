"""Which CPUs the judge and the worker run on.

A GPU call's time includes the host time it takes to launch it, so the worker's host
code must run at the same speed in every evaluation. The judge polls for the worker's
reply while a call runs; on the same physical core (two hyperthreads) that polling
slows the worker's launches by a varying amount. With pinning on, the worker gets a
physical core of its own and the judge (and everything it starts) the others.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SYSFS = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class CpuPlan:
    """The logical CPUs of the judge and of the worker (disjoint physical cores)."""

    judge: frozenset[int]
    worker: frozenset[int]

    def to_dict(self) -> dict[str, list[int]]:
        return {"judge": sorted(self.judge), "worker": sorted(self.worker)}


def cores(allowed: set[int] | frozenset[int], sysfs: Path | None = None) -> list[list[int]]:
    """`allowed` grouped by physical core (hyperthread siblings together), in CPU order.

    A CPU whose topology cannot be read counts as a core of its own."""
    sysfs = sysfs or SYSFS
    groups: dict[tuple[str, str], list[int]] = {}
    for cpu in sorted(allowed):
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            key = ((topology / "physical_package_id").read_text().strip(),
                   (topology / "core_id").read_text().strip())
        except OSError:
            key = ("?", str(cpu))
        groups.setdefault(key, []).append(cpu)
    return sorted(groups.values())


def plan(allowed: set[int] | frozenset[int], sysfs: Path | None = None) -> CpuPlan | None:
    """The worker on the last physical core of `allowed`, the judge on the rest.

    None when there are fewer than two physical cores: nothing to separate."""
    groups = cores(allowed, sysfs)
    if len(groups) < 2:
        return None
    worker = frozenset(groups[-1])
    return CpuPlan(judge=frozenset(allowed) - worker, worker=worker)


def share(allowed: set[int] | frozenset[int], index: int, count: int,
          sysfs: Path | None = None) -> set[int]:
    """The `index`-th of `count` equal shares of the physical cores in `allowed` (one per
    evaluation running at once); all of `allowed` when a share would be under two cores."""
    groups = cores(allowed, sysfs)
    per = len(groups) // max(count, 1)
    if per < 2:
        return set(allowed)
    return {cpu for group in groups[index * per:(index + 1) * per] for cpu in group}


def slot_cpus(index: int, count: int) -> str:
    """The CPUs (comma-separated) of evaluation slot `index` of `count` running at once on
    this machine; empty where the OS cannot say."""
    allowed = allowed_now()
    if not allowed:
        return ""
    return ",".join(str(c) for c in sorted(share(allowed, index % max(count, 1), count)))


def parse(text: str) -> set[int]:
    """The CPUs of a `slot_cpus` string."""
    return {int(c) for c in text.split(",") if c.strip()}


def allowed_now() -> set[int] | None:
    """This process's CPUs, or None where the OS cannot say (not Linux)."""
    getter = getattr(os, "sched_getaffinity", None)
    return set(getter(0)) if getter else None


def pin(cpus: set[int] | frozenset[int]) -> None:
    """Restrict this process (and what it starts later) to `cpus`."""
    os.sched_setaffinity(0, cpus)
