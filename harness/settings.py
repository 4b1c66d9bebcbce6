"""Harness defaults, read from `configs/defaults.yaml` into one typed object."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "configs"


@dataclass
class TimingSettings:
    warmup_seconds: float = 0.05
    warmup_min_calls: int = 3
    min_calls: int = 10
    min_seconds: float = 0.1
    max_seconds: float = 4.0
    max_calls: int = 5000
    target_rse: float = 0.001
    ring_slots: int = 2
    calibration_calls: int = 40
    l2_flush_factor: float = 2.0
    cpu_flush_bytes: int = 32 << 20
    check_timed_calls: str = "leaderboard"
    spin_seconds: float = 0.05
    mailbox: bool = True
    launch_ahead_us: float = 0.0
    sync: str = "device"
    warm: str = "kernel"
    throttle_ratio: float = 0.9

    def __post_init__(self) -> None:
        if self.sync not in ("device", "event"):
            raise ValueError(f"timing.sync must be device or event, not {self.sync!r}")
        if self.warm not in ("kernel", "event"):
            raise ValueError(f"timing.warm must be kernel or event, not {self.warm!r}")
        if self.check_timed_calls not in ("leaderboard", "all"):
            raise ValueError("timing.check_timed_calls must be leaderboard or all, "
                             f"not {self.check_timed_calls!r}")


@dataclass
class IntegritySettings:
    gap_abs_us: float = 100.0
    gap_rel: float = 0.5
    calibration_slack_us: float = 200.0
    floor_margin: float = 1.0
    refuse_ranking_on: list[str] = field(default_factory=lambda: ["hard"])


@dataclass
class WorkerSettings:
    start_timeout: float = 180.0
    output_limit_bytes: int = 65536
    file_size_limit_bytes: int = 256 << 20
    cpu_memory_limit_gb: float = 16.0
    gpu_memory_fraction: float = 0.9
    max_restarts: int = 3
    pin_cpus: bool = False
    gc_freeze: bool = False


@dataclass
class Settings:
    """Every tunable of an evaluation; built from YAML, never from scattered literals."""

    timing: TimingSettings = field(default_factory=TimingSettings)
    integrity: IntegritySettings = field(default_factory=IntegritySettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    default_timeout: float = 180.0
    store_path: str = "results.db"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, extra: Path | None = None) -> Settings:
        """Read the defaults, then `extra` (same keys) on top of them."""
        data = _read_yaml(CONFIG_DIR / "defaults.yaml")
        if extra is not None:
            data = _merge(data, _read_yaml(extra))
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Build settings from a mapping shaped like `configs/defaults.yaml`."""
        return cls(
            raw=data,
            timing=_fill(TimingSettings, data.get("timing", {})),
            integrity=_fill(IntegritySettings, data.get("integrity", {})),
            worker=_fill(WorkerSettings, data.get("worker", {})),
            default_timeout=float(data.get("tasks", {}).get("default_timeout", 180)),
            store_path=str(data.get("store", {}).get("path", "results.db")),
        )


    def for_device(self, kind: str) -> Settings:
        """These settings with the device's own section (such as `cpu:`) applied."""
        section = self.raw.get(kind)
        if not section:
            return self
        return Settings.from_dict(_merge(self.raw, section))


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


def _fill(kind: type, values: dict[str, Any]) -> Any:
    known = {f for f in kind.__dataclass_fields__}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"unknown settings for {kind.__name__}: {sorted(unknown)}")
    return kind(**values)


def load_gpu_table() -> dict[str, dict[str, Any]]:
    """The peak-rate table of `configs/gpus.yaml`."""
    return _read_yaml(CONFIG_DIR / "gpus.yaml")
