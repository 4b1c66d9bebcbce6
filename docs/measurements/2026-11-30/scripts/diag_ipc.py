"""How can a sandboxed worker map the judge's GPU buffers? (GPU call, session 4, 2026-11-30)

A child process receives a GPU buffer of this (parent) process two ways, under each
variant of the worker's sandbox, and reads and writes it:
- torch: torch's own sharing (legacy CUDA IPC handle, pickled), what the harness did;
- vmm-fd: harness.judging.cuda_vmm (an exportable allocation, its file descriptor sent
  over a UNIX socket pair), what the harness would do instead.
Prints one line per (variant, way): OK with the sums read, or the error.
"""

import os
import socket
import subprocess
import sys
import tempfile
from multiprocessing.reduction import ForkingPickler, sendfds
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

import torch  # noqa: E402
import torch.multiprocessing  # noqa: E402,F401 - registers the CUDA reductions

from harness.judging import landlock  # noqa: E402
from harness.judging.containment import build_policy, prepare_scratch  # noqa: E402
from harness.judging.cuda_vmm import Arena  # noqa: E402
from harness.judging.seccomp import NoIpSockets  # noqa: E402

CHILD = r"""
import os, socket, sys, pickle
from multiprocessing.reduction import recvfds
import torch, torch.multiprocessing
way, fd = sys.argv[1], int(sys.argv[2])
s = socket.socket(fileno=fd)
def say(text):
    data = text.encode(); s.sendall(len(data).to_bytes(4, "little") + data)
try:
    torch.cuda.init()
    n = int.from_bytes(s.recv(4), "little")
    blob = b""
    while len(blob) < n:
        blob += s.recv(n - len(blob))
    if way == "torch":
        t = pickle.loads(blob)
    else:
        from harness.judging.cuda_vmm import Arena
        size = int(blob)
        (got,) = recvfds(s, 1)
        arena = Arena.open(torch.cuda.current_device(), got, size)
        t = arena.view(torch, 0, 1024 * 4, torch.float32, (1024,), (1,))
    before = float(t.sum())
    t.add_(1)
    torch.cuda.synchronize()
    say(f"read {before}")
except BaseException as exc:
    say(f"ERR {exc!r}"[:400])
"""


def sandboxed(variant: str, scratch: Path):
    policy = build_policy(scratch, [], [], "cuda", [])
    ruleset = None if variant == "none" else landlock.Ruleset.build(policy.read, policy.write,
                                                                    policy.devices)
    filt = NoIpSockets() if variant == "shipped" and NoIpSockets.available() else None

    def pre():
        if ruleset is not None:
            ruleset.restrict_self(drop_capabilities=variant == "shipped")
        if filt is not None:
            landlock.no_new_privs()
            filt.install()

    return pre


def trial(variant: str, way: str) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="diag-ipc-"))
    env = dict(os.environ, **prepare_scratch(scratch))
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, way, str(theirs.fileno())],
                            pass_fds=[theirs.fileno()], preexec_fn=sandboxed(variant, scratch),
                            env=env, cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    theirs.close()
    arena = None
    if way == "torch":
        t = torch.arange(1024, dtype=torch.float32, device="cuda")
        blob = bytes(ForkingPickler.dumps(t))
    else:
        arena = Arena.create(torch.cuda.current_device(), 1024 * 4)
        t = arena.view(torch, 0, 1024 * 4, torch.float32, (1024,), (1,))
        t.copy_(torch.arange(1024, dtype=torch.float32, device="cuda"))
        torch.cuda.synchronize()
        blob = str(arena.size).encode()
    ours.sendall(len(blob).to_bytes(4, "little") + blob)
    if arena is not None:
        sendfds(ours, [arena.export_fd()])
    try:
        ours.settimeout(60)
        n = int.from_bytes(ours.recv(4), "little")
        answer = ours.recv(n).decode()
    except Exception as exc:  # noqa: BLE001
        answer = f"no answer: {exc!r}"
    proc.wait(timeout=60)
    torch.cuda.synchronize()
    after = float(t.sum())
    tail = proc.stdout.read().decode().strip().splitlines()[-2:]
    print(f"{variant:<8} {way:<7} rc={proc.returncode} child: {answer}; parent reads {after} "
          f"(expected 523776.0 then 524800.0) {tail if proc.returncode else ''}", flush=True)
    del t
    if arena is not None:
        arena.close()


print("landlock", landlock.probe(), "uid", os.geteuid(), torch.__version__, flush=True)
torch.cuda.init()
torch.ones(1, device="cuda")
for variant in ("none", "landlock", "shipped"):
    for way in ("torch", "vmm-fd"):
        try:
            trial(variant, way)
        except Exception as exc:  # noqa: BLE001
            print(f"{variant:<8} {way:<7} parent failed: {exc!r}", flush=True)
