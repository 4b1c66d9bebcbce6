"""Output for people: rich tables, a progress bar, verdicts with hints."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column, Table
from rich.text import Text

from harness.consts import Status
from harness.durations import readable
from harness.judging import PhaseSpec
from harness.judging import Progress as JudgeProgress
from harness.loading.cases import format_case
from harness.results.admission import not_judged
from harness.results.document import CaseResult, Evaluation, PhaseResult, case_notes
from harness.results.ranking import find, rank
from harness.results.recording import Recorder
from harness.views.brief import LIMIT, Teller

_STYLE = {Status.PASSED: "green", Status.SKIPPED: "dim"}


class LiveProgress(JudgeProgress):
    """On a terminal, a live line per phase: its cases done, the case running, its calls so
    far and the time left before the phase's limit. Nothing off a terminal (pipes, CI logs).

    Calls are counted on every call and redrawn at most every `every` seconds, so the
    judge's loop between calls stays cheap."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic,
                 every: float = 0.25) -> None:
        self.console, self.clock, self.every = console, clock, every
        self.enabled = console.is_terminal
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[case]}"), TextColumn("{task.fields[calls]}"),
            _TimeLeft(self), TimeElapsedColumn(),
            console=console, transient=True,
        )
        self.task_id = None
        self.calls = 0
        self.limit = 0.0
        self.phase_started = 0.0
        self._drawn = 0.0

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            self.bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.bar.stop()

    def phase_start(self, spec: PhaseSpec) -> None:
        self.phase_started, self.limit = self.clock(), spec.timeout
        if self.enabled:
            self.task_id = self.bar.add_task(f"{spec.name} ({spec.seeds} seeds)",
                                             total=len(spec.cases), case="", calls="")

    def case_start(self, spec: PhaseSpec, index: int, case: dict[str, Any]) -> None:
        self.calls = 0
        if self.enabled:
            self.bar.update(self.task_id, case=escape(format_case(case))[:60], calls="")
            self._draw()

    def call_done(self) -> None:
        self.calls += 1
        if self.enabled and self.clock() - self._drawn >= self.every:
            self._draw()

    def case_done(self, spec: PhaseSpec, result: CaseResult) -> None:
        if self.enabled:
            self.bar.advance(self.task_id)

    def time_left(self) -> float:
        """Seconds before the running phase's time limit."""
        return max(0.0, self.limit - (self.clock() - self.phase_started))

    def _draw(self) -> None:
        self._drawn = self.clock()
        calls = f"{self.calls} call{'s' if self.calls > 1 else ''}" if self.calls else ""
        self.bar.update(self.task_id, calls=calls)


class _TimeLeft(ProgressColumn):
    """The running phase's time left, computed at every refresh (a long call still counts)."""

    def __init__(self, live: LiveProgress) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.live = live

    def render(self, task: Any) -> Text:
        return Text(f"{self.live.time_left():.0f} s left", style="cyan")


def print_evaluation(console: Console, ev: Evaluation, verbose: bool = False) -> None:
    """The whole report of one evaluation; notes, flags and warnings in two lines each
    (`harness.views.brief`), or whole where `verbose`."""
    tell = Teller(verbose)
    console.print(f"[bold]Task[/] {ev.task['name']}   [bold]Submission[/] {escape(ev.submission['name'])}"
                  f"   [bold]Mode[/] {ev.mode}")
    console.print(f"[bold]Device[/] {escape(_device_line(ev.device))}")
    for warning in ev.warnings:
        console.print(f"[yellow]warning:[/] {escape(tell(warning))}")
    _print_screen(console, ev.screen)
    if ev.load_error is not None:
        err = ev.load_error
        body = escape(err["message"])
        if err.get("hint"):
            body += f"\n\n[bold]hint:[/] {escape(err['hint'])}"
        console.print(Panel(body, title=f"[red]{err['status']}: {escape(err['title'])}",
                            border_style="red", expand=False))
    for phase in ev.phases:
        if phase.name == "test":
            console.print(_test_table(phase))
        elif phase.name == "profile":
            console.print(_test_table(phase, "Profile: the first call of each case, checked"))
            for case in phase.cases:
                if case.profile:
                    print_profile(console, case, tell)
        else:
            console.print(_bench_table(phase))
            if phase.score_ns is not None:
                console.print(f"  score ({ev.task['ranking_by']} of case means): "
                              f"[bold]{readable(phase.score_ns)}[/]")
        _print_failures(console, phase, tell)
    _print_output(console, ev.worker_output,
                  "the worker's" if not_judged(ev.load_error) else "the submission's")
    _print_output(console, ev.secret_output, "the submission's (secret phases)")
    colour = "green" if ev.passed else "red"
    console.print(f"[bold {colour}]{ev.status.upper()}[/]  ({ev.wall_seconds:.1f} s, "
                  f"exit code {ev.exit_code})")
    if ev.phases:
        console.print(f"[dim]time: {time_breakdown(ev)}[/]")
    if tell.hint():
        console.print(f"[dim]{tell.hint()}[/]")


def time_breakdown(ev: Evaluation) -> str:
    """Where an evaluation's wall time went: worker start-up, then each phase."""
    parts = [f"start-up {ev.startup_seconds:.1f} s"]
    parts += [f"{p.name} ({p.seeds}) {p.wall_seconds:.1f} s" for p in ev.phases]
    return ", ".join(parts)


def _device_line(device: dict[str, Any]) -> str:
    from harness.judging import DeviceInfo

    fields = {k: device[k] for k in ("kind", "name", "chosen_by", "capability", "sm_count",
                                     "l2_bytes", "memory_bytes", "clocks", "software")}
    return DeviceInfo(**fields).describe()


def _print_screen(console: Console, findings: list[dict]) -> None:
    shown = [f for f in findings if f["severity"] != "info"]
    if not shown:
        return
    table = Table(title="Static screen", title_justify="left", show_lines=False)
    for col in ("rule", "severity", "line", "why it matters"):
        table.add_column(col)
    for f in shown:
        style = "red" if f["severity"] in ("hard", "critical", "high") else "yellow"
        rule = f"{f['by']}: {f['rule']}" if f.get("by") else f["rule"]  # a second opinion's
        table.add_row(escape(rule), f"[{style}]{f['severity']}[/]", str(f["line"] or ""),
                      escape(f["explanation"]))
    console.print(table)


def _status(result: CaseResult) -> str:
    style = _STYLE.get(result.status, "red")
    text = f"[{style}]{result.status}[/]"
    if result.flags:
        text += " [yellow](flagged)[/]"
    return text


def _test_table(phase: PhaseResult, title: str = "Tests") -> Table:
    table = Table(title=f"{title} ({phase.seeds} seeds)", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("case")
    table.add_column("result")
    table.add_column("reason")
    for c in phase.cases:
        reason = c.message.splitlines()[0] if c.message else ""
        table.add_row(str(c.index), escape(format_case(c.case)), _status(c), escape(reason[:100]))
    return table


def print_profile(console: Console, case: CaseResult, tell: Teller | None = None) -> None:
    """One case's profile (`--mode profile`): its kernels or operators, the host's share,
    and where Nsight Compute's report went (`tell`: how a note is shortened)."""
    tell = tell or Teller()
    p = case.profile
    what = "kernel (GPU time)" if p["kind"] == "kernels" else "operator (CPU self time)"
    share = p.get("host_share")
    console.print(f"[bold]Profile of case {case.index}[/] ({escape(format_case(case.case))}): "
                  f"{p['calls']} calls under {p['tool']}, {readable(p['wall_ns_per_call'])} a call, "
                  f"{readable(p['device_ns_per_call'])} of it in {p['kind']}"
                  + (f", host share {share:.0%}" if share is not None else ""))
    table = Table()
    for col, just in ((what, "left"), ("calls", "right"), ("total", "right"),
                      ("mean", "right"), ("share", "right")):
        table.add_column(col, justify=just, overflow="fold" if col == what else "ellipsis")
    busy = p["device_ns_per_call"] * max(p["calls"], 1) or 1.0  # every row, shown or not
    for r in p["rows"]:
        table.add_row(escape(r["name"]), str(r["calls"]), readable(r["total_ns"]),
                      readable(r["mean_ns"]), f"{r['total_ns'] / busy:.0%}")
    if p.get("rows_left_out"):
        table.add_row(f"[dim]... {p['rows_left_out']} more[/]", "", "", "", "")
    console.print(table)
    ncu = p.get("ncu")
    if ncu and ncu.get("report"):
        console.print(f"  Nsight Compute report: [bold]{escape(ncu['report'])}[/] "
                      f"(open with ncu-ui, or ncu --import FILE)")
        if ncu.get("kernels"):
            print_ncu_kernels(console, ncu["kernels"], tell)
        elif ncu.get("import_error"):
            console.print(f"  [yellow]Nsight Compute:[/] its report could not be read: "
                          f"{escape(tell(ncu['import_error']))}")
    elif ncu and ncu.get("note"):  # a failed run is the case's verdict, printed below
        console.print(f"  [yellow]Nsight Compute:[/] {escape(tell(ncu['note']))}")
    if ncu and ncu.get("left_running"):
        console.print(f"  [yellow]Nsight Compute:[/] killed {ncu['left_running']} process(es) "
                      "still running once ncu had exited (the profiled code's, or ncu's own)")


def print_ncu_kernels(console: Console, kernels: list[dict[str, Any]], tell: Teller) -> None:
    """Nsight Compute's figures per kernel (`profile.ncu.kernels`), then each kernel's top
    rule findings, told by `tell`."""
    table = Table(title="Nsight Compute, per kernel (means over its launches)",
                  title_justify="left")
    for col in ("#", "kernel", "launches", "duration", "SM", "DRAM", "occupancy", "registers"):
        table.add_column(col, justify="left" if col == "kernel" else "right",
                         overflow="fold" if col == "kernel" else "ellipsis")
    pct = lambda x: f"{x:.0f}%" if x is not None else "-"  # noqa: E731
    for k, kernel in enumerate(kernels, start=1):
        registers = kernel.get("registers_per_thread")
        table.add_row(str(k), escape(kernel["name"]), str(kernel.get("launches", "-")),
                      readable(kernel.get("duration_ns")), pct(kernel.get("sm_throughput_pct")),
                      pct(kernel.get("dram_throughput_pct")),
                      pct(kernel.get("achieved_occupancy_pct")),
                      f"{registers:.0f}" if registers is not None else "-")
    table.caption = ("SM and DRAM: throughput as a share of the peak; occupancy: achieved "
                     "(active warps over the most an SM holds); registers per thread")
    console.print(table)
    for k, kernel in enumerate(kernels, start=1):
        for finding in kernel.get("findings") or []:
            speedup = finding.get("speedup_pct")
            gain = f", est. speedup {speedup:.0f}%" if speedup is not None else ""
            label = f"  ncu (kernel #{k}) {finding['rule']} ({finding['type']}{gain}): "
            said = tell(finding["description"], max(60, LIMIT + 30 - len(label)))
            console.print(f"  [cyan]ncu[/] (kernel #{k}) {escape(finding['rule'])} "
                          f"({finding['type']}{gain}): {escape(said)}")


def _bench_table(phase: PhaseResult) -> Table:
    table = Table(title=f"Benchmarks ({phase.seeds} seeds)", title_justify="left")
    for col, just in (("#", "right"), ("case", "left"), ("result", "left"), ("calls", "right"),
                      ("mean ± std", "right"), ("best", "right"), ("worst", "right"),
                      ("host launch", "right"), ("SoL", "right")):
        table.add_column(col, justify=just)
    for c in phase.cases:
        s = c.stats or {}
        sol = c.integrity.get("speed_of_light_fraction")
        table.add_row(
            str(c.index), escape(format_case(c.case)), _status(c), str(s.get("calls", "-")),
            f"{readable(c.score_ns)} ± {readable(s.get('std'))}" if s else "-",
            readable(s.get("best")), readable(s.get("worst")), readable(c.host_launch_ns),
            f"{sol:.0%}" if sol else "-",
        )
    if any(c.integrity.get("hidden_window_us") for c in phase.cases):
        window = max(c.integrity.get("hidden_window_us", 0) for c in phase.cases)
        table.caption = (f"GPU time per call; host launch (the worker's CPU time per call) is "
                         f"hidden up to {window:g} µs per sample, as in the task's contest")
    return table


def _print_failures(console: Console, phase: PhaseResult, tell: Teller) -> None:
    for c in phase.cases:
        if c.status not in (Status.PASSED, Status.SKIPPED) and c.message:
            console.print(Panel(escape(c.message), title=f"[red]{phase.name} case {c.index}: "
                                f"{c.status}", border_style="red", expand=False))
        for line in case_remarks(phase.name, c.index, c.flags, c.integrity, tell):
            console.print(line)


def case_remarks(phase: str, index: int, flags: list[str], integrity: dict[str, Any] | None,
                 tell: Teller) -> list[str]:
    """A case's flags and notes as the report prints them (rich markup), told by `tell`."""
    return ([f"[yellow]flag[/] ({phase} case {index}): {escape(tell(f))}" for f in flags]
            + [f"[cyan]note[/] ({phase} case {index}): {escape(tell(n))}"
               for n in case_notes(integrity)])


def _print_output(console: Console, output: dict[str, str], whose: str) -> None:
    for stream in ("stdout", "stderr"):
        text = (output or {}).get(stream, "").strip()
        if text:
            console.print(Panel(escape(text[-4000:]), title=f"{whose} {stream} (tail)",
                                border_style="dim", expand=False))


def print_ranking(console: Console, recorder: Recorder, ev: Evaluation) -> None:
    """Where a recorded evaluation ranks (or why it does not), under the ranked table."""
    if ev.mode != "leaderboard":
        console.print(f"recorded as submission {recorder.submission_id} (mode {ev.mode}: not ranked)")
        return
    kind = ev.device["ranking_kind"]
    table = rank(recorder.store.entries(recorder.board.task, recorder.board.content_hash), kind)
    print_ranked(console, table, f"{recorder.board.task} on {kind}", recorder.submission_id)
    mine = find(table, recorder.submission_id)
    if mine is None:
        why = ev.record.get("refused") or (
            "it did not pass every public and secret case" if not ev.passed
            else "this user has a better earlier result")
        console.print(f"submission {recorder.submission_id} by {escape(recorder.user)} is recorded but "
                      f"not ranked: {escape(why)}")
    else:
        above = table[mine.rank - 2] if mine.rank > 1 else None
        gap = (f", {readable(mine.score_ns - above.score_ns)} behind #{above.rank} "
               f"({escape(above.user)})") if above else ""
        repeated = (f"; this program's score is the median of its {mine.evaluations} "
                    "evaluations") if mine.evaluations > 1 else ""
        console.print(f"submission {recorder.submission_id} by {escape(recorder.user)}: "
                      f"[bold]rank {mine.rank}[/] of {len(table)}{gap}{repeated}")


def print_ranked(console: Console, table: list, title: str, highlight: int | None = None) -> None:
    """A ranked table, with one submission highlighted."""
    out = Table(title=f"Leaderboard: {escape(title)}", title_justify="left")
    for col, just in (("rank", "right"), ("user", "left"), ("score", "right"),
                      ("gap", "right"), ("file", "left"), ("submission", "right"),
                      ("runs", "right"), ("when", "left"), ("status", "left")):
        # On a narrow terminal a name or date folds onto more lines; it is never cut short.
        out.add_column(col, justify=just,
                       overflow="fold" if col in ("user", "file", "when") else "ellipsis")
    previous = None
    for r in table:
        gap = f"+{readable(r.score_ns - previous)}" if previous is not None else ""
        style = "bold reverse" if highlight in r.submission_ids else None
        out.add_row(str(r.rank), escape(r.user), readable(r.score_ns), gap, escape(r.file_name),
                    str(r.submission_id), str(r.evaluations), r.created_at[:19].replace("T", " "),
                    r.status, style=style)
        previous = r.score_ns
    if not table:
        out.add_row("-", "no ranked submissions yet", "", "", "", "", "", "", "")
    console.print(out)
