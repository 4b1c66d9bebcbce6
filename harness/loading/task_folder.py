"""Task folders: read `task.yml`, resolve its `files:`, stage them, import the reference."""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from harness.settings import ROOT

TASKS_DIR = ROOT / "tasks"
SUBMISSION_MARK = "@SUBMISSION@"
RANKINGS = ("last", "mean", "geom")
DEFAULT_FILES = ("task.py", "reference.py", "utils.py")


class TaskError(ValueError):
    """A task that cannot be found or is malformed; the message says which and why."""


class ReferenceImportError(TaskError):
    """reference.py raised as it was imported; `source`: its text (which says whether it is
    written for a machine other than this one: harness.judging.needs)."""

    def __init__(self, message: str, source: str) -> None:
        super().__init__(message)
        self.source = source


@dataclass
class TaskFile:
    name: str
    source: Path | None  # None stands for the contestant's file

    @property
    def is_submission(self) -> bool:
        return self.source is None


@dataclass
class Task:
    """One task folder, read and checked, with its cases and settings."""

    name: str
    root: Path
    spec: dict[str, Any]
    files: list[TaskFile]
    tests: list[dict[str, Any]]
    benchmarks: list[dict[str, Any]]
    ranking_by: str = "last"
    description: str = ""
    gpus: list[str] = field(default_factory=list)
    templates: dict[str, str] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)
    content_hash: str = ""

    @property
    def submission_name(self) -> str:
        return next((f.name for f in self.files if f.is_submission), "submission.py")

    @property
    def peak_dtype(self) -> str | None:
        return self.spec.get("peak_dtype")

    @property
    def multi_gpu(self) -> bool:
        """Whether each case runs `world_size` ranks, one per GPU (`multi_gpu: true`)."""
        return bool(self.spec.get("multi_gpu"))

    @property
    def world_sizes(self) -> list[int]:
        """The ranks its cases run, smallest first ([1] for a one-GPU task)."""
        if not self.multi_gpu:
            return [1]
        return sorted({int(c["world_size"]) for c in self.tests + self.benchmarks})

    @property
    def main(self) -> str:
        """The file name of the task's own evaluator (`config.main`)."""
        return _config_main(self.spec)

    @property
    def own_evaluator(self) -> bool:
        """A folder without the `custom_kernel` contract (no task.py): its own evaluator
        (staged from `files`) defines the interface and judges the submission."""
        names = {f.name for f in self.files}
        return "task.py" not in names and self.main in names

    @property
    def timing(self) -> dict[str, Any]:
        """Per-task timing keys (`timing:` in task.yml): what differs between contests."""
        return dict(self.spec.get("timing") or {})

    def timeout(self, phase: str, default: float) -> float:
        """Seconds allowed for a phase: `test`, `benchmark` or `ranked`."""
        return float(self.timeouts.get(phase, default))

    def stage(self, dest: Path, submission: Path | None = None, for_worker: bool = False,
              text: str | None = None) -> Path:
        """Copy the task's files into `dest` under their names.

        The worker's copy leaves out the reference and the public evaluator, so a
        submission cannot import them; the judge's copy leaves out the submission. `text`:
        the submission as already read (written instead of copying the file again).
        """
        dest.mkdir(parents=True, exist_ok=True)
        hidden = {"reference.py", _config_main(self.spec)}
        for f in self.files:
            if f.is_submission:
                if for_worker and text is not None:
                    (dest / f.name).write_text(text, encoding="utf-8")
                elif for_worker and submission is not None:
                    shutil.copyfile(submission, dest / f.name)
                continue
            if for_worker and f.name in hidden:
                continue
            shutil.copyfile(f.source, dest / f.name)
        return dest


def _config_main(spec: dict[str, Any]) -> str:
    config = spec.get("config") or {}
    return str(config.get("main", "eval.py")) if isinstance(config, dict) else "eval.py"


def resolve_task_dir(name_or_path: str, tasks_dir: Path = TASKS_DIR) -> Path:
    """A task name (a folder under `tasks/`) or the path of any task folder."""
    as_path = Path(name_or_path).expanduser()
    if (as_path / "task.yml").is_file():
        return as_path.resolve()
    by_name = tasks_dir / name_or_path
    if (by_name / "task.yml").is_file():
        return by_name.resolve()
    known = ", ".join(list_task_names(tasks_dir)) or "none"
    raise TaskError(
        f"no task {name_or_path!r}: not a folder with a task.yml, nor a task under "
        f"{tasks_dir} (known tasks: {known})"
    )


def given_by_name(name_or_path: str, root: Path, tasks_dir: Path = TASKS_DIR) -> bool:
    """Whether `--task` named the task folder `root` by its name (a bare word, the folder
    under `tasks_dir`), not by a path: a path names its folder without doubt."""
    bare = name_or_path not in ("", ".", "..") and not any(
        sep in name_or_path for sep in ("/", "\\", "~"))
    return bare and root == (tasks_dir / name_or_path).resolve()


def list_task_names(tasks_dir: Path = TASKS_DIR) -> list[str]:
    """Names of the task folders under `tasks_dir`."""
    if not tasks_dir.is_dir():
        return []
    return sorted(p.name for p in tasks_dir.iterdir() if (p / "task.yml").is_file())


# task.yml files parsed, by path: (size and mtime when read, the parsed spec).
_PARSED: dict[Path, tuple[tuple[int, int], Any]] = {}


def _parsed(yml: Path) -> Any:
    """`yml` parsed (a copy), reused while its size and mtime stay: the web board reads
    every task on each page, and parsing YAML is most of a page's time."""
    info = yml.stat()
    key = (info.st_size, info.st_mtime_ns)
    known = _PARSED.get(yml)
    if known is None or known[0] != key:
        known = _PARSED[yml] = (key, yaml.safe_load(yml.read_text()) or {})
    return copy.deepcopy(known[1])


def load_task(name_or_path: str, tasks_dir: Path = TASKS_DIR) -> Task:
    """Read a task folder and check it against the contract."""
    root = resolve_task_dir(name_or_path, tasks_dir)
    yml = root / "task.yml"
    try:
        spec = _parsed(yml)
    except yaml.YAMLError as exc:
        raise TaskError(f"{yml}: not valid YAML: {exc}") from exc
    if not isinstance(spec, dict):
        raise TaskError(f"{yml}: expected a mapping of keys")
    lang = spec.get("lang", "py")
    if lang != "py":
        raise TaskError(f"{yml}: lang {lang!r} is not supported yet (only 'py' tasks run here)")
    files = _read_files(spec, root)
    tests = _read_cases(spec, "tests", yml)
    benchmarks = _read_cases(spec, "benchmarks", yml, required=False)
    ranking = spec.get("ranking_by", "last")
    if ranking not in RANKINGS:
        raise TaskError(f"{yml}: ranking_by must be one of {RANKINGS}, got {ranking!r}")
    _check_timing(spec.get("timing"), yml)
    _check_ranks(spec, tests + benchmarks, yml)
    timeouts = {
        phase: float(spec[f"{phase}_timeout"])
        for phase in ("test", "benchmark", "ranked")
        if spec.get(f"{phase}_timeout") is not None
    }
    task = Task(
        name=root.name,
        root=root,
        spec=spec,
        files=files,
        tests=tests,
        benchmarks=benchmarks,
        ranking_by=ranking,
        description=str(spec.get("description", "")).strip(),
        gpus=[str(g) for g in spec.get("gpus", []) or []],
        templates={str(k): str(v) for k, v in (spec.get("templates") or {}).items()},
        timeouts=timeouts,
    )
    task.content_hash = _content_hash(yml, files)
    return task


TIMING_KEYS = {"hidden_window_us": float, "calls_per_sample": int}


def _check_ranks(spec: dict[str, Any], cases: list[dict[str, Any]], yml: Path) -> None:
    """`multi_gpu` is true or false; where true, every case names its `world_size` (the
    ranks it runs, one per GPU), a whole number of at least 1."""
    multi = spec.get("multi_gpu", False)
    if not isinstance(multi, bool):
        raise TaskError(f"{yml}: multi_gpu must be true or false, not {multi!r}")
    if not multi:
        return
    for case in cases:
        world = case.get("world_size")
        if isinstance(world, bool) or not isinstance(world, int) or world < 1:
            raise TaskError(f"{yml}: a multi_gpu task's every case needs world_size, a whole "
                            f"number of ranks of at least 1; {case} has {world!r}")


def _check_timing(timing: Any, yml: Path) -> None:
    """The task's `timing:` keys: known names, numbers in range."""
    if timing is None:
        return
    if not isinstance(timing, dict):
        raise TaskError(f"{yml}: timing must be a mapping of {sorted(TIMING_KEYS)}")
    for key, value in timing.items():
        kind = TIMING_KEYS.get(key)
        if kind is None:
            raise TaskError(f"{yml}: unknown timing key {key!r} (known: {sorted(TIMING_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (
                kind is int and (int(value) != value or value < 1)):
            what = "a non-negative number" if kind is not int else "a positive whole number"
            raise TaskError(f"{yml}: timing.{key} must be {what}, not {value!r}")


def _read_files(spec: dict[str, Any], root: Path) -> list[TaskFile]:
    entries = spec.get("files")
    if entries is None:
        entries = [{"name": "submission.py", "source": SUBMISSION_MARK}]
        entries += [{"name": n, "source": n} for n in DEFAULT_FILES if (root / n).is_file()]
    files = []
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry or "source" not in entry:
            raise TaskError(f"{root}/task.yml: each files entry needs 'name' and 'source'")
        if entry["source"] == SUBMISSION_MARK:
            files.append(TaskFile(str(entry["name"]), None))
            continue
        source = (root / str(entry["source"])).resolve()
        if not source.is_file():
            raise TaskError(
                f"{root}/task.yml: file {entry['name']!r} points to {entry['source']!r}, "
                f"which does not exist ({source})"
            )
        files.append(TaskFile(str(entry["name"]), source))
    names = {f.name for f in files}
    if _config_main(spec) in names and "task.py" not in names:
        return files  # its own eval.py defines the interface (see Task.own_evaluator)
    for needed in ("task.py", "reference.py"):
        if needed not in names:
            raise TaskError(f"{root}: the task has no {needed} (files: {sorted(names)}); a "
                            "folder whose own evaluator defines the interface lists it in "
                            "files and names it in config.main")
    return files


def _read_cases(spec: dict[str, Any], key: str, yml: Path, required: bool = True) -> list[dict]:
    cases = spec.get(key) or []
    if required and not cases:
        raise TaskError(f"{yml}: no {key} cases")
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise TaskError(f"{yml}: {key} must be a list of mappings")
    return [dict(c) for c in cases]


def _content_hash(yml: Path, files: list[TaskFile]) -> str:
    digest = hashlib.sha256(yml.read_bytes())
    for f in sorted((f for f in files if not f.is_submission), key=lambda f: f.name):
        digest.update(f.name.encode() + b"\0" + f.source.read_bytes())
    return digest.hexdigest()


@dataclass
class Reference:
    """The task's reference module as the judge uses it."""

    module: ModuleType
    generate_accepts_device: bool

    def generate(self, case: dict[str, Any], device: str) -> Any:
        """One input for `case` on `device`."""
        kwargs = dict(case)
        if self.generate_accepts_device:
            kwargs["device"] = device
        return self.module.generate_input(**kwargs)

    def reference(self, data: Any) -> Any:
        return self.module.ref_kernel(data)

    def source(self) -> str:
        """The text of reference.py ("" where it cannot be read)."""
        try:
            return Path(self.module.__file__).read_text(errors="replace")
        except (OSError, TypeError):
            return ""

    def check(self, data: Any, output: Any) -> tuple[bool, str]:
        """Run the task's check; accept both `(bool, str)` and the older string form."""
        result = self.module.check_implementation(data, output)
        if isinstance(result, tuple) and len(result) == 2:
            return bool(result[0]), str(result[1] or "")
        if isinstance(result, str):
            return result == "", result
        if isinstance(result, bool):
            return result, "" if result else "check failed"
        raise TypeError(f"check_implementation returned {type(result).__name__}")

    def work(self, case: dict[str, Any]) -> dict[str, float] | None:
        """FLOPs and bytes of a case, when the task declares them."""
        fn = getattr(self.module, "work", None)
        return dict(fn(**case)) if callable(fn) else None

    def warm(self, case: dict[str, Any], device: str) -> str | None:
        """Run the task's own code once on `case` (generate, reference, check) and drop the
        result: its one-off costs (lazy imports, first kernel loads) are paid here. A
        reference that turns on deterministic algorithms imports torch's compiler stack,
        seconds on a machine without cached bytecode. None, or what failed: the case
        itself reports any failure when it runs."""
        try:
            data = self.generate(case, device)
            self.check(data, self.reference(data))
        except Exception as exc:  # noqa: BLE001 - the task's code: reported by the case
            return repr(exc)
        return None


def import_reference(task: Task, staged: Path) -> Reference:
    """Import `reference.py` from a staged copy without leaving its modules behind."""
    names = [Path(f.name).stem for f in task.files]
    saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    sys.path.insert(0, str(staged))
    try:
        module = importlib.import_module("reference")
    except Exception as exc:
        raise ReferenceImportError(f"{task.root}: reference.py failed to import: {exc!r}",
                                   (staged / "reference.py").read_text(errors="replace")
                                   ) from exc
    finally:
        sys.path.remove(str(staged))
        for n in names:
            sys.modules.pop(n, None)
        sys.modules.update(saved)
    for needed in ("generate_input", "ref_kernel", "check_implementation"):
        if not callable(getattr(module, needed, None)):
            raise TaskError(f"{task.root}: reference.py defines no {needed}()")
    params = inspect.signature(module.generate_input).parameters
    return Reference(module, "device" in params)
