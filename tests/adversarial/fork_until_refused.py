"""Fault: fork sleeping children until fork fails, then keep trying until the time runs out
(a fork bomb). Caught by: the process bound (worker.max_processes, a user of its own with
RLIMIT_NPROC): fork fails past it, the machine stays responsive, the run times out with a
verdict that names the bound, and every child is killed with the worker. Prints how many
forks succeeded (FORKED n) and its user (WORKER_UID n)."""
import os
import time

from task import input_t, output_t


def _sleep_forever() -> None:
    try:
        time.sleep(600)
    finally:
        os._exit(0)


def custom_kernel(data: input_t) -> output_t:
    print(f"WORKER_UID {os.getuid()}", flush=True)
    forked = 0
    while True:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            _sleep_forever()
        forked += 1
    print(f"FORKED {forked}", flush=True)
    while True:  # keeps trying: each attempt fails while the children hold the bound
        try:
            if os.fork() == 0:
                _sleep_forever()
        except OSError:
            time.sleep(0.01)
