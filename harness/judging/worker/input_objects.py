"""In the worker: inputs that hold objects (a task's dataclass, an `nn.Module`).

Their classes may live in the task's reference, which the worker's folder leaves out (a
submission cannot import it). Where a case's input holds such objects, the judge sends the
module's text with the case and the worker loads it here, privately: out of
`sys.modules` once loaded, so `import reference` still fails, though the submission can reach the module
through the objects it is given, as in the public evaluators, whose one process holds it.

A call may change an object's attributes (a cache that counts what it holds): every
object, dict and list inside such an input is put back as it was before each call, off the
clock, so that each call gets the input the judge made.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

from harness.judging.worker.structure import attributes, is_object


class TaskModules:
    """The task's modules loaded for the objects of its inputs, by module name."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.loaded: dict[str, types.ModuleType] = {}

    def load(self, sources: dict[str, str]) -> None:
        """Run each module's text as a private module (its imports see the worker's folder,
        as the submission's do)."""
        for name, source in sources.items():
            if name in self.loaded:
                continue
            module = types.ModuleType(name)
            module.__file__ = str(self.folder / f"{name}.py")
            if str(self.folder) not in sys.path:
                sys.path.insert(0, str(self.folder))
            # listed while it runs (dataclasses look their module up there), then taken out
            saved = sys.modules.get(name)
            sys.modules[name] = module
            try:
                exec(compile(source, f"{name}.py", "exec"), module.__dict__)  # noqa: S102 - the judge's text
            finally:
                if saved is not None:
                    sys.modules[name] = saved
                else:
                    sys.modules.pop(name, None)
            self.loaded[name] = module

    def find(self, module: str, qualname: str) -> type:
        """A class of one of these modules, else of an importable one."""
        found: Any = self.loaded.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        if not isinstance(found, type):
            raise TypeError(f"{module}.{qualname} is not a class")
        return found


Saved = list[tuple[Any, Any]]


def saved_state(slot: Any) -> Saved:
    """What to put back before each call: each object, dict and list inside an input that
    holds objects, with a shallow copy of its contents (none for an input without objects)."""
    found: Saved = []
    stack, seen, has_objects = [slot], set(), False
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if is_object(item):
            has_objects = True
            attrs = attributes(item)
            found.append((item, attrs))
            stack.extend(attrs.values())
        elif isinstance(item, dict):
            found.append((item, dict(item)))
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append((item, list(item)))
            stack.extend(item)
        elif isinstance(item, tuple):
            stack.extend(item)
    return found if has_objects else []


def put_back(saved: Saved) -> None:
    """Restore what `saved_state` saved."""
    for item, contents in saved:
        if isinstance(item, dict):
            item.clear()
            item.update(contents)
        elif isinstance(item, list):
            item[:] = contents
        elif hasattr(item, "__dict__"):
            vars(item).clear()
            vars(item).update(contents)
        else:
            for name, value in contents.items():
                object.__setattr__(item, name, value)
