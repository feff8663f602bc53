"""The pure middle of dd: documents and a pattern library in, generated files out.

`generate(documents, library, line_length)` returns every file dd generates for `documents`
(output-relative path -> text): each emitted module (expanded, assembled, formatted, hashed),
each package's check module and a package marker for each package directory without a module
spec. It reads no project file, writes none, keeps no cache and runs no git: `Project` loads and
indexes the documents and caches the results, `generator.writer` writes them. (The formatter is
ruff, run on temporary copies of the sources.)

Generation follows the plan: a document without steps emits everything, one with steps emits the
specs of its IN_PROGRESS and DONE steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from generator import checkmodule, markers
from generator.models import (
    CodeBlock,
    DDError,
    Diagnostic,
    Document,
    Loc,
    ModuleSpec,
    Spec,
    SpecKind,
    StepStatus,
)

if TYPE_CHECKING:
    import libcst as cst

    from generator.patterns import PatternLibrary

_EMITTING = {StepStatus.in_progress, StepStatus.done}


def emitted(doc: Document, spec: Spec) -> bool:
    """Generation follows the plan: without steps everything, else IN_PROGRESS/DONE steps."""
    if not doc.steps:
        return True
    return any(step.status in _EMITTING and lists(step.methods, spec) for step in doc.steps)


def lists(names: list[str], spec: Spec) -> bool:
    """True when `names` (as written in a step) include `spec`, short or `module:Name` form."""
    return spec.name in names or spec.qualname in names


def emitted_modules(doc: Document) -> list[ModuleSpec]:
    """The modules of `doc` with something to emit (a module without specs always has)."""
    return [m for m in doc.modules if not m.specs or any(emitted(doc, s) for s in m.specs)]


def top_package(doc: Document) -> str:
    return doc.front.package.split(".")[0]


def check_packages(documents: Iterable[Document]) -> dict[str, list[str]]:
    """Each top-level package that gets a check module (one with an emitted spec that has an
    annotation), with the IDs of the patterns its emitted annotations use."""
    used: dict[str, set[str]] = {}
    for doc in documents:
        for module in emitted_modules(doc):
            for spec in module.specs:
                if spec.annotations and (spec.kind is SpecKind.cls or emitted(doc, spec)):
                    ids = used.setdefault(top_package(doc), set())
                    ids.update(a.pattern for a in spec.annotations)
    return {package: sorted(ids) for package, ids in sorted(used.items())}


def planned_paths(documents: Sequence[Document]) -> dict[str, ModuleSpec | None]:
    """Output-relative path of every file generation writes: each emitted module (its spec),
    each package's check module and a package marker (None) for each package directory above
    a module without a module spec of its own."""
    by_path: dict[str, ModuleSpec | None] = {}
    for doc in documents:
        for module in emitted_modules(doc):
            by_path[module.path] = module
    for module_path in list(by_path):
        parts = PurePosixPath(module_path).parts[:-1]
        for depth in range(1, len(parts) + 1):
            by_path.setdefault(PurePosixPath(*parts[:depth], "__init__.py").as_posix(), None)
    for package in check_packages(documents):
        by_path.setdefault(checkmodule.path_in(package), None)
    return dict(sorted(by_path.items()))


def first_party(documents: Iterable[Document]) -> list[str]:
    """The documents' top-level packages (first-party imports for the formatter)."""
    return sorted({top_package(d) for d in documents})


def generate(
    documents: Sequence[Document],
    library: PatternLibrary,
    line_length: int = 100,
    only: Iterable[str] | None = None,
) -> dict[str, str]:
    """Every generated file of `documents` (output-relative path -> formatted, hashed text).

    `documents` are as `Project` loaded them (a package module's path resolved to its
    `__init__.py`). `only` (document paths) restricts the modules generated to those
    documents' (markers and check modules are always there). Raises DDError for an annotation
    that cannot be expanded (DD031, DD055, DD091) or a module that does not format or parse
    (DD095); the documents are expected to have passed `dd check`.
    """
    from generator.formatting import format_sources

    wanted = set(only) if only is not None else {d.path for d in documents}
    sources: dict[str, str] = {}
    for doc in documents:
        if doc.path in wanted:
            for module in emitted_modules(doc):
                sources[module.path] = assemble(doc, module, library, line_length)
    packages = check_packages(documents)
    for package, ids in packages.items():
        patterns = [p for p in (library.get(i) for i in ids) if p is not None]
        sources[checkmodule.path_in(package)] = checkmodule.module_source(patterns)
    formatted = format_sources(sources, line_length, first_party(documents))
    texts = {path: markers.with_hash(text) for path, text in formatted.items()}
    for path, text in texts.items():
        check_parses(path, text)
    marker = markers.with_hash(markers.header(None))
    files = {}
    for path, module in planned_paths(documents).items():
        if path in texts:
            files[path] = texts[path]
        elif module is None:
            files[path] = marker
    return files


def assemble(doc: Document, module: ModuleSpec, library: PatternLibrary, width: int) -> str:
    """The unformatted source of `module`: header, prelude, then its emitted specs in document
    order, then the sites of its check calls. A class is emitted when its own spec or any of
    its methods is."""
    from generator.assemble import Definition, assemble_module
    from generator.expand import Needs, expand_spec

    classes: dict[str, tuple[Spec, Definition]] = {}
    top: list[tuple[Spec, Definition]] = []
    needs = Needs()
    for spec in module.specs:
        if spec.kind is not SpecKind.cls and not emitted(doc, spec):
            continue
        assert spec.code is not None, "the parser reported a spec without code"
        tree(spec.code)
        expanded, spec_needs = expand_spec(spec, library)
        needs.add(spec_needs)
        definition = Definition(expanded, doc.path, spec.loc.line, spec.number, spec.name)
        if spec.kind is SpecKind.cls:
            classes[spec.name] = (spec, definition)
            top.append((spec, definition))
        elif spec.kind is SpecKind.method:
            classes[spec.class_name or ""][1].methods.append(definition)
        else:
            top.append((spec, definition))
    definitions = [d for s, d in top if s.kind is not SpecKind.cls or emitted(doc, s) or d.methods]
    title = f"{doc.front.title} {doc.front.version}"
    prelude = [tree(block) for block in module.prelude]
    imports = ["reprlib"] if needs.reprlib else []
    checks = (top_package(doc), needs.sites)
    return assemble_module(doc.path, title, prelude, definitions, imports, width, checks)


def tree(block: CodeBlock) -> cst.Module:
    """The block's libcst tree; DD031 where libcst cannot read what Python's parser accepted."""
    import libcst

    try:
        return block.tree()
    except libcst.ParserSyntaxError as exc:
        loc = block.loc.model_copy(update={"line": block.loc.line + exc.raw_line - 1})
        message = f"syntax error (libcst): {exc.message}"
        raise DDError([Diagnostic(loc=loc, code="DD031", message=message)]) from None


def check_parses(name: str, text: str) -> None:
    """DD095 unless the generated `text` parses as Python."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError as exc:
        message = f"generated {name} does not parse: {exc.msg} (line {exc.lineno})"
        raise DDError([Diagnostic(loc=Loc(path=name), code="DD095", message=message)]) from None
