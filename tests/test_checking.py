import importlib.util
from pathlib import Path

import torch

from harness.judging.checking import output_sanity

# The tasks' own helpers (tasks/utils.py), loaded by path: tasks never import the harness.
_spec = importlib.util.spec_from_file_location(
    "task_utils", Path(__file__).resolve().parent.parent / "tasks" / "utils.py")
task_utils = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(task_utils)
compare, match_reference = task_utils.compare, task_utils.match_reference


def test_equal_outputs_pass():
    x = torch.randn(4, 4)
    assert compare(x, x.clone(), 1e-3, 1e-3) == (True, "")


def test_mismatch_report_names_count_indices_and_values():
    expected = torch.zeros(3, 4)
    got = expected.clone()
    got[1, 2] = 5.0
    got[2, 3] = -1.0
    ok, message = compare(got, expected, 1e-3, 1e-3)
    assert not ok
    assert "2 of 12 elements differ" in message
    lines = message.splitlines()
    assert "(1, 2)" in lines[1] and "expected 0" in lines[1] and "got 5" in lines[1]  # worst first
    assert "(2, 3)" in lines[2]


def test_nan_never_passes():
    expected = torch.zeros(4)
    got = expected.clone()
    got[0] = float("nan")
    ok, message = compare(got, expected, 1.0, 1.0)
    assert not ok and "1 of 4" in message


def test_lists_report_which_output():
    ok, message = compare([torch.zeros(2), torch.ones(2)], [torch.zeros(2), torch.zeros(2)], 0, 0)
    assert not ok and message.startswith("output[1]")
    ok, message = compare([torch.zeros(2)], [torch.zeros(2), torch.zeros(2)], 0, 0)
    assert not ok and "expected 2 items, got 1" in message


def test_shape_and_dtype_are_checked_first():
    assert "shape" in compare(torch.zeros(2, 2), torch.zeros(4), 0, 0)[1]
    assert "dtype" in compare(torch.zeros(4, dtype=torch.float16), torch.zeros(4), 0, 0)[1]


def test_match_reference_compares_with_a_fresh_reference():
    check = match_reference(lambda d: d * 2, rtol=0, atol=0)
    data = torch.arange(4.0)
    assert check(data, data * 2)[0]
    assert not check(data, data * 3)[0]
    assert torch.equal(data, torch.arange(4.0))  # the check does not touch its input


def test_output_sanity():
    assert output_sanity([torch.zeros(2)]) == ""
    assert "NaN" in output_sanity([torch.tensor([0.0, float("nan")])])
    assert output_sanity([torch.tensor([float("inf")])], expected_finite=False) == ""
