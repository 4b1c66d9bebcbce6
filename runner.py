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

# Options several commands share, worded once.
config_option = click.option("--config", type=click.Path(exists=True, path_type=Path),
                             help="YAML settings on top of configs/defaults.yaml.")
timeout_option = click.option("--timeout", type=float,
                              help="Seconds per phase, instead of the task's.")
device_option = click.option("--device", type=click.Choice(["cpu", "cuda"]),
                             help="Default: the GPU when there is one, else the CPU.")


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
@device_option
@timeout_option
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="Write the versioned result document here.")
@click.option("--summary-md", type=click.Path(path_type=Path),
              help="Write a markdown summary (also to $GITHUB_STEP_SUMMARY when set).")
@config_option
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
@click.option("--server", metavar="URL",
              help="Submit to this contest server instead of judging here.")
@click.option("--token", help="With --server: your token (default: $HARNESS_TOKEN, else "
              "~/.config/kernel-harness/token).")
@click.option("--gpu", help="With --server: the GPU kind (default: the file's #!POPCORN gpu "
              "the server runs, else its first).")
def submit(file: Path, server: str | None, token: str | None, gpu: str | None, **kwargs) -> None:
    """Evaluate FILE: check it, time it, record it and show where it ranks."""
    from harness.execution.stopping import exit_now
    from harness.frontends.submit import run_submit
    from harness.options import RunOptions

    if server:
        from harness.server.client import run_remote

        exit_now(run_remote(RunOptions(file=file, cases=list(kwargs.pop("cases")), **kwargs),
                            console, server, token, gpu))

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
@click.option("--socket", "path", type=click.Path(path_type=Path),
              help="Listen here (default: $HARNESS_WARM_HOST, else a folder of this user's).")
def warm(path: Path | None) -> None:
    """Keep torch imported for this user's commands: submit and compare then borrow a
    judge template from this process instead of importing torch again. Until Ctrl-C."""
    from harness.execution.warm_host import host, socket_path

    path = path or socket_path()
    if path is None:
        raise click.UsageError("HARNESS_WARM_HOST is off: name a socket with --socket")
    sys.exit(host(path))


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--task", help="Task name or folder (default: each file's #!POPCORN directive).")
@click.option("--mode", type=click.Choice(["test", "benchmark", "leaderboard"]),
              default="leaderboard", show_default=True)
@click.option("--jobs", type=int, help="CPU evaluations at once when there is no GPU.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--address", help="Ray cluster address (default: start a local Ray instance).")
@device_option
@timeout_option
@click.option("--case", "cases", multiple=True, metavar='"k: v; k: v"')
@config_option
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
@click.argument("task")
@click.option("--id", "ids", type=int, multiple=True, help="This submission (repeatable).")
@click.option("--user", "users", multiple=True, help="Only this user's (repeatable).")
@click.option("--top", type=int, metavar="N", help="The first N of each ranking.")
@click.option("--all", "everything", is_flag=True,
              help="Every judged submission of the task, ranked or not.")
@click.option("--show", "show_id", type=int, metavar="ID", help="Show rejudging ID.")
@click.option("--apply", "apply_id", type=int, metavar="ID",
              help="Make rejudging ID's results count (their originals are superseded).")
@click.option("--cancel", "cancel_id", type=int, metavar="ID", help="Drop rejudging ID's results.")
@click.option("--list", "listing", is_flag=True, help="The task's rejudgings.")
@click.option("--jobs", type=int, help="CPU evaluations at once when there is no GPU.")
@device_option
@timeout_option
@config_option
@db_option
def rejudge(task, ids, users, top, everything, show_id, apply_id, cancel_id, listing, jobs,
            device, timeout, config, db) -> None:
    """Evaluate TASK's stored submissions again (its current version, this harness) and
    show what changes; the ranking changes only with --apply."""
    from harness.frontends.errors import guarded
    from harness.frontends.rejudge import Selection, list_rejudgings, run_rejudge, settle
    from harness.options import RunOptions

    for action, rid in (("show", show_id), ("apply", apply_id), ("cancel", cancel_id)):
        if rid is not None:
            sys.exit(guarded(settle, console, db, rid, action, config))
    if listing:
        sys.exit(guarded(list_rejudgings, console, db, task, config))
    options = RunOptions(task=task, device=device, timeout=timeout, config=config, db=db)
    sys.exit(guarded(run_rejudge, console, Selection(ids, users, top, everything), options,
                     jobs))


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
@device_option
@timeout_option
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="Write the comparison here (ratio = time(B) / time(A)).")
@config_option
@click.option("--baseline", type=int, metavar="SUBMISSION_ID",
              help="A is this recorded submission's code; give B only.")
@click.option("-v", "--verbose", is_flag=True,
              help="Print warnings, and a failing run's notes and flags, whole.")
@db_option
def compare(files: tuple[Path, ...], cases: tuple[str, ...], **kwargs) -> None:
    """Is B faster than A? Both tested, then timed in turn, with a 95% interval (docs/compare.md)."""
    from harness.execution.stopping import exit_now
    from harness.frontends.compare import CompareOptions, run_compare

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
@click.option("--allow-partial-containment", is_flag=True,
              help="Record leaderboard runs even where the worker's sandbox was partial or off.")
@db_option
def record(documents: tuple[Path, ...], user: str | None, repeat: int, allow_shared_gpu: bool,
           allow_partial_containment: bool, db: str | None) -> None:
    """Record result documents written by `submit --json` (for example CI artifacts), as
    the admission policy decides: a ranked run under partial containment or on a shared GPU
    is refused (exit code 2) unless allowed."""
    from harness.frontends.browse import record as run
    from harness.frontends.errors import guarded
    from harness.results.admission import Policy
    from harness.settings import Settings

    policy = Policy.of(Settings.load(), allow_partial_containment, allow_shared_gpu)
    sys.exit(guarded(run, console, list(documents), user, db, repeat, policy))


@cli.command()
@click.argument("submission_id", type=int)
@click.option("--status", type=click.Choice([m.value for m in (Mark.OK, Mark.SUSPICIOUS,
                                                                 Mark.HACKED)]),
              required=True)
@db_option
def mark(submission_id: int, status: str, db: str | None) -> None:
    """Set a submission's status (organisers: `hacked` removes it from every ranking)."""
    from harness.frontends.browse import mark as run
    from harness.frontends.errors import guarded

    sys.exit(guarded(run, console, submission_id, status, db))


err_console = make_console(sys.stderr)
workers_option = click.option(
    "--workers", default=None, metavar="auto|N",
    help="Worker slots: auto (one per local GPU, or one CPU slot), or N.")


def judge_options(fn):
    """The options a worker slot judges with, applied to every job it takes."""
    fn = click.option("--allow-partial-containment", is_flag=True,
                      help="Record leaderboard runs where the sandbox is partial or off.")(fn)
    fn = click.option("--allow-shared-gpu", is_flag=True,
                      help="Record leaderboard runs where other processes used the GPU.")(fn)
    fn = timeout_option(fn)
    fn = click.option("--case", "cases", multiple=True, metavar='"k: v; k: v"',
                      help="Run these cases instead of each task's (repeatable; for trials).")(fn)
    return click.option("--device", type=click.Choice(["cpu", "cuda"]),
                        help="Judge on the CPU even where there is a GPU (cpu).")(fn)


@cli.command()
@db_option
@workers_option
@click.option("--gpus", metavar="LIST", help="Only these GPUs (e.g. 0,1): CUDA_VISIBLE_DEVICES.")
@judge_options
@config_option
def worker(db: str | None, workers: str | None, gpus: str | None, cases, **kwargs) -> None:
    """Judge the contest server's queued submissions on this machine, one per GPU."""
    from harness.options import RunOptions
    from harness.server.slots import run_worker

    if gpus is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus
    sys.exit(run_worker(console, db, _workers(workers or "auto"),
                        RunOptions(cases=list(cases), **kwargs)))


def _workers(text: str) -> str:
    if text != "auto" and not (text.isdigit() and int(text) >= 0):
        raise click.BadParameter(f"{text!r}: auto or a number", param_hint="--workers")
    return text


@cli.group()
def users() -> None:
    """Contest users and their tokens (the server knows a user only by its token)."""


@users.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="May delete submissions and close leaderboards.")
@db_option
def users_add(name: str, admin: bool, db: str | None) -> None:
    """Add NAME; prints its new token alone on standard output."""
    from harness.frontends.errors import guarded
    from harness.server.commands import users_add as run

    sys.exit(guarded(run, err_console, name, admin, db))


@users.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@db_option
def users_list(as_json: bool, db: str | None) -> None:
    """Every user (never a token)."""
    from harness.frontends.errors import guarded
    from harness.server.commands import users_list as run

    sys.exit(guarded(run, err_console, as_json, db))


@users.command("revoke")
@click.argument("name")
@db_option
def users_revoke(name: str, db: str | None) -> None:
    """Make NAME's token worthless (its submissions stay)."""
    from harness.frontends.errors import guarded
    from harness.server.commands import users_revoke as run

    sys.exit(guarded(run, err_console, name, db))


@cli.group()
def contest() -> None:
    """Contest rules of the server: deadlines, modes, closing; deleting a submission."""


@contest.command("set")
@click.argument("task")
@click.option("--deadline", metavar="ISO|none", help="e.g. 2026-12-31T23:59:00Z (UTC by default).")
@click.option("--modes", metavar="LIST|all", help="Modes allowed, e.g. test,leaderboard.")
@db_option
def contest_set(task: str, deadline: str | None, modes: str | None, db: str | None) -> None:
    """Set TASK's deadline or allowed modes."""
    from harness.frontends.errors import guarded
    from harness.server.commands import contest_set as run

    sys.exit(guarded(run, err_console, task, deadline, modes, None, db))


@contest.command("close")
@click.argument("task")
@db_option
def contest_close(task: str, db: str | None) -> None:
    """Refuse TASK's uploads from now on (403)."""
    from harness.frontends.errors import guarded
    from harness.server.commands import contest_set as run

    sys.exit(guarded(run, err_console, task, None, None, True, db))


@contest.command("open")
@click.argument("task")
@db_option
def contest_open(task: str, db: str | None) -> None:
    """Take TASK's uploads again."""
    from harness.frontends.errors import guarded
    from harness.server.commands import contest_set as run

    sys.exit(guarded(run, err_console, task, None, None, False, db))


@contest.command("show")
@db_option
def contest_show(db: str | None) -> None:
    """Every task's rules, as JSON."""
    from harness.frontends.errors import guarded
    from harness.server.commands import contest_show as run

    sys.exit(guarded(run, err_console, db))


@contest.command("delete")
@click.argument("submission_id", type=int)
@db_option
def contest_delete(submission_id: int, db: str | None) -> None:
    """Delete a server submission (the id the server gave it) and its recorded result."""
    from harness.frontends.errors import guarded
    from harness.server.commands import contest_delete as run

    sys.exit(guarded(run, err_console, submission_id, db))


@cli.command()
@click.option("--host", help="Listen on this address (default: web.host of the settings).")
@click.option("--port", type=click.IntRange(0, 65535), help="Listen on this port (default: web.port).")
@click.option("--show-code/--hide-code", default=None,
              help="Show submitted code on submission pages (default: web.show_code).")
@config_option
@db_option
@click.option("--workers", default="0", show_default=True, metavar="auto|N",
              help="Worker slots judging the queue in this process: auto (one per local GPU, "
              "or one CPU slot), N, or 0 (`runner.py worker` judges elsewhere).")
@click.option("--debug", is_flag=True,
              help="Run on Werkzeug's development server instead of waitress (never in a "
              "contest: one thread per connection, no timeouts).")
@judge_options
def serve(host: str | None, port: int | None, show_code: bool | None, config: Path | None,
          db: str | None, workers: str, debug: bool, cases, **judge) -> None:
    """The web leaderboard and contest server: board, submission API, queue (needs Flask
    and waitress: pip install -e '.[web]')."""
    from harness.frontends.errors import guarded
    from harness.frontends.serve import ServeOptions, run_serve
    from harness.options import RunOptions

    options = RunOptions(cases=list(cases), config=config, **judge)
    serve = ServeOptions(db, host, port, show_code, config, _workers(workers), debug)
    sys.exit(guarded(run_serve, console, serve, options))


if __name__ == "__main__":
    cli()
