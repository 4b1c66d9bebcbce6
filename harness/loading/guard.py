"""kernelguard, the public service's precheck, as a second opinion beside the static
screen (the `guard` extra: `pip install -e '.[guard]'`).

Where it is installed, its findings go into the result document with the screen's, each
marked `by: kernelguard` and kept with kernelguard's own pattern name and severity
(critical, high, medium, low). They are shown wherever the screen's are; they count (mark
the submission suspicious, refuse it a rank) only where the organiser lists
`kernelguard:SEVERITY` in `integrity.refuse_ranking_on`. Without the package, nothing
changes.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from harness.consts import GUARD, GUARD_SEVERITIES


def installed() -> bool:
    """Whether kernelguard can be imported here."""
    return importlib.util.find_spec(GUARD) is not None


def second_opinion(source: str) -> list[dict[str, Any]]:
    """kernelguard's findings on `source`, as screen findings marked as its own (none
    where it is not installed; one `error` finding of its own where it fails)."""
    if not installed():
        return []
    try:
        import kernelguard

        result = kernelguard.analyze_code(source, compute_structural_hash=False)
    except Exception as exc:  # a second opinion that fails never stops the judging
        return [_finding("error", "low", f"kernelguard could not read the file: {exc}")]
    return [_finding(str(m.get("pattern", "?")), str(m.get("severity", "low")).lower(),
                     str(m.get("evidence", "")))
            for m in result.get("matched_patterns") or [] if m.get("field") != "metadata"]


def _finding(pattern: str, severity: str, evidence: str) -> dict[str, Any]:
    return {"rule": pattern, "severity": severity if severity in GUARD_SEVERITIES else "low",
            "line": 0, "excerpt": "", "explanation": evidence[:300], "by": GUARD}


def counted(finding: dict[str, Any], counted_on: tuple[str, ...]) -> bool:
    """Whether an organiser counts this finding: the screen's own by its severity
    (`hard`), kernelguard's by `kernelguard:SEVERITY`."""
    if finding.get("by") == GUARD:
        return f"{GUARD}:{finding.get('severity')}" in counted_on
    return finding.get("severity") in counted_on
