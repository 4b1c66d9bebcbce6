"""Compiler caches that outlive an evaluation, one folder per submission file.

A worker compiles what its submission asks for: Triton kernels, TorchInductor graphs,
C++/CUDA extensions built by torch's `load_inline` (tens of seconds each). With
`worker.compile_cache: private` every evaluation starts with empty caches in its scratch
folder. With `per_file` (the default) those caches live in a folder named for the
submission's source (a SHA-256 of it): a second evaluation of the same file, byte for
byte, finds what the first compiled, as the public evaluators' machines keep their
caches between runs. The worker's sandbox lets it write that folder beside its scratch,
and no other: no submission reads or plants another's compiled code, and what a file
finds there only its own source can have put there.

Inside the folder the worker picks a subfolder for its device, torch and Python
(`point_worker`), since a `load_inline` build is not keyed by the GPU it was built for.
The judge never runs anything from these folders; it bounds them (`tidy`): a file's
folder past `compile_cache_max_mb` is dropped after its evaluation, and only the
`compile_cache_keep` most recently used folders are kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# The worker's variable naming its file's folder (set by the judge, read by the worker).
ENV = "KERNEL_HARNESS_COMPILE_CACHE"
_SALT = b"kernel-harness compile cache 1\0"
_IN_USE_SECONDS = 3600.0  # a folder used this recently may belong to a running evaluation


@dataclass
class CompileCache:
    """One submission file's cache folder, and whether an earlier evaluation filled it."""

    folder: Path
    reused: bool

    def to_dict(self) -> dict:
        return {"mode": "per_file", "folder": str(self.folder), "reused": self.reused}


def root(settings) -> Path:
    """Where the folders live: `worker.compile_cache_dir`, else $HARNESS_COMPILE_CACHE,
    else the user's cache folder."""
    if settings.compile_cache_dir:
        return Path(os.path.expanduser(settings.compile_cache_dir)).resolve()
    if os.environ.get("HARNESS_COMPILE_CACHE"):
        return Path(os.environ["HARNESS_COMPILE_CACHE"]).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).resolve() / "kernel-harness" / "compile"


def folder_name(source: str) -> str:
    """The folder of a submission's source: a SHA-256 of it (and of this scheme's version)."""
    return hashlib.sha256(_SALT + source.encode("utf-8", "surrogateescape")).hexdigest()[:40]


def prepare(settings, source: str) -> CompileCache | None:
    """The folder for `source`, made (or marked as used now) for a worker to write; None
    with `compile_cache: private`, or where it cannot be made (the worker then compiles
    into its scratch folder, as with `private`)."""
    if settings.compile_cache != "per_file":
        return None
    folder = root(settings) / folder_name(source)
    try:
        reused = folder.is_dir() and _has_files(folder)
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)
    except OSError:
        return None
    return CompileCache(folder, reused)


def _has_files(folder: Path) -> bool:
    return any(files for _, _, files in os.walk(folder))


def size_bytes(folder: Path) -> int:
    """Bytes of the files under `folder`, links not followed."""
    total = 0
    for here, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(here, name)).st_size
            except OSError:
                pass
    return total


def tidy(settings, cache: CompileCache, since: float, now: float | None = None) -> str | None:
    """After an evaluation that began at `since` (time.time()), its workers gone: clear
    the build locks they left, drop its folder if it grew past `compile_cache_max_mb`, and
    the least recently used folders beyond `compile_cache_keep` (none used within the
    last hour: it may be another evaluation's). A warning for the result, or None."""
    now = time.time() if now is None else now
    clear_stale_locks(cache.folder, since, now)
    warning = None
    limit = settings.compile_cache_max_mb * (1 << 20)
    if cache.folder.is_dir() and size_bytes(cache.folder) > limit:
        shutil.rmtree(cache.folder, ignore_errors=True)
        warning = (f"the compiler caches of this file grew past {settings.compile_cache_max_mb} MB "
                   "(worker.compile_cache_max_mb) and were dropped: its next run compiles again")
    folders = []
    for entry in cache.folder.parent.iterdir() if cache.folder.parent.is_dir() else ():
        try:
            if entry.is_dir() and not entry.is_symlink() and entry != cache.folder:
                folders.append((entry.stat().st_mtime, entry))
        except OSError:
            continue
    folders.sort(reverse=True)
    for used, entry in folders[max(settings.compile_cache_keep - 1, 0):]:
        if now - used > _IN_USE_SECONDS:
            shutil.rmtree(entry, ignore_errors=True)
    return warning


def clear_stale_locks(folder: Path, since: float, now: float) -> list[Path]:
    """Remove the `lock` files of torch's extension builds (`<tag>/torch_extensions/<name>/
    lock`, made when a build starts, removed when it ends) that a worker killed in a build
    left: every run of the file would otherwise wait for it at its import until its time
    ran out. Those made since `since` (the evaluation's own, its workers gone now) and
    those older than an hour (no build runs that long); the paths removed."""
    removed = []
    for lock in folder.glob("*/torch_extensions/*/lock"):
        try:
            made = lock.lstat().st_mtime
            if made >= since or now - made > _IN_USE_SECONDS:
                lock.unlink()
                removed.append(lock)
        except OSError:
            continue
    return removed


def device_tag(torch, device: str) -> str:
    """The worker's subfolder: device name and compute capability, torch and Python."""
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability(0)
        where = f"{torch.cuda.get_device_name(0)}-sm{major}{minor}"
    else:
        where = "cpu"
    tag = f"{where}-torch{torch.__version__}-py{sys.version_info[0]}.{sys.version_info[1]}"
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", tag)


def point_worker(tag: str, environ: dict | None = None) -> Path | None:
    """In the worker, before the submission is imported: the caches of Triton,
    TorchInductor and torch's extension builds into `tag` under its file's folder (ENV);
    None (nothing changed) where the judge named none."""
    environ = os.environ if environ is None else environ
    if not environ.get(ENV):
        return None
    base = Path(environ[ENV]) / tag
    for key, sub in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "torchinductor"),
                     ("TORCH_EXTENSIONS_DIR", "torch_extensions")):
        (base / sub).mkdir(parents=True, exist_ok=True)
        environ[key] = str(base / sub)
    return base
