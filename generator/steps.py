"""The step workflow behind `dd plan`, `dd status`, `dd next` and `dd step start|verify|done`.

Functions here take a loaded `Project`, edit documents through `docedit` (byte-minimal,
atomic) and report problems by raising `StepError` (a refusal with a message for the user);
they never print. `done_step` is transactional: on any failure every file it touched is put
back byte for byte before the error propagates.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from generator import gitutil
from generator.docedit import insert_plan, set_step_fields
from generator.models import DDError, Diagnostic, Document, Step, StepStatus
from generator.plan import derive_plan, render_plan, validate_plan
from generator.project import Project
from generator.verify import CheckResult, run_checks
from generator.writer import atomic_write

if TYPE_CHECKING:
    from generator import mutate  # imported where used: it brings libcst

PLAN_CODES = {f"DD07{i}" for i in range(10)}


class StepError(Exception):
    """A refusal: the message says what is wrong and what to do; nothing was changed."""

    def __init__(
        self,
        message: str,
        diagnostics: list[Diagnostic] | None = None,
        results: list[CheckResult] | None = None,
    ):
        super().__init__(message)
        self.diagnostics = diagnostics or []
        self.results = results or []


# --------------------------------------------------------------------------- selection


def read_text(path: Path) -> str:
    """A document's exact text (no newline translation), for byte-minimal edits."""
    with path.open(encoding="utf-8", newline="") as fh:
        return fh.read()


def planned_documents(project: Project) -> list[Document]:
    return [d for d in project.documents if d.steps]


def select_document(project: Project, doc: str | None) -> Document:
    """The document named by `--doc`, else the only document with a plan; StepError otherwise."""
    if doc is not None:
        found = project.document(Path(doc).resolve()) or project.document(doc)
        if found is None:
            known = ", ".join(d.path for d in project.documents) or "none"
            raise StepError(f"{doc}: not a design document of this project (documents: {known})")
        return found
    planned = planned_documents(project)
    if len(planned) == 1:
        return planned[0]
    if not planned:
        raise StepError("no document has an implementation plan yet: run `dd plan DOC` first")
    names = ", ".join(d.path for d in planned)
    raise StepError(f"{len(planned)} documents have plans ({names}): choose one with --doc PATH")


def get_step(doc: Document, number: int) -> Step:
    step = next((s for s in doc.steps if s.number == number), None)
    if step is None:
        raise StepError(f"{doc.path} has no Step {number} (steps: 1..{len(doc.steps)})")
    return step


def blockers(doc: Document, step: Step, ok: set[StepStatus]) -> list[Step]:
    """The steps `step` depends on whose status is not in `ok`."""
    by_num = {s.number: s for s in doc.steps}
    return [by_num[d] for d in step.depends_on if d in by_num and by_num[d].status not in ok]


def next_ready(doc: Document) -> Step | None:
    """The first NOT_STARTED step whose dependencies are all DONE."""
    return next(
        (
            s
            for s in doc.steps
            if s.status is StepStatus.not_started and not blockers(doc, s, {StepStatus.done})
        ),
        None,
    )


def today() -> str:
    """UTC date as YYYY-MM-DD; `DD_TODAY` overrides (tests)."""
    return os.environ.get("DD_TODAY") or dt.datetime.now(dt.UTC).date().isoformat()


# --------------------------------------------------------------------------- plan


def plan_document(project: Project, doc: Document) -> tuple[list[Step], list[Diagnostic]]:
    """Derive and write a plan for `doc` when it has none; otherwise validate.

    Returns (steps written, diagnostics): steps is empty when the document already had a plan
    (the diagnostics are then `dd check`'s for this document). Refuses (StepError) to derive
    from a document that has errors, or that has no specs.
    """
    diags = [d for d in project.check() if d.loc.path == doc.path]
    if doc.steps:
        return [], diags
    errors = [d for d in diags if d.severity == "error" and d.code not in PLAN_CODES]
    if errors:
        raise StepError(f"{doc.path} has errors; fix them before deriving a plan", errors)
    steps = derive_plan(doc, project.config.steps, project.resolve)
    if not steps:
        raise StepError(f"{doc.path} has no specs in Section 5: nothing to plan")
    problems = validate_plan(doc.model_copy(update={"steps": steps}), project.resolve)
    if problems:  # a bug in derive_plan: never write an invalid plan
        raise StepError("the derived plan does not validate (please report this)", problems)
    path = project.config.root / doc.path
    atomic_write(path, insert_plan(read_text(path), doc, render_plan(steps)))
    return steps, []


# --------------------------------------------------------------------------- verify


def verify_step(project: Project, doc: Document, number: int) -> list[CheckResult]:
    """Run `number`'s checks; StepError when the step has none."""
    step = get_step(doc, number)
    if not step.verify:
        raise StepError(
            f"Step {number} has no `verify:` items: add a test under steps/ or a `cmd:`"
        )
    return run_checks(project.config.root, project.config.output_dir, step.verify)


# --------------------------------------------------------------------------- start


def start_step(project: Project, doc: Document, number: int) -> bool:
    """Mark `number` IN_PROGRESS (False when it already is). Refuses a DONE step and one whose
    dependencies have not started (DD079)."""
    step = get_step(doc, number)
    if step.status is StepStatus.done:
        raise StepError(f"Step {number} is already DONE")
    if step.status is StepStatus.in_progress:
        return False
    waiting = blockers(doc, step, {StepStatus.in_progress, StepStatus.done})
    if waiting:
        raise StepError(_blocked_message(number, waiting, "start"))
    path = project.config.root / doc.path
    atomic_write(
        path, set_step_fields(read_text(path), step, {"status": StepStatus.in_progress.value})
    )
    return True


def _blocked_message(number: int, waiting: list[Step], verb: str) -> str:
    listed = ", ".join(f"Step {s.number} ({s.status.value})" for s in waiting)
    return f"cannot {verb} Step {number}: it depends on {listed}; finish those first"


# --------------------------------------------------------------------------- done


def step_files(project: Project, doc: Document, step: Step) -> set[str]:
    """Project-relative paths `dd step done` may change and commit for `step`: the document,
    every module generated from it (a document edit such as a version bump changes their
    headers too), its verify files (with conftest.py and __init__.py beside them)."""
    files = {doc.path, *project.document_files(doc)}
    for item in step.verify:
        if item.startswith("cmd:"):
            continue
        files.add(item)
        for parent in PurePosixPath(item).parents:
            if str(parent) == ".":
                break
            files |= {f"{parent}/conftest.py", f"{parent}/__init__.py"}
    return files


def _allowed(project: Project, files: set[str], rel: str) -> bool:
    """In `files`, or a package `__init__.py` under a directory dd manages."""
    if rel in files:
        return True
    if PurePosixPath(rel).name != "__init__.py":
        return False
    path = (project.config.root / rel).resolve()
    return any(path.is_relative_to(r.resolve()) for r in project.managed_roots())


class _Snapshot:
    """Original bytes (None: absent) of every file a transaction writes, to restore on failure."""

    def __init__(self, root: Path):
        self.root = root
        self.saved: dict[str, bytes | None] = {}
        self.new_dirs: list[Path] = []

    def save(self, rel: str) -> None:
        if rel in self.saved:
            return
        path = self.root / rel
        self.saved[rel] = path.read_bytes() if path.is_file() else None
        for parent in reversed(path.parents):
            if (
                parent.is_relative_to(self.root)
                and not parent.exists()
                and parent not in self.new_dirs
            ):
                self.new_dirs.append(parent)

    def restore(self) -> None:
        for rel, data in self.saved.items():
            path = self.root / rel
            if data is None:
                path.unlink(missing_ok=True)
            elif not path.is_file() or path.read_bytes() != data:
                atomic_write(path, data)
        for directory in sorted(self.new_dirs, key=lambda p: len(p.parts), reverse=True):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()


@dataclass
class DoneResult:
    results: list[CheckResult]
    committed: str | None = None  # commit hash
    paths: list[str] = field(default_factory=list)  # project-relative paths changed/committed
    mutation: mutate.Report | None = None


def _mutation_gate(
    project: Project, doc: Document, step: Step, budget: int | None, jobs: int | None
) -> mutate.Report:
    """Run the step's mutants; StepError (listing the survivors) below `mutation-floor` (0 turns
    the run off)."""
    from generator import mutate

    floor = project.config.mutation_floor
    try:
        report = mutate.run_mutants(
            project, doc, step, budget or project.config.mutation_budget, jobs=jobs
        )
    except mutate.MutationError as exc:
        raise StepError(str(exc)) from None
    if mutate.below_floor(report, floor):
        raise StepError(mutate.refusal(report, floor))
    return report


def _git_changes(project: Project, git_root: Path) -> list[str]:
    """Changed paths of the work tree, relative to the project root."""
    return [project.config.rel(git_root / p) for p in gitutil.changed_paths(git_root)]


def _preflight(project: Project, doc: Document, step: Step, commit: bool) -> Path | None:
    """Every refusal that can be decided before touching anything; returns the git root."""
    if step.status is StepStatus.done:
        raise StepError(f"Step {step.number} is already DONE")
    waiting = blockers(doc, step, {StepStatus.done})
    if waiting:
        raise StepError(_blocked_message(step.number, waiting, "finish"))
    if not step.verify:
        raise StepError(
            f"Step {step.number} has no `verify:` items: a step is DONE only when checks pass"
        )
    errors = project.errors()
    if errors:
        raise StepError("the project has errors; fix them first (see `dd check`)", errors)
    git_root = gitutil.repo_root(project.config.root)
    if git_root is None:
        if commit:
            raise StepError("not inside a git repository: run `git init` or use --no-commit")
        return None
    files = step_files(project, doc, step)
    outside = [p for p in _git_changes(project, git_root) if not _allowed(project, files, p)]
    if outside:
        listed = "\n  ".join(outside[:20])
        raise StepError(
            f"the working tree has changes outside Step {step.number}'s files; commit or stash "
            f"them first:\n  {listed}"
        )
    return git_root


def _expand(project: Project, snap: _Snapshot) -> list[str]:
    """`project.expand()` after recording the original of every file it will write."""
    for change in project.pending_changes():
        snap.save(change.path)
    return project.expand()


def _reload(project: Project, doc: Document, number: int) -> tuple[Project, Document, Step]:
    fresh = Project.load(project.config.root)
    new_doc = fresh.document(doc.path)
    if new_doc is None:
        raise StepError(f"{doc.path} no longer parses")
    return fresh, new_doc, get_step(new_doc, number)


def done_step(
    project: Project,
    doc: Document,
    number: int,
    commit: bool = True,
    budget: int | None = None,
    jobs: int | None = None,
) -> DoneResult:
    """Expand, verify, mark DONE (date, verified) and commit Step `number`, or change nothing.

    Refuses (StepError) when a depended-on step is not DONE, the step has no checks, the project
    has errors, the work tree has changes outside the step's files, expansion fails or a check
    fails. On any failure the document and generated files are restored byte for byte.
    """
    from generator import mutate

    step = get_step(doc, number)
    git_root = _preflight(project, doc, step, commit)
    root = project.config.root
    snap = _Snapshot(root)
    snap.save(doc.path)
    staged: list[str] = []
    try:
        doc_path = root / doc.path
        if step.status is StepStatus.not_started:
            atomic_write(
                doc_path,
                set_step_fields(
                    read_text(doc_path), step, {"status": StepStatus.in_progress.value}
                ),
            )
            project, doc, step = _reload(project, doc, number)
        try:
            _expand(project, snap)
        except DDError as exc:
            raise StepError(f"`dd expand` failed for Step {number}", exc.diagnostics) from None
        results = run_checks(project.config.root, project.config.output_dir, step.verify)
        if not all(r.ok for r in results):
            raise StepError(
                f"verification of Step {number} failed; nothing was changed", results=results
            )
        checks = f"passed ({len(results)} check{'s' if len(results) != 1 else ''})"
        mutation = (
            _mutation_gate(project, doc, step, budget, jobs)
            if project.config.mutation_floor > 0
            else None
        )
        fields = {
            "status": StepStatus.done.value,
            "date": today(),
            "verified": mutate.verified_line(checks, mutation),
        }
        atomic_write(doc_path, set_step_fields(read_text(doc_path), step, fields))
        project, doc, step = _reload(project, doc, number)
        _expand(project, snap)
        result = DoneResult(results=results, mutation=mutation)
        if git_root is not None:
            files = step_files(project, doc, step)
            result.paths = [
                p for p in _git_changes(project, git_root) if _allowed(project, files, p)
            ]
        if commit and git_root is not None:
            staged = [(root / p).resolve().relative_to(git_root).as_posix() for p in result.paths]
            trailer = {gitutil.STEP_TRAILER: gitutil.step_key(doc.path, number)}
            try:
                result.committed = gitutil.commit_paths(
                    git_root, staged, f"Step {number}: {step.title}", trailer
                )
            except gitutil.GitError as exc:
                raise StepError(
                    f"the commit of Step {number} failed, so it was not marked DONE: {exc}"
                ) from None
        return result
    except BaseException:
        snap.restore()
        if staged and git_root is not None:
            gitutil.unstage(git_root, staged)
        raise


# --------------------------------------------------------------------------- status
