"""Import a task's reference module by path, isolated from other tasks' modules."""

import importlib
import sys

from conftest import ROOT


def load_reference(task: str):
    folder = ROOT / "tasks" / task
    for name in ("task", "reference"):
        sys.modules.pop(name, None)
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("reference")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("task", None)
        sys.modules.pop("reference", None)
