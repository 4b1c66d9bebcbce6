"""Several evaluations of one submission (`submit --repeat N`), read together.

Where the host sets a call's pace, its time follows the host's speed, which moves between
runs minutes apart under the harness and the public evaluators alike (nvfp4's
`torch_dequant.py` on the H200: per-run geomeans over a range of 1.35-1.42x in 8 runs of
each, docs/benchmarks.md). One run then says little; the median of several,
each in a fresh worker, says more, and their spread says how much to trust it.
"""

from __future__ import annotations

import statistics
from typing import Any

from harness.results.document import CaseResult, Evaluation, PhaseResult, status_severity
from harness.scores import combine


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
        mine = [_case(p, i) for p in runs]  # None where a run has no such case
        means = [c.score_ns if c is not None and c.passed else None for c in mine]
        seen = [m for m in means if m is not None]
        cases.append({"index": i, "case": next(c.case for c in mine if c is not None),
                      "means_ns": means,
                      "statuses": [c.status if c is not None else "missing" for c in mine],
                      "flagged": [c is not None and bool(c.flags) for c in mine],
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


def _timed_phase(ev: Evaluation) -> PhaseResult | None:
    return next((p for p in ev.phases if p.name == "benchmark"), None)


def _case(phase: PhaseResult | None, index: int) -> CaseResult | None:
    return phase.cases[index] if phase is not None and index < len(phase.cases) else None


def print_repeats(console: Any, summary: dict[str, Any]) -> None:
    """The runs side by side: per case each run's mean, the median and the spread; the
    score from the medians."""
    from rich.markup import escape
    from rich.table import Table

    head, rows, totals = _table(summary)
    table = Table(title=_title(summary), title_justify="left")
    for k, name in enumerate(head):
        table.add_column(name, justify="left" if k == 1 else "right")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    score, result = totals
    table.add_row("", "[bold]score[/]", *score[2:-2], f"[bold]{score[-2]}[/]", "")
    table.add_row(*result)
    table.caption = ("spread: the largest run's mean over the smallest's (of runs that passed); "
                     "where the host sets a call's pace it moves between runs (README, What the "
                     "score means). A flagged case's score is the judge's clock")
    console.print(table)


def repeat_markdown(summary: dict[str, Any]) -> list[str]:
    """The runs side by side as markdown lines (for `--summary-md`)."""
    head, rows, totals = _table(summary)
    score, result = totals
    lines = [f"#### {_title(summary)}", "", _md(head), "|" + "---|" * len(head)]
    lines += [_md([row[0], f"`{row[1]}`", *row[2:]]) for row in rows]
    lines += [_md(["", "**score**", *score[2:-2], f"**{score[-2]}**", ""]), _md(result), ""]
    return lines


def _title(summary: dict[str, Any]) -> str:
    return f"Benchmarks over {summary['runs']} runs, each in a fresh worker"


def _md(cells: list[str]) -> str:
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def _table(summary: dict[str, Any]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Plain cells, the same for the terminal and markdown: the header, a row per case,
    and the score and result rows."""
    from harness.durations import readable
    from harness.loading.cases import format_case

    head = ["#", "case", *(f"run {k + 1}" for k in range(summary["runs"])), "median", "spread"]
    rows = [[str(c["index"]), format_case(c["case"]), *_cells(c), readable(c["median_ns"]),
             f"{c['spread']:.3f}x" if c["spread"] is not None else "-"]
            for c in summary["cases"]]
    score = ["", "score", *(readable(x) if x is not None else "-" for x in summary["scores_ns"]),
             readable(summary["score_ns"]), ""]
    result = ["", "result", *summary["statuses"], summary["worst_status"], ""]
    return head, rows, [score, result]


def _cells(case: dict[str, Any]) -> list[str]:
    """Each run's mean of a case; its status where it did not pass; flagged ones marked."""
    from harness.durations import readable

    return [(readable(m) + (" (flagged)" if flag else "")) if m is not None else status
            for m, status, flag in zip(case["means_ns"], case["statuses"], case["flagged"])]
