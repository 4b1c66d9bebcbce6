"""The Ray backend of `batch`: each evaluation is a Ray task that asks for one GPU (Ray
pins it through CUDA_VISIBLE_DEVICES) or one CPU, and runs the same judge process on its
node. The driver gets the result document back and records it. Optional: pip install
-e '.[ray]'."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_on_ray(batch, address: str | None, on_change: Callable[[], None]) -> None:
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("the Ray backend needs ray: pip install -e '.[ray]'") from exc
    import time

    import torch

    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(1, batch_cpus(batch)), log_to_driver=False,
                     include_dashboard=False)
    gpus = ray.cluster_resources().get("GPU", 0)
    use_gpu = batch.device != "cpu" and gpus > 0
    wall = batch.wall_limit()  # the longest of the batch's tasks
    pin = use_gpu and batch.settings.worker.pin_cpus
    node_gpus = int(gpus)

    @ray.remote(num_gpus=1 if use_gpu else 0, num_cpus=1, max_retries=0)
    def evaluate(request: dict[str, Any]) -> dict[str, Any]:
        import os
        import socket

        from harness.batch import run_judge
        from harness.cpus import slot_cpus

        where = f"{socket.gethostname()} GPU {os.environ.get('CUDA_VISIBLE_DEVICES', '')}" if use_gpu \
            else f"{socket.gethostname()} CPU"
        env = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "") if use_gpu else ""}
        gpu = env["CUDA_VISIBLE_DEVICES"].split(",")[0]
        if pin and gpu.isdigit():  # evaluations on one node's GPUs get separate cores
            env["_cpus"] = slot_cpus(int(gpu), node_gpus)
        doc = run_judge(request, env, wall)
        doc["_where"] = where
        return doc

    del torch
    pending = {}
    for job in batch.jobs:
        ref = evaluate.remote(batch.request(job))
        pending[ref] = job
        job.state, job.where, job.started = "running", "ray", time.time()
    on_change()
    lock = threading.Lock()
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            job = pending.pop(ref)
            try:
                doc = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a lost node, a killed task
                doc = {"error": f"the Ray task failed: {exc}"}
            with lock:
                job.where = doc.pop("_where", "ray")
                job.used.append(job.where)
            batch.finish(job, doc)
            on_change()


def batch_cpus(batch) -> int:
    import os

    return min(len(batch.jobs), max(1, (os.cpu_count() or 2)))
