"""DD080: a document changed since git HEAD needs a new version and a Section 7 row."""

from __future__ import annotations

import re

from generator.models import Diagnostic, Document, Loc
from generator.plan.validate import (
    _diag,
)

# --------------------------------------------------------------------------- revisions

_VERSION_LINE = re.compile(r"^version:\s*['\"]?([^'\"\s#]+)")
_ROW = re.compile(r"^\|\s*v?(\d+\.\d+(?:\.\d+)?)\s*\|")


def _front_version(text: str) -> tuple[str | None, int]:
    """(version, 1-based line) from raw front matter text; (None, 1) when absent."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None, 1
    for i, line in enumerate(lines[1:], start=2):
        if line.rstrip("\r") == "---":
            break
        m = _VERSION_LINE.match(line)
        if m:
            return m.group(1), i
    return None, 1


def revision_rows(text: str) -> list[str]:
    """Version cells of revision-table rows anywhere in `text` (used for the HEAD version)."""
    return [m.group(1) for line in text.split("\n") if (m := _ROW.match(line.strip()))]


def check_revision(doc: Document, head_text: str | None = None) -> list[Diagnostic]:
    """DD080 warnings: the front matter version has no Section 7 row; or, given the document's
    text at HEAD, the version changed since HEAD while no revision row was added."""
    version = doc.front.version
    _, line = _front_version(doc.text)
    loc = Loc(path=doc.path, line=line, col=len("version: ") + 1 if line > 1 else 1)
    if version not in doc.revisions:
        return [
            _diag(
                loc,
                "DD080",
                f"version {version} has no row in Section 7's revision table",
                "warning",
            )
        ]
    if head_text is None:
        return []
    old_version, _ = _front_version(head_text)
    if old_version is None or old_version == version:
        return []
    if len(doc.revisions) <= len(revision_rows(head_text)):
        return [
            _diag(
                loc,
                "DD080",
                f"version changed from {old_version} to {version} since HEAD but no revision row "
                "was added",
                "warning",
            )
        ]
    return []
