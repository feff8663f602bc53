"""The ```python blocks of Section 5: syntax (DD031), indentation (DD038), the shape of a spec's
definition (DD032-DD035), preludes (DD037) and the annotations they hold (DD054/DD055).

The checks read Python's own tree of a block (Python decides what valid code is, and its parser
is fast). The libcst tree that expansion and assembly work on is made once, on first use
(`CodeBlock.tree`), and shared by both: a spec's code is never re-parsed from generated text.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize

from generator import annotations
from generator.markdown import Fence
from generator.models import Annotation, CodeBlock, SpecKind
from generator.parser._report import Report


class _Block:
    """One fence being checked: its text, document position and Python's tree of it."""

    def __init__(self, r: Report, fence: Fence) -> None:
        self.r = r
        self.fence = fence
        self.block = CodeBlock(
            code=fence.code,
            info=fence.info,
            loc=r.loc(fence.line + 1, fence.indent + 1),
        )

    def error(self, code: str, line: int, message: str, col: int = 0) -> None:
        """A diagnostic at code line `line` (1-based) and code column `col` (0-based)."""
        self.r.error(code, self.fence.line + line, message, self.fence.indent + col + 1)

    def parse(self, quiet: bool = False) -> ast.Module | None:
        """Python's tree of the block, or None after DD031 at the line Python names (nothing
        reported when `quiet`: a tab already explains it)."""
        try:
            return python_tree(self.fence.code)
        except SyntaxError as exc:
            if not quiet:
                count = max(self.fence.code.count("\n"), 1)
                line = min(max(exc.lineno or 1, 1), count)
                self.error("DD031", line, f"syntax error: {exc.msg}", (exc.offset or 1) - 1)
        except ValueError as exc:  # a NUL byte: the document is rejected before it gets here
            self.error("DD031", 1, f"syntax error: {exc}")
        return None

    def check_tabs(self) -> bool:
        """DD038 at the first line indented with a tab (generated code is indented with spaces,
        and a tab mixed into the 4-space class body would change what the code means)."""
        if "\t" not in self.fence.code:
            return False
        inside_strings: set[int] = set()
        try:
            for tok in tokenize.generate_tokens(io.StringIO(self.fence.code).readline):
                if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                    inside_strings.update(range(tok.start[0] + 1, tok.end[0] + 1))
        except (tokenize.TokenError, SyntaxError):
            pass  # mixed indentation: every line counts
        for number, line in enumerate(self.fence.code.split("\n"), start=1):
            indent = line[: len(line) - len(line.lstrip())]
            if "\t" in indent and number not in inside_strings:
                self.error("DD038", number, "indented with a tab: indent with spaces")
                return True
        return False


@functools.lru_cache(maxsize=4096)
def python_tree(code: str) -> ast.Module:
    """`ast.parse(code)`, once per text: the parser and `dd check`'s placement of annotations
    (generator/placement.py) read the same tree. Callers must not change it."""
    return ast.parse(code)


def check_spec(
    r: Report, fence: Fence, kind: SpecKind, name: str
) -> tuple[CodeBlock, list[Annotation]]:
    """The spec's code block and its annotations, after DD031-DD035, DD038, DD054/DD055."""
    b = _Block(r, fence)
    tree = b.parse(quiet=b.check_tabs())
    if tree is None:
        return b.block, []
    wanted = (ast.ClassDef,) if kind is SpecKind.cls else (ast.FunctionDef, ast.AsyncFunctionDef)
    what = "`class` statement" if kind is SpecKind.cls else "`def` or `async def`"
    if not tree.body or not isinstance(tree.body[0], wanted):
        line = _stmt_line(tree.body[0]) if tree.body else 1
        b.error("DD032", line, f"spec `{name}` must hold exactly one {what}")
        return b.block, []
    if len(tree.body) > 1:
        message = f"spec `{name}` must hold exactly one {what}; found a second statement"
        b.error("DD032", _stmt_line(tree.body[1]), message)
    node = tree.body[0]
    assert isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    short = name.rsplit(".", 1)[-1]
    if node.name != short:
        message = f"heading names `{short}` but the code defines `{node.name}`"
        b.error("DD034", node.lineno, message, node.col_offset)
    if ast.get_docstring(node, clean=False) is None:
        message = f"`{node.name}` has no docstring (its first statement must be a string)"
        b.error("DD033", node.lineno, message, node.col_offset)
    comments, header_end = annotations.scan(fence.code)
    if isinstance(node, ast.ClassDef):
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                message = f"class spec `{name}` defines `{inner.name}`; give each method its spec"
                b.error("DD035", inner.lineno, message, inner.col_offset)
        return b.block, _annotations(b, comments, body_after=None)
    return b.block, _annotations(b, comments, body_after=header_end or node.lineno)


def check_prelude(r: Report, fence: Fence) -> CodeBlock:
    """A module prelude: DD031, DD038, definitions (DD037) and annotations (DD055)."""
    b = _Block(r, fence)
    tree = b.parse(quiet=b.check_tabs())
    if tree is None:
        return b.block
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            message = f"module prelude defines `{node.name}`; give it its own spec"
            b.error("DD037", node.lineno, message, node.col_offset)
    _annotations(b, annotations.scan(fence.code)[0], body_after=None)
    return b.block


def _stmt_line(node: ast.stmt) -> int:
    """First code line of a statement, counting its decorators."""
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators or []])


def _annotations(
    b: _Block, comments: list[annotations.Comment], body_after: int | None
) -> list[Annotation]:
    """Annotation comments of a parsed block; only lines after `body_after` may hold them.

    `body_after` is the code line ending the function header, or None where no annotation is
    allowed (class specs, preludes): those are DD055. Malformed ones are DD054.
    """
    found: list[Annotation] = []
    for comment in comments:
        kind = annotations.starts_like_annotation(comment.text)
        if kind is None:
            continue
        parsed = annotations.parse(comment.text)
        if not comment.own_line:
            b.error(
                "DD055",
                comment.line,
                "an annotation must be a comment on its own line; after code it would be "
                "dropped (move it above the statement it guards)",
                comment.col,
            )
        elif parsed is None:
            message = f"malformed annotation: write `# {kind}: PATTERN_ID(args)` on one line"
            b.error("DD054", comment.line, message, comment.col)
        elif body_after is None or comment.line <= body_after:
            message = f"annotation `{parsed[1]}` is outside a function body"
            b.error("DD055", comment.line, message, comment.col)
        else:
            loc = b.r.loc(b.fence.line + comment.line, b.fence.indent + comment.col + 1)
            found.append(Annotation(kind=parsed[0], pattern=parsed[1], args=parsed[2], loc=loc))  # type: ignore[arg-type]
    return found
