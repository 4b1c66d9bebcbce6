"""Import a task's reference module from a staged copy (as the judge does), isolated from
other tasks' modules."""

import tempfile
from pathlib import Path

from harness.loading.task_folder import import_reference, load_task


def load_reference(task: str):
    staged = load_task(task).stage(Path(tempfile.mkdtemp(prefix="task-test-")))
    return import_reference(load_task(task), staged).module
