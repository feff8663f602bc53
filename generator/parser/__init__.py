"""Parse one design document (grammar: design/FORMAT.md) into a `Document` plus diagnostics.

The parser reports every deviation it finds instead of stopping at the first, and every
diagnostic carries the exact 1-based line (and column where meaningful) in the `.md` file.
One module per part of the document: `front` (front matter), `sections` (the numbered
sections), `api` and `code` (Section 5), `plan` (Sections 6 and 7). Checks that need more than
one document or the pattern library (unknown deps, pattern IDs, plan consistency) belong to
later stages.
"""

from __future__ import annotations

from pathlib import Path

from generator import markdown
from generator.models import Diagnostic, Document, Loc
from generator.parser import api, front, plan, sections
from generator.parser._report import Report

__all__ = ["parse_document"]


def parse_document(
    path: Path, rel: str, text: str | None = None
) -> tuple[Document | None, list[Diagnostic]]:
    """Parse the design document at `path`; `rel` is the path written into every `Loc`.

    `text` overrides reading the file. Returns `(document, diagnostics)` with every diagnostic
    found, in document order per check. `document` is None exactly when the file is not a
    design document at all (DD001: not UTF-8 text, a NUL byte, no front matter, a code fence
    that never closes) or its front matter is invalid (DD002; the body is still checked).
    Raises OSError when the file cannot be read.
    """
    if text is None:
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            loc = Loc(path=rel, line=line)
            return None, [Diagnostic(loc=loc, code="DD001", message=f"file is not UTF-8: {exc}")]
    r = Report(rel, text.removeprefix("\ufeff"))  # a byte order mark is not content
    return _parse(r), r.diagnostics


def _parse(r: Report) -> Document | None:
    if "\0" in r.text:
        before = r.text[: r.text.index("\0")]
        line, col = before.count("\n") + 1, len(before) - before.rfind("\n")
        r.error("DD001", line, "NUL byte (\\0): a design document is UTF-8 text", col)
        return None
    end = front.end_line(r)
    data = None if end is None else front.load(r, end)
    if end is None or data is None:
        return None
    front_matter, package = front.validate(r, data, end)
    blocks = markdown.blocks(r.lines, blank=end)
    unclosed = next((b for b in blocks if isinstance(b, markdown.Fence) and not b.closed), None)
    if unclosed is not None:
        r.error(
            "DD039",
            unclosed.line,
            "code fence opened here is never closed: everything after it would be code "
            "(add the closing fence)",
            unclosed.indent + 1,
        )
        return None
    found = sections.sections(r, blocks)
    by_number = {s.number: s for s in found}
    api_blocks = sections.within(blocks, by_number.get(sections.API_SECTION))
    modules = api.modules(r, api_blocks, package)
    steps = plan.steps(r, sections.within(blocks, by_number.get(sections.PLAN_SECTION)))
    revisions = plan.revisions(sections.within(blocks, by_number.get(sections.HISTORY_SECTION)))
    if front_matter is None:
        return None
    plan_section = by_number.get(sections.PLAN_SECTION)
    return Document(
        path=r.rel,
        text=r.text,
        front=front_matter,
        front_loc=r.loc(1),
        sections=found,
        modules=modules,
        steps=steps,
        plan_loc=plan_section.loc if plan_section else None,
        revisions=revisions,
    )
