"""A dd project: configuration, parsed and indexed documents, the pattern library, and the
cache around the stages that work on them.

`Project` loads and indexes; the checks are `generator.checks` (DD0xx, git-based DD081
included), generation is the pure `generator.generate.generate`, finding generated files without
a source is `generator.prune` and writing is `generator.writer`. Every stage reports problems as
Diagnostics; generation refuses to run while any error in the documents remains, so a document
with an error never produces a single byte of output. Results are cached by content hash
(`generator.cache`), and the heavy libraries (markdown-it, libcst, Jinja2, ruff) are imported
only when something has to be parsed or generated.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from generator import checkmodule, markers, writer
from generator.cache import Cache, digest, environment, files_digest
from generator.config import Config, builtin_pattern_dir, load_config
from generator.models import (
    DDError,
    Diagnostic,
    Document,
    Loc,
    ModuleSpec,
    Spec,
    SpecKind,
)

if TYPE_CHECKING:
    from generator.checks import ProjectChecks
    from generator.patterns import PatternLibrary

# Findings about the state around the documents (history, files on disk), not their content:
# they fail `dd check` but do not stop generation.
STATE_CODES = frozenset({"DD081", "DD082", "DD102"})


class Project:
    """Documents and patterns of one project root; construct with `Project.load()`."""

    def __init__(
        self,
        config: Config,
        documents: list[Document],
        parse_diagnostics: list[Diagnostic],
        *,
        cache: Cache | None = None,
        fingerprint: str = "",
        keys: dict[str, str] | None = None,
        unreadable: set[str] | None = None,
    ) -> None:
        self.config = config
        self.documents = documents
        self.cache = cache or Cache(None)
        self.fingerprint = fingerprint
        self._keys = keys or {}  # document path -> digest of its bytes and the fingerprint
        self._unreadable = unreadable or set()  # documents present but not loaded (errors)
        self._parse_diagnostics = parse_diagnostics
        self._fix_package_paths()

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, start: Path | None = None, docs: Iterable[Path] | None = None) -> Project:
        """Parse every file under `[tool.dd] docs` (each must be a design document) plus `docs`
        (which may lie outside them).

        All configured documents are always loaded, so names in `deps:` and module paths
        resolve across the whole project even when only some documents are being checked.
        Raises DDError on config/pattern errors.
        """
        config = load_config(start)
        cache = Cache(config.cache_dir)
        pattern_files = _pattern_files(config)
        fingerprint = digest(environment(), files_digest(pattern_files))
        library = None
        if cache.get("library", fingerprint) != "ok":
            from generator.patterns import PatternLibrary

            library = PatternLibrary.load(config.pattern_dirs())  # raises DDError (DD090)
            cache.put("library", fingerprint, "ok")
        paths = sorted({*config.documents(), *(p.resolve() for p in docs or ())})
        documents: list[Document] = []
        diagnostics: list[Diagnostic] = []
        keys: dict[str, str] = {}
        unreadable: set[str] = set()
        for path in paths:
            rel = config.rel(path)
            doc, diags, key = _load_document(path, rel, cache, fingerprint)
            diagnostics += diags
            if doc is None:
                unreadable.add(rel)
            else:
                documents.append(doc)
                keys[rel] = key
        project = cls(
            config,
            documents,
            diagnostics,
            cache=cache,
            fingerprint=fingerprint,
            keys=keys,
            unreadable=unreadable,
        )
        if library is not None:  # checked just now: load it once, not twice
            project.__dict__["library"] = library
        return project

    @cached_property
    def library(self) -> PatternLibrary:
        """The pattern library (loaded on first use: cached checks do not need it)."""
        from generator.patterns import PatternLibrary

        return PatternLibrary.load(self.config.pattern_dirs())

    def document(self, path: str | Path) -> Document | None:
        """The loaded document at `path` (project-relative or absolute)."""
        rel = self.config.rel(Path(path)) if Path(path).is_absolute() else Path(path).as_posix()
        return next((d for d in self.documents if d.path == rel), None)

    def _fix_package_paths(self) -> None:
        """`a.b` lives in `a/b/__init__.py` when a module `a.b.c` exists (and no `path:` field)."""
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
        """Every diagnostic of the project, sorted by location, duplicates removed
        (`generator.checks`).

        A Project is a snapshot of the documents at load time, so this is computed once."""
        return list(self._checks.diagnostics)

    @cached_property
    def _checks(self) -> ProjectChecks:
        from generator.checks import ProjectChecks

        return ProjectChecks(self)

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.check() if d.severity == "error"]

    def unread(self) -> list[Diagnostic]:
        """The errors that kept files under `docs` from loading as documents (DD001/DD002)."""
        return [
            d
            for d in self._parse_diagnostics
            if d.loc.path in self._unreadable and d.code in ("DD001", "DD002", "DD039")
        ]

    # ------------------------------------------------------------------ orphans

    def orphans(self) -> list[Diagnostic]:
        """DD102 for every generated file whose source no longer generates it (its document is
        gone, or no longer has its module spec or a started step). `dd expand` deletes them only
        with `--prune`. Files of a document that exists but has errors are not reported: the
        document's own errors are."""
        return list(self._orphans)

    @cached_property
    def _orphans(self) -> tuple[Diagnostic, ...]:
        from generator import prune

        return tuple(prune.orphans(self))

    def managed_roots(self) -> list[Path]:
        """Directories dd owns: each document's package directory under the output root."""
        from generator import prune

        return prune.managed_roots(self)

    # ------------------------------------------------------------------ generation

    def planned_paths(self) -> dict[str, ModuleSpec | None]:
        """Project-relative path of every file generation writes (`generate.planned_paths`)."""
        from generator.generate import planned_paths

        return {self._out(p): m for p, m in planned_paths(self.documents).items()}

    def generate(self) -> dict[str, str]:
        """Every generated file (project-relative path -> content), from `generate.generate`,
        reusing each document's cached modules. Raises DDError on any error in the documents
        (the state findings of STATE_CODES do not stop it)."""
        return dict(self._generated)

    @cached_property
    def _generated(self) -> dict[str, str]:
        from generator.generate import (
            check_packages,
            emitted_modules,
            first_party,
            generate,
            planned_paths,
        )

        errors = [d for d in self.errors() if d.code not in STATE_CODES]
        if errors:
            raise DDError(errors)
        width = str(self.config.line_length)
        settings = [width, _formatting_key(), *first_party(self.documents)]
        texts: dict[str, str] = {}  # output-relative path -> formatted text
        todo: dict[str, str] = {}  # document path -> its cache key
        for doc in self.documents:
            key = digest(self._keys.get(doc.path, ""), "generate", *settings)
            cached = self.cache.get(f"generate:{doc.path}", key)
            if isinstance(cached, dict):
                texts.update(cached)
            else:
                todo[doc.path] = key
        check_keys = {}
        for package, ids in check_packages(self.documents).items():
            path = checkmodule.path_in(package)
            key = digest(self.fingerprint, "checks", *ids, *settings)
            cached = self.cache.get(f"generate:{path}", key)
            if isinstance(cached, str):
                texts[path] = cached
            else:
                check_keys[path] = key
        if todo or check_keys:
            made = generate(self.documents, self.library, self.config.line_length, only=todo)
            texts.update(made)
            for doc in self.documents:
                if doc.path in todo and doc.path in self._keys:
                    mine = {m.path: made[m.path] for m in emitted_modules(doc)}
                    self.cache.put(f"generate:{doc.path}", todo[doc.path], mine)
            for path, key in check_keys.items():
                self.cache.put(f"generate:{path}", key, made[path])
        marker = markers.with_hash(markers.header(None))
        files = {
            self._out(path): texts.get(path, marker)
            for path, module in planned_paths(self.documents).items()
        }
        return dict(sorted(files.items()))

    def _out(self, module_path: str) -> str:
        """The project-relative path (absolute when the output root lies outside the project) of
        a generated module. Joined lexically: a symlink on the way is never followed."""
        return self._rel_out(self.config.output_dir / module_path)

    def _rel_out(self, path: Path) -> str:
        root = self.config.root.resolve()
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()

    def expand(self, force: bool = False, prune: bool = False) -> list[str]:
        """Generate and write all-or-nothing; returns the project-relative paths changed.

        Generated files without a source (DD102) are deleted with `prune`; without it they make
        the whole run refuse, so nothing a DONE step committed disappears unasked.
        """
        orphans = self.orphans()
        changes = self.pending_changes()
        if orphans and not prune:
            raise DDError(orphans)
        writer.refuse_unsafe(changes, force)
        writer.apply(self.config.root, changes)
        return [c.path for c in changes]

    def pending_changes(self) -> list[writer.Change]:
        """What `dd expand --prune` would write and delete."""
        deletions = [d.loc.path for d in self.orphans()]
        return writer.plan_changes(self.config.root, self.generate(), deletions)

    def document_files(self, doc: Document) -> list[str]:
        """Project-relative paths of every file generated from `doc` (any edit of the document,
        even its version in the headers, may change them), its package's check module included."""
        return sorted({self._out(m.path) for m in doc.modules} | self._check_files(doc))

    def module_files(self, doc: Document, spec_names: list[str]) -> list[str]:
        """Project-relative paths of the generated files that hold `spec_names` of `doc`, and
        its package's check module (a new annotation may add a check to it)."""
        from generator.generate import lists

        paths = {
            self._out(m.path) for m in doc.modules if any(lists(spec_names, s) for s in m.specs)
        }
        return sorted(paths | self._check_files(doc))

    def _check_files(self, doc: Document) -> set[str]:
        from generator.generate import top_package

        path = self._out(checkmodule.path_in(top_package(doc)))
        return {path} if path in self.planned_paths() else set()


def _load_document(
    path: Path, rel: str, cache: Cache, fingerprint: str
) -> tuple[Document | None, list[Diagnostic], str]:
    """One file under `docs`: (document or None, its diagnostics, its cache key)."""
    if not path.is_file():
        return None, [Diagnostic(loc=Loc(path=rel), code="DD001", message="no such document")], ""
    if path.suffix != ".md":
        message = (
            "not a design document: only `*.md` files are (list other files in `[tool.dd] exclude`)"
        )
        return None, [Diagnostic(loc=Loc(path=rel), code="DD001", message=message)], ""
    data = path.read_bytes()
    key = digest(fingerprint, "parse", rel, data)
    cached = cache.get(f"parse:{rel}", key)
    if isinstance(cached, dict):
        document = cached.get("document")
        doc = Document.model_validate(document) if document is not None else None
        return doc, [Diagnostic.model_validate(d) for d in cached.get("diagnostics", [])], key
    from generator.parser import parse_document

    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None  # parse_document reports where
    doc, diags = parse_document(path, rel, text)
    value = {
        "document": doc.model_dump(mode="json") if doc is not None else None,
        "diagnostics": [d.model_dump(mode="json") for d in diags],
    }
    cache.put(f"parse:{rel}", key, value)
    return doc, diags, key


def _pattern_files(config: Config) -> list[Path]:
    """The files of every pattern directory (they decide what checks and expansions give)."""
    files: list[Path] = []
    for directory in [builtin_pattern_dir(), *config.pattern_dirs()]:
        if directory.is_dir():
            files += [p for p in directory.iterdir() if p.is_file()]
        else:
            files.append(directory)  # a missing directory is part of the state too
    return files


def _formatting_key() -> str:
    from generator.formatting import environment_key

    return environment_key()


__all__ = ["STATE_CODES", "Project", "SpecKind"]
