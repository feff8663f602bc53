"""`dd adopt PATH[:SYMBOL]` (issue 18): a hand edit of generated code moves into its document, in
real git repositories made by `dd init`; refusals change nothing."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.conftest import snapshot

BASE = (Path(__file__).parent / "data" / "steps" / "base.md").read_text(encoding="utf-8")
DOC = "design/pool.md"
CODE = "demo/pool.py"

SHRINK = '''def shrink_sampler(self, target_gpus: list[int]) -> list[int]:
    """Release `target_gpus` from rollout and return them."""
    # VAL: VAL_NON_EMPTY(target_gpus)
    kept = list(target_gpus)
    return kept
'''


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def project(tmp_path: Path, dd: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> Path:
    """`dd init` + a document of two started steps, expanded and committed."""
    monkeypatch.setenv("DD_TODAY", "2026-11-24")
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")
    assert dd(root, "init").exit_code == 0
    start = BASE.index("def shrink_sampler")
    text = BASE.replace(BASE[start : BASE.index("```", start)], SHRINK)
    (root / DOC).write_text(text, encoding="utf-8")
    for n in (1, 2):
        check = root / "steps" / "demo" / f"test_step{n}.py"
        check.parent.mkdir(parents=True, exist_ok=True)
        check.write_text("def test_imports():\n    import demo.pool  # noqa: F401\n")
    assert dd(root, "step", "start", "1").exit_code == 0
    assert dd(root, "step", "start", "2").exit_code == 0
    assert dd(root, "expand").exit_code == 0
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "design, started")
    return root


def edit(root: Path, old: str, new: str) -> str:
    path = root / CODE
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    return path.read_text()


def test_adopt_moves_a_method_edit_into_the_document(
    project: Path, dd: Callable[..., Result]
) -> None:
    edit(
        project,
        '"""Release `target_gpus` from rollout and return them."""',
        '"""Release `target_gpus` from rollout and return them, lowest first."""',
    )
    edited = edit(project, "kept = list(target_gpus)", "kept = sorted(set(target_gpus))")
    assert dd(project, "expand", "--check").exit_code == 1  # DD100: edited by hand
    result = dd(project, "adopt", f"{CODE}:GpuPool.shrink_sampler")
    assert result.exit_code == 0, result.output
    assert "adopted GpuPool.shrink_sampler" in result.output
    doc = (project / DOC).read_text()
    # signature, docstring and body are the document's now; the check is its annotation again
    assert '    """Release `target_gpus` from rollout and return them, lowest first."""' in doc
    assert "    # VAL: VAL_NON_EMPTY(target_gpus)\n    kept = sorted(set(target_gpus))\n" in doc
    assert "raise ValueError" not in doc and "dd-source" not in doc
    assert "| 0.1.0 | 2026-11-24 | dd adopt: the hand edit of GpuPool.shrink_sampler" in doc
    assert dd(project, "check").exit_code == 0
    assert dd(project, "expand", "--check").exit_code == 0
    # the file is the edited one; only its hash line now matches its content
    after = (project / CODE).read_text()
    differ = [
        (a, b) for a, b in zip(edited.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert [a.split(":")[0] for a, _ in differ] == ["# dd-hash"]
    # adopting again: nothing left to adopt
    again = dd(project, "adopt", CODE)
    assert again.exit_code == 1 and "not edited by hand" in again.output


def test_adopt_a_class_attribute_without_a_symbol(project: Path, dd: Callable[..., Result]) -> None:
    edit(project, "num_gpus: int = 8", "num_gpus: int = 16")
    result = dd(project, "adopt", CODE)
    assert result.exit_code == 0, result.output
    doc = (project / DOC).read_text()
    assert "    num_gpus: int = 16\n" in doc and "def shrink_sampler(self" in doc
    assert doc.count("def shrink_sampler") == 1  # the class block did not take the method
    assert dd(project, "expand", "--check").exit_code == 0


def test_an_edited_check_block_is_refused_with_its_line(
    project: Path, dd: Callable[..., Result]
) -> None:
    text = (project / CODE).read_text()
    check_line = next(
        i + 1 for i, line in enumerate(text.splitlines()) if "check.non_empty(" in line
    )
    edit(project, "check.non_empty(target_gpus,", "check.non_empty(target_gpus[1:],")
    before = snapshot(project)
    result = dd(project, "adopt", f"{CODE}:GpuPool.shrink_sampler")
    assert result.exit_code == 1
    assert f"{CODE}:{check_line}: edited inside the expanded check of" in result.output
    assert (
        "VAL_NON_EMPTY(target_gpus)" in result.output and "change the annotation" in result.output
    )
    assert snapshot(project) == before


def test_both_sides_edited_is_refused_naming_both(project: Path, dd: Callable[..., Result]) -> None:
    edit(project, "kept = list(target_gpus)", "kept = sorted(target_gpus)")
    doc = project / DOC
    doc.write_text(doc.read_text().replace("    return kept\n", "    return kept[:]\n"))
    before = snapshot(project)
    result = dd(project, "adopt", f"{CODE}:GpuPool.shrink_sampler")
    assert result.exit_code == 1
    assert "both sides were edited" in result.output
    assert f"{DOC} changed since {CODE} was generated" in result.output
    assert f"{CODE} was edited by hand (in GpuPool.shrink_sampler)" in result.output
    assert snapshot(project) == before


def test_refusals_for_unedited_files_and_unknown_symbols(
    project: Path, dd: Callable[..., Result]
) -> None:
    assert "not edited by hand" in dd(project, "adopt", CODE).output
    edit(project, "kept = list(target_gpus)", "kept = sorted(target_gpus)")
    before = snapshot(project)
    wrong = dd(project, "adopt", f"{CODE}:GpuPool")
    assert wrong.exit_code == 1
    assert "GpuPool was not edited (edited: GpuPool.shrink_sampler)" in wrong.output
    outside = edit(project, "import annotations\n", "import annotations\n\nimport os\n")
    assert "import os" in outside
    header = dd(project, "adopt", CODE)
    assert header.exit_code == 1 and "outside any generated symbol" in header.output
    assert snapshot(project) == {**before, CODE: (project / CODE).read_bytes()}


def test_a_longer_block_moves_only_the_line_numbers(
    project: Path, dd: Callable[..., Result]
) -> None:
    """A docstring that grows moves the annotation's document line (in its check's message):
    the regenerated file equals the edited one up to those numbers and the hash line."""
    edit(
        project,
        '"""Release `target_gpus` from rollout and return them."""',
        '"""Release `target_gpus` from rollout and return them.\n\n        Highest first."""',
    )
    edited = edit(project, "kept = list(target_gpus)", "kept = sorted(target_gpus)[::-1]")
    result = dd(project, "adopt", CODE)
    assert result.exit_code == 0, result.output
    doc = (project / DOC).read_text()
    assert (
        '    """Release `target_gpus` from rollout and return them.\n\n    Highest first."""\n'
        in doc
    )
    assert dd(project, "check").exit_code == 0 and dd(project, "expand", "--check").exit_code == 0
    after = (project / CODE).read_text()
    differ = [
        (a, b) for a, b in zip(edited.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert differ[0][0].startswith("# dd-hash:")
    # the rest differ only in the document line of the check: its site and the site table
    assert differ[1:] and all(a.replace("54", "56") == b for a, b in differ[1:]), differ
