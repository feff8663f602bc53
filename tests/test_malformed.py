"""Every malformed document is rejected with its error code at its line, and nothing is written.

Fixtures: tests/data/malformed/<name>.md (a document with exactly one deliberate defect) and
<name>.expect (`DDxxx LINE`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import make_project, snapshot

FIXTURES = Path(__file__).parent / "data" / "malformed"
CASES = sorted(FIXTURES.glob("*.md"))


def expectation(doc: Path) -> tuple[str, int]:
    code, line = doc.with_suffix(".expect").read_text().split()
    return code, int(line)


def test_there_are_at_least_30_malformed_documents() -> None:
    assert len(CASES) >= 30
    assert all(case.with_suffix(".expect").is_file() for case in CASES)
    assert len({expectation(c)[0] for c in CASES}) >= 20  # they cover many distinct codes


@pytest.mark.parametrize("doc", CASES, ids=[c.stem for c in CASES])
def test_malformed_document_is_rejected_at_its_line(doc: Path, tmp_path: Path, dd) -> None:
    code, line = expectation(doc)
    root = make_project(tmp_path, {})
    shutil.copy(doc, root / "design" / doc.name)
    before = snapshot(root)

    checked = dd(root, "check")
    assert checked.exit_code == 1
    expected = f"design/{doc.name}:{line}:"
    hits = [row for row in checked.stdout.splitlines() if row.startswith(expected) and f"[{code}]" in row]
    assert hits, f"expected {code} at line {line}; got:\n{checked.stdout}"

    expanded = dd(root, "expand")
    assert expanded.exit_code == 1
    assert f"[{code}]" in expanded.stdout
    assert snapshot(root) == before, "a rejected document must not write anything"
