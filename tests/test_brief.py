"""Notes, flags and warnings in two terminal lines (harness/views/brief.py), read on
the texts the judge really writes."""

import pytest

from harness.judging.measure.integrity import Calibration, check_clocks
from harness.judging.measure.timing import long_samples
from harness.results.document import case_notes
from harness.views.brief import LIMIT, Teller, brief


def _clock_flag() -> str:
    check = check_clocks([1_000.0] * 20, [400_000.0] * 20, Calibration(20_000, 25_000, 10),
                         "cuda")
    assert check.flagged
    return check.message


def test_a_short_text_is_left_as_it_is():
    assert brief("the GPU throttled") == "the GPU throttled"
    assert brief("two\n  lines") == "two lines"


def test_the_two_clock_flag_keeps_its_claim_and_what_it_means():
    flag = _clock_flag()
    short = brief(flag)
    assert len(flag) > LIMIT >= len(short)
    assert short.startswith("the judge's clock saw 379.0 µs more per call")
    assert short.endswith("(allowed 190.0 µs): work may run outside the timed region")


def test_the_long_sample_note_keeps_its_figures():
    note = long_samples([6_600.0] * 97 + [48_600.0, 178_300.0, 367_900.0], 4, 0.05, 100)["note"]
    short = brief(note)
    assert len(short) <= LIMIT
    assert short.startswith("3 of 100 samples took over 4x the median (6.60 µs; the longest "
                            "367.9 µs) and add")


@pytest.mark.parametrize("checks", [["clocks"], ["clocks", "calibration_disturbed"],
                                    ["scored_clocks"]])
def test_the_retry_note_says_the_case_was_timed_again(checks):
    (note,) = case_notes({"retried": [{"flagged_by": checks, "score_ns": 10_866_250.0}]})
    short = brief(note)
    assert len(short) <= LIMIT and short.startswith("attempt 1 was flagged by the two clocks")
    assert "timed again" in short


def test_a_text_without_structure_is_cut_at_a_word():
    short = brief("word " * 100)
    assert len(short) <= LIMIT and short.endswith("word...")
    assert len(brief("x" * 400)) == LIMIT


def test_asides_go_from_the_last_back_where_no_part_fits():
    claim = "a claim " * 10 + "(an aside)" + " and more" * 5
    text = claim + " (a long aside " + "x " * 20 + "): what it means and why it matters"
    assert brief(text) == claim


def test_the_teller_says_whether_it_shortened_anything():
    tell = Teller()
    assert tell("short") == "short" and tell.hint() == ""
    assert tell(_clock_flag()) != _clock_flag() and "--verbose" in tell.hint()
    whole = Teller(verbose=True)
    assert whole(_clock_flag()) == _clock_flag() and whole.hint() == ""
