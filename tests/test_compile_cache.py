"""The per-file compiler caches (harness/judging/startup/compile_cache.py): their folders, their
bounds, the worker's side, and a rerun of a load_inline submission end to end."""

from __future__ import annotations

import os
import shutil
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT

from harness.judging.startup import compile_cache
from harness.judging.startup.compile_cache import CompileCache
from harness.settings import Settings


def worker_settings(tmp_path: Path, **changes):
    base = replace(Settings.load().worker, compile_cache_dir=str(tmp_path / "caches"))
    return replace(base, **changes)


def held(settings, source: str) -> CompileCache:
    cache, warning = compile_cache.prepare(settings, source)
    assert warning is None and cache is not None
    return cache


def test_one_folder_per_source_text(tmp_path):
    settings = worker_settings(tmp_path)
    first = held(settings, "x = 1\n")
    again = held(settings, "x = 1\n")
    other = held(settings, "x = 1 \n")
    assert first.folder == again.folder != other.folder
    assert first.folder.parent == (tmp_path / "caches").resolve() and first.folder.is_dir()
    assert not first.reused and not again.reused  # nothing compiled in it yet
    (first.folder / "sub").mkdir()
    assert not held(settings, "x = 1\n").reused  # folders alone are nothing
    (first.folder / "sub" / "kernel.cubin").write_bytes(b"\0")
    assert held(settings, "x = 1\n").reused
    assert first.to_dict() == {"mode": "per_file", "name": first.folder.name, "reused": False}


@pytest.mark.parametrize("mode, contained, setting, expected", [
    ("test", True, "per_file", True), ("benchmark", True, "per_file", True),
    ("profile", True, "per_file", True),
    ("leaderboard", True, "per_file", False),  # ranked: its secret inputs recur run to run
    ("benchmark", False, "per_file", False),  # no file rules: it could write every folder
    ("benchmark", True, "private", False),
])
def test_which_runs_get_a_folder(tmp_path, mode, contained, setting, expected):
    settings = worker_settings(tmp_path, compile_cache=setting)
    assert compile_cache.applies(settings, mode, contained) is expected


def test_the_root_follows_the_setting_then_the_environment(tmp_path, monkeypatch):
    settings = worker_settings(tmp_path)
    assert compile_cache.root(settings) == tmp_path / "caches"
    monkeypatch.setenv("HARNESS_COMPILE_CACHE", str(tmp_path / "env"))
    assert compile_cache.root(replace(settings, compile_cache_dir=None)) == tmp_path / "env"
    monkeypatch.delenv("HARNESS_COMPILE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.root(replace(settings, compile_cache_dir=None)) == \
        tmp_path / "xdg" / "kernel-harness" / "compile"


def test_a_root_that_is_a_link_or_unusable_keeps_the_caches_private(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "caches").symlink_to(elsewhere)
    cache, warning = compile_cache.prepare(worker_settings(tmp_path), "x")
    assert cache is None and "kept private" in warning and "link" in warning
    (tmp_path / "caches").unlink()
    (tmp_path / "caches").write_text("a file")
    cache, warning = compile_cache.prepare(worker_settings(tmp_path), "x")
    assert cache is None and "kept private" in warning


def test_modes_a_worker_changed_are_restored(tmp_path):
    """Landlock has no rule for chmod: a worker can lock the root, the ledger or its own
    folder down. The next evaluation (any source) restores them."""
    settings = worker_settings(tmp_path)
    cache = held(settings, "x")
    cache.release()
    base = cache.folder.parent
    for path in (cache.folder, base / ".ledger", base / ".ledger" / cache.name, base):
        os.chmod(path, 0)
    again = held(settings, "x")
    assert stat.S_IMODE(os.stat(base).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(again.folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(base / ".ledger" / again.name).st_mode) == 0o600
    again.release()


def test_an_oversized_folder_is_dropped_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "FOLDER_MAX_MB", 1)
    monkeypatch.setattr(compile_cache, "FOLDER_MAX_FILES", 5)
    settings = worker_settings(tmp_path)
    cache = held(settings, "big")
    (cache.folder / "blob").write_bytes(b"\0" * (1 << 20))
    assert compile_cache.tidy(settings, cache) is None  # at the limit: kept
    cache = held(settings, "big")
    (cache.folder / "more").write_bytes(b"\0")
    warning = compile_cache.tidy(settings, cache)
    assert not cache.folder.exists() and "the 1 MB or 5 entries" in warning
    cache = held(settings, "many")
    for i in range(6):  # entries count too, however small
        (cache.folder / f"e{i}").mkdir()
    locked = cache.folder / "e0"
    os.chmod(locked, 0)  # a worker's chmod does not keep it
    assert "dropped" in compile_cache.tidy(settings, cache) and not cache.folder.exists()


def test_a_folder_in_use_elsewhere_is_left_alone(tmp_path, monkeypatch):
    """Two evaluations of one source (a batch over several GPUs): the one that ends
    first neither clears the other's build lock nor drops the folder under it."""
    monkeypatch.setattr(compile_cache, "FOLDER_MAX_MB", 1)
    settings = worker_settings(tmp_path)
    first, second = held(settings, "same"), held(settings, "same")
    lock = build_lock(first.folder)
    (first.folder / "blob").write_bytes(b"\0" * (2 << 20))
    assert compile_cache.tidy(settings, first) is None
    assert lock.exists() and first.folder.exists()
    assert "dropped" in compile_cache.tidy(settings, second)  # now alone: bounded


def build_lock(folder: Path, name: str = "add_cpp") -> Path:
    build = folder / "cpu-torch2-py3.12" / "torch_extensions" / name
    build.mkdir(parents=True)
    (build / "add_cpp.so").write_bytes(b"\0")
    (build / "lock").write_text("")
    return build / "lock"


def test_build_locks_left_by_a_dead_worker_are_cleared(tmp_path):
    """torch's load_inline makes `lock` in its build folder and waits, at every later
    import, until it is gone: one left by a worker killed in a build would stall every run
    of the source. Cleared where no evaluation of the source runs: after the evaluation,
    at the next one's start (a judge killed with its worker), and before a restart."""
    settings = worker_settings(tmp_path)
    cache = held(settings, "builds")
    lock = build_lock(cache.folder)
    compile_cache.tidy(settings, cache)
    assert not lock.exists() and (lock.parent / "add_cpp.so").exists()
    cache = held(settings, "builds")
    lock.write_text("")
    cache.release()  # as if the judge died: no tidy
    again = held(settings, "builds")
    assert not lock.exists()
    lock.write_text("")
    assert again.clear_if_alone() == ["cpu-torch2-py3.12/torch_extensions/add_cpp/lock"]
    other = held(settings, "builds")
    lock.write_text("")
    assert again.clear_if_alone() == [] and lock.exists()  # another run holds it too
    other.release()
    again.release()


def test_clearing_locks_never_follows_a_link(tmp_path):
    """A worker can plant links in its folder; the judge's walk removes nothing through
    them (it would otherwise delete any `<dir>/<x>/lock` the judge can reach)."""
    settings = worker_settings(tmp_path)
    cache = held(settings, "links")
    victim = tmp_path / "victim"
    (victim / "x").mkdir(parents=True)
    (victim / "x" / "lock").write_text("not the cache's")
    (cache.folder / "evil" ).mkdir()
    (cache.folder / "evil" / "torch_extensions").symlink_to(victim)
    (cache.folder / "evil2").symlink_to(tmp_path)  # a tag that is a link
    build = cache.folder / "tag" / "torch_extensions"
    build.mkdir(parents=True)
    (build / "y").symlink_to(victim / "x")  # a build folder that is a link
    compile_cache.tidy(settings, cache)
    assert (victim / "x" / "lock").read_text() == "not the cache's"


def test_only_the_most_recently_used_folders_are_kept(tmp_path, monkeypatch):
    """By the ledger's times (a worker can set its folder's own), never a folder that an
    evaluation holds, and within the total size allowed."""
    monkeypatch.setattr(compile_cache, "KEEP_FOLDERS", 3)
    settings = worker_settings(tmp_path)
    for name in ("a", "b", "c", "d"):
        cache = held(settings, name)
        (cache.folder / "f").write_bytes(b"\0" * 600_000)
        compile_cache.tidy(settings, cache)
        time.sleep(0.01)
    names = {n: compile_cache.folder_name(n) for n in "abcde"}
    base = (tmp_path / "caches").resolve()
    assert not (base / names["a"]).exists()  # the fourth's tidy evicted the oldest
    os.utime(base / names["b"], (4e9, 4e9))  # far in the future: counts for nothing
    busy = held(settings, "b")  # held by a run still going
    current = held(settings, "e")
    compile_cache.tidy(settings, current)
    left = {n for n, f in names.items() if (base / f).exists()}
    assert left == {"b", "d", "e"}  # "c" was the least recent one free to go
    busy.release()
    monkeypatch.setattr(compile_cache, "KEEP_FOLDERS", 32)
    small = worker_settings(tmp_path, compile_cache_total_mb=1)
    current = held(small, "e")
    compile_cache.tidy(small, current)  # "b" (0.6 MB, the most recent) fits, "d" not
    assert {n for n, f in names.items() if (base / f).exists()} == {"b", "e"}


def test_a_held_folder_is_never_evicted_however_old(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "KEEP_FOLDERS", 1)
    settings = worker_settings(tmp_path)
    busy = held(settings, "busy")
    compile_cache._write_ledger(busy.fd, 0.0, 1000)  # the least recent by far
    current = held(settings, "current")
    compile_cache.tidy(settings, current)
    assert busy.folder.exists()
    busy.release()
    current = held(settings, "current")
    compile_cache.tidy(settings, current)
    assert not busy.folder.exists()


def test_a_judge_waiting_on_an_entry_an_eviction_removes_opens_it_again(tmp_path):
    """Eviction unlinks a ledger entry while holding it; a judge that opened the entry
    before and waits for its lock must not end up holding a file no one else will see
    (a third judge would then think itself alone and clear a live build's lock)."""
    import fcntl
    import threading

    ledger = tmp_path / "ledger"
    ledger.mkdir()
    path = ledger / "name"
    path.write_text("")
    evictor = os.open(path, os.O_RDWR)
    fcntl.flock(evictor, fcntl.LOCK_EX)
    got = {}
    waiter = threading.Thread(target=lambda: got.update(hold=compile_cache._hold(path)))
    waiter.start()
    time.sleep(0.2)
    os.unlink(path)
    os.close(evictor)
    waiter.join(5)
    fd, alone = got["hold"]
    assert compile_cache._current(fd, path) and alone
    os.close(fd)


def test_a_folder_nested_deeper_than_any_recursion_is_bounded(tmp_path, monkeypatch):
    """A worker can nest folders thousands deep in its own folder (few entries, nothing
    Landlock refuses): the judge's count and removal walk it without recursion."""
    monkeypatch.setattr(compile_cache, "FOLDER_MAX_FILES", 1000)
    settings = worker_settings(tmp_path)
    cache = held(settings, "deep")
    fd = os.open(cache.folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1500):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    assert compile_cache.footprint(cache.folder)[1] == 1500
    warning = compile_cache.tidy(settings, cache)
    assert "dropped" in warning and not cache.folder.exists()


def test_a_ranked_run_is_never_given_a_folder_without_a_head_start(tmp_path):
    from types import SimpleNamespace

    from harness.judging.evaluation import _compile_cache

    settings = Settings.from_dict(Settings.load().raw | {"worker": {
        **Settings.load().raw["worker"], "compile_cache_dir": str(tmp_path / "caches")}})
    for mode, given in (("leaderboard", False), ("benchmark", True)):
        prepared = SimpleNamespace(request=SimpleNamespace(mode=mode), source="x = 1\n")
        cache, warning = _compile_cache(prepared, settings, None, True)
        assert warning is None and (cache is not None) is given
        if cache is not None:
            cache.release()


def test_the_worker_points_its_caches_into_its_device_folder(tmp_path):
    env = {compile_cache.ENV: str(tmp_path / "file")}
    base = compile_cache.point_worker("cpu-torch2-py3.12", env)
    assert base == tmp_path / "file" / "cpu-torch2-py3.12"
    assert env["TRITON_CACHE_DIR"] == str(base / "triton")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(base / "torchinductor")
    assert env["TORCH_EXTENSIONS_DIR"] == str(base / "torch_extensions")
    assert all(Path(env[k]).is_dir() for k in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR"))
    untouched = {"TRITON_CACHE_DIR": "/scratch/.cache/triton"}
    assert compile_cache.point_worker("cpu", untouched) is None
    assert untouched == {"TRITON_CACHE_DIR": "/scratch/.cache/triton"}


def test_a_folder_the_worker_cannot_use_leaves_the_scratch_caches(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    env = {compile_cache.ENV: str(tmp_path / "file"), "TRITON_CACHE_DIR": "/scratch/triton"}
    assert compile_cache.point_worker("cpu", env) is None
    assert env["TRITON_CACHE_DIR"] == "/scratch/triton"
    assert "kept in scratch" in capsys.readouterr().err


class FakeCuda:
    @staticmethod
    def get_device_capability(index):
        return (9, 0)

    @staticmethod
    def get_device_name(index):
        return "NVIDIA H200 / test"


class FakeTorch:
    __version__ = "2.11.0+cu130"
    cuda = FakeCuda


def test_the_device_folder_names_the_gpu_and_the_versions():
    """A load_inline build is not keyed by the GPU it was built for: another GPU, torch
    or Python gets a folder of its own."""
    tag = compile_cache.device_tag(FakeTorch, "cuda")
    assert tag.startswith("NVIDIA_H200_test-sm90-torch2.11.0+cu130-py")
    assert "/" not in tag and " " not in tag
    assert compile_cache.device_tag(FakeTorch, "cpu").startswith("cpu-torch2.11.0")


@pytest.mark.parametrize("key, value", [
    ("compile_cache", "shared"), ("compile_cache", True), ("compile_cache_dir", ""),
    ("compile_cache_dir", 5), ("compile_cache_dir", "relative/caches"),
    ("compile_cache_total_mb", 0), ("compile_cache_total_mb", "1"),
    ("compile_cache_total_mb", True), ("compile_cache_total_mb", 0.5),
])
def test_settings_refuse_what_is_not_a_cache_setting(tmp_path, key, value):
    extra = tmp_path / "bad.yaml"
    extra.write_text(f"worker:\n  {key}: {value!r}\n".replace("True", "true"))
    with pytest.raises(ValueError, match=key):
        Settings.load(extra)


@pytest.mark.slow
def test_a_rerun_of_the_same_file_builds_nothing(cli, tmp_path, compile_caches):
    """End to end on the CPU, in the sandbox: torch's cpp_extension builds the library in
    the first run, in the file's folder, with the compiler of the judge's environment (the
    build a contestant's first run makes: it passes); the second run finds it and builds
    nothing (the built library is the same file, untouched). A private run builds in its
    scratch and leaves the folder alone; a leaderboard run (ranked: never a folder that
    outlives it) gets no per-file folder whatever it builds. (load_inline builds the same
    way in the same folder, from torch's headers: tens of seconds a build.)"""
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("torch's cpp_extension needs ninja and a C++ compiler")
    sub = ROOT / "tests" / "submissions" / "vectoradd" / "cpp_extension_build.py"
    args = ("submit", str(sub), "--task", "vectoradd", "--device", "cpu", "--no-record")
    first = cli(*args, "--mode", "test")
    assert first.rc == 0 and first.doc["passed"], first.out
    cache = first.doc["harness"]["compile_cache"]
    assert cache["mode"] == "per_file" and not cache["reused"]
    folder = compile_caches / cache["name"]
    built = list(folder.rglob("answer_cpp*.so"))
    assert len(built) == 1, list(folder.rglob("*"))
    stamp = built[0].stat().st_mtime_ns
    [steps] = list(folder.rglob(".ninja_log"))  # ninja's record of every step it ran
    ran = steps.read_text()
    assert len(ran.splitlines()) > 1  # its header, then the first run's steps
    second = cli(*args, "--mode", "test")
    assert second.rc == 0, second.out
    assert second.doc["harness"]["compile_cache"] == dict(cache, reused=True)
    assert built[0].stat().st_mtime_ns == stamp
    assert steps.read_text() == ran  # not one step run again (a time is too noisy to say)
    private = tmp_path / "private.yaml"
    private.write_text("worker:\n  compile_cache: private\n")
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    run = cli(*args, "--mode", "test", "--config", str(private))
    assert run.rc == 0, run.out
    assert run.doc["harness"]["compile_cache"] == {"mode": "private"}
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == before
    ranked = cli("submit", str(ROOT / "submissions" / "vectoradd" / "add_torch.py"), "--task",
                 "vectoradd", "--device", "cpu", "--no-record", "--mode", "leaderboard",
                 "--case", "size: 256; seed: 3")
    assert ranked.rc == 0, ranked.out
    assert ranked.doc["harness"]["compile_cache"] == {"mode": "private"}
