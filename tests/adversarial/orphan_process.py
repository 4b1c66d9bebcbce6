"""Attack: leave a process running after the worker ends (a new session, so killing the
worker's group misses it). Caught by: the judge adopts orphans (child subreaper) and kills
every process left; screen flag spawns-processes."""
import subprocess
import sys

from task import input_t, output_t

_child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                          start_new_session=True)
print(f"ORPHAN_PID={_child.pid}", flush=True)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
