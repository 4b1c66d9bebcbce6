"""Attack: a process in a session of its own that forks and exits, over and over (in C
where a compiler is at hand: thousands of forks a second), so that no pid lives long
enough for a sweep of the judge's children to find it: it outlives the run, with what its
sandbox lets it do. Caught by: the judge kills each stray's whole process group, which the
chain's generations share (a fork in a group being killed dies with it), and the chain's
exited forks wait as zombies adopted by the judge, naming the group; screen flag
spawns-processes. It stops by itself after 20 s, a safety net for the test."""
import os
import shutil
import subprocess
import sys

from task import input_t, output_t

# Each second, a heartbeat in the one folder that outlives a test run (the compiler-cache
# folder), so that the test can tell whether the chain is still alive.
_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    time_t end = time(0) + 20, beat = 0;
    while (time(0) < end) {
        if (time(0) != beat) {
            beat = time(0);
            int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd >= 0) { dprintf(fd, "%ld\n", (long)beat); close(fd); }
        }
        if (fork() != 0) _exit(0);
    }
    return 0;
}
"""
_PY = r"""
import os, sys, time
end, beat = time.monotonic() + 20, 0
while time.monotonic() < end:
    if int(time.time()) != beat:
        beat = int(time.time())
        with open(sys.argv[2], "w") as fh:
            fh.write(str(beat))
    if os.fork():
        os._exit(0)
"""
_cc = shutil.which("cc") or shutil.which("gcc")
_built = False
if _cc:
    with open("chain.c", "w") as fh:
        fh.write(_C)
    _built = subprocess.run([_cc, "-O2", "-o", "chain", "chain.c"]).returncode == 0
_beat = os.path.join(os.environ.get("KERNEL_HARNESS_COMPILE_CACHE", "."), "heartbeat")
_cmd = ([os.path.abspath("chain"), "FORK_CHAIN_MARK", _beat] if _built
        else [sys.executable, "-c", _PY, "FORK_CHAIN_MARK", _beat])
print(f"FORK_CHAIN {'c' if _built else 'python'}", flush=True)
subprocess.Popen(_cmd, start_new_session=True)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
