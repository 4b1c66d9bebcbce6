"""One case's shared buffers, as the judge keeps them: the input ring and one set of
output buffers per slot, laid out like the reference's output, or like the submission's
own when the task's check accepts another layout (see Judge._first_call)."""

from __future__ import annotations

from typing import Any

from harness.judging.worker.sharing import SharedAllocator
from harness.judging.worker.structure import make_outputs


class OutputLayout(Exception):
    """The worker's output is laid out unlike the reference's (see Judge._first_call)."""

    def __init__(self, message: str, layout: Any) -> None:
        super().__init__(message)
        self.layout = layout


class CaseBuffers:
    """One case's shared buffers: the input ring and one set of outputs per slot."""

    def __init__(self, alloc: SharedAllocator, slots: list[Any], template: Any, finite: bool,
                 per: int) -> None:
        self.alloc, self.slots, self.per, self.finite = alloc, slots, per, finite
        self.relayout(template)

    def relayout(self, template: Any) -> None:
        """Output buffers laid out like `template`."""
        self.template = template
        self.outputs = [make_outputs(template, self.alloc) for _ in self.slots]

    def wire_outputs(self) -> list[Any]:
        return [self.alloc.to_wire(o) for o in self.outputs]
