"""The one Markdown reader of dd (markdown-it, CommonMark plus tables): the top-level blocks of a
document with their 1-based file lines. The parser reads documents through `blocks`; the prompts
and the document editor find sections through `headings`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_BULLET = re.compile(r"^\s*[-*+]\s*")
_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Heading:
    """A top-level ATX or setext heading."""

    level: int
    text: str  # raw inline source, e.g. "5.1 Module `demo.pool`"
    line: int


@dataclass(frozen=True)
class Fence:
    """A top-level fenced code block; `line` is the opening fence's line, `end` its last line."""

    info: str  # first word of the info string ("" when none)
    code: str
    line: int
    end: int
    indent: int  # columns the fence is indented by (markdown-it strips them from `code`)
    closed: bool  # False when the fence runs to the end of the document


@dataclass(frozen=True)
class Item:
    """First paragraph of an item of a top-level bullet list."""

    text: str  # raw inline source, lines joined by "\n"
    line: int
    col: int  # column of the text's first character


@dataclass(frozen=True)
class Table:
    """A top-level table: its body rows (header excluded), each a list of raw cell texts."""

    line: int
    rows: list[list[str]]


Block = Heading | Fence | Item | Table


@functools.cache
def _parser() -> MarkdownIt:
    """CommonMark with tables, block structure only: dd reads an inline token's raw `content`,
    never its parsed children, so inline parsing is switched off."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").disable("inline")


def blocks(lines: list[str], blank: int = 0) -> list[Block]:
    """Top-level headings, fences, bullet items and tables of `lines`, in document order.

    The first `blank` lines (the front matter) are read as empty lines, so line numbers are
    the file's.
    """
    body = "\n".join([""] * blank + lines[blank:])
    tokens = _parser().parse(body)
    found: list[Block] = []
    in_bullets = False
    for index, token in enumerate(tokens):
        if token.level == 0 and token.type in ("bullet_list_open", "ordered_list_open"):
            in_bullets = token.type == "bullet_list_open"
        elif token.type == "heading_open" and token.level == 0:
            text = tokens[index + 1].content.strip()
            found.append(Heading(int(token.tag[1:]), text, _line(token)))
        elif token.type == "fence" and token.level == 0:
            found.append(_fence(token, lines))
        elif token.type == "list_item_open" and token.level == 1 and in_bullets:
            item = _item(tokens, index, lines)
            if item is not None:
                found.append(item)
        elif token.type == "table_open" and token.level == 0:
            found.append(Table(_line(token), _table_rows(tokens, index)))
    return found


@dataclass(frozen=True)
class Span:
    """A heading with the lines it governs (1-based, inclusive): up to the next heading of the
    same or a higher level."""

    level: int
    number: str  # leading section number without a trailing dot ("5.1.2"), or ""
    title: str  # heading text without the number
    start: int
    end: int

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}".strip()


def headings(text: str) -> list[Span]:
    """Every top-level heading of `text` (code blocks excluded) with its span."""
    lines = text.split("\n")
    found = [b for b in blocks(lines) if isinstance(b, Heading)]
    spans = []
    for k, heading in enumerate(found):
        end = next((h.line - 1 for h in found[k + 1 :] if h.level <= heading.level), len(lines))
        number = _NUMBER.match(heading.text)
        title = number.group(2) if number else heading.text
        spans.append(
            Span(heading.level, number.group(1) if number else "", title, heading.line, end)
        )
    return spans


def _line(token: Token) -> int:
    """1-based first line of a block token (markdown-it maps are 0-based, end-exclusive)."""
    assert token.map is not None, f"block token {token.type} has no line map"
    return token.map[0] + 1


def _fence(token: Token, lines: list[str]) -> Fence:
    assert token.map is not None
    line, end = token.map[0] + 1, token.map[1]
    raw = lines[line - 1]
    words = token.info.split()
    closing = lines[end - 1].strip() if end > line and end <= len(lines) else ""
    marker = token.markup[:1]
    closed = len(closing) >= len(token.markup) and set(closing) == {marker}
    indent = len(raw) - len(raw.lstrip())
    return Fence(words[0] if words else "", token.content, line, end, indent, closed)


def _item(tokens: list[Token], index: int, lines: list[str]) -> Item | None:
    """The list item at `index` as an `Item`, if it opens with a paragraph."""
    if index + 2 >= len(tokens) or tokens[index + 1].type != "paragraph_open":
        return None
    paragraph = tokens[index + 1]
    text = tokens[index + 2].content
    line = _line(paragraph)
    raw = lines[line - 1]
    first = text.split("\n", 1)[0]
    start = raw.find(first) if first else -1
    if start < 0:
        bullet = _BULLET.match(raw)
        start = bullet.end() if bullet else 0
    return Item(text, line, start + 1)


def _table_rows(tokens: list[Token], index: int) -> list[list[str]]:
    """Body rows of the table opening at `index`, each a list of raw cell texts."""
    rows: list[list[str]] = []
    in_body = False
    for token in tokens[index + 1 :]:
        if token.type == "table_close":
            break
        if token.type == "tbody_open":
            in_body = True
        elif token.type == "tr_open" and in_body:
            rows.append([])
        elif token.type == "inline" and in_body and rows:
            rows[-1].append(token.content)
    return rows
