"""The seven numbered sections (DD010-DD012) and the pieces every section reader shares:
splitting blocks at headings, `- key: value` fields (DD060) and backticked lists."""

from __future__ import annotations

import re

from generator.markdown import Block, Fence, Heading, Item
from generator.models import Field_, Section
from generator.parser._report import Report

SECTION_COUNT = 7
API_SECTION, PLAN_SECTION, HISTORY_SECTION = 5, 6, 7

_SECTION_RE = re.compile(r"^(?P<num>\d+)\.?\s+(?P<title>\S.*)$", re.DOTALL)
# `word:` or `two words:` at the start of a bullet makes it a field; anything else is prose.
_FIELD_RE = re.compile(r"^(?P<key>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*)?):(?:[ \t]+|$)", re.MULTILINE)
_TICKED_RE = re.compile(r"\s*`([^`]+)`\s*")


def sections(r: Report, blocks: list[Block]) -> list[Section]:
    """The numbered sections in document order (first occurrence of each number)."""
    headings = [b for b in blocks if isinstance(b, Heading) and b.level == 2]
    found: dict[int, Section] = {}
    highest = 0
    for index, heading in enumerate(headings):
        end = headings[index + 1].line - 1 if index + 1 < len(headings) else r.last_line
        match = _SECTION_RE.match(heading.text)
        if not match:
            r.error(
                "DD012",
                heading.line,
                f"level-2 heading `{heading.text}` is not a numbered section `N. Title`; "
                "use level 3 or below for sub-structure",
            )
            continue
        number = int(match.group("num"))
        if not 1 <= number <= SECTION_COUNT:
            r.error(
                "DD012",
                heading.line,
                f"unknown section number {number} (sections are 1..{SECTION_COUNT})",
            )
            continue
        if number in found:
            first = found[number].loc.line
            r.error("DD011", heading.line, f"section {number} duplicated (first on line {first})")
            continue
        if number < highest:
            r.error(
                "DD012",
                heading.line,
                f"section {number} out of order (it follows section {highest})",
            )
        highest = max(highest, number)
        title = match.group("title").strip()
        found[number] = Section(number=number, title=title, loc=r.loc(heading.line), end_line=end)
    _missing(r, found)
    return sorted(found.values(), key=lambda s: s.loc.line)


def _missing(r: Report, found: dict[int, Section]) -> None:
    """DD010 for each missing number, at the next present section (else the last line)."""
    for number in range(1, SECTION_COUNT + 1):
        if number in found:
            continue
        later = [s.loc.line for n, s in found.items() if n > number]
        if later:
            r.error("DD010", min(later), f"section {number} missing (expected before this one)")
        else:
            r.error("DD010", r.last_line, f"section {number} missing")


def within(blocks: list[Block], section: Section | None) -> list[Block]:
    """The blocks after `section`'s heading up to its end line."""
    if section is None:
        return []
    return [b for b in blocks if section.loc.line < b.line <= section.end_line]


def chunks(blocks: list[Block], max_level: int) -> list[tuple[Heading | None, list[Block]]]:
    """Split `blocks` at headings of level 2..`max_level`; deeper headings stay in bodies."""
    found: list[tuple[Heading | None, list[Block]]] = [(None, [])]
    for block in blocks:
        if isinstance(block, Heading) and 2 <= block.level <= max_level:
            found.append((block, []))
        else:
            found[-1][1].append(block)
    return found


def python_fences(body: list[Block]) -> list[Fence]:
    return [b for b in body if isinstance(b, Fence) and b.info == "python"]


def items_before_code(body: list[Block]) -> list[Item]:
    """Bullet items before the first ```python block (where fields live)."""
    items: list[Item] = []
    for block in body:
        if isinstance(block, Fence) and block.info == "python":
            break
        if isinstance(block, Item):
            items.append(block)
    return items


def fields(r: Report, items: list[Item], allowed: tuple[str, ...]) -> list[Field_]:
    """`- key: value` items as fields; unknown or repeated keys are DD060, prose skipped."""
    found: list[Field_] = []
    for item in items:
        match = _FIELD_RE.match(item.text)
        if not match:
            continue
        key = match.group("key")
        if key not in allowed:
            known = ", ".join(f"`{k}`" for k in allowed)
            r.error("DD060", item.line, f"unknown field `{key}` (known: {known})", item.col)
            continue
        if any(f.key == key for f in found):
            r.error("DD060", item.line, f"field `{key}` repeated", item.col)
            continue
        value = " ".join(part.strip() for part in item.text[match.end() :].split("\n"))
        col = _value_col(r, item, len(key) + 1)
        found.append(Field_(key=key, value=value.strip(), loc=r.loc(item.line, col)))
    return found


def _value_col(r: Report, item: Item, key_width: int) -> int:
    """1-based column of a field's value on the item's raw line: after `key:` and blanks.

    Trailing blanks of an empty value are skipped too, so an editor inserting there keeps the
    `key: value` spacing.
    """
    raw = r.lines[item.line - 1]
    index = item.col - 1 + key_width
    while index < len(raw) and raw[index] in " \t":
        index += 1
    return index + 1


def ticked_list(value: str) -> list[str] | None:
    """Items of "`a`, `b`"; None unless the whole value is such a list (no empty items)."""
    items: list[str] = []
    pos = 0
    while True:
        match = _TICKED_RE.match(value, pos)
        if match is None or not match.group(1).strip():
            return None
        items.append(match.group(1).strip())
        pos = match.end()
        if pos == len(value):
            return items
        if value[pos] != ",":
            return None
        pos += 1
