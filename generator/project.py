"""A dd project: configuration, parsed documents, pattern library, checks and generation.

This is the imperative shell around the pure stages (parse, check, expand, assemble). Every
stage reports problems as Diagnostics; generation refuses to run while any error remains, so a
document with an error never produces a single byte of output.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path, PurePosixPath

from generator import writer
from generator.assemble import assemble_module, package_marker
from generator.config import Config, load_config
from generator.expand import expand_spec
from generator.models import (
    DDError,
    Diagnostic,
    Document,
    Loc,
    ModuleSpec,
    Spec,
    SpecKind,
    StepStatus,
)
from generator.parser import parse_document
from generator.patterns import PatternLibrary, check_annotation
from generator.plan import check_revision_at_head, validate_plan

_EMITTING = {StepStatus.in_progress, StepStatus.done}


class Project:
    """Documents and patterns of one project root; construct with `Project.load()`."""

    def __init__(self, config: Config, documents: list[Document], parse_diagnostics: list[Diagnostic], library: PatternLibrary):
        self.config = config
        self.documents = documents
        self.library = library
        self._parse_diagnostics = parse_diagnostics
        self._expanded: dict[tuple[str, int], str] = {}  # (document, heading line) -> code
        self._fix_package_paths()

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, start: Path | None = None, docs: Iterable[Path] | None = None) -> Project:
        """Parse the configured documents plus `docs` (which may lie outside `[tool.dd] docs`).

        The configured documents are always loaded, so names in `deps:` and module paths resolve
        across the whole project even when only some documents are being checked. Raises
        DDError on config/pattern errors.
        """
        config = load_config(start)
        library = PatternLibrary.load(config.pattern_dirs())
        paths = sorted({*config.documents(), *(p.resolve() for p in docs or ())})
        documents: list[Document] = []
        diagnostics: list[Diagnostic] = []
        for path in paths:
            rel = config.rel(path)
            if not path.is_file():
                diagnostics.append(Diagnostic(loc=Loc(path=rel), code="DD001", message="no such document"))
                continue
            doc, diags = parse_document(path, rel)
            diagnostics.extend(diags)
            if doc is not None:
                documents.append(doc)
        return cls(config, documents, diagnostics, library)

    def document(self, path: str | Path) -> Document | None:
        """The loaded document at `path` (project-relative or absolute)."""
        rel = self.config.rel(Path(path)) if Path(path).is_absolute() else Path(path).as_posix()
        return next((d for d in self.documents if d.path == rel), None)

    def _fix_package_paths(self) -> None:
        """`a.b` lives in `a/b/__init__.py` when another module `a.b.c` exists (no `path:` field)."""
        names = {m.name for m in self.modules()}
        for module in self.modules():
            has_children = any(n.startswith(module.name + ".") for n in names)
            explicit = any(f.key == "path" for f in module.fields)
            if not explicit and (has_children or "." not in module.name):
                module.path = module.name.replace(".", "/") + "/__init__.py"

    def modules(self) -> list[ModuleSpec]:
        return [m for d in self.documents for m in d.modules]

    # ------------------------------------------------------------------ names

    @cached_property
    def _index(self) -> dict[str, list[tuple[Document, Spec]]]:
        """Lookup of every spec by `Name` and by `module:Name`."""
        index: dict[str, list[tuple[Document, Spec]]] = {}
        for doc in self.documents:
            for spec in doc.specs():
                index.setdefault(spec.name, []).append((doc, spec))
                index.setdefault(spec.qualname, []).append((doc, spec))
        return index

    def resolve(self, doc: Document, name: str) -> Spec | None:
        """Resolve a `deps:` name: this document first, then the project (must be unambiguous)."""
        hits = self._index.get(name, [])
        local = [s for d, s in hits if d.path == doc.path]
        if len(local) == 1:
            return local[0]
        if len(hits) == 1:
            return hits[0][1]
        return None

    # ------------------------------------------------------------------ checking

    def check(self) -> list[Diagnostic]:
        """Every diagnostic of the project, sorted by location, duplicates removed.

        A Project is a snapshot of the documents at load time, so this is computed once."""
        return list(self._diagnostics)

    @cached_property
    def _diagnostics(self) -> tuple[Diagnostic, ...]:
        diags = list(self._parse_diagnostics)
        diags += self._check_modules()
        for doc in self.documents:
            diags += self._check_names(doc)
            diags += self._check_deps(doc)
            for spec in doc.specs():
                found = [d for ann in spec.annotations for d in check_annotation(ann, self.library)]
                diags += found
                if not any(d.severity == "error" for d in found) and not self._has_parse_errors(spec):
                    diags += self._expansion_errors(spec)
            diags += self._check_plan(doc)
        unique = {(d.loc.path, d.loc.line, d.loc.col, d.code, d.message): d for d in diags}
        return tuple(sorted(unique.values(), key=lambda d: (d.loc.path, d.loc.line, d.loc.col, d.code)))

    def _has_parse_errors(self, spec: Spec) -> bool:
        """True when the parser already reported an error inside the spec's code block (its
        annotations are then incomplete, and expanding would only repeat the problem)."""
        if spec.code is None:
            return True
        first = spec.code.loc.line
        last = first + spec.code.code.count("\n")
        return any(
            d.severity == "error" and d.loc.path == spec.loc.path and first <= d.loc.line <= last
            for d in self._parse_diagnostics
        )

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.check() if d.severity == "error"]

    def _check_modules(self) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        seen_name: dict[str, ModuleSpec] = {}
        seen_path: dict[str, ModuleSpec] = {}
        for module in self.modules():
            for key, seen in ((module.name, seen_name), (module.path, seen_path)):
                first = seen.setdefault(key, module)
                if first is not module:
                    diags.append(
                        Diagnostic(loc=module.loc, code="DD021", message=f"module `{module.name}` ({module.path}) already declared at {first.loc}")
                    )
        return diags

    def _check_names(self, doc: Document) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        for module in doc.modules:
            seen: dict[str, Spec] = {}
            for spec in module.specs:
                first = seen.setdefault(spec.name, spec)
                if first is not spec:
                    diags.append(Diagnostic(loc=spec.loc, code="DD040", message=f"`{spec.name}` already specified at {first.loc}"))
        return diags

    def _check_deps(self, doc: Document) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        graph: dict[str, list[str]] = {}
        for spec in doc.specs():
            loc = spec.field("deps").loc if spec.field("deps") else spec.loc
            resolved: list[str] = []
            for name in spec.deps or []:
                target = self.resolve(doc, name)
                if target is None:
                    ambiguous = len(self._index.get(name, [])) > 1
                    why = "is ambiguous; write it as `module:Name`" if ambiguous else "names no spec in this project"
                    diags.append(Diagnostic(loc=loc, code="DD042", message=f"`deps:` entry `{name}` {why}"))
                else:
                    resolved.append(target.qualname)
            graph[spec.qualname] = resolved
        for cycle in _cycles(graph):
            spec = next(s for s in doc.specs() if s.qualname == cycle[0])
            path = " -> ".join(q.split(":", 1)[1] for q in [*cycle, cycle[0]])
            diags.append(Diagnostic(loc=spec.loc, code="DD043", message=f"cyclic `deps:`: {path}"))
        return diags

    def _check_plan(self, doc: Document) -> list[Diagnostic]:
        return validate_plan(doc, self.resolve) + check_revision_at_head(doc, self.config.root)

    # ------------------------------------------------------------------ generation

    @staticmethod
    def emitted(doc: Document, spec: Spec) -> bool:
        """Generation follows the plan: without steps everything, else IN_PROGRESS/DONE steps."""
        if not doc.steps:
            return True
        return any(step.status in _EMITTING and _lists(step.methods, spec) for step in doc.steps)

    def _expansion_errors(self, spec: Spec) -> list[Diagnostic]:
        """What only expansion finds: an annotation libcst cannot place (DD055), a template
        that renders badly (DD091). `dd check` reports them so that it fails whenever
        `dd expand` would."""
        if spec.code is None or not spec.annotations:
            return []
        try:
            self._expand_spec(spec)
        except DDError as exc:
            return exc.diagnostics
        return []

    def _expand_spec(self, spec: Spec) -> str:
        assert spec.code is not None, "checked specs always have code"
        key = (spec.loc.path, spec.loc.line)
        if key not in self._expanded:
            self._expanded[key] = expand_spec(spec, self.library)
        return self._expanded[key]

    def generate(self) -> dict[str, str]:
        """Every generated file (project-relative path -> content). Raises DDError on any error."""
        return dict(self._generated)

    @cached_property
    def _generated(self) -> dict[str, str]:
        errors = self.errors()
        if errors:
            raise DDError(errors)
        by_module_path: dict[str, str] = {}  # relative to the output root
        for doc in self.documents:
            for module in doc.modules:
                if module.specs and not any(self.emitted(doc, s) for s in module.specs):
                    continue
                text = assemble_module(doc, module, lambda s, d=doc: self.emitted(d, s), self._expand_spec)
                _check_generated(module, text)
                by_module_path[module.path] = text
        for module_path in list(by_module_path):
            parts = PurePosixPath(module_path).parts[:-1]
            for depth in range(1, len(parts) + 1):
                init = PurePosixPath(*parts[:depth], "__init__.py").as_posix()
                by_module_path.setdefault(init, package_marker())
        return dict(sorted((self._out(p), text) for p, text in by_module_path.items()))

    def _out(self, module_path: str) -> str:
        """The project-relative path (absolute when the output root lies outside the project) of
        a generated module. Joined lexically: a symlink on the way is never followed."""
        path = self.config.output_dir / module_path
        root = self.config.root.resolve()
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()

    def managed_roots(self) -> list[Path]:
        """Directories dd owns: each document's package directory under the output root."""
        return sorted({self.config.output_dir / d.front.package.split(".")[0] for d in self.documents})

    def expand(self, force: bool = False) -> list[str]:
        """Generate and write all-or-nothing; returns the project-relative paths changed."""
        changes = writer.plan_changes(self.config.root, self.generate(), self.managed_roots())
        writer.refuse_unsafe(changes, force)
        writer.apply(self.config.root, changes)
        return [c.path for c in changes]

    def pending_changes(self) -> list[writer.Change]:
        return writer.plan_changes(self.config.root, self.generate(), self.managed_roots())

    def document_files(self, doc: Document) -> list[str]:
        """Project-relative paths of every file generated from `doc` (any edit of the document,
        even its version in the headers, may change them)."""
        return sorted({self._out(m.path) for m in doc.modules})

    def module_files(self, doc: Document, spec_names: list[str]) -> list[str]:
        """Project-relative paths of the generated files that hold `spec_names` of `doc`."""
        paths = {self._out(m.path) for m in doc.modules if any(_lists(spec_names, s) for s in m.specs)}
        return sorted(paths)


def _lists(names: list[str], spec: Spec) -> bool:
    """True when `names` (as written in a step) include `spec`, short or `module:Name` form."""
    return spec.name in names or spec.qualname in names


def _check_generated(module: ModuleSpec, text: str) -> None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        raise DDError(
            [Diagnostic(loc=module.loc, code="DD095", message=f"generated {module.path} does not parse: {exc.msg} (line {exc.lineno})")]
        ) from None


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Each elementary cycle found by DFS (one report per strongly connected back edge)."""
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


__all__ = ["Project", "SpecKind"]
