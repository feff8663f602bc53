"""`dd check`'s findings about a loaded project beyond each document's own: duplicate modules
(DD021), `deps:` that do not resolve or form a cycle (DD042, DD043), annotations that do not
check, place or render (DD050-DD055, DD091, cached by content), the plan (DD07x), revisions
against git HEAD (DD080), DONE steps without their `dd step done` commit in git history
(DD081), missing `verify:` files (DD082) and generated files without a source (DD102).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from generator import gitutil
from generator.cache import digest
from generator.models import DDError, Diagnostic, Document, ModuleSpec, Severity, Spec, StepStatus
from generator.plan import check_revision, validate_plan

if TYPE_CHECKING:
    from generator.project import Project


class ProjectChecks:
    """The diagnostics of one `Project` snapshot (git is asked once, lazily)."""

    def __init__(self, project: Project) -> None:
        self.project = project

    @cached_property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Every diagnostic, sorted by location, duplicates removed."""
        diags = list(self.project._parse_diagnostics)
        diags += self._check_modules()
        for doc in self.project.documents:
            diags += self._check_deps(doc)
            diags += self._pattern_diagnostics(doc)
            diags += validate_plan(doc, self.project.resolve)
            diags += check_revision(doc, self._head_texts.get(doc.path))
            diags += self._check_verify_files(doc)
        diags += self._check_done_commits()
        diags += self.project.orphans()
        unique = {(d.loc.path, d.loc.line, d.loc.col, d.code, d.message): d for d in diags}
        ordered = sorted(unique.values(), key=lambda d: (d.loc.path, d.loc.line, d.loc.col, d.code))
        return tuple(ordered)

    def _check_modules(self) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        seen_name: dict[str, ModuleSpec] = {}
        seen_path: dict[str, ModuleSpec] = {}
        for module in self.project.modules():
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
                target = self.project.resolve(doc, name)
                if target is None:
                    ambiguous = len(self.project._index.get(name, [])) > 1
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
        fails whenever `dd expand` would. A spec whose checks surely expand needs no libcst
        tree (`_surely_expands`). Cached by the document's content."""
        key = digest(self.project._keys.get(doc.path, ""), "patterns")
        cached = self.project.cache.get(f"patterns:{doc.path}", key)
        if cached is not None:
            return [Diagnostic.model_validate(d) for d in cached]
        from generator.patterns import check_annotation

        diags: list[Diagnostic] = []
        for spec in doc.specs():
            found = [
                d for ann in spec.annotations for d in check_annotation(ann, self.project.library)
            ]
            diags += found
            if spec.annotations and not _has_errors(found) and not self._code_errors(spec):
                if self._surely_expands(spec):
                    continue
                from generator.expand import expand_spec
                from generator.generate import tree

                try:
                    tree(spec.code)  # DD031
                    expand_spec(spec, self.project.library, build=False)
                except DDError as exc:
                    diags += exc.diagnostics
        if doc.path in self.project._keys:
            self.project.cache.put(
                f"patterns:{doc.path}", key, [d.model_dump(mode="json") for d in diags]
            )
        return diags

    def _surely_expands(self, spec: Spec) -> bool:
        """True when the spec's annotations match their comments, render, and sit where the
        expander certainly places them (`generator.placement`, no libcst tree needed); False
        leaves the decision, and every diagnostic, to the expander on libcst's tree."""
        from generator.patterns import render
        from generator.placement import match_comments, surely_placed

        code = spec.code
        assert code is not None
        try:
            by_line = match_comments(code.code, code.loc.line, spec.annotations)
            for ann in by_line.values():
                render(ann, self.project.library, spec.name)
        except DDError:
            return False
        return surely_placed(code.code, list(by_line))

    def _code_errors(self, spec: Spec) -> bool:
        """True when the parser already reported an error inside the spec's code block (its
        annotations are then incomplete, and expanding would only repeat the problem)."""
        if spec.code is None:
            return True
        first = spec.code.loc.line
        last = first + spec.code.code.count("\n")
        return any(
            d.severity == "error" and d.loc.path == spec.loc.path and first <= d.loc.line <= last
            for d in self.project._parse_diagnostics
        )

    @cached_property
    def _checkout(self) -> gitutil.Checkout | None:
        return gitutil.checkout(self.project.config.root)

    def _repo_path(self, rel: str) -> str | None:
        """The repository path of project file `rel`, None when it is outside the checkout."""
        if self._checkout is None:
            return None
        path = (self.project.config.root / rel).resolve()
        if not path.is_relative_to(self._checkout.root):
            return None
        return path.relative_to(self._checkout.root).as_posix()

    @cached_property
    def _head_texts(self) -> dict[str, str | None]:
        """Each document's text at git HEAD (for DD080), read in one git call; {} outside git."""
        if self._checkout is None or not self._checkout.head:
            return {}
        paths = {d.path: self._repo_path(d.path) for d in self.project.documents}
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
                if item.startswith("cmd:") or (self.project.config.root / item).is_file():
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
        done = [
            (d, s) for d in self.project.documents for s in d.steps if s.status is StepStatus.done
        ]
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
            doc = next(d for d in self.project.documents if d.path == path)
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


def _has_errors(diags: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diags)
