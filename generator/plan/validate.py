"""Validate a written implementation plan (Section 6): DD072-DD079."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from generator.models import Diagnostic, Document, Field_, Loc, Spec, SpecKind, Step, StepStatus

Resolver = Callable[[Document, str], Spec | None]

MAX_STEP_SPECS = 10  # DD078: a step holds at most this many specs
TARGET_STEP_SPECS = 5  # derive_plan aims for 3-5 related specs per step
MIN_STEP_SPECS = 3
INIT_METHODS = ("__init__", "__post_init__")  # planned with their class, as infrastructure


# --------------------------------------------------------------------------- helpers


def step_field(step: Step, key: str) -> Field_ | None:
    """The step's field `key` (`depends on` also matches a parser that wrote `depends_on`)."""
    return step.field(key) or step.field(key.replace(" ", "_"))


def _value_loc(f: Field_ | None, fallback: Loc, needle: str | None = None) -> Loc:
    """Loc of `needle` inside field `f`'s value (the value start when absent), else `fallback`."""
    if f is None:
        return fallback
    offset = f.value.find(needle) if needle else -1
    return f.loc.model_copy(update={"col": f.loc.col + max(offset, 0)})


def _name_loc(f: Field_ | None, fallback: Loc, name: str) -> Loc:
    """Loc of the backticked `name` in field `f` (of the bare name, else the value start)."""
    if f is not None and f"`{name}`" in f.value:
        return _value_loc(f, fallback, f"`{name}`")
    return _value_loc(f, fallback, name)


def _diag(loc: Loc, code: str, message: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(loc=loc, code=code, message=message, severity=severity)


def spec_index(doc: Document) -> dict[str, Spec]:
    """The document's specs by qualname (`module:Name`), in document order."""
    return {s.qualname: s for s in doc.specs()}


def lookup_in_doc(doc: Document, name: str) -> list[Spec]:
    """Specs of `doc` that `name` (`module:Name` or `Name`, as in a plan or `deps:`) denotes."""
    name = name.strip().strip("`")
    if ":" in name:
        return [s for s in doc.specs() if s.qualname == name]
    return [s for s in doc.specs() if s.name == name]


def local_resolver(doc: Document, name: str) -> Spec | None:
    """A `Resolver` that only looks inside `doc` (first match in document order)."""
    found = lookup_in_doc(doc, name)
    return found[0] if found else None


def local_deps(doc: Document, spec: Spec, resolve: Resolver = local_resolver) -> list[str]:
    """Qualnames of the same-document specs `spec` depends on, including a method's own class.

    Names that do not resolve, or resolve to another document, are left out (DD042 is reported
    by the dependency checker, cross-document deps do not constrain this document's plan).
    """
    own = spec_index(doc)
    out: list[str] = []
    names = list(spec.deps or [])
    if spec.kind is SpecKind.method and spec.class_name:
        names.insert(0, f"{spec.module}:{spec.class_name}")
    for name in names:
        target = own[name] if name in own else resolve(doc, name)
        if target is None or target.qualname not in own or target.qualname == spec.qualname:
            continue
        if target.qualname not in out:
            out.append(target.qualname)
    return out


def step_closure(steps: Iterable[Step]) -> dict[int, set[int]]:
    """For each step number, every step it depends on transitively (only known, earlier steps)."""
    by_num = {s.number: s for s in steps}
    closure: dict[int, set[int]] = {}

    def visit(n: int, trail: frozenset[int]) -> set[int]:
        if n in closure:
            return closure[n]
        acc: set[int] = set()
        for d in by_num[n].depends_on:
            if d in by_num and d not in trail and d != n:
                acc |= {d} | visit(d, trail | {n})
        if not trail:
            closure[n] = acc
        return acc

    for n in by_num:
        closure[n] = visit(n, frozenset())
    return closure


# --------------------------------------------------------------------------- validation


def validate_plan(doc: Document, resolve: Resolver = local_resolver) -> list[Diagnostic]:
    """DD072-DD079 for `doc`'s Section 6; `[]` when the document has no steps.

    Contract: every diagnostic points at the offending field value (the spec's heading for
    DD073); the result is sorted by position. `resolve` maps a `deps:` name to its spec as the
    dependency checker does; only same-document results matter here.
    """
    if not doc.steps:
        return []
    diags: list[Diagnostic] = []
    owner = _check_membership(doc, diags)
    _check_step_deps(doc, diags)
    _check_spec_deps(doc, owner, resolve, diags)
    _check_status(doc, diags)
    diags.sort(key=lambda d: (d.loc.path, d.loc.line, d.loc.col, d.code))
    return diags


def _check_membership(doc: Document, diags: list[Diagnostic]) -> dict[str, Step]:
    """DD072, DD073, DD074, DD078; returns each listed spec's (first) step by qualname."""
    owner: dict[str, Step] = {}
    for step in doc.steps:
        methods_field = step_field(step, "methods")
        for name in step.methods:
            loc = _name_loc(methods_field, step.loc, name)
            found = lookup_in_doc(doc, name)
            if not found:
                diags.append(
                    _diag(
                        loc,
                        "DD072",
                        f"Step {step.number} lists `{name}`, which is not a spec of this document",
                    )
                )
                continue
            if len(found) > 1:
                mods = ", ".join(f"`{s.qualname}`" for s in found)
                diags.append(
                    _diag(
                        loc,
                        "DD072",
                        f"Step {step.number} lists `{name}`, which is ambiguous ({mods}); write "
                        "`module:Name`",
                    )
                )
                continue
            spec = found[0]
            if spec.qualname in owner:
                first = owner[spec.qualname].number
                diags.append(
                    _diag(
                        loc,
                        "DD074",
                        f"`{name}` is listed in Step {first} and again in Step {step.number}",
                    )
                )
            else:
                owner[spec.qualname] = step
        if not step.methods:
            diags.append(
                _diag(
                    _value_loc(methods_field, step.loc),
                    "DD078",
                    f"Step {step.number} lists no specs",
                )
            )
        elif len(step.methods) > MAX_STEP_SPECS:
            diags.append(
                _diag(
                    _value_loc(methods_field, step.loc),
                    "DD078",
                    f"Step {step.number} lists {len(step.methods)} specs (at most "
                    f"{MAX_STEP_SPECS}); split it",
                )
            )
    for spec in doc.specs():
        if spec.qualname not in owner:
            diags.append(
                _diag(spec.loc, "DD073", f"spec `{spec.name}` belongs to no step of Section 6")
            )
    return owner


def _check_step_deps(doc: Document, diags: list[Diagnostic]) -> None:
    """DD075 (unknown, self or later step) and DD076 (a cycle through later-step references)."""
    numbers = {s.number for s in doc.steps}
    graph = {
        s.number: [d for d in s.depends_on if d in numbers and d != s.number] for s in doc.steps
    }
    for step in doc.steps:
        dep_field = step_field(step, "depends on")
        for d in step.depends_on:
            loc = _value_loc(dep_field, step.loc, str(d))
            if d not in numbers:
                diags.append(
                    _diag(
                        loc,
                        "DD075",
                        f"Step {step.number} depends on Step {d}, which does not exist",
                    )
                )
            elif d == step.number:
                diags.append(_diag(loc, "DD075", f"Step {step.number} depends on itself"))
            elif d > step.number and _reaches(graph, d, step.number):
                diags.append(
                    _diag(
                        loc,
                        "DD076",
                        f"Step {step.number} depends on Step {d}, which depends back on Step "
                        f"{step.number} (cycle)",
                    )
                )
            elif d > step.number:
                diags.append(
                    _diag(loc, "DD075", f"Step {step.number} depends on Step {d}, a later step")
                )


def _reaches(graph: dict[int, list[int]], start: int, goal: int) -> bool:
    seen: set[int] = set()
    todo = [start]
    while todo:
        n = todo.pop()
        if n == goal:
            return True
        if n not in seen:
            seen.add(n)
            todo.extend(graph.get(n, []))
    return False


def _check_spec_deps(
    doc: Document, owner: dict[str, Step], resolve: Resolver, diags: list[Diagnostic]
) -> None:
    """DD077: a spec's same-document deps lie in its step or a step it transitively depends on."""
    closure = step_closure(doc.steps)
    index = spec_index(doc)
    for qual, step in owner.items():
        spec = index[qual]
        allowed = closure.get(step.number, set()) | {step.number}
        for dep in local_deps(doc, spec, resolve):
            dep_step = owner.get(dep)
            if dep_step is None or dep_step.number in allowed:
                continue
            dep_name = index[dep].name
            why = "belongs to class" if dep_name == spec.class_name else "depends on"
            loc = _name_loc(step_field(step, "methods"), step.loc, spec.name)
            diags.append(
                _diag(
                    loc,
                    "DD077",
                    f"`{spec.name}` (Step {step.number}) {why} `{dep_name}`, which is in Step "
                    f"{dep_step.number}; "
                    f"add Step {dep_step.number} to `depends on` or move the spec",
                )
            )


def _check_status(doc: Document, diags: list[Diagnostic]) -> None:
    """DD079: DONE only on DONE steps; IN_PROGRESS not on NOT_STARTED steps."""
    by_num = {s.number: s for s in doc.steps}
    for step in doc.steps:
        for d in step.depends_on:
            dep = by_num.get(d)
            if dep is None or d == step.number:
                continue
            bad = (step.status is StepStatus.done and dep.status is not StepStatus.done) or (
                step.status is StepStatus.in_progress and dep.status is StepStatus.not_started
            )
            if bad:
                loc = _value_loc(step_field(step, "status"), step.loc)
                diags.append(
                    _diag(
                        loc,
                        "DD079",
                        f"Step {step.number} is {step.status.value} but depends on Step {d}, "
                        f"which is {dep.status.value}",
                    )
                )
