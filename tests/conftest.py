"""Shared fixtures: paths, the shared/ folder, and a way to drive runner.py like a user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def find_shared(root: Path, environ: dict[str, str] | None = None) -> Path | None:
    """The project's shared/ folder (seeds, docs), or None on a fresh clone without it.

    CI puts shared/ beside the clone; on the GPU machine a copy travels as .shared/.
    `HARNESS_TEST_SHARED` names another folder, or `none` to run as if there were none
    (CI does, to prove that a fresh clone's tests pass)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("HARNESS_TEST_SHARED")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "none") else (
            Path(chosen) if Path(chosen).is_dir() else None)
    return next((p for p in (root.parent / "shared", root / ".shared") if p.is_dir()), None)


SHARED = find_shared(ROOT)
BAD = ROOT / "tests" / "submissions" / "vectoradd"
HAS_GPU = False
try:
    import torch

    HAS_GPU = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    pass

# `@gpu` (or `pytestmark = gpu`) marks a test that needs a CUDA GPU: `-m gpu` selects it,
# and pytest_collection_modifyitems skips it where there is none.
gpu = pytest.mark.gpu
cpu_only = pytest.mark.skipif(HAS_GPU, reason="checks the CPU verdict")


def needs_shared(test):
    """Marks a test that reads the shared/ folder (`-m shared`): it skips without one."""
    skip = pytest.mark.skipif(
        SHARED is None, reason="needs the project's shared/ folder beside the clone (absent here)")
    return pytest.mark.shared(skip(test))


def pytest_collection_modifyitems(config, items):
    """Skips the tests marked `gpu` where there is no CUDA GPU. Under pytest-xdist (`-n`),
    the `slow` tests go first, then those of an `xdist_group` (one process runs each group
    whole), so that the long runs start early and the many short tests fill the test
    processes' last minutes (the order is the same in every process). The group "loud"
    holds the tests that load the host hardest (hundreds of processes or sockets, jobs
    killed at random) and those whose timing checks a loaded host trips (honest runs
    asked for no flag): one process runs them in turn, so that none runs beside another."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: (item.get_closest_marker("slow") is None,
                                     item.get_closest_marker("xdist_group") is None))
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pytest-xdist): a test process per core this process may use and one
    more (most tests wait, part of their time, on the judges and servers they started: the
    one more keeps every core busy), or none (the tests in turn, in this process) on a GPU
    machine, where tests time kernels and look for other processes on the GPU, so must not
    run beside each other."""
    return 0 if HAS_GPU else len(os.sched_getaffinity(0)) + 1


@pytest.fixture(scope="session", autouse=True)
def _session_compile_caches(tmp_path_factory):
    """Compiler caches (harness/judging/startup/compile_cache.py) of fixtures wider than a test in
    a folder of the session's: no test writes the user's own cache folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_COMPILE_CACHE", str(tmp_path_factory.mktemp("compile-caches")))
        yield


_BASE_ENV = dict(os.environ)  # this test process's, before any test changed it
_WARM: list = []  # the warm host of this test process, once a command asked for it


def warm_env() -> dict[str, str]:
    """The variable that points a command at this test process's `runner.py warm` host
    (tests/warmkit.py), started on the first call (without waiting: a command that comes
    before its imports are done starts its own template): the commands and servers the
    tests start borrow a template from it where their environment lets them, as a user's
    would, rather than import torch each. {} where HARNESS_WARM_HOST is set already ("off",
    or a host the developer started), which the commands then follow."""
    from harness.execution.warm_host import ENV

    if _BASE_ENV.get(ENV):  # "off", or a host of the developer's own: as it says
        return {}
    if not _WARM:
        from warmkit import Host

        _WARM.append(Host(wait=False, env=_BASE_ENV))
    return _WARM[0].env()


@pytest.fixture(scope="session", autouse=True)
def _stop_the_warm_host():
    yield
    for host in _WARM:
        host.stop()


@pytest.fixture(autouse=True)
def compile_caches(tmp_path_factory, monkeypatch) -> Path:
    """Each test's compiler caches in a folder of its own: no test finds what another
    compiled (a second run of a file would skip its build)."""
    root = tmp_path_factory.mktemp("compile-cache")
    monkeypatch.setenv("HARNESS_COMPILE_CACHE", str(root))
    return root


@dataclass
class Run:
    rc: int
    out: str
    doc: dict | None
    wall: float = 0.0  # the process's wall time, seconds


def patched_runner(*lines: str) -> tuple[str, ...]:
    """`python` arguments for run_cli that run `lines` in the runner's process first (the
    harness's constants set otherwise than on this machine), then runner.py."""
    return ("-c", "import runpy, sys\n" + "".join(f"{line}\n" for line in lines)
            + "sys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")


# The shared-memory mailbox on a CPU run, as on a GPU (judge.MAILBOX).
MAILBOX_ON_CPU = ("from harness.judging import judge", "judge.MAILBOX['cpu'] = True")


def run_cli(*args: str, json_path: Path | None = None, env: dict | None = None,
            timeout: float = 600, cwd: Path = ROOT, python: tuple[str, ...] = ()) -> Run:
    """Run `python [PYTHON] runner.py ARGS` as a user would; read the JSON document if
    asked. A variable set to None in `env` is removed from the environment."""
    cmd = [sys.executable, *python, str(ROOT / "runner.py"), *args]
    if json_path is not None:
        cmd += ["--json", str(json_path)]
    full_env = {k: v for k, v in {**os.environ, "COLUMNS": "200", **warm_env(),
                                  **(env or {})}.items() if v is not None}
    began = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env,
                          cwd=cwd)
    wall = time.monotonic() - began
    doc = None
    if json_path is not None and json_path.exists():
        doc = json.loads(json_path.read_text())
    return Run(proc.returncode, proc.stdout + proc.stderr, doc, wall)


@pytest.fixture
def cli(tmp_path):
    """run_cli with a private results database and JSON path per test."""
    db = tmp_path / "results.db"

    def call(*args: str, want_json: bool = True, env: dict | None = None, **kw) -> Run:
        path = tmp_path / f"result{len(list(tmp_path.glob('result*.json')))}.json"
        merged = {"HARNESS_DB": str(db), **(env or {})}
        return run_cli(*args, json_path=path if want_json else None, env=merged, **kw)

    call.db = db
    return call


def case_statuses(doc: dict) -> list[str]:
    return [c["status"] for p in doc["phases"] for c in p["cases"]]


def in_child(confine, action) -> int:
    """Run `action` in a forked child after `confine()` (a sandbox applied to it); the
    errno it ended with (0: it worked)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 100
        try:
            confine()
            action()
            code = 0
        except OSError as exc:
            code = exc.errno or 99
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def exec_child(code: str, confine) -> subprocess.CompletedProcess:
    """A fresh interpreter running `code`, `confine()` applied between fork and exec, as
    the worker is started: what it printed and its exit status."""
    return subprocess.run([sys.executable, "-c", code], preexec_fn=confine, text=True,
                          capture_output=True, timeout=120, env={"PATH": os.environ["PATH"]})


PG_URL = os.environ.get("HARNESS_TEST_POSTGRES")


def fresh_postgres_url() -> str:
    """A new, empty database on the test server, so tests do not see each other."""
    import psycopg

    name = f"harness_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return PG_URL.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """A results database on SQLite, then on PostgreSQL where $HARNESS_TEST_POSTGRES is set."""
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    if not PG_URL:
        pytest.skip("set HARNESS_TEST_POSTGRES to a postgresql:// URL to run these")
    return fresh_postgres_url()


PUBLIC_TASK_YML = """\
files:
  - {{"name": "submission.py", "source": "@SUBMISSION@"}}
  - {{"name": "task.py", "source": "task.py"}}
  - {{"name": "reference.py", "source": "reference.py"}}
lang: "py"
description: a small task of the tests, in the public (reference-kernels) format
tests:
{tests}
benchmarks:
{benchmarks}
"""


def public_format_folder(root: Path, reference: str, tests: list[str],
                         benchmarks: list[str]) -> Path:
    """A task folder laid out as reference-kernels' are (`files:` naming the submission,
    task.py and reference.py); cases as flow mappings, e.g. '{"size": 64, "seed": 1}'."""
    root.mkdir(parents=True)
    (root / "task.yml").write_text(PUBLIC_TASK_YML.format(
        tests="\n".join(f"  - {c}" for c in tests),
        benchmarks="\n".join(f"  - {c}" for c in benchmarks)))
    (root / "task.py").write_text("import torch\ninput_t = tuple\noutput_t = torch.Tensor\n")
    (root / "reference.py").write_text(reference)
    return root


@pytest.fixture
def network():
    """A multi-GPU case's network (ranks/network.py), started (skips where namespaces
    cannot be made), closed after."""
    from harness.judging.ranks.network import NetworkError, RankNetwork

    held = RankNetwork()
    try:
        held.start()
    except NetworkError as exc:
        pytest.skip(f"no network namespaces here: {exc}")
    yield held
    held.close()
