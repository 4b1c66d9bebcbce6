"""Attack: leave files in the project folder, the real home folder and /tmp. Contained:
only the scratch folder is writable."""
import os

from _attack import attempt, project_dir, real_homes, report
from task import input_t, output_t


def plant(folder):
    path = os.path.join(folder, "PLANTED_BY_SUBMISSION")
    with open(path, "w") as fh:
        fh.write("owned")
    return path


for folder in (project_dir(), os.path.join(project_dir(), "harness"), *real_homes(), "/tmp",
               "/dev/shm"):
    attempt(f"write into {folder}", lambda folder=folder: plant(folder))
print("SCRATCH_WRITE", plant(os.getcwd()), flush=True)  # the one place that is allowed
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
