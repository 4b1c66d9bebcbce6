"""Attack: read another evaluation's scratch, staging and shared-memory folders while it
runs (its inputs, its files). Contained: only this run's own folders are readable."""
import glob
import os

from _attack import attempt, report
from task import input_t, output_t

mine = os.path.realpath(os.getcwd())


def read_all(pattern):
    got = []
    for folder in glob.glob(pattern):
        if os.path.realpath(folder) == mine:
            continue
        for root, _, files in os.walk(folder):
            for name in files:
                with open(os.path.join(root, name), "rb") as fh:
                    got.append(fh.read(64))
    return got


for pattern in ("/tmp/harness-worker-*", "/tmp/harness-run-*", "/dev/shm/harness-shm-*"):
    attempt(f"list {pattern}", lambda pattern=pattern: glob.glob(pattern) or 1 / 0)
    attempt(f"read {pattern}", lambda pattern=pattern: read_all(pattern) or 1 / 0)
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
