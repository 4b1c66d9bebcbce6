"""One rank of a multi-GPU case, as its submission's worker takes part: which rank of how
many, in which network, and how it joins the others.

A case's ranks each run in a sandboxed worker of their own (each its own user, its own
process bound: `bounds.worker_uid`), joined in the case's network namespace (network.py),
where loopback is all there is. Before the submission is imported, the worker joins the
ranks' process group as the public evaluators' processes do (`join_group`), so that the
submission finds `torch.distributed` initialised: gloo on the CPU, NCCL on GPUs, its
rendezvous a TCP store held by rank 0 on a fixed port of that loopback, which is the
case's own (no other process can be inside its namespace).
"""

from __future__ import annotations

import faulthandler
import os
import signal
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

PORT = 29500  # the rendezvous's port, on the namespace's own loopback


@dataclass(frozen=True)
class RankSeat:
    """Rank `rank` of `world`, in the network namespace at `network` (its file), joining
    over `backend` ("gloo" or "nccl") and waiting at most `timeout_s` for the others (at
    the join and in every collective)."""

    rank: int
    world: int
    network: Path
    backend: str = "gloo"
    timeout_s: float = 300.0

    def to_wire(self) -> dict[str, Any]:
        """What the worker is told in its `load` request."""
        return {"rank": self.rank, "world": self.world, "backend": self.backend,
                "timeout_s": self.timeout_s}


def join_group(seat: dict[str, Any]) -> str:
    """In the worker, before the submission is imported: join the ranks' process group
    (`seat`: `RankSeat.to_wire()`). "" once joined, else why it could not."""
    import torch.distributed as dist

    rank, world = int(seat["rank"]), int(seat["world"])
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # the namespace's one interface
    try:
        dist.init_process_group(
            seat["backend"], init_method=f"tcp://127.0.0.1:{PORT}", rank=rank,
            world_size=world, timeout=timedelta(seconds=float(seat["timeout_s"])))
    except Exception as exc:  # noqa: BLE001 - said to the judge, which names the rank
        return (f"rank {rank} of {world} could not join the ranks' process group "
                f"({seat['backend']}): {exc!r}")
    # Where it is, when the judge asks (SIGUSR1): a rank that hangs is the one whose stacks
    # are not in a collective, waiting for it (ranks/ranked.py).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return ""
