"""Generated files without a source (DD102): found on disk under the directories dd manages,
deleted only by `dd expand --prune` (through `generator.writer`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from generator import checkmodule, markers
from generator.models import Diagnostic, Loc

if TYPE_CHECKING:
    from generator.project import Project


def orphans(project: Project) -> tuple[Diagnostic, ...]:
    """DD102 for every generated file whose source no longer generates it (its document is
    gone, or no longer has its module spec or a started step); files of a document that
    exists but has errors are left to the document's own errors."""
    wanted = set(project.planned_paths())
    loaded = {d.path for d in project.documents}
    found: list[Diagnostic] = []
    for rel in managed_files(project):
        if rel in wanted:
            continue
        head = _first_line(project.config.root / rel)
        source = markers.source_document(head)
        if source in project._unreadable or (source is None and project._unreadable):
            continue
        if checkmodule.is_check_module(head):
            why = "a check module of a package whose generated modules have no checks"
        elif source is None:
            why = "a package marker of a package that has no generated module any more"
        elif source in loaded:
            why = (
                f"{source} no longer generates it (its module spec was removed or renamed, "
                "or none of its specs' steps has started)"
            )
        else:
            why = f"its design document {source} is gone"
        message = (
            f"generated file without a source: {why}; restore the source, or delete the file "
            "with `dd expand --prune`"
        )
        found.append(Diagnostic(loc=Loc(path=rel), code="DD102", message=message))
    return tuple(found)


def managed_files(project: Project) -> list[str]:
    """Project-relative paths of every dd-generated file under the directories dd manages
    (each document's package, and every package in the output root whose `__init__.py` dd
    generated, so the packages of a deleted document are found too)."""
    out = project.config.output_dir
    roots = set(managed_roots(project))
    if out.is_dir():
        for child in out.iterdir():
            if child.name.startswith(".") or child.is_symlink():
                continue
            marker = child / "__init__.py" if child.is_dir() else child
            if marker.suffix == ".py" and markers.is_generated(_first_line(marker)):
                roots.add(child)
    found = set()
    for base in roots:
        if base.is_symlink():
            continue
        candidates = sorted(base.rglob("*.py")) if base.is_dir() else [base]
        for path in candidates:
            if path.is_file() and not path.is_symlink():
                if markers.is_generated(_first_line(path)):
                    found.add(project._rel_out(path))
    return sorted(found)


def managed_roots(project: Project) -> list[Path]:
    """Directories dd owns: each document's package directory under the output root."""
    return sorted(
        {project.config.output_dir / d.front.package.split(".")[0] for d in project.documents}
    )


def _first_line(path: Path) -> str:
    """The first line of a file (decoded leniently; "" when unreadable)."""
    try:
        with path.open("rb") as fh:
            return fh.readline(4096).decode("utf-8", errors="replace").rstrip("\r\n")
    except OSError:
        return ""
