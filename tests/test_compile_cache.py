"""The per-file compiler caches (harness/judging/compile_cache.py): their folders, their
bounds, the worker's side, and a rerun of a load_inline submission end to end."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.judging import compile_cache
from harness.judging.compile_cache import CompileCache
from harness.settings import Settings
from conftest import ROOT


def worker_settings(tmp_path: Path, **changes):
    base = replace(Settings.load().worker, compile_cache_dir=str(tmp_path / "caches"))
    return replace(base, **changes)


def test_one_folder_per_source_byte_for_byte(tmp_path):
    settings = worker_settings(tmp_path)
    first = compile_cache.prepare(settings, "x = 1\n")
    again = compile_cache.prepare(settings, "x = 1\n")
    other = compile_cache.prepare(settings, "x = 1 \n")
    assert first.folder == again.folder != other.folder
    assert first.folder.parent == tmp_path / "caches" and first.folder.is_dir()
    assert not first.reused and not again.reused  # nothing compiled in it yet
    (first.folder / "sub").mkdir()
    assert not compile_cache.prepare(settings, "x = 1\n").reused  # folders alone are nothing
    (first.folder / "sub" / "kernel.cubin").write_bytes(b"\0")
    assert compile_cache.prepare(settings, "x = 1\n").reused


def test_private_makes_nothing(tmp_path):
    settings = worker_settings(tmp_path, compile_cache="private")
    assert compile_cache.prepare(settings, "x = 1\n") is None
    assert not (tmp_path / "caches").exists()


def test_the_root_follows_the_setting_then_the_environment(tmp_path, monkeypatch):
    settings = worker_settings(tmp_path)
    assert compile_cache.root(settings) == tmp_path / "caches"
    monkeypatch.setenv("HARNESS_COMPILE_CACHE", str(tmp_path / "env"))
    assert compile_cache.root(replace(settings, compile_cache_dir=None)) == tmp_path / "env"
    monkeypatch.delenv("HARNESS_COMPILE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.root(replace(settings, compile_cache_dir=None)) == \
        tmp_path / "xdg" / "kernel-harness" / "compile"


def test_an_oversized_folder_is_dropped_with_a_warning(tmp_path):
    settings = worker_settings(tmp_path, compile_cache_max_mb=1)
    cache = compile_cache.prepare(settings, "big")
    (cache.folder / "blob").write_bytes(b"\0" * (1 << 20))
    assert compile_cache.tidy(settings, cache, since=time.time()) is None  # at the limit: kept
    (cache.folder / "more").write_bytes(b"\0")
    warning = compile_cache.tidy(settings, cache, since=time.time())
    assert not cache.folder.exists() and "compile_cache_max_mb" in warning


def test_only_the_most_recently_used_folders_are_kept(tmp_path):
    settings = worker_settings(tmp_path, compile_cache_keep=2)
    now = time.time()
    folders = {}
    for name, age_hours in (("a", 5), ("b", 4), ("c", 0.9), ("d", 0.5)):
        folders[name] = tmp_path / "caches" / name
        folders[name].mkdir(parents=True)
        os.utime(folders[name], (now - age_hours * 3600,) * 2)
    current = compile_cache.prepare(settings, "current")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the cache's")
    (tmp_path / "caches" / "link").symlink_to(outside)

    def left() -> list[str]:
        return sorted(p.name for p in (tmp_path / "caches").iterdir())

    compile_cache.tidy(settings, current, since=now, now=now)
    # kept: the current one, the one used last ("d"), and "c", beyond the count but used
    # less than an hour ago (it may belong to a run still going); a link is never followed
    assert left() == sorted(["c", "d", "link", current.folder.name])
    assert (outside / "keep.txt").exists()
    os.utime(folders["c"], (now - 2 * 3600,) * 2)
    compile_cache.tidy(replace(settings, compile_cache_keep=3), current, since=now, now=now)
    assert left() == sorted(["c", "d", "link", current.folder.name])
    compile_cache.tidy(settings, current, since=now, now=now)
    assert left() == sorted(["d", "link", current.folder.name])


def test_build_locks_left_by_a_killed_worker_are_cleared(tmp_path):
    """torch's load_inline makes `lock` in its build folder and waits, at every later
    import, until it is gone: one left by a worker killed in a build would stall every run
    of the file. Cleared after the evaluation: those made during it (its workers are gone)
    and those older than an hour; one made shortly before it began may be a build of a
    run beside it, and stays."""
    settings = worker_settings(tmp_path)
    cache = compile_cache.prepare(settings, "builds")
    now = time.time()
    locks = {}
    for name, age in (("ours", 5), ("abandoned", 2 * 3600), ("neighbour", 600)):
        build = cache.folder / "cpu-torch2-py3.12" / "torch_extensions" / name
        build.mkdir(parents=True)
        (build / "add.so").write_bytes(b"\0")
        locks[name] = build / "lock"
        locks[name].write_text("")
        os.utime(locks[name], (now - age,) * 2)
    compile_cache.tidy(settings, cache, since=now - 60, now=now)
    assert [n for n, lock in locks.items() if lock.exists()] == ["neighbour"]
    assert (locks["ours"].parent / "add.so").exists()


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
    ("compile_cache_dir", 5), ("compile_cache_keep", 0), ("compile_cache_max_mb", "1"),
    ("compile_cache_keep", True),
])
def test_settings_refuse_what_is_not_a_cache_setting(tmp_path, key, value):
    extra = tmp_path / "bad.yaml"
    extra.write_text(f"worker:\n  {key}: {value!r}\n".replace("True", "true"))
    with pytest.raises(ValueError, match=key):
        Settings.load(extra)


def test_a_rerun_of_the_same_file_builds_nothing(cli, tmp_path, compile_caches):
    """End to end on the CPU, in the sandbox: torch's load_inline builds the extension in
    the first run, in the file's folder; the second run finds it and builds nothing (the
    built library is the same file, untouched). A private run builds in its scratch and
    leaves the folders alone."""
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("torch's load_inline needs ninja and a C++ compiler")
    sub = ROOT / "tests" / "submissions" / "vectoradd" / "load_inline_cpp.py"
    args = ("submit", str(sub), "--task", "vectoradd", "--device", "cpu", "--mode", "test",
            "--no-record")
    first = cli(*args)
    assert first.rc == 0, first.out
    cache = first.doc["harness"]["compile_cache"]
    assert cache["mode"] == "per_file" and not cache["reused"]
    assert Path(cache["folder"]).parent == compile_caches
    built = list(Path(cache["folder"]).rglob("add_cpp*.so"))
    assert len(built) == 1, list(Path(cache["folder"]).rglob("*"))
    stamp = built[0].stat().st_mtime_ns
    second = cli(*args)
    assert second.rc == 0, second.out
    assert second.doc["harness"]["compile_cache"] == dict(cache, reused=True)
    assert built[0].stat().st_mtime_ns == stamp
    assert second.doc["startup_seconds"] < first.doc["startup_seconds"]
    private = tmp_path / "private.yaml"
    private.write_text("worker:\n  compile_cache: private\n")
    before = sorted(compile_caches.rglob("*"))
    third = cli(*args, "--config", str(private))
    assert third.rc == 0, third.out
    assert third.doc["harness"]["compile_cache"] == {"mode": "private"}
    assert sorted(compile_caches.rglob("*")) == before
