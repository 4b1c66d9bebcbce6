"""Inputs holding objects of classes from the task's own reference (a dataclass beside the
tensors, an nn.Module cache whose forward the submission calls, as amd/mla-decode's), end
to end through runner.py on the CPU: they reach the worker and the check unchanged, each
call gets the input the judge made, and the reference stays out of the submission's
imports. The folder is a small one of our own in the public format."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import public_format_folder, run_cli

pytestmark = pytest.mark.slow  # each test runs runner.py end to end

REFERENCE = """\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    size: int
    scale: float
    weight: torch.Tensor


class Cache(nn.Module):
    \"\"\"Like mla-decode's KVCache: a call appends to it and counts what it holds.\"\"\"

    def __init__(self, size: int) -> None:
        super().__init__()
        self.register_buffer("data", torch.zeros(2 * size))
        self.filled = 0

    def forward(self, x):
        self.data[self.filled: self.filled + x.numel()] = x
        self.filled += x.numel()
        return self.data[: self.filled]


def generate_input(size, seed):
    gen = torch.Generator().manual_seed(seed)
    config = Config(size, 2.0, torch.randn(size, generator=gen))
    cache = Cache(size)
    cache(torch.randn(size // 2, generator=gen))
    return config, torch.randn(size, generator=gen), cache


def ref_kernel(data):
    config, x, cache = data
    held = cache(x * config.scale)
    return held.sum() * config.weight


def check_implementation(data, output):
    config, x, cache = data
    held = torch.cat([cache.data[: cache.filled], x * config.scale])
    expected = held.sum() * config.weight
    ok = torch.allclose(output, expected, atol=1e-4)
    return ok, "" if ok else f"values differ: {output[:3]} against {expected[:3]}"
"""
USES_THE_CACHE = """\
def custom_kernel(data):
    config, x, cache = data
    held = cache(x * config.scale)  # the reference's own method, on the judge's input
    return held.sum() * config.weight
"""


def folder(root: Path) -> Path:
    return public_format_folder(root, REFERENCE,
                                ['{"size": 64, "seed": 1}', '{"size": 32, "seed": 3}'],
                                ['{"size": 64, "seed": 2}'])


def submit(tmp_path: Path, code: str, mode: str):
    sub = tmp_path / "sub.py"
    sub.write_text(textwrap.dedent(code))
    return run_cli("submit", str(sub), "--task", str(folder(tmp_path / "objects")),
                   "--device", "cpu", "--mode", mode, "--no-record", "--timeout", "60",
                   json_path=tmp_path / "out.json")


def test_the_references_classes_reach_the_worker_and_every_call_gets_a_fresh_input(tmp_path):
    r = submit(tmp_path, USES_THE_CACHE, "benchmark")
    assert r.rc == 0 and r.doc["status"] == "passed", r.out
    case = r.doc["phases"][0]["cases"][0]
    # every timed output was checked: a cache that kept what an earlier call appended
    # would give another sum from the second call on
    assert case["checked_calls"] > 2 and "PicklingError" not in r.out


def test_the_submission_still_cannot_import_the_reference(tmp_path):
    r = submit(tmp_path, """\
        import reference

        def custom_kernel(data):
            return data[0].weight
    """, "test")
    assert r.rc == 1 and r.doc["load_error"]["kind"] == "import_error", r.out
    assert "cannot import the task's reference" in r.doc["load_error"]["hint"]


def test_a_wrong_answer_on_such_inputs_is_a_plain_failure(tmp_path):
    r = submit(tmp_path, """\
        def custom_kernel(data):
            config, x, cache = data
            return config.weight * 0
    """, "test")
    assert r.rc == 1 and {c["status"] for c in r.doc["phases"][0]["cases"]} == {"failed"}
