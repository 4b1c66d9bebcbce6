"""Every example submission and benchmark script is exercised by some test.

(pyperf's tests/test_examples.py idea.) An example or script that no test names rots
unseen: each file under submissions/**/*.py, benchmarks/*.py and benchmarks/gpu/*.sh must
be named by a test file under tests/ (its repository path, or its file name where that
name is unique), or stand in GPU_ONLY below with the reason no CPU test can run it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT

SELF = Path(__file__).resolve()
# Files that run only in a GPU session, each with why no CPU test can exercise it. Keep
# this short: a file that can run (even `--help`) on the CPU gets a test instead.
GPU_ONLY = {
    "benchmarks/ceilings.py": "measures the GPU's copy bandwidth and bf16 matmul rate: every "
                              "line of it runs on CUDA tensors (benchmarks/gpu/smoke.sh runs "
                              "it; test_benchmarks.py checks that the path it uses exists)",
}


def examples() -> list[str]:
    """Repository paths of the example submissions and benchmark scripts."""
    files = [*ROOT.glob("submissions/**/*.py"), *ROOT.glob("benchmarks/*.py"),
             *ROOT.glob("benchmarks/gpu/*.sh")]
    return sorted(p.relative_to(ROOT).as_posix() for p in files)


def read_tests() -> dict[str, str]:
    """The text of every test file (not the submissions tests feed the harness)."""
    skip = (ROOT / "tests" / "submissions", ROOT / "tests" / "adversarial")
    return {p.relative_to(ROOT).as_posix(): p.read_text()
            for p in sorted((ROOT / "tests").rglob("*.py"))
            if p.resolve() != SELF and not p.is_relative_to(skip[0])
            and not p.is_relative_to(skip[1])}

EXAMPLES = examples()
TEXTS = read_tests()
NAMES = Counter(path.rsplit("/", 1)[-1] for path in EXAMPLES)


def mentioned(word: str, text: str) -> bool:
    """`word` in `text`, not as the tail of a longer path or name."""
    return re.search(rf"(?<![\w.-]){re.escape(word)}\b", text) is not None


def naming(path: str) -> list[str]:
    """The test files that name `path`: the full path, or the file name if unique."""
    name = path.rsplit("/", 1)[-1]
    words = [path] + ([name] if NAMES[name] == 1 else [])
    return [test for test, text in TEXTS.items() if any(mentioned(w, text) for w in words)]


def test_the_lists_are_found():
    """The globs find each kind of file, and test files to search."""
    assert "submissions/vectoradd/add_torch.py" in EXAMPLES
    assert "benchmarks/honest_runs.py" in EXAMPLES
    assert "benchmarks/gpu/smoke.sh" in EXAMPLES
    assert "tests/test_timing.py" in TEXTS and "tests/test_examples.py" not in TEXTS
    assert "tests/tasks/test_vectoradd.py" in TEXTS
    assert not any(t.startswith(("tests/submissions/", "tests/adversarial/")) for t in TEXTS)


@pytest.mark.parametrize("path", EXAMPLES)
def test_example_is_exercised(path):
    if path in GPU_ONLY:
        pytest.skip(f"GPU only: {GPU_ONLY[path]}")
    light = (f"runner.py submit {path} --device cpu --mode test"
             if path.startswith("submissions/") else f"python {path} --help")
    assert naming(path), (
        f"{path} is exercised by no test: add a light one (such as `{light}`) or, if it "
        "can only run in a GPU session, an entry in GPU_ONLY of tests/test_examples.py "
        "with the reason")


def test_name_matching():
    """A shared file name is no mention of either file; a longer name is no mention."""
    assert NAMES["torch_dequant.py"] == 2
    assert "tests/test_batch.py" not in naming("submissions/mxfp4_mm/torch_dequant.py")
    assert "tests/test_cli_runs.py" in naming("submissions/mxfp4_mm/torch_dequant.py")
    assert not mentioned("add_torch.py", "my_add_torch.py")
    assert not mentioned("add_torch.py", "vectoradd/add_torch.pyc")
    assert mentioned("add_torch.py", 'ROOT / "add_torch.py"')


@pytest.mark.parametrize("path", sorted(GPU_ONLY))
def test_gpu_only_entry_is_current(path):
    """Each entry names a listed file, says why, and is not also exercised by a test."""
    assert path in EXAMPLES
    assert len(GPU_ONLY[path]) > 20
    assert not naming(path), f"{path} is exercised by {naming(path)}: drop it from GPU_ONLY"
