"""The project's own design documents: they check clean, rlsched/ is exactly what they generate,
and every DONE step passes its verification (no phantom completions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.models import StepStatus
from generator.project import Project
from generator.steps import verify_step

REPO = Path(__file__).resolve().parent.parent
PROJECT = Project.load(REPO)
DONE = [(doc.path, step.number) for doc in PROJECT.documents for step in doc.steps if step.status is StepStatus.done]


def test_own_documents_check_clean() -> None:
    assert [d.render() for d in PROJECT.check() if d.severity == "error"] == []


def test_rlsched_is_exactly_what_the_documents_generate() -> None:
    assert [f"{c.action} {c.path}" for c in PROJECT.pending_changes()] == []


def test_every_own_document_has_a_plan() -> None:
    assert PROJECT.documents and all(doc.steps for doc in PROJECT.documents)


@pytest.mark.parametrize(("doc", "number"), DONE, ids=[f"{d}#{n}" for d, n in DONE])
def test_done_step_passes_its_verification(doc: str, number: int) -> None:
    """What `dd step verify NUMBER --doc DOC` runs (each check in its own process), called here
    directly: a second process per step only to start dd cost about a second each, two minutes
    of the suite."""
    document = next(d for d in PROJECT.documents if d.path == doc)
    results = verify_step(PROJECT, document, number)
    assert results and all(r.ok for r in results), "\n".join(
        f"{r.item}: {r.output}" for r in results if not r.ok
    )


def test_scheduler_core_imports_no_ray_and_no_torch() -> None:
    """The sans-I/O core (and the pool and config it uses) never imports an I/O framework."""
    import ast

    core = [*sorted((REPO / "rlsched" / "core").rglob("*.py")), REPO / "rlsched" / "pool.py", REPO / "rlsched" / "config.py"]
    assert len(core) > 5
    for path in core:
        tree = ast.parse(path.read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not imported & {"ray", "torch", "threading", "asyncio", "time", "random"}, path
