"""Where an annotation's checks go, decided without libcst where that is certain.

`match_comments` maps a spec's annotation comments to its annotations (DD055 when they do not
match). `surely_placed` says, from Python's own tokenizer and tree, that the expander
(`generator.expand`, on libcst's tree) will place every one of them: `dd check` then needs no
libcst tree at all for the spec. It answers True only in the plain case: the comment stands
between two logical lines, the next logical line is a statement of the innermost enclosing
function, that statement is not the function's docstring, and the statement before the comment
(if any inside that function) belongs to the same function. Anything else (a comment before an
`except` or `else` clause, after a nested class or function, at the end of a body, before a
docstring, inside an expression) is False, and the caller asks libcst, which decides exactly.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from generator import annotations as grammar
from generator.models import Annotation, DDError, Diagnostic, Loc
from generator.parser.code import python_tree


def dd055(ann: Annotation, message: str) -> Diagnostic:
    return Diagnostic(loc=ann.loc, code="DD055", message=f"{ann.pattern}: {message}")


def match_comments(
    code: str, first_line: int, annotations: list[Annotation]
) -> dict[int, Annotation]:
    """Map each annotation comment's code line to its annotation.

    Matching is by order, not by line, so that already-expanded code (where the comments moved
    down) still maps to the document's annotations; each comment must name its pattern.
    """
    lines = grammar.comment_lines(code)
    ordered = sorted(annotations, key=lambda a: a.loc.line)
    errors = []
    for number, ann in zip(lines, ordered, strict=False):
        text = code.splitlines()[number - 1].strip()
        parsed = grammar.parse(text)
        if parsed is None or parsed[:2] != (ann.kind, ann.pattern):
            errors.append(dd055(ann, f"code line {number} holds {text!r}, not this annotation"))
    for ann in ordered[len(lines) :]:
        errors.append(dd055(ann, "no annotation comment for it in the code"))
    for number in lines[len(ordered) :]:
        loc = Loc(path=ordered[0].loc.path if ordered else "<code>", line=first_line + number - 1)
        errors.append(Diagnostic(loc=loc, code="DD055", message="annotation comment not parsed"))
    if errors:
        raise DDError(errors)
    return dict(zip(lines, ordered, strict=True))


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class _Stmt:
    node: ast.stmt
    start: int  # first line, decorators included
    end: int
    depth: int  # nesting of statement blocks (deeper wins a tie)
    owner: ast.AST | None  # innermost enclosing def or class


def _statements(tree: ast.Module) -> list[_Stmt]:
    found: list[_Stmt] = []

    def walk(node: ast.AST, owner: ast.AST | None, depth: int) -> None:
        for name in _BODIES:
            for child in getattr(node, name, ()):
                if not isinstance(child, ast.stmt):  # an except handler or a match case
                    walk(child, owner, depth + 1)
                    continue
                decorators = getattr(child, "decorator_list", ())
                start = min([child.lineno, *(d.lineno for d in decorators)])
                end = child.end_lineno or child.lineno
                found.append(_Stmt(child, start, end, depth, owner))
                walk(child, child if isinstance(child, _DEFS) else owner, depth + 1)

    walk(tree, None, 0)
    return found


_CLAUSES = {"elif", "else", "except", "finally", "case"}  # headers of a statement's later parts


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr))


def _ends_block(stmts: list[_Stmt], source: list[str], line: int) -> bool:
    """True when the comment on `line`, which nothing follows, stands at the column of a block
    that the last statement before it closes (its own block or an enclosing one), and that
    block's statements belong to a function: it is the block's footer, where checks can run."""
    before = [s for s in stmts if s.end < line]
    if not before:
        return False
    last = max(before, key=lambda s: (s.end, s.depth))
    comment = source[line - 1]
    column = len(comment) - len(comment.lstrip())
    closed = [s for s in stmts if s.start <= last.start and s.end >= last.end]
    for stmt in sorted(closed, key=lambda s: -s.depth):  # `last`, then what encloses it
        text = source[stmt.start - 1]
        indent = len(text) - len(text.lstrip())
        if stmt.node.col_offset == indent == column:  # it starts its line, at the column
            return isinstance(stmt.owner, _FUNCS)
    return False


def surely_placed(code: str, lines: list[int]) -> bool:
    """True when the expander certainly places an annotation comment on each of `lines` (code
    lines, 1-based): see the module docstring. False means "ask libcst", not "misplaced"."""
    try:
        tree = python_tree(code)
    except (SyntaxError, ValueError):
        return False
    next_line = {c.line: (c.next_line, c.next_token) for c in grammar.scan(code)[0]}
    stmts = _statements(tree)
    source = code.splitlines()
    for line in lines:
        following, token = next_line.get(line, (None, ""))
        if following is None:  # inside an expression
            return False
        if not following:
            if not _ends_block(stmts, source, line):
                return False
            continue
        if token in _CLAUSES:
            return False
        here = [s for s in stmts if s.start == following]
        if not here:  # between a decorator and its definition
            return False
        nxt = min(here, key=lambda s: s.depth)
        owner = nxt.owner
        if not isinstance(owner, _FUNCS):
            return False
        if nxt.node is owner.body[0] and _is_docstring(nxt.node):
            return False
        before = [s for s in stmts if s.end < line]
        if before:
            last = max(before, key=lambda s: (s.end, s.depth))
            if last.owner is not owner and last.end >= owner.lineno:
                return False
    return True
