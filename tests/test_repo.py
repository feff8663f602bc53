"""Repository guards: README and CI agree, FORMAT.md lists every diagnostic code."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block, "README.md must open with a bash block of set-up commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_setup_commands() -> None:
    text = (REPO / "README.md").read_text()
    assert text.index("```bash") < text.index("\n\n", text.index("# ") + 1) + 5
    commands = readme_commands()
    assert len(commands) == 2
    assert commands[0].startswith("python3 -m venv .venv") and "dd " in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci/run").read_text().strip().splitlines()
    assert ci[-1] == readme_commands()[1]


def test_format_md_documents_every_code_dd_reports() -> None:
    """FORMAT.md's table is the list of codes: every code the generator can report is in it,
    and every code in it is one the generator reports."""
    text = (REPO / "design/FORMAT.md").read_text()
    table = dict(re.findall(r"^\| (DD\d{3}) \| (.+?) \|$", text, re.MULTILINE))
    source = "\n".join(p.read_text() for p in sorted((REPO / "generator").rglob("*.py")))
    reported = set(re.findall(r"[\"'](DD\d{3})[\"']", source))
    assert sorted(table) == sorted(reported)
    assert all(meaning.strip() for meaning in table.values())
