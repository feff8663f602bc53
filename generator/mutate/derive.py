"""Deriving mutants: every small change (a flipped comparison or boolean, a negated condition,
an integer constant changed by one, a default returned instead of the value, a deleted
statement) of the code generated for a step's specs, as the files are on disk, outside
expanded checks, docstrings, type annotations and decorators; and a seeded sample of them.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from generator import markers
from generator.models import Annotation, Document, Spec, Step
from generator.mutate.expansions import check_statements


@dataclass(frozen=True)
class Mutant:
    """One mutant: a small change at one place of one generated file."""

    index: int  # position in the full, ordered list of the step's mutants
    path: str  # the generated file (project-relative)
    line: int  # line of the change in that file
    spec: str  # the spec whose code it changes (`GpuPool.shrink_sampler`)
    doc_line: int  # the document line of the changed code (or of the spec's heading)
    operator: str  # flip-compare, flip-bool, negate, int, return-default, delete
    before: str  # the changed code, one line
    after: str
    start: int  # character offsets of the replaced text in the file
    end: int
    replacement: str

    @property
    def key(self) -> str:
        """How a step lists it as accepted: `Spec: before -> after`."""
        return f"{self.spec}: {self.before} -> {self.after}"

    def describe(self, doc_path: str) -> str:
        return f"{doc_path}:{self.doc_line} {self.key}  ({self.path}:{self.line})"

    def apply(self, text: str) -> str:
        return text[: self.start] + self.replacement + text[self.end :]


_FLIP: dict[type[cst.BaseCompOp], Callable[[], cst.BaseCompOp]] = {
    cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
}

_DEFAULTS = (  # return annotation (leading name) -> the default a mutant returns instead
    ("bool", "False"),
    ("int", "0"),
    ("float", "0.0"),
    ("str", '""'),
    ("list", "[]"),
    ("dict", "{}"),
    ("tuple", "()"),
    ("set", "set()"),
    ("frozenset", "frozenset()"),
)

_DELETABLE = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Raise, cst.Del)


def _one_line(code: str, limit: int = 70) -> str:
    text = " ".join(code.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _default_for(returns: cst.Annotation | None, module: cst.Module) -> str:
    if returns is None:
        return "None"
    text = module.code_for_node(returns.annotation).strip().strip("\"'")
    head = re.split(r"[\[\s|]", text, maxsplit=1)[0].split(".")[-1]
    for name, default in _DEFAULTS:
        if head in (name, name.capitalize()) or (name == "list" and head == "Sequence"):
            return default
    return "None"


@dataclass
class _Owner:
    spec: Spec | None  # None: not one of the step's specs (nothing is mutated)
    func: cst.FunctionDef | None


class _Sites(cst.CSTVisitor):
    """Collects mutation sites (node, operator, replacement code) inside the wanted specs."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        module: cst.Module,
        wanted: dict[str, Spec],
        skip: set[int],
    ) -> None:
        super().__init__()
        self.module = module
        self.wanted = wanted
        self.skip = skip
        self.owners: list[_Owner] = [_Owner(None, None)]
        # (node, spec, operator, code before, code after, code to find in the document)
        self.sites: list[tuple[cst.CSTNode, Spec, str, str, str, str]] = []

    # ------------------------------------------------------------------ scopes
    def _marker_spec(self, node: cst.FunctionDef | cst.ClassDef) -> Spec | None | bool:
        for line in node.leading_lines:
            if line.comment is not None:
                name = markers.marker_symbol(line.comment.value)
                if name is not None:
                    return self.wanted.get(name)
        return False  # no marker: a nested definition, owned by its enclosing spec

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip or isinstance(node, (cst.Annotation, cst.Decorator)):
            return False
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            spec = self._marker_spec(node)
            owner = self.owners[-1].spec if spec is False else spec
            func = node if isinstance(node, cst.FunctionDef) else None
            self.owners.append(_Owner(owner, func))  # type: ignore[arg-type]
            self._skip_docstring(node.body)
            if isinstance(node, cst.FunctionDef):  # parameters' defaults may be mutated
                return True
            return True
        owner = self.owners[-1]
        if owner.spec is not None:
            self._collect(node, owner)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self.owners.pop()

    def _skip_docstring(self, body: cst.BaseSuite) -> None:
        if isinstance(body, cst.IndentedBlock) and body.body:
            first = body.body[0]
            if (
                isinstance(first, cst.SimpleStatementLine)
                and len(first.body) == 1
                and isinstance(first.body[0], cst.Expr)
                and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            ):
                self.skip.add(id(first))

    # ------------------------------------------------------------------ operators
    def _add(
        self,
        node: cst.CSTNode,
        owner: _Owner,
        operator: str,
        new: cst.CSTNode,
        locate: str | None = None,
    ) -> None:
        assert owner.spec is not None
        code = self.module.code_for_node
        before = code(node)
        self.sites.append((node, owner.spec, operator, before, code(new), locate or before))

    def _collect(self, node: cst.CSTNode, owner: _Owner) -> None:
        if isinstance(node, cst.Comparison):
            for i, target in enumerate(node.comparisons):
                flip = _FLIP.get(type(target.operator))
                if flip is None:
                    continue
                targets = list(node.comparisons)
                targets[i] = target.with_changes(operator=flip())
                self._add(node, owner, "flip-compare", node.with_changes(comparisons=targets))
        elif isinstance(node, cst.BooleanOperation):
            op = cst.Or() if isinstance(node.operator, cst.And) else cst.And()
            self._add(node, owner, "flip-bool", node.with_changes(operator=op))
        elif isinstance(node, cst.Name) and node.value in ("True", "False"):
            other = "False" if node.value == "True" else "True"
            self._add(node, owner, "flip-bool", node.with_changes(value=other))
        elif isinstance(node, (cst.If, cst.While, cst.IfExp)):
            test = node.test
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                negated: cst.BaseExpression = test.expression
            else:
                negated = cst.UnaryOperation(
                    operator=cst.Not(),
                    expression=test.with_changes(
                        lpar=[cst.LeftParen(), *test.lpar], rpar=[*test.rpar, cst.RightParen()]
                    ),
                )
            self._add(test, owner, "negate", negated)
        elif isinstance(node, cst.Integer):
            try:
                value = int(node.value.replace("_", ""), 0)
            except ValueError:
                return
            for new in (value + 1, value - 1):
                if new >= 0:
                    self._add(node, owner, "int", cst.Integer(str(new)))
        elif isinstance(node, cst.Return) and node.value is not None and owner.func is not None:
            default = _default_for(owner.func.returns, self.module)
            if self.module.code_for_node(node.value).strip() != default:
                new = cst.parse_expression(default)
                locate = "return " + self.module.code_for_node(node.value)
                self._add(node.value, owner, "return-default", new, locate)
        elif isinstance(node, cst.SimpleStatementLine) and owner.func is not None:
            small = node.body[0] if len(node.body) == 1 else None
            inert = isinstance(small, cst.Expr) and isinstance(
                small.value, (cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString)
            )  # `...` or a string: deleting it changes nothing
            if isinstance(small, _DELETABLE) and not inert:
                self._add(small, owner, "delete", cst.Pass())


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _doc_line(spec: Spec, *needles: str) -> int:
    """The document line of the spec's code that holds the first of `needles` found (the
    generated line of the change, else the changed code's first line), else the first code
    line (or the heading)."""
    if spec.code is None:
        return spec.loc.line
    code = spec.code.code.splitlines()
    for changed in needles:
        needle = changed.strip().splitlines()[0].strip() if changed.strip() else ""
        for i, line in enumerate(code):
            if needle and needle in line:
                return spec.code.loc.line + i
    return spec.code.loc.line


def file_mutants(
    path: str,
    text: str,
    wanted: dict[str, Spec],
    render: Callable[[Annotation], str] | None = None,
    start_index: int = 0,
) -> list[Mutant]:
    """Every mutant of the generated file `text` inside the specs of `wanted` (by spec name, as
    the `# dd-source:` markers write it), in file order."""
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    skip = set(check_statements(module, render))
    sites = _Sites(module, wanted, skip)
    wrapper.visit(sites)
    positions = wrapper.resolve(PositionProvider)
    offsets = _line_offsets(text)
    lines = text.splitlines()
    original = ast.dump(ast.parse(text))
    mutants: list[Mutant] = []
    seen: set[tuple[int, int, str]] = set()
    for node, spec, operator, before, after, locate in sites.sites:
        pos = positions[node]
        start = offsets[pos.start.line - 1] + pos.start.column
        end = offsets[pos.end.line - 1] + pos.end.column
        if text[start:end] != before or (start, end, after) in seen:
            continue  # a position that does not hold the node's code: never guess
        seen.add((start, end, after))
        mutant = Mutant(
            index=start_index + len(mutants),
            path=path,
            line=pos.start.line,
            spec=spec.name,
            doc_line=_doc_line(spec, lines[pos.start.line - 1].strip(), locate),
            operator=operator,
            before=_one_line(before),
            after=_one_line(after),
            start=start,
            end=end,
            replacement=after,
        )
        try:
            changed = ast.dump(ast.parse(mutant.apply(text)))
        except SyntaxError:
            continue
        if changed != original:
            mutants.append(mutant)
    return mutants


def step_specs(project: object, doc: Document, step: Step) -> dict[str, Spec]:
    """The step's specs by name (`GpuPool.shrink_sampler`)."""
    resolve = project.resolve  # type: ignore[attr-defined]
    found: dict[str, Spec] = {}
    for name in step.methods:
        spec = resolve(doc, name)
        if spec is not None:
            found[spec.name] = spec
    return found


def step_mutants(project: object, doc: Document, step: Step) -> list[Mutant]:
    """Every mutant of the code generated for `step`'s specs (the files as they are on disk)."""
    from generator.patterns import render_annotation

    config = project.config  # type: ignore[attr-defined]
    library = project.library  # type: ignore[attr-defined]
    specs = step_specs(project, doc, step)

    def render(ann: Annotation) -> str:
        return render_annotation(ann, library, "mutant")

    mutants: list[Mutant] = []
    for rel in project.module_files(doc, step.methods):  # type: ignore[attr-defined]
        path = config.root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if not markers.is_generated(text):
            continue
        mutants += file_mutants(rel, text, specs, render, start_index=len(mutants))
    return mutants


def sample(mutants: list[Mutant], budget: int | None, seed: int) -> list[Mutant]:
    """A seeded sample of `budget` mutants (all when `budget` is None or not smaller), in order."""
    if budget is None or budget >= len(mutants):
        return list(mutants)
    picked = random.Random(seed).sample(range(len(mutants)), budget)
    return [mutants[i] for i in sorted(picked)]
