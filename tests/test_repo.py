"""Repository guards: README and CI agree, FORMAT.md lists every diagnostic code."""

from __future__ import annotations

import re
import subprocess
import sys
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


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def test_generated_code_passes_the_projects_ruff_rules() -> None:
    """rlsched/ (all of it generated) and dd itself are formatted and lint-clean under the rule
    set of pyproject.toml (line length, pyflakes, isort, docstring layout)."""
    for args in (("format", "--check", "rlsched", "generator"), ("check", "rlsched", "generator")):
        proc = ruff(*args)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_rule_set_catches_a_misindented_docstring(tmp_path: Path) -> None:
    """The rules CI runs would catch the defect dd used to generate (D207)."""
    bad = tmp_path / "m.py"
    bad.write_text('class A:\n    def f(self):\n        """Summary.\n\n    Detail."""\n')
    proc = ruff("check", "--config", str(REPO / "pyproject.toml"), str(bad))
    assert proc.returncode == 1 and "D207" in proc.stdout


def test_step_checks_tests_and_benchmarks_pass_the_projects_ruff_rules() -> None:
    """steps/ (the DONE steps' checks), tests/ and benchmarks/ are lint-clean under the same
    rules (with the per-directory exceptions pyproject.toml names)."""
    proc = ruff("check", "steps", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


GENERATOR_MODULE_MAX_LINES = 450


def test_no_generator_module_is_over_450_lines() -> None:
    """dd's modules stay small enough to read whole: split one along its jobs (as
    generator/patterns/ and generator/mutate/ are) before it grows past the limit."""
    long = {
        str(path.relative_to(REPO)): n
        for path in sorted((REPO / "generator").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > GENERATOR_MODULE_MAX_LINES
    }
    assert long == {}
