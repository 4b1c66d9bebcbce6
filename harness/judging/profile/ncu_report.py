"""An Nsight Compute report read back per kernel: its duration, SM and DRAM throughput as a
share of the peak, achieved occupancy, registers per thread, and ncu's rule findings.

`ncu --import REPORT --csv` prints the report as CSV: the raw page (`--page raw`) a row
per profiled launch with a column per metric asked for (a second row gives the units), the
details page (`--page details`) a row per metric or rule result of each section. Column
names and units move between ncu versions, so every figure is read defensively: a metric
or column that is missing, or a value that is not a number, is None, never an error.
"""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path
from typing import Any

from harness.judging.profile.profiling import NAME_LIMIT

# (field, metric names in order of preference: the newer name first where ncu renamed one)
METRICS = (
    ("duration_ns", ("gpu__time_duration.sum",)),
    ("sm_throughput_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)),
    ("dram_throughput_pct", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed")),
    ("achieved_occupancy_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",)),
    ("registers_per_thread", ("launch__registers_per_thread",)),
)
FINDINGS = 3  # rule findings kept per kernel, the largest estimated speedup first
_NAME_COLUMNS = ("Kernel Name", "Function Name", "Demangled Name", "Name")
_TIME_UNITS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6,
               "msecond": 1e6, "s": 1e9, "second": 1e9}
_RULE_TYPES = ("OPT", "WRN")  # an optimisation opportunity or a warning; INF is information


def import_commands(ncu: str, report: Path) -> tuple[list[str], list[str], list[str]]:
    """The `ncu --import` command lines: the raw page with the metrics asked for, the whole
    raw page (where asking for a metric the report lacks fails), and the details page with
    the rules' results."""
    names = ",".join(name for _, names in METRICS for name in names)
    base = [ncu, "--import", str(report), "--csv", "--print-units", "base"]
    return ([*base, "--page", "raw", "--metrics", names], [*base, "--page", "raw"],
            [*base, "--page", "details"])


def read_report(ncu: str, report: Path, timeout: float = 120.0) -> dict[str, Any]:
    """`kernels` (per kernel, `kernels_from`) read from `report` with `ncu`, and an
    `import_error` where ncu could not read it."""
    asked, whole, details = import_commands(ncu, report)
    try:
        try:
            raw = _run(asked, timeout)
        except RuntimeError:
            raw = _run(whole, timeout)
        try:
            rules = _run(details, timeout)
        except RuntimeError:
            rules = ""  # the figures without the findings
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        return {"kernels": [], "import_error": str(exc)}
    kernels = kernels_from(raw, rules)
    if not kernels:
        return {"kernels": [], "import_error": "ncu --import found no kernel in the report"}
    return {"kernels": kernels}


def _run(cmd: list[str], timeout: float) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          errors="replace")
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(f"ncu --import exited with {proc.returncode}"
                           + (f": {said[-1]}" if said else ""))
    return proc.stdout


def kernels_from(raw_csv: str, details_csv: str = "") -> list[dict[str, Any]]:
    """Per kernel (by name, in the order first launched): its launches, the mean of each
    metric over them (`METRICS`; registers: the largest), and its top rule findings."""
    header, units, rows = _table(raw_csv, want_units=True)
    name_col = _first(header, _NAME_COLUMNS)
    if name_col is None:
        return []
    kernels: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        name = row.get(name_col, "").strip()
        if not name:
            continue
        figures = kernels.setdefault(name[:NAME_LIMIT], {"launches": []})
        figures["launches"].append(1.0)
        for field, names in METRICS:
            column = _first(header, names)
            value = _number(row.get(column)) if column else None
            if value is not None and field == "duration_ns":
                value = _in_ns(value, units.get(column, ""))
            if value is not None:
                figures.setdefault(field, []).append(value)
    findings = findings_from(details_csv)
    out = []
    for name, figures in kernels.items():
        kernel: dict[str, Any] = {"name": name, "launches": len(figures["launches"])}
        for field, _ in METRICS:
            values = figures.get(field)
            kernel[field] = (None if not values else max(values) if field ==
                             "registers_per_thread" else sum(values) / len(values))
        kernel["findings"] = findings.get(name, [])
        out.append(kernel)
    return out


def findings_from(details_csv: str) -> dict[str, list[dict[str, Any]]]:
    """Per kernel name: its rule findings of type OPT or WRN (rule, type, description,
    estimated speedup in %, None where ncu gives none), one per rule (its largest
    speedup), the largest first, `FINDINGS` at most."""
    header, _, rows = _table(details_csv)
    name_col = _first(header, _NAME_COLUMNS)
    if name_col is None or "Rule Name" not in header:
        return {}
    best: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        rule, kind = row.get("Rule Name", "").strip(), row.get("Rule Type", "").strip()
        if not rule or kind.upper() not in _RULE_TYPES:
            continue
        name = row.get(name_col, "").strip()[:NAME_LIMIT]
        finding = {"rule": rule, "type": kind.upper(),
                   "description": " ".join(row.get("Rule Description", "").split()),
                   "speedup_pct": _number(row.get("Estimated Speedup"))}
        kept = best.setdefault(name, {}).get(rule)
        if kept is None or _rank(finding) > _rank(kept):
            best[name][rule] = finding
    return {name: sorted(rules.values(), key=_rank, reverse=True)[:FINDINGS]
            for name, rules in best.items()}


def _rank(finding: dict[str, Any]) -> tuple[bool, float]:
    speedup = finding["speedup_pct"]
    return speedup is not None, speedup or 0.0


def _table(text: str, want_units: bool = False
           ) -> tuple[list[str], dict[str, str], list[dict[str, str]]]:
    """The header, the units row (raw page: the row after the header whose first cell is
    empty), and the rows of ncu's CSV output; lines before the header (ncu's own
    `==PROF==` messages, the program's output) are skipped."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    parsed = list(csv.reader(lines))
    at = next((i for i, row in enumerate(parsed) if "ID" in row or _first(row, _NAME_COLUMNS)),
              None)
    if at is None:
        return [], {}, []
    header, body = parsed[at], parsed[at + 1:]
    units: dict[str, str] = {}
    if want_units and body and body[0] and not body[0][0].strip():
        units = dict(zip(header, (u.strip() for u in body[0])))
        body = body[1:]
    return header, units, [dict(zip(header, row)) for row in body if len(row) == len(header)]


def _first(header: list[str], names: tuple[str, ...]) -> str | None:
    return next((name for name in names if name in header), None)


def _number(text: str | None) -> float | None:
    """A number as ncu prints it ("1,234.5", "12.3"), or None ("n/a", "", missing)."""
    if text is None:
        return None
    try:
        value = float(text.strip().replace(",", ""))
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _in_ns(value: float, unit: str) -> float | None:
    """A duration in `unit` (ncu's: nsecond, usecond, ...) as nanoseconds; None where the
    unit is not one of time."""
    factor = _TIME_UNITS.get(unit.strip().lower(), 1.0 if not unit.strip() else None)
    return None if factor is None else value * factor
