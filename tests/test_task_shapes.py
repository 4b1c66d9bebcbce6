"""Inputs and outputs of any structure the public tasks use, end to end on the CPU.

The task's own check is the authority on correctness: an output laid out unlike the
reference (another dtype) passes when the task's check accepts it, as the public
evaluators judge it. Inputs may nest tuples, lists and dicts with scalars beside tensors.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

TASK_PY = "input_t = object\noutput_t = object\n"


def make_task(root: Path, reference: str, cases: str = "size: 8") -> Path:
    root.mkdir(parents=True)
    (root / "task.py").write_text(TASK_PY)
    (root / "reference.py").write_text(textwrap.dedent(reference))
    (root / "task.yml").write_text(textwrap.dedent(f"""\
        lang: py
        description: a shape test
        tests:
          - {{{cases}, seed: 1}}
        benchmarks:
          - {{{cases}, seed: 2}}
    """))
    return root


def submit(tmp_path: Path, task: Path, code: str, mode: str = "test"):
    sub = tmp_path / "sub.py"
    sub.write_text(textwrap.dedent(code))
    return run_cli("submit", str(sub), "--task", str(task), "--device", "cpu", "--mode", mode,
                   "--no-record", json_path=tmp_path / "out.json")


PREFIX_REFERENCE = """\
    import torch

    def generate_input(size, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(size, generator=g), torch.empty(size)

    def ref_kernel(data):
        return torch.cumsum(data[0].double(), 0)  # float64, like pmpp_v2's prefixsum

    def check_implementation(data, output):
        expected = ref_kernel(data)
        if output.shape != expected.shape:
            return False, "shape"
        ok = torch.allclose(output.double(), expected, rtol=1e-5, atol=1e-5)
        return ok, "" if ok else "values differ"
"""


def test_an_output_in_another_dtype_is_judged_by_the_tasks_check(tmp_path):
    task = make_task(tmp_path / "prefixsum", PREFIX_REFERENCE)
    r = submit(tmp_path, task, """\
        import torch
        def custom_kernel(data):
            x, y = data
            y[...] = torch.cumsum(x, 0)
            return y  # float32 where the reference is float64: the task's check accepts it
    """, mode="benchmark")
    assert r.rc == 0, r.out
    assert "dtype float32, expected float64" not in r.out
    assert r.doc["phases"][0]["cases"][0]["stats"]["calls"] >= 1


def test_a_wrong_output_in_another_layout_still_fails_by_the_tasks_check(tmp_path):
    task = make_task(tmp_path / "prefixsum", PREFIX_REFERENCE)
    r = submit(tmp_path, task, """\
        import torch
        def custom_kernel(data):
            return torch.zeros(3)  # the wrong shape: the task's check says no
    """)
    assert r.rc == 1, r.out
    assert r.doc["phases"][0]["cases"][0]["status"] == "failed"


NESTED_REFERENCE = """\
    import torch

    def generate_input(size, seed):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.randn(size, generator=g), torch.randn(size, generator=g)
        return {"pair": (a, [b]), "scale": 2, "name": "add"}

    def ref_kernel(data):
        a, (b,) = data["pair"]
        return {"sum": data["scale"] * (a + b)}

    def check_implementation(data, output):
        ok = torch.allclose(output["sum"], ref_kernel(data)["sum"])
        return ok, "" if ok else "values differ"
"""


def test_nested_inputs_with_dicts_and_scalars(tmp_path):
    task = make_task(tmp_path / "nested", NESTED_REFERENCE)
    r = submit(tmp_path, task, """\
        def custom_kernel(data):
            a, (b,) = data["pair"]
            return {"sum": data["scale"] * (a + b)}
    """, mode="benchmark")
    assert r.rc == 0, r.out


def test_inputs_whose_scalars_change_between_calls_are_a_clear_task_error(tmp_path):
    task = make_task(tmp_path / "drifting", """\
        import torch

        def generate_input(size, seed):
            return torch.zeros(size), seed  # a scalar that differs from call to call

        def ref_kernel(data):
            return data[0] + 1

        def check_implementation(data, output):
            return bool(torch.equal(output, data[0] + 1)), ""
    """)
    r = submit(tmp_path, task, """\
        def custom_kernel(data):
            return data[0] + 1
    """, mode="benchmark")
    assert r.rc == 2, r.out
    assert "non-tensor part changed" in r.out and "Traceback" not in r.out
