"""Assemble a module's source from its parts as one libcst tree: the header, the prelude blocks,
the expanded definitions (each with its `# dd-source:` marker, methods inside their class) and
the table of its check sites.

`assemble_module` is pure: it takes the trees as data and returns source text whose header (from
`generator.markers`, as the writer reads it) still carries the placeholder hash; the project
formats the text and then fills in the hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from generator import checkmodule, markers
from generator.checkmodule import Site


@dataclass
class Definition:
    """One emitted spec: its definition (the spec's expanded code block), where it comes from
    (for its `# dd-source:` marker) and, for a class, its emitted methods in document order."""

    code: cst.Module
    document: str
    line: int  # the spec heading's line in `document`
    number: str  # the heading's section number
    name: str  # `Class`, `Class.method` or `function`
    methods: list[Definition] = field(default_factory=list)

    @property
    def marker(self) -> str:
        return markers.source_marker(self.document, self.line, self.number, self.name)


def assemble_module(
    document: str,
    title: str,
    prelude: Sequence[cst.Module],
    definitions: Sequence[Definition],
    imports: Sequence[str] = (),
    width: int = 100,
    checks: tuple[str, Sequence[Site]] | None = None,
) -> str:
    """The module's source: the header naming `document` and `title` (wrapped to `width`), the
    prelude blocks in order, then `definitions`.

    `imports` are modules the generated checks need (`reprlib`); each is imported in the
    prelude unless it already is (the import block is sorted by the formatter). `checks` is
    the package whose check module the check calls use and their sites: the module imports
    the check module and ends with the sites' `_AT` table.
    """
    blocks = list(prelude)
    statements = [
        f"import {name}\n" for name in imports if not any(_imports(b, name) for b in blocks)
    ]
    if checks is not None and checks[1]:
        statements.append(checkmodule.import_line(checks[0]))
    if statements:
        first = blocks[0] if blocks else cst.Module(body=[])
        blocks[:1] = [_with_imports(first, statements)]
    tail = (
        [cst.parse_module(checkmodule.sites_table(document, checks[1]))]
        if checks and checks[1]
        else []
    )
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []  # comments that close a block, kept before what follows

    def add(block: cst.Module) -> None:
        nonlocal carried
        statements = list(block.body)
        lead = [*carried, *_trim_blank(block.header)]
        if statements:
            first = statements[0]
            leading = _spaced([*lead, *first.leading_lines], body)
            statements[0] = first.with_changes(leading_lines=leading)
            lead = []
        body.extend(statements)
        carried = [*lead, *_trim_blank(block.footer)]

    for block in blocks:
        add(block)
    for definition in definitions:
        node = _node(definition, blank_lines=2 if body else 0)
        body.append(node.with_changes(leading_lines=[*carried, *node.leading_lines]))
        carried = []
    for block in tail:
        add(block)
    lines = markers.header(document, title, width).splitlines()
    header = [cst.EmptyLine(indent=False, comment=cst.Comment(line)) for line in lines]
    return cst.Module(body=body, header=header, footer=carried).code


def _spaced(lines: list[cst.EmptyLine], before: list[cst.BaseStatement]) -> list[cst.EmptyLine]:
    """`lines` after two blank lines when a statement comes before (the formatter settles it)."""
    return [cst.EmptyLine(), cst.EmptyLine(), *lines] if before else lines


def _node(definition: Definition, blank_lines: int) -> cst.BaseCompoundStatement:
    """The definition with its marker, and its methods (one blank line apart) for a class."""
    node = _single_definition(definition.code)
    if definition.methods:
        assert isinstance(node, cst.ClassDef), "only classes have methods"
        node = _with_methods(node, [_node(m, blank_lines=1) for m in definition.methods])
    marker = [cst.EmptyLine() for _ in range(blank_lines)]
    marker.append(cst.EmptyLine(comment=cst.Comment(definition.marker)))
    return node.with_changes(leading_lines=[*marker, *node.leading_lines])


def _single_definition(module: cst.Module) -> cst.BaseCompoundStatement:
    """The module's one definition, carrying the comments written around it: those above it stay
    above it (after the dd-source marker), those below it close its body."""
    (node,) = module.body
    assert isinstance(node, (cst.FunctionDef, cst.ClassDef)), "the parser checked the shape"
    trailing = _trim_blank(module.footer)
    if trailing and isinstance(node.body, cst.IndentedBlock):
        node = node.with_changes(body=node.body.with_changes(footer=[*node.body.footer, *trailing]))
    return node.with_changes(leading_lines=_trim_blank([*module.header, *node.leading_lines]))


def _trim_blank(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """`lines` without the blank lines at either end (comments and inner blanks are kept)."""
    kept = list(lines)
    while kept and kept[0].comment is None:
        kept.pop(0)
    while kept and kept[-1].comment is None:
        kept.pop()
    return kept


def _with_methods(cls: cst.ClassDef, methods: Sequence[cst.BaseCompoundStatement]) -> cst.ClassDef:
    """`cls` with `methods` appended to its body (a one-line body becomes an indented block)."""
    body = cls.body
    if not isinstance(body, cst.IndentedBlock):  # `class A: """doc"""` on one line
        body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=list(body.body))])
    return cls.with_changes(body=body.with_changes(body=[*body.body, *methods]))


def _imports(block: cst.Module, name: str) -> bool:
    """True when the block has a top-level `import name` (so `name` is bound to the module)."""
    for stmt in block.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import) and any(
                    a.asname is None and a.evaluated_name == name for a in small.names
                ):
                    return True
    return False


def _with_imports(block: cst.Module, statements: list[str]) -> cst.Module:
    """`block` with the import `statements` after its docstring and `from __future__`
    imports, before anything else."""
    keep = 0
    for index, stmt in enumerate(block.body):
        first = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        docstring = index == 0 and isinstance(first, cst.Expr)
        future = isinstance(first, cst.ImportFrom) and _is_future(first)
        if not (docstring or future):
            break
        keep = index + 1
    added = [cst.parse_statement(statement) for statement in statements]
    return block.with_changes(body=[*block.body[:keep], *added, *block.body[keep:]])


def _is_future(node: cst.ImportFrom) -> bool:
    return isinstance(node.module, cst.Name) and node.module.value == "__future__"
