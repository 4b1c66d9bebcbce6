"""Durations as text (harness/durations.py): one module for the command line, the web
board, its charts and the judge's messages."""

from __future__ import annotations

import pytest

from harness.durations import brief, micros, readable


@pytest.mark.parametrize("ns,text", [
    (None, "-"), (512.4, "512 ns"), (6_543.0, "6.54 µs"), (2_500_000.0, "2.500 ms"),
    (3.2e9, "3.200 s")])
def test_readable_picks_the_unit(ns, text):
    assert readable(ns) == text


def test_micros_writes_the_leaderboards_unit():
    assert micros(1_234_567.0) == "1234.57 µs"
    assert micros(1_234_567.0, grouped=True) == "1,234.57 µs"
    assert micros(50_000.0, 0) == "50 µs" and micros(1_550.0, 1) == "1.6 µs"
    assert micros(None) == "-" and micros("n/a") == "-"


@pytest.mark.parametrize("ns,text", [(0.0, "0 µs"), (6_540.0, "6.54 µs"),
                                     (999_000.0, "999 µs"), (1_234_000.0, "1.23 ms")])
def test_brief_keeps_three_digits(ns, text):
    assert brief(ns) == text
