"""The GitHub Actions workflow is valid YAML and runs only real runner.py commands."""

import re
import shlex

import pytest
import yaml
from conftest import ROOT


def runner_calls():
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "submissions.yml").read_text())
    assert doc["jobs"]["evaluate"]["runs-on"] == ["self-hosted", "gpu"]
    for step in doc["jobs"]["evaluate"]["steps"]:
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            if "runner.py" in line:
                words = shlex.split(line.split("||")[0])
                yield words[words.index("runner.py") + 1:]


def test_workflow_commands_are_real():
    import runner

    calls = list(runner_calls())
    assert any(c[0] == "submit" for c in calls)
    for words in calls:
        command = runner.cli.commands.get(words[0])
        assert command is not None, f"no runner.py command {words[0]!r}"
        known = {opt for p in command.params for opt in getattr(p, "opts", [])}
        for word in words[1:]:
            if word.startswith("--"):
                assert word in known, f"{words[0]} has no option {word}"
        if words[0] == "submit":
            assert "--json" in words and "--summary-md" in words
            assert re.search(r"--mode", " ".join(words))


@pytest.mark.slow
def test_summary_markdown_written(cli, tmp_path):
    md = tmp_path / "summary.md"
    r = cli("submit", "submissions/vectoradd/add_torch.py", "--mode", "test", "--summary-md",
            str(md), env={"GITHUB_STEP_SUMMARY": str(tmp_path / "step.md")})
    assert r.rc == 0
    text = md.read_text()
    assert "add_torch.py" in text and "| # | case |" in text and "passed" in text
    assert (tmp_path / "step.md").read_text() == text
