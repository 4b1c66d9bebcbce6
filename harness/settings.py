"""Harness defaults, read from `configs/defaults.yaml` into one typed object."""

from __future__ import annotations

import copy
import re
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from harness.consts import COUNTABLE

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "configs"


@dataclass
class TimingSettings:
    """How calls are timed (`timing:` in configs/defaults.yaml, which holds every default)."""

    warmup_seconds: float
    min_calls: int
    min_seconds: float
    max_seconds: float
    max_calls: int
    target_rse: float
    host_launch: str
    hidden_window_us: float
    trace_calls: bool

    def __post_init__(self) -> None:
        if self.host_launch not in ("hidden", "counted"):
            raise ValueError(f"timing.host_launch must be hidden or counted, not {self.host_launch!r}")


@dataclass
class IntegritySettings:
    """Thresholds of the judge's integrity checks (`integrity:`)."""

    refuse_ranking_on: list[str]

    def __post_init__(self) -> None:
        unknown = [v for v in self.refuse_ranking_on if v not in COUNTABLE]
        if unknown:
            raise ValueError(f"integrity.refuse_ranking_on takes {', '.join(COUNTABLE)}, not "
                             f"{', '.join(unknown)}")


@dataclass
class WorkerSettings:
    """Limits and start-up of the worker process (`worker:`)."""

    start_timeout: float
    output_limit_bytes: int
    file_size_limit_bytes: int
    cpu_memory_limit_gb: float
    gpu_memory_fraction: float
    head_start: bool
    sandbox: str | bool  # landlock or off (YAML reads a bare `off` as false)
    sandbox_read: list[str]
    env_pass: list[str]
    compile_cache: str
    compile_cache_dir: str | None
    compile_cache_total_mb: int
    max_processes: int = 512
    scratch_mb: int = 4096

    def __post_init__(self) -> None:
        for key in ("max_processes", "scratch_mb"):
            value = getattr(self, key)
            if not _whole(value) or value < 0:
                raise ValueError(f"worker.{key} must be a whole number, 0 (no bound) or more, "
                                 f"not {value!r}")
        if self.compile_cache not in ("per_file", "private"):
            raise ValueError("worker.compile_cache must be per_file or private, not "
                             f"{self.compile_cache!r}")
        if self.compile_cache_dir is not None and not (
                isinstance(self.compile_cache_dir, str)
                and self.compile_cache_dir.startswith(("/", "~"))):
            raise ValueError("worker.compile_cache_dir must be an absolute path (or start with "
                             f"~) or null, not {self.compile_cache_dir!r}")
        if not _whole(self.compile_cache_total_mb) or self.compile_cache_total_mb < 1:
            raise ValueError("worker.compile_cache_total_mb must be a whole number of 1 or "
                             f"more, not {self.compile_cache_total_mb!r}")
        if self.sandbox is False:  # YAML reads a bare `off` as false
            self.sandbox = "off"
        if self.sandbox not in ("landlock", "off"):
            raise ValueError(f"worker.sandbox must be landlock or off, not {self.sandbox!r}")
        self.sandbox_read = [str(p) for p in _strings("worker.sandbox_read", self.sandbox_read)]
        self.env_pass = _strings("worker.env_pass", self.env_pass)
        for entry in self.env_pass:
            if not _ENV_ENTRY.fullmatch(entry):
                raise ValueError(f"worker.env_pass: {entry!r} is not a variable's name, or a "
                                 f"prefix of at least {_ENV_PREFIX_MIN} characters ending in *")


# A name of `worker.env_pass`, or a prefix ending in * long enough to say what it is for
# (`A*` would pass nearly the whole environment, tokens included).
_ENV_PREFIX_MIN = 3
_ENV_ENTRY = re.compile(rf"[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]{{{_ENV_PREFIX_MIN - 1},}}\*")


def _is_number(value: Any) -> bool:
    """An int or a float from YAML (not a bool, which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    """An int from YAML (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(key: str, value: Any) -> list[str]:
    """A YAML list of strings (empty for null); anything else is refused with the key's name
    (a bare string would otherwise be read letter by letter)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{key} must be a list of non-empty strings, not {value!r}")
    return list(value)


@dataclass
class WebSettings:
    """The web leaderboard of `runner.py serve` (`web:`)."""

    host: str
    port: int
    show_code: bool
    channel_timeout: float  # a connection with no byte for this long is closed (s)

    def __post_init__(self) -> None:
        if not 0 <= int(self.port) < 65536:
            raise ValueError(f"web.port must be a TCP port (0-65535), not {self.port!r}")
        if self.channel_timeout <= 0:
            raise ValueError(f"web.channel_timeout must be above 0, not {self.channel_timeout}")


@dataclass
class ProfileSettings:
    """What `--mode profile` runs per benchmark case (`profile:`)."""

    calls: int
    ncu: bool
    reports_dir: str

    def __post_init__(self) -> None:
        if self.calls < 1:
            raise ValueError("profile.calls must be at least 1")


@dataclass(frozen=True)
class ServerSettings:
    """The contest server's rules and the queue's lease (`server:`)."""

    lease_seconds: float = 60.0  # a running job's lease; heartbeats renew it
    max_attempts: int = 3  # claims of one job before it fails (its workers died)
    max_upload_bytes: int = 1048576  # larger uploads get 413
    rate_limit: int = 30  # submissions per user within rate_window_seconds; 0: none
    rate_window_seconds: float = 3600.0

    def __post_init__(self) -> None:
        if self.lease_seconds <= 0 or self.max_attempts < 1 or self.max_upload_bytes < 1:
            raise ValueError("server.lease_seconds, max_attempts and max_upload_bytes must be "
                             "positive")
        if self.rate_limit < 0 or self.rate_window_seconds <= 0:
            raise ValueError("server.rate_limit must be 0 or more, rate_window_seconds positive")

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerSettings:
        """The `server:` section of `settings` (defaults for keys it leaves out)."""
        section: dict[str, Any] = settings.raw.get("server") or {}
        if not isinstance(section, dict):
            raise ValueError(f"server: expected a mapping of settings, not {section!r}")
        known = {f.name for f in fields(cls)}
        unknown = set(section) - known
        if unknown:
            raise ValueError(f"not a setting: {', '.join(f'server.{k}' for k in sorted(unknown))}")
        hints = typing.get_type_hints(cls)
        for key, value in section.items():
            check_type(f"server.{key}", value, hints[key])
        return cls(**section)


@dataclass
class Settings:
    """Every tunable of an evaluation; built from YAML, never from scattered literals."""

    timing: TimingSettings
    integrity: IntegritySettings
    worker: WorkerSettings
    web: WebSettings
    profile: ProfileSettings
    default_timeout: float
    store_path: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, extra: Path | None = None) -> Settings:
        """Read the defaults, then `extra` (same keys) on top of them, as one checked tree:
        an unknown key or a value of the wrong type is a `ValueError` that names the file,
        the key and what was expected. The `cpu:` and `server:` sections are checked too,
        whatever the device and the command."""
        defaults = CONFIG_DIR / "defaults.yaml"
        data = _checked(defaults, _read_yaml(defaults))
        if extra is not None:
            data = _checked(Path(extra), _merge(data, _read_yaml(extra)))
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Build settings from a mapping shaped like `configs/defaults.yaml`."""
        return cls(
            raw=data,
            timing=_fill(TimingSettings, data, "timing"),
            integrity=_fill(IntegritySettings, data, "integrity"),
            worker=_fill(WorkerSettings, data, "worker"),
            web=_fill(WebSettings, data, "web"),
            profile=_fill(ProfileSettings, data, "profile"),
            default_timeout=float(_section(data, "tasks")["default_timeout"]),
            store_path=str(_section(data, "store")["path"]),
        )


    def for_device(self, kind: str) -> Settings:
        """These settings with the device's own section (such as `cpu:`) applied."""
        section = self.raw.get(kind)
        if not section:
            return self
        return Settings.from_dict(_merge(self.raw, section))


# The top-level sections of configs/defaults.yaml beside the dataclasses' own.
_OTHER_SECTIONS = {"tasks": {"default_timeout": float}, "store": {"path": str}}
_DEVICE_SECTIONS = ("cpu",)


def _checked(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """`data` (read from `path`, on top of the defaults) checked whole: its sections, their
    keys and types, the device sections applied, the server's section; errors name `path`."""
    known = {"timing", "integrity", "worker", "web", "profile", "server", *_OTHER_SECTIONS,
             *_DEVICE_SECTIONS}
    try:
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"not a section of the settings: {', '.join(unknown)} (known: "
                             f"{', '.join(sorted(known))})")
        for name, keys in _OTHER_SECTIONS.items():
            section = _section(data, name)
            for key in sorted(set(section) - set(keys)):
                raise ValueError(f"not a setting: {name}.{key}")
            for key, kind in keys.items():
                check_type(f"{name}.{key}", section.get(key), kind)
        settings = Settings.from_dict(data)
        for device in _DEVICE_SECTIONS:
            settings.for_device(device)
        ServerSettings.from_settings(settings)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return data


def check_type(key: str, value: Any, hint: Any) -> None:
    """Refuse a setting's value of the wrong type, by its full name (`timing.min_calls`):
    a whole number where `int`, any number where `float`, true or false where `bool`, text
    where `str`, a list of text where `list[str]`; `X | None` also takes null."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        kinds = [a for a in args if a is not type(None)]
        for kind in kinds[1:]:  # any of them will do; the first names what was expected
            try:
                check_type(key, value, kind)
                return
            except ValueError:
                pass
        hint = kinds[0]
        origin = typing.get_origin(hint)
    if origin is list:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return
        raise ValueError(f"{key} must be a list of text, not {value!r}")
    ok = {int: _whole, float: _is_number, bool: lambda v: isinstance(v, bool),
          str: lambda v: isinstance(v, str)}.get(hint, lambda v: True)(value)
    if not ok:
        what = {int: "a whole number", float: "a number", bool: "true or false",
                str: "text"}.get(hint, str(hint))
        raise ValueError(f"{key} must be {what}, not {value!r}")


def _read_yaml(path: Path) -> dict[str, Any]:
    with open(path) as fh:
        loaded = yaml.safe_load(fh) or {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return loaded


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    section = data.get(name)
    if not isinstance(section, dict):
        raise ValueError(f"settings: no {name!r} section (configs/defaults.yaml has every key)")
    return section


# Keys that were settings once and are now the engine's constants: a configuration that still
# sets one is told where it went, not only that the key is unknown.
RETIRED = {
    "integrity.floor_margin": "a score below the physics floor is always rejected",
    "worker.max_restarts": "MAX_RESTARTS in harness/judging/judge.py",
    "web.output_tail_chars": "OUTPUT_TAIL_CHARS in harness/web/app.py",
    "profile.rows": "ROWS in harness/judging/profile/profiling.py",
}


def _fill(kind: type, data: dict[str, Any], name: str) -> Any:
    """The dataclass `kind` from the section `name` of `data`; a key it lacks, or one that
    is not a setting (misspelt, or an engine constant that the YAML cannot set), is refused
    by its full name."""
    values = _section(data, name)
    known = set(kind.__dataclass_fields__)
    unknown = sorted(f"{name}.{key}" for key in set(values) - known)
    retired = [f"{key} ({RETIRED[key]})" for key in unknown if key in RETIRED]
    if retired:
        raise ValueError(f"no longer a setting: {', '.join(retired)}; remove it from the "
                         "configuration (docs/organisers.md)")
    if unknown:
        raise ValueError(f"not a setting: {', '.join(unknown)} (configs/defaults.yaml lists "
                         "every setting)")
    missing = sorted(f"{name}.{key}" for key in known - set(values))
    if missing:
        raise ValueError(f"settings lack {', '.join(missing)} (configs/defaults.yaml has "
                         "every key)")
    hints = typing.get_type_hints(kind)
    for key, value in values.items():
        check_type(f"{name}.{key}", value, hints[key])
    return kind(**values)


def load_gpu_table() -> dict[str, dict[str, Any]]:
    """The peak-rate table of `configs/gpus.yaml`."""
    return _read_yaml(CONFIG_DIR / "gpus.yaml")
