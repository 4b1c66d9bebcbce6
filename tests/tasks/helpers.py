"""Import a task's reference module from a staged copy (as the judge does), isolated from
other tasks' modules."""

import atexit
import shutil
import tempfile
from pathlib import Path

from harness.loading.task_folder import import_reference, load_task


def load_reference(task: str):
    folder = Path(tempfile.mkdtemp(prefix="task-test-"))
    atexit.register(shutil.rmtree, folder, True)  # imported from it until the session ends
    staged = load_task(task).stage(folder)
    return import_reference(load_task(task), staged).module
