"""The annotation grammar (`# VAL: PATTERN_ID(args)` / `# AST: PATTERN_ID(args)`), shared by the
parser, which reads annotations out of a spec's code, and the expander, which finds the comment
nodes to insert the checks after.

Anything starting `# VAL`/`# AST` not followed by a letter or digit must be a well-formed
annotation, so `# VAL_INT_RANGE(x)` (missing `VAL:`) is an error while `# VALIDATE ...` is prose.
Only real comments count: text inside strings and docstrings is never an annotation.
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

_START = re.compile(r"#\s*(VAL|AST)(?![A-Za-z0-9])")
_FULL = re.compile(r"#\s*(VAL|AST):\s*([A-Z][A-Z0-9_]*)\((.*)\)\s*$")


@dataclass(frozen=True)
class Comment:
    """A comment of a code block: code line (1-based), column (0-based), text, and whether it is
    alone on its line. A comment between two logical lines knows the next one: the line and the
    text of its first token (`next_line` 0: nothing follows); one inside a logical line (within
    brackets) has `next_line` None."""

    line: int
    col: int
    text: str
    own_line: bool
    next_line: int | None = None
    next_token: str = ""


def starts_like_annotation(text: str) -> str | None:
    """`VAL` or `AST` when the comment `text` must be an annotation, else None."""
    match = _START.match(text)
    return match.group(1) if match else None


def parse(text: str) -> tuple[str, str, str] | None:
    """(kind, pattern ID, raw arguments) of a well-formed annotation comment, else None."""
    match = _FULL.match(text.strip())
    return (match.group(1), match.group(2), match.group(3)) if match else None


@functools.lru_cache(maxsize=4096)
def scan(code: str) -> tuple[tuple[Comment, ...], int | None]:
    """Every comment of `code` in order, and the line of the `:` that ends the first `def`'s
    signature (None when `code` defines no function at its top level).

    `code` must be valid Python (the caller parsed it). One pass of the tokenizer, skipped when
    no text of `code` starts like an annotation (the comments are then of no interest: []).
    """
    if _START.search(code) is None:
        return (), None
    comments: list[Comment] = []
    header_end: int | None = None
    depth = 0
    in_def = False
    waiting: list[int] = []  # comments between logical lines, before the next one starts
    boundary = True  # at the start, or after NEWLINE / INDENT / DEDENT
    for tok in _tokens(code):
        if tok.type == tokenize.COMMENT:
            own_line = not tok.line[: tok.start[1]].strip()
            comments.append(Comment(tok.start[0], tok.start[1], tok.string.strip(), own_line))
            if boundary:
                waiting.append(len(comments) - 1)
            continue
        if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            boundary = True
            if tok.type == tokenize.ENDMARKER:
                _follow(comments, waiting, 0, "")
            continue
        if tok.type == tokenize.NL:
            continue
        if boundary:
            _follow(comments, waiting, tok.start[0], tok.string)
            boundary = False
        if header_end is not None or tok.type not in (tokenize.NAME, tokenize.OP):
            continue
        elif tok.string == "def" and depth == 0:
            in_def = True
        elif tok.string in ("(", "[", "{"):
            depth += 1
        elif tok.string in (")", "]", "}"):
            depth -= 1
        elif tok.string == ":" and depth == 0 and in_def:
            header_end = tok.start[0]
    return tuple(comments), header_end


def _follow(comments: list[Comment], waiting: list[int], line: int, token: str) -> None:
    """The comments in `waiting` are followed by the logical line starting `token` on `line`."""
    for i in waiting:
        comments[i] = replace(comments[i], next_line=line, next_token=token)
    waiting.clear()


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    """The tokens of `code`, as far as the tokenizer gets (it is stricter than libcst in rare
    corners; what it cannot read holds no annotation dd would find)."""
    found: list[tokenize.TokenInfo] = []
    try:
        found.extend(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def comment_lines(code: str) -> list[int]:
    """Code lines (1-based, in order) of own-line comments that start like an annotation."""
    comments, _ = scan(code)
    return [c.line for c in comments if c.own_line and starts_like_annotation(c.text)]


_LEAF_TYPES: dict[type, bool] = {}  # libcst node type -> whether `comment_nodes` skips inside


def comment_nodes(module: cst.Module, lines: list[int]) -> dict[int, int]:
    """id(EmptyLine) -> code line for the own-line annotation comments of `module`.

    libcst visits whitespace in source order, so the k-th annotation comment node is the one on
    the k-th line of `lines` (from `comment_lines`). Should the counts ever disagree, libcst's
    position metadata decides (exact, but several times slower).
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    _leaves = (cst.BaseExpression, cst.Parameters, cst.Decorator, cst.Annotation, cst.Arg)

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[cst.EmptyLine] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            leaf = _LEAF_TYPES.get(type(node))
            if leaf is None:  # an isinstance over ABCs is slow: decided once per node type
                leaf = _LEAF_TYPES[type(node)] = isinstance(node, _leaves)
            if leaf:  # (a comment inside them is not placeable anyway)
                return False
            return super().on_visit(node)

        def visit_EmptyLine(self, node: cst.EmptyLine) -> None:
            if node.comment is not None and starts_like_annotation(node.comment.value):
                self.found.append(node)

    visitor = Collect()
    module.visit(visitor)
    if len(visitor.found) == len(lines):
        return {id(node): line for node, line in zip(visitor.found, lines, strict=True)}
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {
        id(node): positions[node].start.line
        for node in visitor.found
        if positions[node].start.line in lines
    }
