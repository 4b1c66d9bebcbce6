"""Attack: read, list and plant compiled code among other files' compiler caches
(harness/judging/startup/compile_cache.py), knowing where they are (the test writes their
folder in). Contained: of the cache folders, only this file's own is readable and writable
(under a scratch quota, a copy of it in the scratch folder, stored back after the run)."""
import os

from _attack import attempt, report
from task import input_t, output_t

MINE = os.environ["KERNEL_HARNESS_COMPILE_CACHE"]
ROOT_OF_CACHES = "__CACHES__"
VICTIM = os.path.join(ROOT_OF_CACHES, "0" * 40)


def plant(folder):
    path = os.path.join(folder, "PLANTED_BY_SUBMISSION")
    with open(path, "w") as fh:
        fh.write("owned")
    return path


def read_victim():
    with open(os.path.join(VICTIM, "kernel.cubin"), "rb") as fh:
        return fh.read()


attempt("list every file's cache folder", lambda: os.listdir(ROOT_OF_CACHES))
attempt("read another file's compiled code", read_victim)
attempt("plant code in another file's cache", lambda: plant(VICTIM))
attempt("make the cache folder of another source", lambda: os.mkdir(os.path.join(ROOT_OF_CACHES, "f" * 40)))
print("OWN_CACHE_WRITE", plant(MINE), flush=True)  # its own folder: allowed
# Not refused by Landlock (it has no rule for them), so not attempts: a link in its own
# folder that a judge walking it for build locks would follow to a lock outside, and the
# folder of folders locked down for every later evaluation (refused where the worker runs
# as a user of its own, which owns no folder of the judge's).
os.makedirs(os.path.join(MINE, "evil"), exist_ok=True)
os.symlink(os.path.join(os.path.dirname(ROOT_OF_CACHES), "outside-victim"),
           os.path.join(MINE, "evil", "torch_extensions"))
try:
    os.chmod(ROOT_OF_CACHES, 0)
except OSError:
    pass
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
