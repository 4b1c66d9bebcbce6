"""Several evaluations read together (harness/views/repeats.py): medians, spreads, and
cases that failed in some runs."""

import io

import pytest

from harness.consts import Status
from harness.frontends.console import make_console
from harness.results.document import CaseResult, Evaluation, PhaseResult
from harness.views.repeats import print_repeats, repeat_markdown, summarize_runs


def _run(*means):
    """An evaluation whose benchmark cases have these means (None: the case failed)."""
    cases = [CaseResult(i, {"size": 2 ** i}, Status.PASSED if m else Status.FAILED, score_ns=m)
             for i, m in enumerate(means)]
    phase = PhaseResult("benchmark", "public", cases,
                        score_ns=None if None in means else 1.0)
    return Evaluation(task={}, submission={}, device={}, mode="benchmark", started="",
                      phases=[phase])


def test_medians_and_spreads_over_the_runs():
    out = summarize_runs([_run(100.0, 400.0), _run(120.0, 380.0), _run(110.0, 500.0)], "geom")
    assert [c["median_ns"] for c in out["cases"]] == [110.0, 400.0]
    assert out["cases"][1]["spread"] == pytest.approx(500 / 380)
    assert out["score_ns"] == pytest.approx((110.0 * 400.0) ** 0.5)
    assert out["runs"] == 3 and out["passed"] == [True, True, True]


def test_a_case_failed_in_one_run_takes_its_median_from_the_others():
    out = summarize_runs([_run(100.0, None), _run(120.0, 380.0), _run(110.0, 420.0)], "mean")
    assert out["cases"][1]["means_ns"] == [None, 380.0, 420.0]
    assert out["cases"][1]["median_ns"] == 400.0 and out["passed"][0] is False
    assert out["score_ns"] == pytest.approx((110.0 + 400.0) / 2)


def test_a_case_that_never_passed_leaves_no_score_and_prints_as_failed():
    out = summarize_runs([_run(100.0, None), _run(120.0, None)], "geom")
    assert out["cases"][1]["median_ns"] is None and out["score_ns"] is None
    buffer = io.StringIO()
    print_repeats(make_console(buffer, {}), out)
    text = buffer.getvalue()
    row = next(line for line in text.splitlines() if "size: 2" in line)
    assert "Benchmarks over 2 runs" in text and row.count("failed") == 2
    assert out["statuses"] == ["failed", "failed"] and out["worst_status"] == "failed"
    assert out["exit_code"] == 1


def test_the_worst_run_sets_the_status_a_lone_pass_has_no_spread_and_flags_show():
    flagged = _run(100.0, 300.0)
    flagged.phases[0].cases[0].flags.append("the judge's clock saw more")
    out = summarize_runs([flagged, _run(120.0, None)], "geom")
    assert out["worst_status"] == "failed" and out["exit_code"] == 1
    assert out["statuses"] == ["passed", "failed"]
    assert out["cases"][1]["spread"] is None and out["cases"][1]["median_ns"] == 300.0
    assert out["cases"][0]["flagged"] == [True, False]
    lines = repeat_markdown(out)
    assert "100 ns (flagged) | 120 ns |" in lines[4] and "| 300 ns | failed |" in lines[5]
    assert lines[7] == "| | result | passed | failed | failed | |"


def test_the_markdown_table_has_a_column_per_run():
    lines = repeat_markdown(summarize_runs([_run(100.0, None), _run(120.0, 380.0)], "geom"))
    assert lines[2] == "| # | case | run 1 | run 2 | median | spread |"
    assert lines[3] == "|---|---|---|---|---|---|"
    assert "| failed | 380 ns |" in lines[5] and "**score**" in lines[6]
