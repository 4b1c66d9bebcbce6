#!/usr/bin/env python3
"""Command line of the kernel-competition harness. Parses arguments; the work is in harness/."""

from __future__ import annotations

import os
import sys

# The judge's CPU threads must sleep, not spin, while the worker runs (set before torch loads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from pathlib import Path

from harness.bytecode import use_cache_if_needed

use_cache_if_needed()  # before torch loads: its bytecode, where it cannot sit beside it

import click

from harness.consts import Mark
from harness.frontends.console import make_console
from harness.quiet import hush_numpy_warning

hush_numpy_warning()  # before any command imports torch

console = make_console()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Load, check, time and rank GPU kernel submissions."""


@cli.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--task", "task", help="Task name (a folder under tasks/) or a task folder's path.")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard", "profile"]),
              default="leaderboard", show_default=True,
              help="profile: each benchmark case's kernels under the PyTorch profiler "
              "(and Nsight Compute when ncu is on the PATH); records nothing.")
@click.option("--case", "cases", multiple=True, metavar='"k: v; k: v"',
              help="Run this case instead of the task's (repeatable).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]),
              help="Default: the GPU when there is one, else the CPU.")
@click.option("--timeout", type=float, help="Seconds per phase, instead of the task's.")
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="Write the versioned result document here.")
@click.option("--summary-md", type=click.Path(path_type=Path),
              help="Write a markdown summary (also to $GITHUB_STEP_SUMMARY when set).")
@click.option("--config", type=click.Path(exists=True, path_type=Path),
              help="YAML settings on top of configs/defaults.yaml.")
@click.option("--db", help="Results database: a SQLite path or postgresql:// URL.")
@click.option("--user", help="Who submits (default: $HARNESS_USER, git user.name, login).")
@click.option("--record/--no-record", default=None,
              help="Record the run (default: only in leaderboard mode).")
@click.option("--allow-partial-containment", is_flag=True,
              help="Record leaderboard runs even where the worker's sandbox is partial or off.")
@click.option("--allow-shared-gpu", is_flag=True,
              help="Record leaderboard runs even where other processes used the GPU meanwhile.")
@click.option("--repeat", type=int, default=1, show_default=True, metavar="N",
              help="Benchmark mode: run the evaluation N times, each in a fresh worker, and "
              "show each case's mean per run, their median and spread.")
@click.option("-v", "--verbose", is_flag=True,
              help="Print notes, flags and warnings whole (by default two lines each).")
def submit(file: Path, **kwargs) -> None:
    """Evaluate FILE: check it, time it, record it and show where it ranks."""
    from harness.frontends.stopping import exit_now
    from harness.frontends.submit import run_submit
    from harness.options import RunOptions

    # everything is cleaned up and written when run_submit returns: skip the teardown
    exit_now(run_submit(RunOptions(file=file, cases=list(kwargs.pop("cases")), **kwargs), console))


@cli.command()
def tasks() -> None:
    """List the tasks with their descriptions, target GPUs and case counts."""
    from harness.frontends.commands import list_tasks

    list_tasks(console)


@cli.command()
@click.argument("task")
@click.option("--lang", default="Python", show_default=True, help="Which template.")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write it here.")
def template(task: str, lang: str, output: Path | None) -> None:
    """Print (or write) TASK's starter file."""
    from harness.frontends.commands import show_template

    sys.exit(show_template(console, task, lang, output))


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--task", help="Task name or folder (default: each file's #!POPCORN directive).")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard"]),
              default="leaderboard", show_default=True)
@click.option("--jobs", type=int, help="CPU evaluations at once when there is no GPU.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--address", help="Ray cluster address (default: start a local Ray instance).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]))
@click.option("--timeout", type=float, help="Seconds per phase, instead of the task's.")
@click.option("--case", "cases", multiple=True, metavar='"k: v; k: v"')
@click.option("--config", type=click.Path(exists=True, path_type=Path))
@click.option("--user", help="Record every result under this user (default: each file's name).")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="A summary document.")
@click.option("--db", help="Results database: a SQLite path or postgresql:// URL.")
@click.option("--allow-partial-containment", is_flag=True,
              help="Record leaderboard runs even where the worker's sandbox is partial or off.")
@click.option("--allow-shared-gpu", is_flag=True,
              help="Record leaderboard runs even where other processes used the GPU meanwhile.")
@click.option("-v", "--verbose", is_flag=True,
              help="After the results, each submission's warnings, flags and notes, whole.")
def batch(paths, jobs, backend, address, cases, **kwargs) -> None:
    """Evaluate many submissions: one per GPU at a time (or --jobs CPU slots), or on Ray."""
    from harness.frontends.batch import run_batch
    from harness.frontends.errors import guarded
    from harness.options import RunOptions

    options = RunOptions(cases=list(cases), **kwargs)
    sys.exit(guarded(run_batch, console, list(paths), options, jobs, backend, address))


db_option = click.option("--db", help="Results database: a SQLite path or postgresql:// URL "
                         "(default: $HARNESS_DB, else configs/defaults.yaml).")


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path),
                metavar="A.py B.py")
@click.option("--task", help="Task name or folder (default: the files' #!POPCORN directive).")
@click.option("--runs", type=int, default=10, show_default=True, metavar="N",
              help="At most N benchmark runs of each file.")
@click.option("--min-runs", type=int, default=3, show_default=True, metavar="N",
              help="No early stop before N runs of each.")
@click.option("--threshold", type=float, metavar="FRACTION",
              help="A change smaller than this (0.01: 1%) counts as none: the runs stop once "
              "the interval lies within it.")
@click.option("--case", "cases", multiple=True, metavar='"k: v; k: v"',
              help="Time this case instead of the task's benchmarks (repeatable).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]),
              help="Default: the GPU when there is one, else the CPU.")
@click.option("--timeout", type=float, help="Seconds per phase, instead of the task's.")
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="Write the comparison here (ratio = time(B) / time(A)).")
@click.option("--config", type=click.Path(exists=True, path_type=Path),
              help="YAML settings on top of configs/defaults.yaml.")
@click.option("--baseline", type=int, metavar="SUBMISSION_ID",
              help="A is this recorded submission's code; give B only.")
@click.option("-v", "--verbose", is_flag=True,
              help="Print warnings, and a failing run's notes and flags, whole.")
@db_option
def compare(files: tuple[Path, ...], cases: tuple[str, ...], **kwargs) -> None:
    """Is B faster than A? Both tested, then timed in turn, with a 95% interval (docs/compare.md)."""
    from harness.frontends.compare import CompareOptions, run_compare
    from harness.frontends.stopping import exit_now

    exit_now(run_compare(CompareOptions(files=list(files), cases=list(cases), **kwargs), console))


@cli.command()
@click.argument("task")
@click.option("--device", help="Only this device kind (e.g. H200, CPU).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--all-versions", is_flag=True, help="Rank results of earlier task versions too.")
@db_option
def leaderboard(task: str, device: str | None, as_json: bool, all_versions: bool,
                db: str | None) -> None:
    """The ranked table of TASK, per device kind."""
    from harness.frontends.browse import leaderboard as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, console, task, device, as_json, all_versions, db))


@cli.command()
@click.option("--task", help="Only this task.")
@click.option("--user", help="Only this user.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@db_option
def history(task: str | None, user: str | None, as_json: bool, db: str | None) -> None:
    """Every recorded submission, oldest first."""
    from harness.frontends.browse import history as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, console, task, user, as_json, db))


@cli.command()
@click.argument("submission_id", type=int)
@click.option("--code", is_flag=True, help="Also print the submitted code.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
def show(submission_id: int, code: bool, as_json: bool, db: str | None) -> None:
    """One recorded submission: its runs, cases, screen findings (and code)."""
    from harness.frontends.browse import show as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, console, submission_id, code, as_json, db))


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here, not stdout.")
@db_option
def export(fmt: str, output: Path | None, db: str | None) -> None:
    """Every recorded run, flat, as CSV or JSON."""
    from harness.frontends.browse import export as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, None, fmt, output, db))


@cli.command()
@click.argument("documents", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--user", help="Who submitted (default: the document's, else yours).")
@click.option("--repeat", type=int, default=1, hidden=True)
@click.option("--allow-shared-gpu", is_flag=True,
              help="Record leaderboard runs even where other processes used the GPU meanwhile.")
@db_option
def record(documents: tuple[Path, ...], user: str | None, repeat: int, allow_shared_gpu: bool,
           db: str | None) -> None:
    """Record result documents written by `submit --json` (for example CI artifacts)."""
    from harness.frontends.browse import record as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, console, list(documents), user, db, repeat, allow_shared_gpu))


@cli.command()
@click.argument("submission_id", type=int)
@click.option("--status", type=click.Choice([m.value for m in Mark]), required=True)
@db_option
def mark(submission_id: int, status: str, db: str | None) -> None:
    """Set a submission's status (organisers: `hacked` removes it from every ranking)."""
    from harness.frontends.browse import mark as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, console, submission_id, status, db))


@cli.command()
@click.option("--host", help="Listen on this address (default: web.host of the settings).")
@click.option("--port", type=click.IntRange(0, 65535), help="Listen on this port (default: web.port).")
@click.option("--show-code/--hide-code", default=None,
              help="Show submitted code on submission pages (default: web.show_code).")
@click.option("--config", type=click.Path(exists=True, path_type=Path),
              help="YAML settings on top of configs/defaults.yaml.")
@db_option
def serve(host: str | None, port: int | None, show_code: bool | None, config: Path | None,
          db: str | None) -> None:
    """A read-only web leaderboard of the database (needs Flask: pip install -e '.[web]')."""
    from harness.frontends.errors import guarded
    from harness.frontends.serve import run_serve

    sys.exit(guarded(run_serve, console, db, host, port, show_code, config))


if __name__ == "__main__":
    cli()
