"""harness/scores.py: a task's score from its cases, and the geometric mean."""

import math

import pytest

from harness.scores import combine, geomean


@pytest.mark.parametrize("how,expected", [("last", 8.0), ("mean", 14 / 3), ("geom", 4.0)])
def test_combine(how, expected):
    assert combine([2.0, 4.0, 8.0], how) == pytest.approx(expected)


def test_combine_rejects_unknown_and_empty():
    with pytest.raises(ValueError):
        combine([1.0], "median")
    with pytest.raises(ValueError):
        combine([], "geom")


def test_geomean():
    assert geomean([1.0, 100.0]) == pytest.approx(10.0)
    assert geomean(iter([2.0, 8.0])) == pytest.approx(4.0)
    assert math.isnan(geomean([]))
