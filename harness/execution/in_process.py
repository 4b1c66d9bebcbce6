"""The evaluation run in this process: what `compare` does for a contestant, and what
every judge process (`judge_process`) does inside (`submit`'s among them).

`judge_here` takes a prepared request and gives back a `Result` (harness/execution/
protocol.py): `Judged` with the evaluation, or `Unjudged` where the task is broken or the
harness raised. A submission's own failures are verdicts inside the evaluation, never an
exception here.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from harness.execution.protocol import Failure, Judged, Result, Unjudged

if TYPE_CHECKING:
    from harness.judging import HeadStart, Prepared, Progress
    from harness.settings import Settings


def judge_here(prepared: Prepared, settings: Settings, progress: Progress | None = None,
               head: HeadStart | None = None) -> Result:
    """Evaluate `prepared` in this process (its worker, sandboxed, beside it).

    `head`: a worker started before this process imported torch (`HeadStart.begin`),
    which serves this run; the caller closes it."""
    from harness.judging import evaluate
    from harness.loading.task_folder import TaskError

    try:
        evaluation = evaluate(prepared, settings, progress, head)
    except TaskError as exc:
        return Unjudged(Failure.TASK, f"the task is broken: {exc}")
    except Exception as exc:  # noqa: BLE001 - our bug: say so, keep the details
        return Unjudged(Failure.HARNESS, f"internal harness error: {exc!r}",
                        traceback.format_exc())
    return Judged(evaluation.to_dict(), evaluation)
