"""Expand a spec's `# VAL:` / `# AST:` annotations into statements, on its libcst tree.

The tree is the one the parser made (`CodeBlock.tree`); the result is a tree too, which the
assembler places into its module. Each annotation comment stays where it is and the rendered
statements are inserted right after it; everything else keeps its exact bytes. Expansion is
idempotent: when the statements right after a comment already equal its rendering, nothing is
inserted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from generator import annotations as grammar
from generator.checkmodule import Site
from generator.models import Annotation, DDError, Diagnostic, Spec
from generator.patterns import PatternLibrary, render
from generator.placement import dd055, match_comments

_INDENT_UNIT = 4  # rendered pattern code is indented with 4 spaces
_PLACEHOLDER = cst.SimpleStatementLine(body=[cst.Pass()])  # a check not built (`build=False`)


@dataclass
class Needs:
    """What a spec's expanded checks need from their module: `reprlib` (inline template
    checks), the check module and a site in the `_AT` table per check call."""

    reprlib: bool = False
    sites: list[Site] = field(default_factory=list)

    def add(self, other: Needs) -> None:
        self.reprlib = self.reprlib or other.reprlib
        self.sites += other.sites


def _reindent(source: str, indent: str, newline: str) -> str:
    r"""Rendered source (4-space indents, `\n`) in the module's indent and newline style."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip(" ")
        depth, rest = divmod(len(line) - len(stripped), _INDENT_UNIT)
        lines.append(indent * depth + " " * rest + stripped)
    return "".join(line + newline for line in lines)


def _statements(source: str, module: cst.Module) -> list[cst.BaseStatement]:
    """Rendered statements parsed in `module`'s indentation and newline style."""
    source = _reindent(source, module.default_indent, module.default_newline)
    parsed = cst.parse_module(source, config=module.config_for_parsing)
    return [stmt.with_changes(leading_lines=()) for stmt in parsed.body]


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


# Nodes below which no annotation can be expanded (a simple statement line, an expression, the
# parts of a definition's header): the expander does not walk into them.
_LEAVES = (
    cst.SimpleStatementLine,
    cst.BaseExpression,
    cst.Parameters,
    cst.Decorator,
    cst.Annotation,
    cst.Arg,
)


_LEAF_TYPES: dict[type, bool] = {}


class _Expander(cst.CSTTransformer):
    """Inserts rendered statements after annotation comments in function bodies.

    `rendered` maps a code line (1-based) to the statements of the annotation on that line.
    Lines placed (or found already expanded) are collected in `placed`; annotations sitting
    before a function's docstring are collected in `before_docstring`.
    """

    def __init__(
        self,
        module: cst.Module,
        comment_lines: dict[int, int],
        rendered: dict[int, list[cst.BaseStatement]],
    ) -> None:
        super().__init__()
        self.module = module
        self.comment_lines = comment_lines  # id(EmptyLine) -> code line, annotation comments only
        self.rendered = rendered
        self.placed: set[int] = set()
        self.before_docstring: set[int] = set()
        self._scopes: list[cst.CSTNode] = []  # enclosing FunctionDef / ClassDef nodes

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Statements hold no block to expand below their own line: their parts are skipped."""
        leaf = _LEAF_TYPES.get(type(node))
        if leaf is None:  # an isinstance over ABCs is slow: decided once per node type
            leaf = _LEAF_TYPES[type(node)] = isinstance(node, _LEAVES)
        if leaf:
            return False
        return super().on_visit(node)

    # scope tracking: only blocks whose innermost enclosing definition is a def are expanded
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(node)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._scopes.pop()
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append(node)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        self._scopes.pop()
        return updated_node

    def _annotation_line(self, line: cst.EmptyLine) -> int | None:
        """The code line of `line` when it is an annotation comment to expand, else None."""
        number = self.comment_lines.get(id(line))
        return number if number in self.rendered else None

    def _code(self, stmts: Sequence[cst.BaseStatement]) -> list[str]:
        return [self.module.code_for_node(stmt) for stmt in stmts]

    def _already_expanded(self, number: int, following: Sequence[cst.BaseStatement]) -> bool:
        """True when `following` (first one without leading lines) starts with the rendering."""
        want = self.rendered[number]
        if len(following) < len(want):
            return False
        head = [following[0].with_changes(leading_lines=()), *following[1 : len(want)]]
        return self._code(head) == self._code(want)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        scope = self._scopes[-1] if self._scopes else None
        if not isinstance(scope, cst.FunctionDef):
            return updated_node
        body: list[cst.BaseStatement] = []
        for index, original in enumerate(original_node.body):
            docstring_next = scope.body is original_node and index == 0
            body += self._expand_before(original, updated_node.body[index:], docstring_next)
        footer: list[cst.EmptyLine] = []
        for orig_line, line in zip(original_node.footer, updated_node.footer, strict=True):
            footer.append(line)
            number = self._annotation_line(orig_line)
            if number is not None:
                self.placed.add(number)
                body += self._insert(number, footer)
                footer = []
        return updated_node.with_changes(body=body, footer=footer)

    def _expand_before(
        self,
        original: cst.BaseStatement,
        following: Sequence[cst.BaseStatement],
        docstring_next: bool,
    ) -> list[cst.BaseStatement]:
        """`following[0]` preceded by the renderings of the annotations in its leading lines."""
        stmt = following[0]
        out: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []
        last = len(original.leading_lines) - 1
        pairs = zip(original.leading_lines, stmt.leading_lines, strict=True)
        for i, (orig_line, line) in enumerate(pairs):
            pending.append(line)
            number = self._annotation_line(orig_line)
            if number is None:
                continue
            if docstring_next and _is_docstring(stmt):
                self.before_docstring.add(number)
                continue
            self.placed.add(number)
            if i == last and self._already_expanded(number, following):
                continue
            out += self._insert(number, pending)
            pending = []
        return [*out, stmt.with_changes(leading_lines=pending)]

    def _insert(self, number: int, leading: list[cst.EmptyLine]) -> list[cst.BaseStatement]:
        first, *rest = self.rendered[number]
        return [first.with_changes(leading_lines=leading), *rest]


def expand_tree(
    module: cst.Module,
    code: str,
    first_line: int,
    annotations: list[Annotation],
    lib: PatternLibrary,
    symbol: str,
    build: bool = True,
) -> tuple[cst.Module, Needs]:
    """`module` (parsed from `code`) with every annotation's statements inserted after its
    comment, and what the inserted checks need from the module (`Needs`).

    `first_line` is the document line of the code's first line. The annotations (as parsed from
    the document) are matched to the code's annotation comments in order, so expanding
    already-expanded code changes nothing. Raises DDError: the annotations' own diagnostics
    (DD050-DD053, DD091), or DD055 for an annotation whose comment is not an own-line comment
    inside a function body, after the docstring, where statements can follow. Everything else
    keeps its exact bytes. Without `build` only the checks are made (what `dd check` needs):
    the rendered statements are not parsed, and the tree returned holds placeholders.
    """
    needs = Needs()
    if not annotations:
        return module, needs
    by_line = match_comments(code, first_line, annotations)
    rendered: dict[int, list[cst.BaseStatement]] = {}
    errors: list[Diagnostic] = []
    for number, ann in by_line.items():
        try:
            source, site = render(ann, lib, symbol)
        except DDError as exc:
            errors += exc.diagnostics
            continue
        if site is None:
            needs.reprlib = needs.reprlib or "reprlib." in source
        else:
            needs.sites.append(site)
        rendered[number] = _statements(source, module) if build else [_PLACEHOLDER]
    if errors:
        raise DDError(errors)
    expander = _Expander(module, grammar.comment_nodes(module, list(by_line)), rendered)
    expanded = module.visit(expander)
    for number, ann in by_line.items():
        if number in expander.before_docstring:
            errors.append(dd055(ann, "an annotation may not precede the docstring"))
        elif number not in expander.placed:
            errors.append(
                dd055(
                    ann,
                    "annotation is not an own-line comment in a function body"
                    " (a statement must be able to follow it: not inside an expression,"
                    " a nested class or after the definition)",
                )
            )
    if errors:
        raise DDError(errors)
    return expanded, needs


def expand_spec(spec: Spec, lib: PatternLibrary, build: bool = True) -> tuple[cst.Module, Needs]:
    """The spec's parsed code block with its annotations expanded (`expand_tree`)."""
    assert spec.code is not None, "only specs with code are expanded"
    code = spec.code
    tree = code.tree()
    return expand_tree(tree, code.code, code.loc.line, spec.annotations, lib, spec.name, build)
