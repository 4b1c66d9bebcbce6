"""docs/benchmarks.md holds current figures only: at most 400 lines (older ones live in git)."""

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def test_benchmarks_page_stays_within_400_lines():
    lines = len(BENCHMARKS.read_text().splitlines())
    assert lines <= 400, f"docs/benchmarks.md has {lines} lines: keep current figures only"
