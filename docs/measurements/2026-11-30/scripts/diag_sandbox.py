"""Which part of the worker's sandbox stops CUDA from starting (GPU call 3, 2026-11-30).

Starts a child that initialises CUDA and runs one kernel under variants of the sandbox:
the Landlock ruleset, the capability drop (as root), the seccomp filter, alone and
together, and the ruleset widened to all of / and /dev. Under strace where installed.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from harness.judging import landlock  # noqa: E402
from harness.judging.containment import build_policy  # noqa: E402
from harness.judging.seccomp import NoIpSockets  # noqa: E402

CHILD = ("import torch; n = torch.cuda.device_count(); x = torch.ones(4, device='cuda'); "
         "print('OK', n, float((x + 1).sum()))")


def variant(name, landlock_on, caps, seccomp, wide=False, strace=False, write=(), own_proc_rw=False):
    scratch = Path(tempfile.mkdtemp(prefix="diag-"))
    policy = build_policy(scratch, [], [], "cuda", ["/"] if wide else [])
    policy.write += [Path(p) for p in write]
    if wide:
        policy.devices.append(Path("/dev"))
    ruleset = landlock.Ruleset.build(policy.read, policy.write, policy.devices) if landlock_on else None
    filt = NoIpSockets() if seccomp and NoIpSockets.available() else None

    def pre():
        if ruleset is not None and own_proc_rw:
            ruleset.allow("/proc/self", landlock.READ | landlock.WRITE)
        if ruleset is not None:
            ruleset.restrict_self(drop_capabilities=caps)
        elif caps and os.geteuid() == 0:
            for cap in range(landlock._last_cap() + 1):
                landlock._LIBC.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        if filt is not None:
            landlock.no_new_privs()
            filt.install()

    cmd = [sys.executable, "-c", CHILD]
    log = scratch / "strace.txt"
    if strace and shutil.which("strace"):
        cmd = ["strace", "-f", "-o", str(log), *cmd]
    env = dict(os.environ, HOME=str(scratch), TMPDIR=str(scratch))
    r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=pre, env=env, timeout=60,
                       cwd=scratch)
    last = (r.stdout.strip().splitlines() or r.stderr.strip().splitlines() or ["?"])[-1]
    print(f"{name:<40} rc={r.returncode} {last[:200]}", flush=True)
    if log.exists():
        bad = [ln for ln in log.read_text().splitlines() if "= -1 E" in ln and "ENOENT" not in ln and "ENOTTY" not in ln]
        print("  failing calls (not ENOENT), first 40:")
        for ln in bad[:40]:
            print("   ", ln[:220])
    if ruleset is not None:
        ruleset.close()


print("landlock", landlock.probe(), "uid", os.geteuid(), "strace", shutil.which("strace"))
if sys.argv[1:] == ["self"]:  # call 6: its own /proc folder, or the driver's?
    variant("shipped + write own /proc/<pid>", True, True, True, own_proc_rw=True)
    variant("shipped + write /proc/driver", True, False, False, write=["/proc/driver"])
    sys.exit()
if sys.argv[1:] == ["where"]:  # call 5: which place
    for place in ("/dev", "/proc", "/sys", "/run", "/var"):
        variant(f"shipped + write {place}", True, False, False, write=[place])
    sys.exit()
if len(sys.argv) > 1:  # call 4: where must CUDA write?
    variant("I everything writable (/ and /dev)", True, False, False, wide=True, write=["/"])
    variant("K shipped + write /dev/shm and /tmp", True, False, False, write=["/dev/shm", "/tmp"])
    variant("L shipped + write /dev/shm", True, False, False, write=["/dev/shm"])
    variant("M shipped + write /tmp", True, False, False, write=["/tmp"])
    sys.exit()
variant("A shipped: landlock+caps+seccomp", True, True, True, strace=True)
variant("B landlock+seccomp, caps kept", True, False, True)
variant("C landlock+caps, no seccomp", True, True, False)
variant("D landlock alone", True, False, False)
variant("E caps drop alone", False, True, False)
variant("F seccomp alone", False, False, True)
variant("G landlock widened to / and /dev", True, False, False, wide=True)
variant("H landlock widened + caps + seccomp", True, True, True, wide=True)
