"""The README's install and test steps are what CI (`.ci/run`) runs, in the same order."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()


def _commands(text: str) -> list[str]:
    """Command lines of the text (README code blocks, a script) that run pip, ruff or pytest,
    comments stripped."""
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    runs = r"\bpython3? (-m pip install|-m ruff check|-m pytest -q)"
    return [line for line in lines if re.search(runs, line)]


def _torch_pin(text: str) -> str:
    pins = set(re.findall(r"torch==([\w.]+)", text))
    assert len(pins) == 1, f"one torch pin expected, found {sorted(pins)}"
    return pins.pop()


def test_ci_installs_the_torch_release_the_readme_names():
    assert _torch_pin(README) == _torch_pin(CI)


def test_ci_takes_the_readme_steps_in_order():
    def step(lines: list[str]) -> list[str]:
        kinds = []
        for line in lines:
            kind = ("torch" if "torch==" in line else "harness" if re.search(r"pip install .*-e ", line)
                    else "ruff" if "ruff check" in line else "pytest")
            if not kinds or kinds[-1] != kind:
                kinds.append(kind)
        return kinds

    order = ["torch", "harness", "ruff", "pytest"]
    readme = step(_commands(README.split("## Check a submission", 1)[0]))
    assert readme[:1] == ["torch"] and readme[-3:] == order[1:]
    assert step(_commands(CI)) == order


def test_every_tool_the_test_extra_adds_for_ci_is_pinned():
    pyproject = (ROOT / "pyproject.toml").read_text()
    test_extra = re.search(r"^test = \[(.*)\]$", pyproject, re.M).group(1)
    assert re.search(r'"ruff==[\d.]+"', test_extra), "ruff must be pinned in the test extra"
