"""A dd project: configuration, parsed documents, pattern library, checks and generation.

This is the imperative shell around the pure stages (parse, check, expand, assemble, format).
Every stage reports problems as Diagnostics; generation refuses to run while any error in the
documents remains, so a document with an error never produces a single byte of output. Results
are cached by content hash (`generator.cache`), and the heavy libraries (markdown-it, libcst,
Jinja2, ruff) are imported only when something has to be parsed or generated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from generator import checkmodule, gitutil, markers, writer
from generator.cache import Cache, digest, environment, files_digest
from generator.config import Config, builtin_pattern_dir, load_config
from generator.models import (
    CodeBlock,
    DDError,
    Diagnostic,
    Document,
    Loc,
    ModuleSpec,
    Severity,
    Spec,
    SpecKind,
    StepStatus,
)
from generator.plan import check_revision, validate_plan

if TYPE_CHECKING:
    import libcst as cst

    from generator.expand import Needs
    from generator.patterns import PatternLibrary

_EMITTING = {StepStatus.in_progress, StepStatus.done}
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
        self._expanded: dict[tuple[str, int], tuple[cst.Module, Needs]] = {}
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
        if cache.get("library", fingerprint) != "ok":
            from generator.patterns import PatternLibrary

            PatternLibrary.load(config.pattern_dirs())  # raises DDError (DD090)
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
        return cls(
            config,
            documents,
            diagnostics,
            cache=cache,
            fingerprint=fingerprint,
            keys=keys,
            unreadable=unreadable,
        )

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
        """Every diagnostic of the project, sorted by location, duplicates removed.

        A Project is a snapshot of the documents at load time, so this is computed once."""
        return list(self._diagnostics)

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.check() if d.severity == "error"]

    def unread(self) -> list[Diagnostic]:
        """The errors that kept files under `docs` from loading as documents (DD001/DD002)."""
        return [
            d
            for d in self._parse_diagnostics
            if d.loc.path in self._unreadable and d.code in ("DD001", "DD002", "DD039")
        ]

    @cached_property
    def _diagnostics(self) -> tuple[Diagnostic, ...]:
        diags = list(self._parse_diagnostics)
        diags += self._check_modules()
        for doc in self.documents:
            diags += self._check_deps(doc)
            diags += self._pattern_diagnostics(doc)
            diags += validate_plan(doc, self.resolve)
            diags += check_revision(doc, self._head_texts.get(doc.path))
            diags += self._check_verify_files(doc)
        diags += self._check_done_commits()
        diags += self.orphans()
        unique = {(d.loc.path, d.loc.line, d.loc.col, d.code, d.message): d for d in diags}
        ordered = sorted(unique.values(), key=lambda d: (d.loc.path, d.loc.line, d.loc.col, d.code))
        return tuple(ordered)

    def _check_modules(self) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        seen_name: dict[str, ModuleSpec] = {}
        seen_path: dict[str, ModuleSpec] = {}
        for module in self.modules():
            for key, seen in ((module.name, seen_name), (module.path, seen_path)):
                first = seen.setdefault(key, module)
                if first is not module:
                    message = (
                        f"module `{module.name}` ({module.path}) already declared at {first.loc}"
                    )
                    diags.append(Diagnostic(loc=module.loc, code="DD021", message=message))
        return diags

    def _check_deps(self, doc: Document) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        graph: dict[str, list[str]] = {}
        for spec in doc.specs():
            dep_field = spec.field("deps")
            loc = dep_field.loc if dep_field else spec.loc
            resolved: list[str] = []
            for name in spec.deps or []:
                target = self.resolve(doc, name)
                if target is None:
                    ambiguous = len(self._index.get(name, [])) > 1
                    why = (
                        "is ambiguous; write it as `module:Name`"
                        if ambiguous
                        else "names no spec in this project"
                    )
                    message = f"`deps:` entry `{name}` {why}"
                    diags.append(Diagnostic(loc=loc, code="DD042", message=message))
                else:
                    resolved.append(target.qualname)
            graph[spec.qualname] = resolved
        for cycle in _cycles(graph):
            spec = next(s for s in doc.specs() if s.qualname == cycle[0])
            path = " -> ".join(q.split(":", 1)[1] for q in [*cycle, cycle[0]])
            diags.append(Diagnostic(loc=spec.loc, code="DD043", message=f"cyclic `deps:`: {path}"))
        return diags

    def _pattern_diagnostics(self, doc: Document) -> list[Diagnostic]:
        """DD050-DD053 for every annotation, then what only expansion finds (DD055: an
        annotation libcst cannot place, DD091: a template that renders badly), so `dd check`
        fails whenever `dd expand` would. Cached by the document's content."""
        key = digest(self._keys.get(doc.path, ""), "patterns")
        cached = self.cache.get(f"patterns:{doc.path}", key)
        if cached is not None:
            return [Diagnostic.model_validate(d) for d in cached]
        from generator.expand import expand_spec
        from generator.patterns import check_annotation

        diags: list[Diagnostic] = []
        for spec in doc.specs():
            found = [d for ann in spec.annotations for d in check_annotation(ann, self.library)]
            diags += found
            if spec.annotations and not _has_errors(found) and not self._code_errors(spec):
                try:
                    _tree(spec.code)  # type: ignore[arg-type]  # DD031
                    expand_spec(spec, self.library, build=False)
                except DDError as exc:
                    diags += exc.diagnostics
        if doc.path in self._keys:
            self.cache.put(f"patterns:{doc.path}", key, [d.model_dump(mode="json") for d in diags])
        return diags

    def _code_errors(self, spec: Spec) -> bool:
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

    @cached_property
    def _checkout(self) -> gitutil.Checkout | None:
        return gitutil.checkout(self.config.root)

    def _repo_path(self, rel: str) -> str | None:
        """The repository path of project file `rel`, None when it is outside the checkout."""
        if self._checkout is None:
            return None
        path = (self.config.root / rel).resolve()
        if not path.is_relative_to(self._checkout.root):
            return None
        return path.relative_to(self._checkout.root).as_posix()

    @cached_property
    def _head_texts(self) -> dict[str, str | None]:
        """Each document's text at git HEAD (for DD080), read in one git call; {} outside git."""
        if self._checkout is None or not self._checkout.head:
            return {}
        paths = {d.path: self._repo_path(d.path) for d in self.documents}
        wanted = [p for p in paths.values() if p is not None]
        texts = gitutil.show_many(self._checkout.root, "HEAD", wanted)
        return {doc: texts[p] for doc, p in paths.items() if p is not None}

    def _check_verify_files(self, doc: Document) -> list[Diagnostic]:
        """DD082 for each `verify:` file that does not exist: a warning while the step has not
        started, an error once it has (it cannot pass)."""
        diags = []
        for step in doc.steps:
            verify = step.field("verify")
            for item in step.verify:
                if item.startswith("cmd:") or (self.config.root / item).is_file():
                    continue
                assert verify is not None
                offset = max(verify.value.find(f"`{item}`"), 0)
                loc = verify.loc.model_copy(update={"col": verify.loc.col + offset})
                started = step.status is not StepStatus.not_started
                severity: Severity = "error" if started else "warning"
                why = "it cannot pass" if started else "write it before the step starts"
                message = f"Step {step.number} `verify:` names {item}, which does not exist ({why})"
                diags.append(Diagnostic(loc=loc, code="DD082", message=message, severity=severity))
        return diags

    def _check_done_commits(self) -> list[Diagnostic]:
        """DD081: a DONE step needs a commit carrying its `Dd-Step:` trailer (`dd step done`
        makes it), so a step marked DONE by hand is caught. Where history cannot tell (no git
        checkout, a shallow clone, a document outside the checkout) it is one warning per
        document, saying why, never a false error."""
        diags: list[Diagnostic] = []
        done = [(d, s) for d in self.documents for s in d.steps if s.status is StepStatus.done]
        if not done:
            return []
        commits = {}
        if self._checkout is not None and self._checkout.head:
            commits = gitutil.step_commits(self._checkout.root)
        unknown: dict[str, list[int]] = {}
        for doc, step in done:
            if gitutil.step_key(doc.path, step.number) in commits:
                continue
            status = step.field("status")
            loc = status.loc if status else step.loc
            if (
                self._checkout is None
                or self._repo_path(doc.path) is None
                or self._checkout.shallow
            ):
                unknown.setdefault(doc.path, []).append(step.number)
                continue
            trailer = f"{gitutil.STEP_TRAILER}: {gitutil.step_key(doc.path, step.number)}"
            message = (
                f"Step {step.number} is DONE but no commit carries `{trailer}`: finish it with "
                f"`dd step done {step.number}` (it verifies and commits), or commit its files "
                "with that trailer"
            )
            diags.append(Diagnostic(loc=loc, code="DD081", message=message))
        for path, numbers in unknown.items():
            doc = next(d for d in self.documents if d.path == path)
            step = next(s for s in doc.steps if s.number == numbers[0])
            listed = ", ".join(map(str, numbers))
            if self._checkout is None:
                why = "this is not a git checkout"
            elif self._repo_path(path) is None:
                why = "the document is outside the git checkout"
            else:
                why = "this clone is shallow (`git fetch --unshallow` brings the history back)"
            message = (
                f"cannot check that DONE steps {listed} were committed by `dd step done`: {why}"
            )
            diags.append(
                Diagnostic(loc=step.loc, code="DD081", message=message, severity="warning")
            )
        return diags

    # ------------------------------------------------------------------ orphans

    def orphans(self) -> list[Diagnostic]:
        """DD102 for every generated file whose source no longer generates it (its document is
        gone, or no longer has its module spec or a started step). `dd expand` deletes them only
        with `--prune`. Files of a document that exists but has errors are not reported: the
        document's own errors are."""
        return list(self._orphans)

    @cached_property
    def _orphans(self) -> tuple[Diagnostic, ...]:
        wanted = set(self._planned_paths())
        loaded = {d.path for d in self.documents}
        found: list[Diagnostic] = []
        for rel in self._managed_files():
            if rel in wanted:
                continue
            head = _first_line(self.config.root / rel)
            source = markers.source_document(head)
            if source in self._unreadable or (source is None and self._unreadable):
                continue
            if checkmodule.is_check_module(head):
                why = "a check module of a package whose generated modules have no checks"
            elif source is None:
                why = "a package marker of a package that has no generated module any more"
            elif source in loaded:
                why = (
                    f"{source} no longer generates it (its module spec was removed or renamed, "
                    "or none of its specs' steps has started)"
                )
            else:
                why = f"its design document {source} is gone"
            message = (
                f"generated file without a source: {why}; restore the source, or delete the file "
                "with `dd expand --prune`"
            )
            found.append(Diagnostic(loc=Loc(path=rel), code="DD102", message=message))
        return tuple(found)

    def _managed_files(self) -> list[str]:
        """Project-relative paths of every dd-generated file under the directories dd manages
        (each document's package, and every package in the output root whose `__init__.py` dd
        generated, so the packages of a deleted document are found too)."""
        out = self.config.output_dir
        roots = set(self.managed_roots())
        if out.is_dir():
            for child in out.iterdir():
                if child.name.startswith(".") or child.is_symlink():
                    continue
                marker = child / "__init__.py" if child.is_dir() else child
                if marker.suffix == ".py" and markers.is_generated(_first_line(marker)):
                    roots.add(child)
        found = set()
        for base in roots:
            if base.is_symlink():
                continue
            candidates = sorted(base.rglob("*.py")) if base.is_dir() else [base]
            for path in candidates:
                if path.is_file() and not path.is_symlink():
                    if markers.is_generated(_first_line(path)):
                        found.add(self._rel_out(path))
        return sorted(found)

    # ------------------------------------------------------------------ generation

    @staticmethod
    def emitted(doc: Document, spec: Spec) -> bool:
        """Generation follows the plan: without steps everything, else IN_PROGRESS/DONE steps."""
        if not doc.steps:
            return True
        return any(step.status in _EMITTING and _lists(step.methods, spec) for step in doc.steps)

    def _emitted_modules(self, doc: Document) -> list[ModuleSpec]:
        return [m for m in doc.modules if not m.specs or any(self.emitted(doc, s) for s in m.specs)]

    def _planned_paths(self) -> dict[str, ModuleSpec | None]:
        """Project-relative path of every file generation writes: each emitted module, and a
        package marker (None) for each package directory above one without a module spec."""
        by_path: dict[str, ModuleSpec | None] = {}
        for doc in self.documents:
            for module in self._emitted_modules(doc):
                by_path[module.path] = module
        for module_path in list(by_path):
            parts = PurePosixPath(module_path).parts[:-1]
            for depth in range(1, len(parts) + 1):
                by_path.setdefault(PurePosixPath(*parts[:depth], "__init__.py").as_posix(), None)
        for package in self._check_packages():
            by_path.setdefault(checkmodule.path_in(package), None)
        return {self._out(p): m for p, m in sorted(by_path.items())}

    def _check_packages(self) -> dict[str, list[str]]:
        """Each top-level package that gets a check module: one with an emitted spec that has an
        annotation, with the IDs of the patterns its emitted annotations use."""
        used: dict[str, set[str]] = {}
        for doc in self.documents:
            for module in self._emitted_modules(doc):
                for spec in module.specs:
                    if spec.annotations and (spec.kind is SpecKind.cls or self.emitted(doc, spec)):
                        ids = used.setdefault(_top_package(doc), set())
                        ids.update(a.pattern for a in spec.annotations)
        return {package: sorted(ids) for package, ids in sorted(used.items())}

    def _check_module(self, ids: list[str]) -> str:
        """The check module's source (unformatted) holding the checks of patterns `ids`."""
        patterns = [p for p in (self.library.get(i) for i in ids) if p is not None]
        return checkmodule.module_source(patterns)

    def _expand_spec(self, spec: Spec) -> tuple[cst.Module, Needs]:
        from generator.expand import expand_spec

        key = (spec.loc.path, spec.loc.line)
        if key not in self._expanded:
            assert spec.code is not None, "the parser reported a spec without code"
            _tree(spec.code)
            self._expanded[key] = expand_spec(spec, self.library)
        return self._expanded[key]

    def generate(self) -> dict[str, str]:
        """Every generated file (project-relative path -> content). Raises DDError on any error
        in the documents (the state findings of STATE_CODES do not stop it)."""
        return dict(self._generated)

    @cached_property
    def _generated(self) -> dict[str, str]:
        errors = [d for d in self.errors() if d.code not in STATE_CODES]
        if errors:
            raise DDError(errors)
        texts: dict[str, str] = {}  # module name -> formatted text
        todo: dict[str, tuple[Document, str]] = {}  # document path -> its cache key
        first_party = sorted({d.front.package.split(".")[0] for d in self.documents})
        formatting = _formatting_key()
        for doc in self.documents:
            key = digest(
                self._keys.get(doc.path, ""),
                "generate",
                str(self.config.line_length),
                formatting,
                *first_party,
            )
            cached = self.cache.get(f"generate:{doc.path}", key)
            if isinstance(cached, dict):
                texts.update(cached)
            else:
                todo[doc.path] = (doc, key)
        check_todo: dict[str, str] = {}  # check module path -> its cache key
        for package, ids in self._check_packages().items():
            path = self._out(checkmodule.path_in(package))
            key = digest(self.fingerprint, "checks", *ids, str(self.config.line_length), formatting)
            cached = self.cache.get(f"generate:{path}", key)
            if isinstance(cached, str):
                texts[path] = cached
            else:
                check_todo[path] = key
        if todo or check_todo:
            from generator.formatting import format_sources

            sources = {
                module.name: self._assemble(doc, module)
                for doc, _ in todo.values()
                for module in self._emitted_modules(doc)
            }
            packages = self._check_packages()
            for package, ids in packages.items():
                path = self._out(checkmodule.path_in(package))
                if path in check_todo:
                    sources[path] = self._check_module(ids)
            formatted = format_sources(sources, self.config.line_length, first_party)
            formatted = {name: markers.with_hash(text) for name, text in formatted.items()}
            for name, text in formatted.items():
                _check_parses(name, text)
            texts.update(formatted)
            for path, (doc, key) in todo.items():
                if path in self._keys:
                    mine = {m.name: formatted[m.name] for m in self._emitted_modules(doc)}
                    self.cache.put(f"generate:{path}", key, mine)
            for path, key in check_todo.items():
                self.cache.put(f"generate:{path}", key, formatted[path])
        marker = markers.with_hash(markers.header(None))
        files = {
            path: texts[path] if path in texts else marker if module is None else texts[module.name]
            for path, module in self._planned_paths().items()
        }
        return dict(sorted(files.items()))

    def _assemble(self, doc: Document, module: ModuleSpec) -> str:
        """The unformatted source of `module`: header, prelude, then its emitted specs in
        document order. A class is emitted when its own spec or any of its methods is."""
        from generator.assemble import Definition, assemble_module
        from generator.expand import Needs

        classes: dict[str, tuple[Spec, Definition]] = {}
        top: list[tuple[Spec, Definition]] = []
        needs = Needs()
        for spec in module.specs:
            if spec.kind is not SpecKind.cls and not self.emitted(doc, spec):
                continue
            tree, spec_needs = self._expand_spec(spec)
            needs.add(spec_needs)
            definition = Definition(tree, doc.path, spec.loc.line, spec.number, spec.name)
            if spec.kind is SpecKind.cls:
                classes[spec.name] = (spec, definition)
                top.append((spec, definition))
            elif spec.kind is SpecKind.method:
                classes[spec.class_name or ""][1].methods.append(definition)
            else:
                top.append((spec, definition))
        definitions = [
            d for s, d in top if s.kind is not SpecKind.cls or self.emitted(doc, s) or d.methods
        ]
        title = f"{doc.front.title} {doc.front.version}"
        prelude = [_tree(block) for block in module.prelude]
        imports = ["reprlib"] if needs.reprlib else []
        width = self.config.line_length
        checks = (_top_package(doc), needs.sites)
        return assemble_module(doc.path, title, prelude, definitions, imports, width, checks)

    def _out(self, module_path: str) -> str:
        """The project-relative path (absolute when the output root lies outside the project) of
        a generated module. Joined lexically: a symlink on the way is never followed."""
        return self._rel_out(self.config.output_dir / module_path)

    def _rel_out(self, path: Path) -> str:
        root = self.config.root.resolve()
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()

    def managed_roots(self) -> list[Path]:
        """Directories dd owns: each document's package directory under the output root."""
        return sorted(
            {self.config.output_dir / d.front.package.split(".")[0] for d in self.documents}
        )

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
        paths = {
            self._out(m.path) for m in doc.modules if any(_lists(spec_names, s) for s in m.specs)
        }
        return sorted(paths | self._check_files(doc))

    def _check_files(self, doc: Document) -> set[str]:
        path = self._out(checkmodule.path_in(_top_package(doc)))
        return {path} if path in self._planned_paths() else set()


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


def _tree(block: CodeBlock) -> cst.Module:
    """The block's libcst tree; DD031 where libcst cannot read what Python's parser accepted."""
    import libcst

    try:
        return block.tree()
    except libcst.ParserSyntaxError as exc:
        loc = block.loc.model_copy(update={"line": block.loc.line + exc.raw_line - 1})
        message = f"syntax error (libcst): {exc.message}"
        raise DDError([Diagnostic(loc=loc, code="DD031", message=message)]) from None


def _first_line(path: Path) -> str:
    """The first line of a file (decoded leniently; "" when unreadable)."""
    try:
        with path.open("rb") as fh:
            return fh.readline(4096).decode("utf-8", errors="replace").rstrip("\r\n")
    except OSError:
        return ""


def _top_package(doc: Document) -> str:
    return doc.front.package.split(".")[0]


def _has_errors(diags: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diags)


def _lists(names: list[str], spec: Spec) -> bool:
    """True when `names` (as written in a step) include `spec`, short or `module:Name` form."""
    return spec.name in names or spec.qualname in names


def _check_parses(name: str, text: str) -> None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        message = f"generated {name} does not parse: {exc.msg} (line {exc.lineno})"
        raise DDError([Diagnostic(loc=Loc(path=name), code="DD095", message=message)]) from None


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
                found.append(stack[stack.index(nxt) :])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


__all__ = ["STATE_CODES", "Project", "SpecKind"]
