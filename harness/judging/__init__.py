"""The judge and its worker: one evaluation, run in two processes, timed and checked.

The front ends use only the names below. Each is imported on first use, so that importing
this package (the worker does, to reach `harness.judging.worker`) loads nothing else.

Layout: the evaluation itself sits here (preparation, evaluation, judge, phases, verdicts,
checking, seeds, foreign); `measure/` times and checks the samples; `worker/` is the worker
process and its channel; `sandbox/` contains the worker; `startup/` starts it early and
keeps compiled code per file; `profile/` is profile mode."""

from __future__ import annotations

import importlib
from typing import Any

# name -> (module, attribute)
_FACE = {
    "prepare": ("harness.judging.preparation", "prepare"),
    "check_request": ("harness.judging.preparation", "check_request"),
    "Prepared": ("harness.judging.preparation", "Prepared"),
    "UsageError": ("harness.judging.preparation", "UsageError"),
    "evaluate": ("harness.judging.evaluation", "evaluate"),
    "phase_specs": ("harness.judging.evaluation", "phase_specs"),
    "HeadStart": ("harness.judging.startup.head_start", "HeadStart"),
    "PhaseSpec": ("harness.judging.phases", "PhaseSpec"),
    "Progress": ("harness.judging.phases", "Progress"),
    "recording_refusal": ("harness.judging.sandbox.containment", "recording_refusal"),
    "DeviceError": ("harness.judging.measure.devices", "DeviceError"),
    "DeviceInfo": ("harness.judging.measure.device_info", "DeviceInfo"),
    "read_clocks": ("harness.judging.measure.devices", "read_clocks"),
    "run_folder_prefix": ("harness.judging.sandbox.leftovers", "prefix"),
    "make_run_folder": ("harness.judging.sandbox.leftovers", "make_folder"),
    "sweep_run_folders": ("harness.judging.sandbox.leftovers", "sweep"),
    "die_with_parent": ("harness.judging.sandbox.sandbox", "die_with_parent"),
}

__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    if name not in _FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _FACE[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
