"""Compiler caches that outlive an evaluation, one folder per submission source.

A worker compiles what its submission asks for: Triton kernels, TorchInductor graphs,
C++/CUDA extensions built by torch's `load_inline` (tens of seconds each). With
`worker.compile_cache: private` every evaluation starts with empty caches in its scratch
folder. With `per_file` (the default) the caches of test, benchmark and profile runs
live in a folder named for the submission's source text (a SHA-256 of it): a second run
of the same source finds what the first compiled, as on the public evaluators' machines,
whose caches outlive a run. The worker's sandbox lets it read and write that folder
beside its scratch, and no other.

What may never reach it:
- a ranked run. Leaderboard mode always gets private caches: its secret inputs are the
  same in every run of a task's version, so a folder it could write would let a
  submission store its outputs and replay them in its next ranked run, and a folder it
  could read may hold whatever the file's unranked runs left there.
- a run whose file rules are not enforced (`worker.sandbox: off`, no Landlock): it
  could write every file's folder. It gets private caches too.

The worker can still change the metadata of what it can name (Landlock has no rule for
chmod or utime), so the judge trusts nothing of the folders but their names: it restores
the modes of the root and of the folder it hands out, keeps when each folder was last
used and how large it was in a ledger beside them (`.ledger/<name>`, out of every
worker's reach), and holds a lock on the folder's ledger entry for the whole evaluation
(flock: released by the kernel however the judge ends). Whoever holds it alone may clear
the build locks a killed worker left (torch waits for those without end) and bound the
folder; eviction takes a folder only when no evaluation holds it. Inside the folder the
worker picks a subfolder for its device, torch and Python (`point_worker`), since a
`load_inline` build is not keyed by the GPU it was built for.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# The worker's variable naming its file's folder (set by the judge, read by the worker).
ENV = "KERNEL_HARNESS_COMPILE_CACHE"
_SALT = b"kernel-harness compile cache 1\0"
_LEDGER = ".ledger"
_UNRANKED = ("test", "benchmark", "profile")
_TOOL_SECONDS = 300.0
# Folders kept, the most recently used (with `worker.compile_cache_total_mb` in all).
KEEP_FOLDERS = 32
# A folder past this size (MB) or this many entries is dropped after its evaluation: one
# source's caches must not crowd out the others'.
FOLDER_MAX_MB = 2048
FOLDER_MAX_FILES = 100_000


@dataclass
class CompileCache:
    """One source's cache folder, held (a shared lock on its ledger entry) until `release`."""

    folder: Path
    reused: bool
    fd: int | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.folder.name

    def to_dict(self) -> dict:
        return {"mode": "per_file", "name": self.name, "reused": self.reused}

    def alone(self) -> bool:
        """Whether no other evaluation holds this folder (then this one holds it
        exclusively until `share`; else it still holds its share)."""
        if self.fd is None:
            return False
        if _try_lock(self.fd, fcntl.LOCK_EX):
            return True
        self.share()  # a refused conversion drops the lock held before it (flock(2))
        return False

    def share(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_SH)

    def clear_if_alone(self) -> list[str]:
        """Before a worker starts again within the evaluation: the build locks the last
        one left, where no other evaluation of the source is running. Those removed."""
        if not self.alone():
            return []
        try:
            return clear_build_locks(self.folder)
        finally:
            self.share()

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def root(settings) -> Path:
    """Where the folders live: `worker.compile_cache_dir`, else $HARNESS_COMPILE_CACHE,
    else the user's cache folder."""
    if settings.compile_cache_dir:
        return Path(os.path.expanduser(settings.compile_cache_dir))
    if os.environ.get("HARNESS_COMPILE_CACHE"):
        return Path(os.environ["HARNESS_COMPILE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernel-harness" / "compile"


def folder_name(source: str) -> str:
    """The folder of a submission's source text: a SHA-256 of it (and of this scheme)."""
    return hashlib.sha256(_SALT + source.encode("utf-8", "surrogateescape")).hexdigest()[:40]


def applies(settings, mode: str, contained: bool) -> bool:
    """Whether a run of `mode` gets its source's folder (see the module's docstring)."""
    return settings.compile_cache == "per_file" and mode in _UNRANKED and contained


def for_run(settings, mode: str, contained: bool,
            source: str) -> tuple[CompileCache | None, str | None]:
    """The folder of a run of `mode` (`contained`: under the full sandbox) for `source`,
    where the run gets one (`applies`), held; and a warning where it cannot be had."""
    if not applies(settings, mode, contained):
        return None, None
    return prepare(settings, source)


def prepare(settings, source: str) -> tuple[CompileCache | None, str | None]:
    """The folder for `source`, checked and held for this evaluation, and a warning where
    it cannot be had (the worker then compiles into its scratch, as with `private`)."""
    cache = None
    try:
        base = _own_dir(root(settings), make=True)
        ledger = _own_dir(base / _LEDGER, make=True)
        name = folder_name(source)
        fd, alone = _hold(ledger / name)
        cache = CompileCache(base / name, False, fd)
        folder = cache.folder
        if folder.is_symlink() or (folder.exists() and not _owned_dir(folder)):
            _remove(folder)
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        if alone:  # nobody's build is running here: any lock left is a dead worker's
            clear_build_locks(folder)
            cache.share()
        cache.reused = _has_files(folder)
        _write_ledger(fd, time.time(), _read_ledger(fd)[1])
    except Exception as exc:  # noqa: BLE001 - whatever a worker left, the run goes on
        if cache is not None:
            cache.release()
        return None, f"compiler caches kept private this run: {_reason(exc)}"
    return cache, None


def tidy(settings, cache: CompileCache) -> str | None:
    """After an evaluation, its workers gone: where no other evaluation holds the folder,
    clear the build locks left in it and drop it past `FOLDER_MAX_MB` or
    `FOLDER_MAX_FILES`; then evict the least recently used folders that no
    evaluation holds, beyond `KEEP_FOLDERS` folders or `compile_cache_total_mb` in
    all. Releases the folder. A warning for the result, or None."""
    warning = None
    try:
        if cache.alone():
            clear_build_locks(cache.folder)
            _restore_modes(cache.folder)  # a worker's chmod hides nothing from the count
            size, files = footprint(cache.folder)
            too_big = size > FOLDER_MAX_MB << 20
            if too_big or files > FOLDER_MAX_FILES:
                what = (f"the compiler caches of this file ({size_text(size)}, {files} entries) "
                        f"passed the {FOLDER_MAX_MB} MB or {FOLDER_MAX_FILES} entries a file's "
                        "folder may hold")
                if _remove(cache.folder):
                    size, warning = 0, f"{what} and were dropped: its next run compiles again"
                else:
                    warning = f"{what} and could not be dropped"
                    size = footprint(cache.folder)[0]
            _write_ledger(cache.fd, time.time(), size)
        evict(settings, cache.folder.parent, keep=cache.name)
    except Exception as exc:  # noqa: BLE001 - whatever a worker left, the result stands
        warning = f"compiler caches: could not tidy them: {_reason(exc)}"
    finally:
        cache.release()
    return warning


def copy_in(folder: Path, copy: Path) -> str | None:
    """Under a scratch quota (bounds.py), before a worker starts: the file's folder copied
    into `copy`, in the worker's scratch, which the worker then uses instead, so that what
    it compiles counts against the quota. A warning where it does not fit (or cannot be
    copied): the worker then starts with empty caches."""
    copy.mkdir(mode=0o700)
    if _copy_tree(folder, copy):
        return None
    _remove(copy)
    copy.mkdir(mode=0o700)
    return (f"compiler caches: this file's ({size_text(footprint(folder)[0])}) did not fit "
            "the scratch quota (worker.scratch_mb); its worker compiles anew")


def copy_back(copy: Path, folder: Path) -> bool:
    """Once the worker that used `copy` (copy_in) is gone: what it left there replaces the
    file's folder, through a fresh folder beside it and two renames (never written through
    a link the worker left). Whether it did."""
    fresh, old = (folder.with_name(f".{folder.name}.{os.getpid()}.{end}") for end in ("new", "old"))
    _remove(fresh)
    fresh.mkdir(mode=0o700)
    try:
        if not _copy_tree(copy, fresh):
            return False
        os.chmod(fresh, 0o700)
        os.rename(folder, old)
        os.rename(fresh, folder)
    except OSError:
        return False
    finally:
        _remove(fresh)
        _remove(old)
    return True


def _copy_tree(source: Path, target: Path) -> bool:
    """The contents of `source` into the folder `target` (GNU cp: links copied as links,
    never followed; the judge's ownership)."""
    try:
        done = subprocess.run(["cp", "-a", "--no-preserve=ownership", "--", f"{source}/.",
                               str(target)], capture_output=True, timeout=_TOOL_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def size_text(size: int) -> str:
    return f"{size / (1 << 20):.0f} MB"


def evict(settings, base: Path, keep: str = "") -> list[str]:
    """Remove the least recently used folders (by the ledger, never by the folders' own
    times, which a worker can set) beyond the count and the total size allowed, each only
    where no evaluation holds it. The names removed."""
    ledger = base / _LEDGER
    with os.scandir(base) as found:
        names = [e.name for e in found if e.name not in (_LEDGER, keep)
                 and e.is_dir(follow_symlinks=False)]
    entries = [(*_peek_ledger(ledger / name), name) for name in names]
    entries.sort(reverse=True)
    total = _peek_ledger(ledger / keep)[1] if keep else 0
    removed = []
    for rank, (_, size, name) in enumerate(entries, start=2 if keep else 1):
        total += size
        if rank <= KEEP_FOLDERS and total <= settings.compile_cache_total_mb << 20:
            continue
        try:
            fd = _open_ledger(ledger / name)
        except OSError:
            continue
        try:  # held nowhere (an evaluation holds its entry from start to end)
            if _try_lock(fd, fcntl.LOCK_EX) and _current(fd, ledger / name) \
                    and _remove(base / name):
                os.unlink(ledger / name)  # a judge waiting on it sees that, and reopens
                removed.append(name)
                total -= size
        finally:
            os.close(fd)
    return removed


def clear_build_locks(folder: Path) -> list[str]:
    """Remove the `lock` files of torch's extension builds (`<tag>/torch_extensions/<name>/
    lock`: made when a build starts, removed when it ends; a later import waits for it
    without end). Call only where no evaluation of the source runs. Walks by directory
    descriptors, never through a link, so that nothing outside the folder is touched
    whatever the worker left there. The paths removed (relative to the folder)."""
    removed = []
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    top = os.open(folder, flags)
    try:
        for tag in _subdirs(top):
            for builds in _opened(tag, top, flags, "torch_extensions"):
                for build in _subdirs(builds):
                    for fd in _opened(build, builds, flags):
                        try:
                            os.unlink("lock", dir_fd=fd)
                            removed.append(f"{tag}/torch_extensions/{build}/lock")
                        except OSError:
                            pass
    finally:
        os.close(top)
    return removed


def footprint(folder: Path) -> tuple[int, int]:
    """Bytes and entries (files, folders, links) under `folder`, links not followed: by
    `find`, which walks any depth without recursion or a path-length limit."""
    out = _tool("find", "-P", str(folder), "-mindepth", "1", "-printf", "%s\n")
    sizes = out.split()
    return sum(int(n) for n in sizes), len(sizes)


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
    TorchInductor and torch's extension builds into `tag` under its file's folder (ENV).
    None (the scratch caches kept) where the judge named none, or where the folder cannot
    be used (said on standard error)."""
    environ = os.environ if environ is None else environ
    if not environ.get(ENV):
        return None
    base = Path(environ[ENV]) / tag
    subs = {"TRITON_CACHE_DIR": "triton", "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
            "TORCH_EXTENSIONS_DIR": "torch_extensions"}
    try:
        for sub in subs.values():
            (base / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        sys.stderr.write(f"harness: compiler caches kept in scratch: {exc}\n")
        return None
    for key, sub in subs.items():
        environ[key] = str(base / sub)
    return base


# -- helpers -------------------------------------------------------------------------

def _own_dir(path: Path, make: bool) -> Path:
    """`path` as a real folder of this user's, mode 0700 (restored: a worker may have
    changed it); OSError where it is a link or another user's."""
    if make:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not _owned_dir(path):
        raise OSError(0, f"{path.name} is not a folder of this user's (a link, or another owner)")
    os.chmod(path, 0o700)
    return path.resolve()


def _owned_dir(path: Path) -> bool:
    info = os.lstat(path)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _open_ledger(path: Path) -> int:
    """A ledger entry, opened to read, write and lock (its mode restored: a worker can
    chmod what it can name, though it can neither read nor write there)."""
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
            os.chmod(path, 0o600)
    except FileNotFoundError:
        pass
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _try_lock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _read_ledger(fd: int) -> tuple[float, int]:
    try:
        used, size = os.pread(fd, 64, 0).decode().split()
        return float(used), int(size)
    except (ValueError, OSError, UnicodeDecodeError):
        return 0.0, 0


def _peek_ledger(path: Path) -> tuple[float, int]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0.0, 0
    try:
        return _read_ledger(fd)
    finally:
        os.close(fd)


def _write_ledger(fd: int | None, used: float, size: int) -> None:
    if fd is not None:
        data = f"{used:.3f} {size}\n".encode()
        os.pwrite(fd, data.ljust(64), 0)


def _has_files(folder: Path) -> bool:
    return bool(_tool("find", "-P", str(folder), "-type", "f", "-print", "-quit").strip())


def _tool(*cmd: str) -> str:
    """The output of a file tool (GNU find, chmod, rm: they walk trees of any depth by
    descriptors, never through a link met on the way); OSError where it cannot run."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_TOOL_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(0, f"{cmd[0]} could not run: {type(exc).__name__}") from exc
    return done.stdout


def _restore_modes(folder: Path) -> None:
    """Every folder under `folder` readable, writable and searchable by its owner again
    (GNU chmod ignores the links it meets in a recursive walk)."""
    _tool("chmod", "-R", "u+rwx", "--", str(folder))


def _hold(path: Path) -> tuple[int, bool]:
    """The ledger entry `path`, opened and locked: exclusively where no one else holds it
    (then True), else shared. An entry an eviction removed while this waited is opened
    again."""
    for _ in range(20):
        fd = _open_ledger(path)
        alone = _try_lock(fd, fcntl.LOCK_EX)
        if not alone:
            fcntl.flock(fd, fcntl.LOCK_SH)
        if _current(fd, path):
            return fd, alone
        os.close(fd)
    raise OSError(0, f"the ledger entry {path.name} kept changing")


def _current(fd: int, path: Path) -> bool:
    """Whether `fd` is still the file at `path` (not one unlinked since it was opened)."""
    try:
        mine, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return mine.st_nlink > 0 and (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _reason(exc: BaseException) -> str:
    """What went wrong, without the judge's paths (results may be shown to contestants)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__ if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"


def _subdirs(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return [e.name for e in entries if e.is_dir(follow_symlinks=False)]


def _opened(name: str, parent: int, flags: int, *deeper: str):
    """Yield a descriptor of `parent`/`name`(/`deeper`...), opened without following a
    link at any step (nothing where one is a link or gone); closed afterwards."""
    fds = []
    try:
        fd = parent
        for part in (name, *deeper):
            fd = os.open(part, flags, dir_fd=fd)
            fds.append(fd)
    except OSError:
        for opened in fds:
            os.close(opened)
        return
    try:
        yield fd
    finally:
        for opened in fds:
            os.close(opened)


def _remove(path: Path) -> bool:
    """Remove a folder (or a link) the worker may have locked down with chmod (its
    folders made writable first, never through a link). Whether it is gone."""
    if path.is_symlink() or not path.is_dir():
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        return not os.path.lexists(path)
    try:
        _restore_modes(path)
        _tool("rm", "-rf", "--one-file-system", "--", str(path))
    except OSError:
        pass
    return not os.path.lexists(path)
