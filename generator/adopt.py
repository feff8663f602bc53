"""`dd adopt PATH[:SYMBOL]`: lift a hand edit of generated code back into its design document.

A generated file stores the hash of what dd wrote, and every symbol carries a `# dd-source:`
marker naming its spec, so an edit can be traced to the spec it belongs to. Adopting it replaces
that spec's code block with the edited definition (signature, docstring and body), with every
expanded check collapsed back to its `# VAL:` / `# AST:` comment, adds a revision-history row,
and then proves the point: the document, expanded again, must give exactly the edited file, up
to the hash line and the document line numbers that trace code to the document (an adopted
block of another length moves the specs below it; those files are rewritten with the new
numbers). Otherwise nothing is changed.

Refusals (nothing written): the file was not edited, the edit touches an expanded check block
(change the annotation instead), lies outside any generated symbol, or the document changed too
since the file was generated (both sides edited).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from generator import markers, mutate
from generator.models import Annotation, Document, Spec, SpecKind, StepStatus
from generator.writer import atomic_write, edited_symbols


class AdoptError(Exception):
    """A refusal: the message says why; nothing was changed."""


@dataclass
class Adopted:
    path: str  # the generated file
    doc: str  # the document that now holds the edit
    symbols: list[str]
    steps: list[int] = field(default_factory=list)  # DONE steps holding them: re-verify


def _read(path: Path) -> str:
    with path.open(encoding="utf-8", newline="") as fh:
        return fh.read()


def _renderer(project: object):  # type: ignore[no-untyped-def]
    from generator.patterns import render_annotation

    library = project.library  # type: ignore[attr-defined]

    def render(ann: Annotation) -> str:
        return render_annotation(ann, library, "adopt")

    return render


def _check_lines(text: str, render) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """Every line of an expanded check in `text` (its annotation comment excluded), mapped to
    the line of that annotation comment."""
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    checks = mutate.check_statements(module, render)
    found: dict[int, int] = {}
    comment_line: dict[int, int] = {}
    for node, pos in positions.items():
        if id(node) in checks:
            start, end = pos.start.line, pos.end.line
            first = comment_line.setdefault(id(checks[id(node)]), start - 1)
            for line in range(start, end + 1):
                found[line] = first
    return found


def _edited_check(original: str, edited: str, render) -> tuple[int, int] | None:  # type: ignore[no-untyped-def]
    """(edited-file line, annotation line in the original) of the first change inside an
    expanded check block, or None."""
    checks = _check_lines(original, render)
    a, b = original.splitlines(), edited.splitlines()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        touched = range(i1 + 1, i2 + 1) if i2 > i1 else [i1] if i1 + 1 in checks else []
        for line in touched:
            if line in checks and not a[line - 1].startswith(markers.HASH_PREFIX):
                return j1 + 1 + max(0, line - 1 - i1), checks[line]
    return None


def _marker_of(node: cst.FunctionDef | cst.ClassDef) -> str | None:
    for line in node.leading_lines:
        if line.comment is not None:
            name = markers.marker_symbol(line.comment.value)
            if name is not None:
                return name
    return None


def _definitions(module: cst.Module) -> dict[str, cst.FunctionDef | cst.ClassDef]:
    """Every generated definition of `module` by the spec name its marker gives."""
    found: dict[str, cst.FunctionDef | cst.ClassDef] = {}

    class Visitor(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            name = _marker_of(node)
            if name is not None:
                found[name] = node

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            name = _marker_of(node)
            if name is not None:
                found[name] = node

    module.visit(Visitor())
    return found


class _Collapse(cst.CSTTransformer):
    """Removes the statements in `drop` (expanded checks); their leading lines (the annotation
    comment) go to the statement that follows, or close the block."""

    def __init__(self, drop: set[int]):
        super().__init__()
        self.drop = drop

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for orig, stmt in zip(original_node.body, updated_node.body, strict=True):
            if id(orig) in self.drop:
                carried += list(stmt.leading_lines)
                continue
            if carried:
                stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
                carried = []
            body.append(stmt)
        if not body:  # only checks: keep the block valid (cannot happen in a parsed spec)
            return updated_node
        return updated_node.with_changes(body=body, footer=[*carried, *updated_node.footer])


def _dedent_docstring(
    node: cst.FunctionDef | cst.ClassDef, width: int
) -> cst.FunctionDef | cst.ClassDef:
    """The definition with its docstring's continuation lines `width` columns further left (the
    formatter indents a docstring with its definition; the spec's block is at column 0)."""
    body = node.body
    if width == 0 or not isinstance(body, cst.IndentedBlock) or not body.body:
        return node
    first = body.body[0]
    if not (
        isinstance(first, cst.SimpleStatementLine)
        and len(first.body) == 1
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, cst.SimpleString)
    ):
        return node
    string = first.body[0].value
    head, *rest = string.value.split("\n")
    pad = " " * width
    rest = [line[width:] if line.startswith(pad) else line for line in rest]
    new = string.with_changes(value="\n".join([head, *rest]))
    stmt = first.with_changes(body=[first.body[0].with_changes(value=new)])
    return node.with_changes(body=body.with_changes(body=[stmt, *body.body[1:]]))


def _spec_code(
    node: cst.FunctionDef | cst.ClassDef, module: cst.Module, drop: set[int], depth: int
) -> str:
    """The spec's code block for a generated definition: no marker, checks collapsed, a class
    without its generated methods, at column 0."""
    leading = list(node.leading_lines)
    while leading and (
        leading[0].comment is None or markers.marker_symbol(leading[0].comment.value)
    ):
        leading.pop(0)
    node = node.with_changes(leading_lines=leading)
    if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
        kept = [
            s
            for s in node.body.body
            if not (isinstance(s, (cst.FunctionDef, cst.ClassDef)) and _marker_of(s))
        ]
        node = node.with_changes(body=node.body.with_changes(body=kept))
    node = node.visit(_Collapse(drop))  # type: ignore[assignment]
    node = _dedent_docstring(node, len(module.default_indent) * depth)
    code = cst.Module(
        body=[node], default_indent=module.default_indent, default_newline=module.default_newline
    ).code
    return code.strip("\n") + "\n"


def _replace_block(doc_text: str, spec: Spec, code: str) -> str:
    """`doc_text` with `spec`'s code block holding `code` (the fence lines untouched)."""
    assert spec.code is not None
    nl = "\r\n" if "\r\n" in doc_text else "\n"
    lines = doc_text.split(nl)
    start = spec.code.loc.line - 1
    old = spec.code.code.rstrip("\n").split("\n")
    if lines[start : start + len(old)] != old:
        raise AdoptError(
            f"{spec.loc.path}:{spec.code.loc.line}: the code block of {spec.name} is indented "
            "or was changed on disk; edit it by hand"
        )
    lines[start : start + len(old)] = code.rstrip("\n").split("\n")
    return nl.join(lines)


def _add_revision(doc_text: str, doc: Document, row: str) -> str:
    """`row` appended to the revision table of Section 7 (after its last row)."""
    section = doc.section(7)
    if section is None:
        raise AdoptError(f"{doc.path} has no Section 7 for the revision row")
    nl = "\r\n" if "\r\n" in doc_text else "\n"
    lines = doc_text.split(nl)
    last = None
    for i in range(section.loc.line, min(section.end_line, len(lines))):
        if lines[i].lstrip().startswith("|"):
            last = i
        elif last is not None:
            break
    if last is None:
        raise AdoptError(f"{doc.path}:{section.loc.line}: Section 7 has no revision table")
    lines.insert(last + 1, row)
    return nl.join(lines)


def _traced(doc_path: str):  # type: ignore[no-untyped-def]
    """Generated text without what merely traces it to its document: the hash line and the
    document line numbers (in `# dd-source:` markers, check messages, and the sites of generated
    check calls with their table), which move when an adopted block changes length."""
    numbers = re.compile(re.escape(doc_path) + r":\d+")
    sites = re.compile(r"\b_AT\[\d+\]")  # a generated check call's site: its document line
    site_keys = re.compile(r"^(\s+)\d+:", re.MULTILINE)  # the keys of the module's site table

    def normal(text: str) -> str:
        kept = [
            line
            for line in text.splitlines(keepends=True)
            if not line.startswith(markers.HASH_PREFIX)
        ]
        text = sites.sub("_AT[N]", numbers.sub(f"{doc_path}:N", "".join(kept)))
        head, table, tail = text.partition("\n_AT = ")
        return head + table + site_keys.sub(r"\1N:", tail) if table else text

    return normal


def adopt(project: object, target: str, symbol: str | None, today: str) -> Adopted:
    """Adopt the hand edit of `target` (a generated file; `symbol`: one of its specs, else every
    edited one) into its document. Raises AdoptError (nothing changed) when it cannot."""
    from generator.project import Project

    assert isinstance(project, Project)
    config = project.config
    path = (Path.cwd() / target).resolve()
    rel = config.rel(path)
    if not path.is_file():
        raise AdoptError(f"{target}: no such file")
    edited = _read(path).replace("\r\n", "\n")
    if not markers.is_generated(edited):
        raise AdoptError(f"{rel}: not a file generated by dd")
    if markers.hash_matches(edited):
        raise AdoptError(
            f"{rel}: not edited by hand (its content matches its hash); nothing to adopt"
        )
    doc_path = markers.source_document(edited)
    doc = project.document(doc_path) if doc_path else None
    if doc is None:
        raise AdoptError(f"{rel}: its document {doc_path} is not a document of this project")
    generated = project.generate().get(rel)
    if generated is None:
        raise AdoptError(f"{rel}: {doc.path} no longer generates it")
    changed = [s for s in edited_symbols(generated, edited) if s != "module header"]
    if markers.content_hash(generated) != markers.stored_hash(edited):
        raise AdoptError(
            f"both sides were edited: {doc.path} changed since {rel} was generated (expanding it "
            f"now gives other code), and {rel} was edited by hand (in "
            f"{', '.join(changed) or 'the module header'}); move one side's change into the "
            "other by hand, or discard the file's edit with `dd expand --force`"
        )
    render = _renderer(project)
    hit = _edited_check(generated, edited, render)
    if hit is not None:
        line, comment = hit
        annotation = generated.splitlines()[comment - 1].strip()
        raise AdoptError(
            f"{rel}:{line}: edited inside the expanded check of `{annotation}`; checks are "
            "generated from their annotation: change the annotation instead (in the document, "
            "or the comment here) and keep the expansion as generated"
        )
    edited_all = edited_symbols(generated, edited)
    if "module header" in edited_all:
        raise AdoptError(
            f"{rel}: edited outside any generated symbol (the header or the module prelude); "
            f"edit the module's prelude in {doc.path}"
        )
    if symbol is not None:
        if symbol not in edited_all:
            listed = ", ".join(edited_all) or "none"
            raise AdoptError(f"{rel}: {symbol} was not edited (edited: {listed})")
        wanted = [symbol]
    else:
        wanted = edited_all
    module = cst.parse_module(edited)
    definitions = _definitions(module)
    drop = set(mutate.check_statements(module, render))
    specs = {s.name: s for s in doc.specs()}
    doc_file = config.root / doc.path
    original_doc = _read(doc_file)
    # Section 7 comes after every code block: the row first, then the blocks from the bottom up,
    # so that each edit leaves the positions of the ones still to do as parsed
    row = (
        f"| {doc.front.version} | {today} | dd adopt: the hand edit of {', '.join(wanted)} in "
        f"{rel} moved into this document |"
    )
    text = _add_revision(original_doc, doc, row)

    def line_of(name: str) -> int:
        code = specs[name].code if name in specs else None
        return code.loc.line if code is not None else 0

    for name in sorted(wanted, key=line_of, reverse=True):
        spec = specs.get(name)
        node = definitions.get(name)
        if spec is None or spec.code is None or node is None:
            raise AdoptError(f"{rel}: {name} has no spec with code in {doc.path}")
        depth = 1 if spec.kind is SpecKind.method else 0
        text = _replace_block(text, spec, _spec_code(node, module, drop, depth))
    atomic_write(doc_file, text)
    try:
        fresh = Project.load(config.root)
        known = {(d.loc.path, d.code, d.message) for d in project.errors()}
        errors = [d for d in fresh.errors() if (d.loc.path, d.code, d.message) not in known]
        if errors:
            raise AdoptError(
                "the adopted document has errors, so nothing was changed:\n"
                + "\n".join(d.render() for d in errors[:10])
            )
        regenerated = fresh.generate()
        again = regenerated.get(rel, "")
        same = _traced(doc.path)
        if same(edited) != same(again):
            diff = "".join(
                difflib.unified_diff(
                    edited.splitlines(keepends=True),
                    again.splitlines(keepends=True),
                    f"{rel} (edited)",
                    f"{rel} (from the adopted document)",
                )
            )
            raise AdoptError(
                "expanding the adopted document does not give the edited file, so nothing was "
                f"changed:\n{diff}"
            )
        changes = fresh.pending_changes()
        others = [c.path for c in changes if same(c.old or "") != same(c.new or "")]
        if others:
            raise AdoptError(f"adopting would also change {', '.join(others)}; nothing was changed")
        # what is left to write differs from the disk in document line numbers only (the
        # adopted block's length moved the specs below it) and in the edited file's hash line
        for change in changes:
            if change.new is not None:
                atomic_write(config.root / change.path, change.new)
    except BaseException:
        atomic_write(doc_file, original_doc)
        raise
    steps = [
        s.number
        for s in doc.steps
        if s.status is StepStatus.done and any(m.split(":")[-1] in wanted for m in s.methods)
    ]
    return Adopted(rel, doc.path, wanted, steps)


def split_target(arg: str) -> tuple[str, str | None]:
    """`PATH[:SYMBOL]` (a Windows drive letter is not a symbol)."""
    head, sep, tail = arg.rpartition(":")
    if sep and head and tail and "/" not in tail and "\\" not in tail and len(head) > 1:
        return head, tail
    return arg, None
