"""Which statements of generated code are expanded checks (the statements that follow a
`# VAL:` / `# AST:` comment): mutants never change them, and `dd adopt` keeps them apart from
hand edits.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

import libcst as cst

from generator import annotations as grammar
from generator.models import Annotation, DDError, Loc


def _annotation_of(line: cst.EmptyLine) -> Annotation | None:
    """The `# VAL:` / `# AST:` annotation written on a comment line, or None."""
    if line.comment is None:
        return None
    parsed = grammar.parse(line.comment.value.strip())
    if parsed is None:
        return None
    kind, pattern, args = parsed
    if kind not in ("VAL", "AST"):
        return None
    return Annotation(kind=kind, pattern=pattern, args=args, loc=Loc(path="<generated>", line=1))


_CHECKISH = re.compile(r"\b_dd_\w+|\b_?checks?\.\w+\(|\bat=")


def check_length(
    ann: Annotation,
    following: Sequence[cst.BaseStatement],
    module: cst.Module,
    render: Callable[[Annotation], str] | None,
) -> int:
    """How many of `following` (the statements after an annotation comment in generated code)
    are the annotation's expansion.

    With `render` (the pattern library's renderer) the expansion's statement count is exact; the
    generated statements were formatted, which never changes how many there are. Without it (or
    when the annotation cannot be rendered) the statements that name the pattern, a `_dd_`
    helper name or a generated check call are taken.
    """
    if render is not None:
        try:
            return len(ast.parse(render(ann)).body)
        except (DDError, SyntaxError):
            pass
    count = 0
    for stmt in following:
        code = module.code_for_node(stmt.with_changes(leading_lines=()))
        if ann.pattern in code or _CHECKISH.search(code):
            count += 1
        else:
            break
    return count


def check_statements(
    module: cst.Module, render: Callable[[Annotation], str] | None = None
) -> dict[int, Annotation]:
    """`id()` of every statement of `module` that belongs to an expanded check, mapped to the
    annotation it expands. Only statement blocks of functions hold checks."""
    found: dict[int, Annotation] = {}

    class Visitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.scopes: list[cst.CSTNode] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scopes.append(node)

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            self.scopes.pop()

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.scopes.append(node)

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            self.scopes.pop()

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            if not self.scopes or not isinstance(self.scopes[-1], cst.FunctionDef):
                return
            body = list(node.body)
            i = 0
            while i < len(body):
                anns = [a for a in map(_annotation_of, body[i].leading_lines) if a is not None]
                if not anns:
                    i += 1
                    continue
                n = 0
                for ann in anns:
                    n += check_length(ann, body[i + n :], module, render)
                for stmt in body[i : i + n]:
                    found[id(stmt)] = anns[-1]
                i += max(n, 1)

    module.visit(Visitor())
    return found
