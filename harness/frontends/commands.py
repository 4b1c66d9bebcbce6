"""The small commands: `tasks` and `template`."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.consts import ExitCode
from harness.loading.task_folder import Task, TaskError, list_task_names, load_task


def list_tasks(console: Console) -> None:
    """A table of every task under tasks/."""
    table = Table(title="Tasks")
    for col in ("task", "description", "GPUs", "tests", "benchmarks", "ranking"):
        table.add_column(col)
    for name in list_task_names():
        try:
            task = load_task(name)
        except TaskError as exc:
            table.add_row(name, f"[red]broken: {escape(str(exc))}[/]", "", "", "", "")
            continue
        first = task.description.splitlines()[0] if task.description else ""
        table.add_row(name, escape(first), _gpus(task), str(len(task.tests)),
                      str(len(task.benchmarks)), task.ranking_by)
    console.print(table)


def _gpus(task: Task) -> str:
    """The GPUs a task was made for, and for a multi-GPU task how many a run takes."""
    kinds = ", ".join(task.gpus) or "any"
    if not task.multi_gpu:
        return kinds
    sizes = task.world_sizes
    count = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    return f"{kinds} ({count} a run)"


def show_template(console: Console, name: str, lang: str, output: Path | None) -> int:
    """Print or write a task's starter file; the exit code."""
    try:
        task = load_task(name)
    except TaskError as exc:
        console.print(f"[red]error:[/] {exc}")
        return ExitCode.USAGE
    file = task.templates.get(lang)
    if file is None or not (task.root / file).is_file():
        known = ", ".join(task.templates) or "none"
        console.print(f"[red]error:[/] task {task.name} has no {lang} template (has: {known})")
        return ExitCode.USAGE
    text = (task.root / file).read_text()
    if output is None:
        print(text, end="")
    else:
        output.write_text(text)
        console.print(f"wrote {output}")
    return ExitCode.OK
