"""Does the worker's seccomp filter slow host code on this machine? (run 25)

Forks a child per mode (no filter; the filter as before, through prctl, which lets the
kernel tie its speculation mitigations to seccomp; the filter with SPEC_ALLOW, as the
harness now installs it), prints the child's speculation state and times host work:
torch.tensor of a small table (what a launcher does per call), a pure-Python loop and a
cheap system call. Prints one line per mode and round.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import torch  # noqa: E402

from harness.judging import landlock  # noqa: E402
from harness.judging.seccomp import NoIpSockets  # noqa: E402


def work() -> dict:
    rows = [[i] * 10 for i in range(8)]
    t = time.perf_counter()
    for _ in range(20000):
        torch.tensor(rows, dtype=torch.int64)
    tensor_us = (time.perf_counter() - t) / 20000 * 1e6
    t, x = time.perf_counter(), 0
    for i in range(2_000_000):
        x += i * i
    loop_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    for _ in range(200000):
        os.getppid()
    syscall_ns = (time.perf_counter() - t) / 200000 * 1e9
    status = [line for line in Path("/proc/self/status").read_text().splitlines()
              if line.startswith(("Speculation", "Seccomp:"))]
    return {"tensor_us": round(tensor_us, 2), "loop_ms": round(loop_ms, 1),
            "syscall_ns": round(syscall_ns, 1), "status": status}


def in_child(mode: str) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        if mode != "none":
            landlock.no_new_privs()
            NoIpSockets(speculation_mitigations=(mode == "prctl")).install()
        os.write(w, json.dumps(work()).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data)


def main() -> None:
    print("kernel", os.uname().release)
    for name in ("spec_store_bypass", "spectre_v2"):
        p = Path("/sys/devices/system/cpu/vulnerabilities") / name
        print(name, p.read_text().strip() if p.exists() else "?")
    for round_ in range(3):
        for mode in ("none", "prctl", "spec_allow"):
            print(round_, mode, json.dumps(in_child(mode)), flush=True)


if __name__ == "__main__":
    main()
