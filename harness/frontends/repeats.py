"""Several evaluations of one submission (`submit --repeat N`), read together.

Where the host sets a call's pace, its time follows the host's speed, which moves between
runs minutes apart under the harness and the public evaluators alike (nvfp4's
`torch_dequant.py` on the H200: per-run geomeans over a range of 1.35-1.42x in 8 runs of
each, docs/benchmarks.md, runs 74-80). One run then says little; the median of several,
each in a fresh worker, says more, and their spread says how much to trust it.
"""

from __future__ import annotations

import statistics
from typing import Any

from harness.judging.timing import combine
from harness.results.document import Evaluation, status_severity


def summarize_runs(evaluations: list[Evaluation], ranking_by: str) -> dict[str, Any]:
    """Per benchmark case of the runs' first timed phase: each run's mean, their median
    and spread (largest over smallest); the task score combined (`ranking_by`) from the
    case medians; each run's own score. A case that failed in a run has no mean there;
    its median is over the runs where it passed, and the score is None unless every case
    passed at least once."""
    runs = [_timed_phase(ev) for ev in evaluations]
    count = max((len(p.cases) for p in runs if p is not None), default=0)
    cases = []
    for i in range(count):
        means = [_case_mean(p, i) for p in runs]
        seen = [m for m in means if m is not None]
        label = next((p.cases[i].case for p in runs if p is not None and i < len(p.cases)), {})
        cases.append({"index": i, "case": label, "means_ns": means,
                      "statuses": [_case_field(p, i, "status", "missing") for p in runs],
                      "flagged": [bool(_case_field(p, i, "flags", [])) for p in runs],
                      "median_ns": statistics.median(seen) if seen else None,
                      "spread": max(seen) / min(seen) if len(seen) > 1 and min(seen) > 0 else None})
    medians = [c["median_ns"] for c in cases]
    score = combine(medians, ranking_by) if medians and None not in medians else None
    worst = max(evaluations, key=lambda ev: status_severity(ev.status))
    return {"runs": len(evaluations), "cases": cases, "score_ns": score,
            "scores_ns": [p.score_ns if p is not None else None for p in runs],
            "passed": [ev.passed for ev in evaluations],
            "statuses": [ev.status for ev in evaluations],
            "worst_status": worst.status, "exit_code": int(worst.exit_code)}


def _timed_phase(ev: Evaluation) -> Any:
    return next((p for p in ev.phases if p.name == "benchmark"), None)


def _case_field(phase: Any, index: int, name: str, missing: Any) -> Any:
    if phase is None or index >= len(phase.cases):
        return missing
    return getattr(phase.cases[index], name)


def _case_mean(phase: Any, index: int) -> float | None:
    if phase is None or index >= len(phase.cases):
        return None
    case = phase.cases[index]
    return case.score_ns if case.passed else None


def print_repeats(console: Any, summary: dict[str, Any]) -> None:
    """The runs side by side: per case each run's mean, the median and the spread; the
    score from the medians."""
    from rich.markup import escape
    from rich.table import Table

    from harness.frontends.report import fmt_ns
    from harness.loading.cases import format_case

    n = summary["runs"]
    table = Table(title=f"Benchmarks over {n} runs, each in a fresh worker", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("case")
    for k in range(n):
        table.add_column(f"run {k + 1}", justify="right")
    table.add_column("median", justify="right")
    table.add_column("spread", justify="right")
    for c in summary["cases"]:
        table.add_row(str(c["index"]), escape(format_case(c["case"])), *_cells(c),
                      fmt_ns(c["median_ns"]),
                      f"{c['spread']:.3f}x" if c["spread"] is not None else "-")
    table.add_row("", "[bold]score[/]",
                  *(fmt_ns(s) if s is not None else "-" for s in summary["scores_ns"]),
                  f"[bold]{fmt_ns(summary['score_ns'])}[/]", "")
    table.add_row("", "result", *summary["statuses"], summary["worst_status"], "")
    table.caption = ("spread: the largest run's mean over the smallest's (of runs that passed); "
                     "where the host sets a call's pace it moves between runs (README, What the "
                     "score means). A flagged case's score is the judge's clock")
    console.print(table)


def repeat_markdown(summary: dict[str, Any]) -> list[str]:
    """The runs side by side as markdown lines (for `--summary-md`)."""
    from harness.frontends.report import fmt_ns
    from harness.loading.cases import format_case

    n = summary["runs"]
    runs = " | ".join(f"run {k + 1}" for k in range(n))
    lines = [f"#### Benchmarks over {n} runs, each in a fresh worker", "",
             f"| # | case | {runs} | median | spread |", "|---|---|" + "---|" * (n + 2)]
    for c in summary["cases"]:
        means = " | ".join(_cells(c))
        spread = f"{c['spread']:.3f}x" if c["spread"] is not None else "-"
        lines.append(f"| {c['index']} | `{format_case(c['case'])}` | {means} | "
                     f"{fmt_ns(c['median_ns'])} | {spread} |")
    scores = " | ".join(fmt_ns(x) if x is not None else "-" for x in summary["scores_ns"])
    statuses = " | ".join(summary["statuses"])
    lines += [f"| | **score** | {scores} | **{fmt_ns(summary['score_ns'])}** | |",
              f"| | result | {statuses} | {summary['worst_status']} | |", ""]
    return lines


def _cells(case: dict[str, Any]) -> list[str]:
    """Each run's mean of a case; its status where it did not pass; flagged ones marked."""
    from harness.frontends.report import fmt_ns

    return [(fmt_ns(m) + (" (flagged)" if flag else "")) if m is not None else status
            for m, status, flag in zip(case["means_ns"], case["statuses"], case["flagged"])]
