"""Where `batch` runs its evaluations: one interface, two backends.

Each backend takes the batch's jobs, runs each request in a judge process
(`harness.execution.judge_process`) and hands every typed result back to `batch.finish`,
which records it. The local backend keeps one job per GPU (or per CPU slot) at a time, a
multi-GPU task's job on a slot per rank (harness/execution/slot_queue.py); the Ray backend
makes each job a Ray task asking for one GPU (Ray pins it through CUDA_VISIBLE_DEVICES) or
one CPU, a multi-GPU task's job one per rank (optional: pip install -e '.[ray]'). Judges
are forked from a template (harness/execution/judge_template.py): one per local slot, one
per Ray worker process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from harness.consts import JobState
from harness.execution.judge_process import run_judge
from harness.execution.judge_template import JudgeTemplate
from harness.execution.protocol import Failure, JudgeRequest, Result, Unjudged
from harness.execution.slot_queue import SlotQueue, slots_taken

if TYPE_CHECKING:
    from harness.judging import Progress


class BatchRun(Protocol):
    """What a backend needs of a batch (see harness.frontends.batch.Batch)."""

    jobs: list
    device: str | None
    lock: threading.Lock

    def request(self, job) -> JudgeRequest: ...
    def slots(self, job) -> int: ...
    def progress(self, job, on_change: Callable[[], None]) -> Progress: ...
    def finish(self, job, result: Result) -> None: ...


class Backend(Protocol):
    """Runs every job of a batch and calls `on_change` whenever one starts or ends."""

    def run(self, batch: BatchRun, on_change: Callable[[], None]) -> None: ...


def make_backend(name: str, address: str | None, jobs: int | None) -> Backend:
    """The backend called `name` (`local` or `ray`)."""
    if name == "ray":
        return RayBackend(address)
    return LocalBackend(jobs)


def local_slots(device: str | None, jobs: int | None) -> list[dict[str, str]]:
    """One environment per slot: a GPU each, or CPU slots. Asked for the CPU, it does not
    import torch (the slots' judges do)."""
    if device != "cpu" and _cuda_available():
        import torch

        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [g for g in visible.split(",") if g] if visible else [str(i) for i in range(torch.cuda.device_count())]
        return [{"CUDA_VISIBLE_DEVICES": g, "_where": f"GPU {g}"} for g in ids]
    return [{"CUDA_VISIBLE_DEVICES": "", "_where": f"CPU slot {i}"} for i in range(max(1, jobs or 1))]


def joined(slots: list[dict[str, str]]) -> dict[str, str]:
    """One environment for a job on several slots: their GPUs all visible to it."""
    if len(slots) == 1:
        return slots[0]
    gpus = [s["CUDA_VISIBLE_DEVICES"] for s in slots if s["CUDA_VISIBLE_DEVICES"]]
    return {"CUDA_VISIBLE_DEVICES": ",".join(gpus),
            "_where": " + ".join(s["_where"] for s in slots)}


def _run_job(batch: BatchRun, job: Any, slot: dict[str, str], template: JudgeTemplate | None,
             on_change: Callable[[], None]) -> None:
    """One job on `slot` (its environment pins the judge to its GPUs), recorded."""
    with batch.lock:
        job.state, job.where, job.started = JobState.RUNNING, slot["_where"], time.time()
        job.used.append(slot["_where"])
    on_change()
    result = run_judge(replace(batch.request(job), env=slot), template,
                       batch.progress(job, on_change))
    batch.finish(job, result)
    on_change()


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class LocalBackend:
    """Every local GPU (one job each at a time), or `jobs` CPU slots; a job of a
    multi-GPU task on as many slots as it has ranks."""

    def __init__(self, jobs: int | None) -> None:
        self.jobs = jobs

    def run(self, batch: BatchRun, on_change: Callable[[], None]) -> None:
        slots = local_slots(batch.device, self.jobs)
        work = SlotQueue(batch.jobs, len(slots), batch.slots)

        def serve(index: int) -> None:
            template = JudgeTemplate()  # the slot's judges are forked from it
            try:
                while (taken := work.next(index)) is not None:
                    job, used = taken
                    try:
                        # a job on several slots: a judge from scratch, pinned to them all
                        _run_job(batch, job, joined([slots[i] for i in used]),
                                 template if len(used) == 1 else None, on_change)
                    finally:
                        work.done(used)
            finally:
                work.retire(index)
                template.close()

        threads = [threading.Thread(target=serve, args=(i,), daemon=True)
                   for i in range(len(slots))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


class RayBackend:
    """Each job a Ray task on a cluster (`address`) or a local Ray instance."""

    def __init__(self, address: str | None) -> None:
        self.address = address

    def run(self, batch: BatchRun, on_change: Callable[[], None]) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RuntimeError("the Ray backend needs ray: pip install -e '.[ray]'") from exc

        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=max(1, _cpus_for(batch)), log_to_driver=False,
                         include_dashboard=False)
        cluster = ray.cluster_resources()
        use_gpu = batch.device != "cpu" and cluster.get("GPU", 0) > 0

        @ray.remote(max_retries=0)
        def evaluate(request: JudgeRequest) -> Result:
            import os
            import socket

            from harness.execution.judge_process import run_judge
            from harness.execution.judge_template import shared

            host = socket.gethostname()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "") if use_gpu else ""
            where = f"{host} GPU {visible}" if use_gpu else f"{host} CPU"
            result = run_judge(replace(request, env={"CUDA_VISIBLE_DEVICES": visible}),
                               shared())
            return replace(result, where=where)

        pending = {}
        for job in batch.jobs:
            asks = ray_resources(batch.slots(job), use_gpu, cluster)
            ref = evaluate.options(**asks).remote(batch.request(job))
            pending[ref] = job
            job.state, job.where, job.started = JobState.RUNNING, "ray", time.time()
        on_change()
        try:
            self._collect(ray, batch, pending, on_change)
        except BaseException:  # the driver is stopping: its tasks' judges die with them
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - a task already gone
                    pass
            raise

    @staticmethod
    def _collect(ray: Any, batch: BatchRun, pending: dict, on_change: Callable[[], None]) -> None:
        """Record each task's result as it comes."""
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a lost node, a killed task
                    result = Unjudged(Failure.MACHINE, f"the Ray task failed: {exc}")
                with batch.lock:
                    job.where = result.where or "ray"
                    job.used.append(job.where)
                batch.finish(job, result)
                on_change()


def ray_resources(need: int, use_gpu: bool, cluster: dict[str, float]) -> dict[str, int]:
    """What a job's Ray task asks for: a GPU per rank (Ray pins them all through
    CUDA_VISIBLE_DEVICES), or a CPU per rank; one where the cluster has fewer than it
    needs (its judge then says what it needs)."""
    n = slots_taken(need, int(cluster.get("GPU" if use_gpu else "CPU", 0)))
    return {"num_gpus": n, "num_cpus": 1} if use_gpu else {"num_gpus": 0, "num_cpus": n}


def _cpus_for(batch: BatchRun) -> int:
    return min(len(batch.jobs), max(1, (os.cpu_count() or 2)))
