"""What a worker may touch: the paths of its Landlock policy and its scratch layout.

Read (and execute): the Python installation and its packages, system libraries and
compilers (/usr, /lib*), a few files of /etc, /proc and /sys, the staged task folder and
the `harness` package alone (never the project folder: it holds the results database
and the tasks' references). Read and write: the scratch folder (home, temporary files,
CUDA's cache), in an unranked run its source's compiler-cache folder (compile_cache.py),
and the run's shared-memory folder. Devices: /dev/null and friends, the
NVIDIA device files. Everything else is refused by the kernel, network connections too.
"""

from __future__ import annotations

import glob
import json
import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from harness import bytecode
from harness.judging.sandbox import landlock
from harness.settings import ROOT

# Read-only system paths (those that exist). /etc, /proc and /sys are listed file by
# file: /etc holds credentials, /proc/kcore and /proc/<judge> hold memory.
SYSTEM_READ = (
    "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone",
    "/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/alternatives",
    "/etc/mime.types", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf",
    "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/devices", "/proc/filesystems",
    "/proc/loadavg", "/proc/uptime", "/proc/version", "/proc/modules", "/proc/sys",
    "/proc/driver/nvidia",
    "/sys/devices", "/sys/bus", "/sys/class", "/sys/fs/cgroup", "/sys/module/nvidia",
    "/sys/module/nvidia_uvm",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
NVIDIA_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dxg")
# The folders of a worker's scratch layout, by the variables that name them.
SCRATCH_FOLDERS = ("TMPDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH")
# The worker's view of the policy, for its audit hook (harness.judging.sandbox.refusals).
POLICY_ENV = "KERNEL_HARNESS_SANDBOX"


@dataclass
class Policy:
    """The paths a worker may read, write, and use as devices."""

    read: list[Path] = field(default_factory=list)
    write: list[Path] = field(default_factory=list)
    devices: list[Path] = field(default_factory=list)
    no_ip: bool = False  # the seccomp filter of seccomp.py refuses IP sockets

    def exposed(self) -> list[str]:
        """The judge's own places that an allowed path holds (the project inside /opt,
        say): Landlock cannot carve them out, so containment is then only partial."""
        private = {"the project folder": ROOT, "the judge's working directory": Path.cwd(),
                   "the home folder": Path.home()}
        if os.environ.get("HARNESS_DB") and "://" not in os.environ["HARNESS_DB"]:
            private["the results database"] = Path(os.environ["HARNESS_DB"])
        out = []
        for what, place in private.items():
            place = place.resolve()
            for allowed in self.read + self.write + self.devices:
                allowed = allowed.resolve()
                if place == allowed or allowed in place.parents:
                    out.append(f"isolation of {what} ({place} is inside the allowed {allowed})")
                    break
        return out

    def to_env(self) -> str:
        return json.dumps({"read": [str(p) for p in self.read + self.devices],
                           "write": [str(p) for p in self.write + self.devices],
                           "no_ip": self.no_ip})


def python_paths() -> list[Path]:
    """The interpreter, its standard library, headers (Triton compiles against them) and
    package folders, and the judge's import path outside the project folder."""
    paths = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                               sys.base_exec_prefix)}
    paths.add(Path(os.path.realpath(sys.executable)).parent)
    paths.update(Path(p) for p in site.getsitepackages())
    user_site = site.getusersitepackages()
    if user_site and os.path.isdir(user_site):
        paths.add(Path(user_site))
    for key in ("stdlib", "platstdlib", "include", "platinclude", "purelib", "platlib"):
        if sysconfig.get_paths().get(key):
            paths.add(Path(sysconfig.get_paths()[key]))
    for entry in sys.path:
        if entry and os.path.isdir(entry) and _safe_import_dir(Path(entry).resolve()):
            paths.add(Path(entry).resolve())
    return sorted(paths)


def _safe_import_dir(path: Path) -> bool:
    """An import folder the worker may read: not the project (or above it), not the
    working directory (or above it), not a bare home or /tmp."""
    blocked = {Path("/"), Path("/tmp"), Path.home(), Path("/root"), Path("/home")}
    for place in (ROOT.resolve(), Path.cwd().resolve()):
        if path == place or path in place.parents or place in path.parents:
            return False
    return path not in blocked


def build_policy(scratch: Path, staging: list[Path], shm: list[Path], device: str,
                 extra_read: list[str]) -> Policy:
    """The policy of one worker: see the module's docstring."""
    libraries = python_paths() + [ROOT / "harness"]
    read = [Path(p) for p in SYSTEM_READ] + libraries
    if sys.pycache_prefix:  # the bytecode of those libraries, not of the judge's task files
        read += bytecode.mirrored(Path(sys.pycache_prefix), libraries)
    read += [Path(p) for p in staging] + [Path(p) for p in extra_read]
    write = [scratch, *shm]
    devices = [Path(p) for p in DEVICES]
    if device == "cuda":
        for pattern in NVIDIA_DEVICES:
            devices += [Path(p) for p in sorted(glob.glob(pattern))]
    return Policy(read, write, devices)


def prepare_scratch(scratch: Path) -> dict[str, str]:
    """Make the scratch layout and return the worker's environment entries for it:
    temporary files and every compiler cache inside scratch (where no file's own cache
    folder is named: compile_cache.py points the worker there), and an import folder
    (PYTHONPATH) holding the `harness` package alone, as a link, so that the project
    folder around it stays unread."""
    cache = scratch / ".cache"
    env = {"HOME": str(scratch), "TMPDIR": str(scratch / "tmp"), "XDG_CACHE_HOME": str(cache),
           "TRITON_CACHE_DIR": str(cache / "triton"),
           "TORCHINDUCTOR_CACHE_DIR": str(cache / "torchinductor"),
           "CUDA_CACHE_PATH": str(cache / "nv")}
    for key in SCRATCH_FOLDERS:
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    imports = scratch / ".harness-path"
    imports.mkdir(exist_ok=True)
    link = imports / "harness"
    if not link.is_symlink():  # a second call on the same folder (profile mode's ncu runs)
        link.symlink_to(ROOT / "harness", target_is_directory=True)
    # Installs the worker's audit hook in every Python process of the sandbox.
    (imports / "sitecustomize.py").write_text(
        "from harness.judging.sandbox.refusals import install, run_shadowed_sitecustomize\n"
        "install()\nrun_shadowed_sitecustomize(__file__)\n")
    env["PYTHONPATH"] = str(imports)
    return env


def make_ruleset(policy: Policy, tcp: bool = False
                 ) -> tuple[landlock.Ruleset | None, landlock.Report]:
    """Build the Landlock ruleset of `policy`; (None, a partial report) without Landlock.
    `tcp`: leave TCP to the network the process is in (a multi-GPU case's ranks)."""
    ruleset = landlock.Ruleset.build(policy.read, policy.write, policy.devices, tcp=tcp)
    report = landlock.probe() if ruleset is None else ruleset.report
    exposed = policy.exposed()
    if exposed:
        report.level = "partial"
        report.missing += exposed
    return ruleset, report


def expected_containment(settings, device: str = "cpu") -> landlock.Report:
    """What the sandbox of `settings` (worker settings) will enforce on this kernel for a
    worker on `device`, with these paths (the scratch and shared-memory folders aside)."""
    if settings.sandbox == "off":
        return landlock.off()
    report = landlock.probe()
    exposed = build_policy(Path("/nonexistent"), [], [], "cpu", settings.sandbox_read).exposed()
    if exposed:
        report.level = "partial"
        report.missing += exposed
    return report


def recording_refusal(settings, mode: str, allowed: bool, device: str = "cpu") -> str | None:
    """Why leaderboard mode must not record under this sandbox, unless `allowed`
    (`--allow-partial-containment`): None when containment is full."""
    from harness.results.admission import containment_refusal

    report = expected_containment(settings, device)
    return containment_refusal(report.level, list(report.missing), mode, allowed)


def refusals(*texts: str, limit: int = 12) -> list[str]:
    """What the sandbox refused, from the worker's captured output and its verdicts' messages:
    the audit hook's `sandbox refused:` lines and the errors of denied system calls (in
    children and C libraries too)."""
    seen: list[str] = []
    for text in texts:
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("sandbox refused:"):
                item = line.removeprefix("sandbox refused:").strip()
            elif "Permission denied" in line or "Operation not permitted" in line:
                item = line[-200:]
            else:
                continue
            if item not in seen:
                seen.append(item)
    more = len(seen) - limit
    return seen[:limit] + ([f"... and {more} more"] if more > 0 else [])
