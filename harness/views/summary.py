"""Markdown summaries for CI job pages."""

from __future__ import annotations

import os
from pathlib import Path

from harness.durations import readable
from harness.loading.cases import format_case
from harness.results.document import Evaluation


def render_markdown(ev: Evaluation, repeats: dict | None = None) -> str:
    """A short markdown report of one evaluation (with `repeats`, the last of several,
    followed by their table: `submit --repeat`)."""
    status = repeats["worst_status"] if repeats else ev.status  # several runs: the worst
    icon = "✅" if status == "passed" else "❌"
    runs = f" (the worst of {repeats['runs']} runs; the last below)" if repeats else ""
    lines = [
        f"### {icon} `{ev.submission['name']}` on `{ev.task['name']}`: {status}{runs}",
        "",
        f"Device: {ev.device['name']} · mode: {ev.mode} · {ev.wall_seconds:.1f} s",
        "",
    ]
    if ev.load_error:
        lines += [f"**{ev.load_error['title']}**", "", "```", ev.load_error["message"], "```"]
        if ev.load_error.get("hint"):
            lines += ["", f"Hint: {ev.load_error['hint']}"]
    for phase in ev.phases:
        lines += [f"#### {phase.name} ({phase.seeds} seeds)", "",
                  "| # | case | result | mean | calls |", "|---|---|---|---|---|"]
        for c in phase.cases:
            calls = (c.stats or {}).get("calls", "")
            lines.append(f"| {c.index} | `{format_case(c.case)}` | {c.status} | "
                         f"{readable(c.score_ns)} | {calls} |")
        if phase.score_ns is not None:
            lines += ["", f"Score: **{readable(phase.score_ns)}**"]
        lines += _profile_lines(phase.cases)
        lines.append("")
    if repeats:
        from harness.views.repeats import repeat_markdown

        lines += repeat_markdown(repeats)
    if ev.record.get("rank"):
        lines.append(f"Rank: **{ev.record['rank']}** of {ev.record.get('ranked', '?')}")
    return "\n".join(lines) + "\n"


def _profile_lines(cases: list) -> list[str]:
    """`--mode profile`: per case, the longest kernels (or operators) and the host's share."""
    lines = []
    for c in cases:
        p = c.profile
        if not p:
            continue
        top = ", ".join(f"`{r['name'][:80]}` ({r['calls'] / max(p['calls'], 1):g} a call, "
                        f"{readable(r['mean_ns'])} each)" for r in p["rows"][:3])
        share = f"host share {p['host_share']:.0%}; " if p.get("host_share") is not None else ""
        lines.append(f"- case {c.index}: {readable(p['wall_ns_per_call'])} a call; {share}"
                     f"top {p['kind']}: {top}")
    return [""] + lines if lines else []


def write_summary(path: Path | None, ev: Evaluation, repeats: dict | None = None) -> None:
    """Write to `path` and append to $GITHUB_STEP_SUMMARY when either is given."""
    text = None
    targets = [path] if path else []
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        targets.append(Path(os.environ["GITHUB_STEP_SUMMARY"]))
    for target in targets:
        text = text or render_markdown(ev, repeats)
        mode = "a" if str(target) == os.environ.get("GITHUB_STEP_SUMMARY") else "w"
        with open(target, mode) as fh:
            fh.write(text)
