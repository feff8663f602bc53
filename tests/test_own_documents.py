"""The project's own design documents: they check clean, rlsched/ is exactly what they generate,
and every DONE step passes its verification (no phantom completions)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from generator.models import StepStatus
from generator.project import Project
from generator.verify import verify_together

REPO = Path(__file__).resolve().parent.parent
PROJECT = Project.load(REPO)
DONE_DOCS = sorted(
    {doc.path for doc in PROJECT.documents for step in doc.steps if step.status is StepStatus.done}
)


def test_own_documents_check_clean() -> None:
    assert [d.render() for d in PROJECT.check() if d.severity == "error"] == []


def test_rlsched_is_exactly_what_the_documents_generate() -> None:
    assert [f"{c.action} {c.path}" for c in PROJECT.pending_changes()] == []


def test_every_own_document_has_a_plan() -> None:
    assert PROJECT.documents and all(doc.steps for doc in PROJECT.documents)


def run_by_this_suite(item: str) -> bool:
    """A `cmd:` that runs pytest on files of tests/ only: this session collects the same tests
    (testpaths), so when the suite passes, so does the item."""
    words = shlex.split(item.removeprefix("cmd:"))
    if words[:3] != ["python", "-m", "pytest"]:
        return False
    paths, rest = [], iter(words[3:])
    for word in rest:
        if word == "-k":
            next(rest)  # a selection of the tests: the suite runs them all
        elif word.startswith("-"):
            if word != "-q":
                return False  # an option may change what runs
        else:
            paths.append(word)
    return bool(paths) and all(p.startswith("tests/") and (REPO / p).is_file() for p in paths)


def test_run_by_this_suite_names_only_whole_files_of_tests() -> None:
    assert run_by_this_suite("cmd: python -m pytest -q tests/test_core_properties.py -k recover")
    assert not run_by_this_suite("cmd: python -m pytest -q steps/rlsched_sim/test_step1.py")
    assert not run_by_this_suite("cmd: python -m pytest -q tests/x.py --runslow")
    assert not run_by_this_suite("cmd: python benchmarks/core_bench.py --runs 1")


@pytest.mark.parametrize("doc", DONE_DOCS)
def test_done_steps_pass_their_verification(
    doc: str, ray_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `dd step verify NUMBER --doc DOC` runs for each DONE step of DOC, found with
    `verify_together` (the step files of a document in one pytest process; each file alone
    only when that fails); `cmd:` items that re-run tests of this suite are left to it. The
    checks join the session's Ray cluster (`RAY_ADDRESS`) instead of starting one each."""
    monkeypatch.setenv("RAY_ADDRESS", ray_cluster)
    document = next(d for d in PROJECT.documents if d.path == doc)
    done = [s for s in document.steps if s.status is StepStatus.done]
    assert all(s.verify for s in done), "a DONE step without checks"
    steps = [
        s.model_copy(update={"verify": [i for i in s.verify if not run_by_this_suite(i)]})
        for s in done
    ]
    results = verify_together(PROJECT.config.root, PROJECT.config.output_dir, steps)
    assert results and all(r.ok for r in results), "\n".join(
        f"{r.item}: {r.output}" for r in results if not r.ok
    )


def test_scheduler_core_imports_no_ray_and_no_torch() -> None:
    """The sans-I/O core (and the pool and config it uses) never imports an I/O framework."""
    import ast

    core = [
        *sorted((REPO / "rlsched" / "core").rglob("*.py")),
        REPO / "rlsched" / "pool.py",
        REPO / "rlsched" / "config.py",
    ]
    assert len(core) > 5
    for path in core:
        tree = ast.parse(path.read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        imported |= {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        }
        assert not imported & {"ray", "torch", "threading", "asyncio", "time", "random"}, path
