"""Byte-minimal edits of a design document's text (written with `writer.atomic_write`).

Every function here takes the document text and returns the edited text; bytes outside the
edited value or the inserted lines are left exactly as they were (line endings included).
Positions come from the parser's `Loc`s (1-based line and column, the column counted in
characters), so callers must pass the `Document`/`Step` parsed from the same `text`.
"""

from __future__ import annotations

import re

from generator import markdown
from generator.models import Document, Step
from generator.plan import step_field


class EditError(ValueError):
    """The requested edit does not fit the text (stale positions, missing section...)."""


def _split_nl(text: str) -> list[str]:
    r"""Split on `\n` only, keeping the terminators (a `\r` stays part of its line)."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _newline(text: str) -> str:
    r"""The document's line terminator (`\r\n` when its first line uses it)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _body(line: str) -> str:
    """A line without its terminator."""
    return line.rstrip("\n").removesuffix("\r")


def _ending(line: str) -> str:
    return line[len(_body(line)) :]


# A non-blank line that is not a new bullet, heading, fence or table row continues a list item.
_CONTINUATION = re.compile(r"^(?!\s{0,3}(?:[-*+]\s|#|```|~~~|\|))\s*\S")


def set_step_fields(text: str, step: Step, updates: dict[str, str]) -> str:
    """Set several `- key: value` fields of `step` (parsed from `text`) in one edit.

    An existing field has just its value replaced (from its `loc` to the end of the value);
    absent fields are added, in `updates` order, as new lines right after the step's last field
    (after the heading when it has none). Raises EditError when a field's position does not
    hold its parsed value (the Step was not parsed from this text).
    """
    lines = _split_nl(text)
    nl = _newline(text)
    added: list[str] = []
    for key, value in updates.items():
        if "\n" in value or "\r" in value:
            raise EditError(f"field value for `{key}` must be a single line")
        f = step_field(step, key)
        if f is None:
            added.append(f"- {key}: {value}{nl}")
            continue
        idx, col = f.loc.line - 1, f.loc.col - 1
        if not 0 <= idx < len(lines):
            raise EditError(
                f"field `{key}` of Step {step.number} is at line {f.loc.line}, past the end"
            )
        body = _body(lines[idx])
        if body[col : col + len(f.value)] == f.value:
            end = col + len(f.value)
        elif body[col:].strip() == f.value.strip():
            end = len(body.rstrip())
        else:
            raise EditError(f"line {f.loc.line} does not hold field `{key}` of Step {step.number}")
        lines[idx] = body[:col] + value + body[end:] + _ending(lines[idx])
    if added:
        after = max((f.loc.line for f in step.fields), default=step.loc.line)
        if after > len(lines):
            raise EditError(f"Step {step.number} ends past the end of the text")
        while step.fields and after < len(lines) and _CONTINUATION.match(_body(lines[after])):
            after += 1  # a multi-line last field: insert after its continuation lines
        if not lines[after - 1].endswith("\n"):
            lines[after - 1] += nl
        lines[after:after] = added
    return "".join(lines)


def _section_bounds(doc: Document, number: int) -> tuple[int, int]:
    """(heading line, last line) of section `number`, 1-based inclusive; EditError if absent."""
    section = doc.section(number)
    if section is None:
        raise EditError(f"{doc.path} has no Section {number}")
    return section.loc.line, section.end_line


def _insert_block(lines: list[str], at: int, block: list[str], nl: str) -> None:
    """Insert `block` (lines without terminators) after 0-based index `at - 1`, separated from
    neighbouring non-blank lines by exactly one blank line."""
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += nl
    new = [b + nl for b in block]
    if at > 0 and _body(lines[at - 1]).strip():
        new.insert(0, nl)
    if at >= len(lines) or _body(lines[at]).strip():
        new.append(nl)
    lines[at:at] = new


PLAN_PLACEHOLDER = "No plan yet"  # how design/template.md's Section 6 paragraph starts


def _placeholder(lines: list[str], head: int, last: int) -> tuple[int, int] | None:
    """0-based [start, end) of the paragraph of Section 6 that starts with PLAN_PLACEHOLDER,
    with the blank lines after it."""
    for i in range(head, last):
        if _body(lines[i]).startswith(PLAN_PLACEHOLDER):
            end = i + 1
            while end < last and _body(lines[end]).strip():
                end += 1
            while end < last and not _body(lines[end]).strip():
                end += 1
            return i, end
    return None


def insert_plan(text: str, doc: Document, steps: str) -> str:
    """Insert `steps` (rendered Markdown) into `doc`'s Section 6, which must have no steps yet.

    The steps go after the section's heading and prose (before its trailing blank lines),
    separated by one blank line on each side; the template's "No plan yet" paragraph is
    replaced; nothing else changes.
    """
    if doc.steps:
        raise EditError(f"{doc.path} already has a plan ({len(doc.steps)} steps)")
    head, last = _section_bounds(doc, 6)
    lines = _split_nl(text)
    last = min(last, len(lines))
    placeholder = _placeholder(lines, head, last)
    if placeholder is not None:  # the template's "No plan yet" paragraph: the plan replaces it
        start, end = placeholder
        del lines[start:end]
        last -= end - start
    while last > head and not _body(lines[last - 1]).strip():
        last -= 1
    _insert_block(lines, last, steps.rstrip("\n").split("\n"), _newline(text))
    return "".join(lines)


def set_plan_block(text: str, doc: Document, info: str, content: str) -> str:
    """Replace the body of the first ```` ```info ```` block in Section 6 with `content`, or
    insert such a block right before the first step (at the end of the section when it has no
    steps). Only the block's lines change."""
    head, last = _section_bounds(doc, 6)
    lines = _split_nl(text)
    nl = _newline(text)
    body = content.rstrip("\n").split("\n")
    fences = [
        b
        for b in markdown.blocks([_body(line) for line in lines])
        if isinstance(b, markdown.Fence) and head < b.line <= last
    ]
    for fence in fences:
        if not fence.closed:
            raise EditError(f"unclosed code block at {doc.path}:{fence.line}")
        if fence.info == info:
            lines[fence.line : fence.end - 1] = [b + nl for b in body]
            return "".join(lines)
    at = doc.steps[0].loc.line - 1 if doc.steps else min(last, len(lines))
    while at > head and not _body(lines[at - 1]).strip():
        at -= 1
    _insert_block(lines, at, [f"```{info}", *body, "```"], nl)
    return "".join(lines)
