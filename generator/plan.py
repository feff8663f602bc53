"""Section 6 (implementation plan): validate a written plan, derive one from `deps:`, render it.

`validate_plan` reports DD072-DD079 for a document that has steps; `derive_plan` cuts a document's
specs into small dependency-ordered steps that always pass `validate_plan`; `render_plan` writes
steps back as Markdown in the FORMAT.md grammar; `check_revision` reports DD080.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

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


# --------------------------------------------------------------------------- derivation


@dataclass
class _Node:
    spec: Spec
    index: int  # document order
    deps: list[str]
    level: int = 0
    group: str = ""  # class name, else module: specs sharing it are "related"


@dataclass
class _Draft:
    specs: list[_Node] = field(default_factory=list)
    infra: bool = False


def derive_plan(
    doc: Document, steps_dir: str = "steps", resolve: Resolver = local_resolver
) -> list[Step]:
    """Cut `doc`'s specs into NOT_STARTED steps ordered by `deps:`; deterministic.

    Contract: every spec is in exactly one step; a step holds 1..MAX_STEP_SPECS specs (3-5
    related ones when the graph allows); a spec's same-document deps (and a method's class) are
    in its step or an earlier one that `depends on` reaches; so, for an acyclic `deps:` graph,
    `validate_plan` reports nothing. Step 1 holds the infrastructure (classes, their
    constructors and what they need); later steps go bottom-up from helpers to orchestration.
    Cyclic deps (DD043) are broken in document order rather than looping.
    """
    nodes = _nodes(doc, resolve)
    if not nodes:
        return []
    order = _topo_order(nodes)
    for q in order:
        n = nodes[q]
        n.level = 1 + max(
            (nodes[d].level for d in n.deps if d in nodes and order.index(d) < order.index(q)),
            default=-1,
        )
    infra = _infrastructure(nodes, order)
    drafts = _group([q for q in order if q in infra], nodes, infra=True)
    drafts += _group([q for q in order if q not in infra], nodes, infra=False)
    return _to_steps(drafts, nodes, doc, steps_dir)


def _nodes(doc: Document, resolve: Resolver) -> dict[str, _Node]:
    out: dict[str, _Node] = {}
    for i, spec in enumerate(doc.specs()):
        group = spec.class_name or spec.module
        out[spec.qualname] = _Node(
            spec=spec, index=i, deps=local_deps(doc, spec, resolve), group=group
        )
    return out


def _topo_order(nodes: dict[str, _Node]) -> list[str]:
    """Dependencies first; ties (and cycles) broken by document order."""
    remaining = sorted(nodes, key=lambda q: nodes[q].index)
    done: list[str] = []
    done_set: set[str] = set()
    while remaining:
        ready = next(
            (q for q in remaining if all(d in done_set for d in nodes[q].deps)), remaining[0]
        )
        remaining.remove(ready)
        done.append(ready)
        done_set.add(ready)
    return done


def _infrastructure(nodes: dict[str, _Node], order: list[str]) -> set[str]:
    """Class specs, their constructors, module-level functions without deps, and everything
    those need (dep closure)."""
    seeds = [q for q in order if _is_infra(nodes[q])]
    infra: set[str] = set()
    todo = list(seeds)
    while todo:
        q = todo.pop()
        if q not in infra:
            infra.add(q)
            todo.extend(d for d in nodes[q].deps if d in nodes)
    return infra


def _is_infra(node: _Node) -> bool:
    spec = node.spec
    if spec.kind is SpecKind.cls:
        return True
    if spec.kind is SpecKind.method:
        return spec.short_name in INIT_METHODS
    return not node.deps


def _group(pool: list[str], nodes: dict[str, _Node], infra: bool) -> list[_Draft]:
    """Greedy: seed each step with the lowest-level ready spec, add ready specs of its group.

    A spec is ready when none of its deps is still unplaced (deps outside `pool` were placed
    by an earlier call). `pool` is in topological order, so the fallback to its first spec only
    triggers on cyclic deps.
    """
    remaining = list(pool)
    drafts: list[_Draft] = []
    while remaining:
        current: list[str] = []

        def ready(q: str) -> bool:
            return all(d not in remaining for d in nodes[q].deps)

        cands = [q for q in remaining if ready(q)] or remaining[:1]
        seed = min(cands, key=lambda q: (nodes[q].level, pool.index(q)))
        current.append(seed)
        remaining.remove(seed)
        limit = TARGET_STEP_SPECS + (3 if infra else 0)
        while len(current) < limit and remaining:
            cands = [q for q in remaining if ready(q)]
            same = [q for q in cands if nodes[q].group == nodes[seed].group]
            near = [q for q in cands if nodes[q].spec.module == nodes[seed].spec.module]
            pick_from = (
                same or (near if len(current) < MIN_STEP_SPECS else []) or (cands if infra else [])
            )
            if not pick_from:
                break
            nxt = min(pick_from, key=lambda q: (nodes[q].level, pool.index(q)))
            current.append(nxt)
            remaining.remove(nxt)
        drafts.append(_Draft(specs=[nodes[q] for q in current], infra=infra))
    return drafts


def _to_steps(
    drafts: list[_Draft], nodes: dict[str, _Node], doc: Document, steps_dir: str
) -> list[Step]:
    where: dict[str, int] = {}
    for i, d in enumerate(drafts, start=1):
        for n in d.specs:
            where[n.spec.qualname] = i
    stem = PurePosixPath(doc.path).stem
    steps: list[Step] = []
    closure: dict[int, set[int]] = {}
    for i, draft in enumerate(drafts, start=1):
        direct = {where[d] for n in draft.specs for d in n.deps if d in where and where[d] != i}
        minimal = sorted(d for d in direct if not any(d in closure[o] for o in direct if o != d))
        closure[i] = set(direct).union(*(closure[d] for d in direct)) if direct else set()
        last = i == len(drafts) and len(drafts) > 1 and not draft.infra
        names = [n.spec.name for n in draft.specs]
        steps.append(
            Step(
                number=i,
                title=_title(draft, last, i == 1 and len(drafts) == 1),
                loc=Loc(path=doc.path, line=1),
                status=StepStatus.not_started,
                depends_on=minimal,
                methods=_names_as_written(doc, names, [n.spec for n in draft.specs]),
                purpose=_purpose(draft, last, minimal),
                verify=[f"{steps_dir}/{stem}/test_step{i}.py"],
            )
        )
    return steps


def _names_as_written(doc: Document, names: list[str], specs: list[Spec]) -> list[str]:
    """`Name`, or `module:Name` where `Name` alone is ambiguous in the document."""
    return [
        n if len(lookup_in_doc(doc, n)) == 1 else s.qualname
        for n, s in zip(names, specs, strict=True)
    ]


def _title(draft: _Draft, last: bool, only: bool) -> str:
    shorts = [n.spec.short_name for n in draft.specs]
    listed = ", ".join(shorts[:3]) + (f" and {len(shorts) - 3} more" if len(shorts) > 3 else "")
    if only:
        return f"All specs: {listed}"
    if draft.infra:
        return f"Infrastructure: {listed}"
    if last:
        return f"Integration: {listed}"
    groups = {n.group for n in draft.specs}
    label = groups.pop().rsplit(".", 1)[-1] if len(groups) == 1 else "Helpers"
    return f"{label}: {listed}"


def _purpose(draft: _Draft, last: bool, deps: list[int]) -> str:
    built = f" on top of {', '.join(f'Step {d}' for d in deps)}" if deps else ""
    if draft.infra:
        return f"the classes, constructors and module-level pieces every later step uses{built}."
    if last:
        return (
            f"the top-level entry points that tie the earlier steps together{built}; test them "
            "end to end."
        )
    return f"the next layer of helpers, bottom-up{built}."


# --------------------------------------------------------------------------- rendering


def render_step(step: Step) -> str:
    """One step as Markdown (heading plus fields, FORMAT.md order), ending with a newline."""
    deps = ", ".join(str(d) for d in step.depends_on) or "none"
    lines = [
        f"### Step {step.number}: {step.title}",
        f"- status: {step.status.value}",
        f"- depends on: {deps}",
        f"- methods: {', '.join(f'`{m}`' for m in step.methods)}",
        f"- purpose: {step.purpose}",
        f"- verify: {', '.join(f'`{v}`' for v in step.verify)}",
    ]
    if step.date:
        lines.append(f"- date: {step.date}")
    if step.verified:
        lines.append(f"- verified: {step.verified}")
    return "\n".join(lines) + "\n"


def render_plan(steps: list[Step]) -> str:
    """All steps, separated by blank lines; `""` for no steps."""
    return "\n".join(render_step(s) for s in steps)


# --------------------------------------------------------------------------- revisions

_VERSION_LINE = re.compile(r"^version:\s*['\"]?([^'\"\s#]+)")
_ROW = re.compile(r"^\|\s*v?(\d+\.\d+(?:\.\d+)?)\s*\|")


def _front_version(text: str) -> tuple[str | None, int]:
    """(version, 1-based line) from raw front matter text; (None, 1) when absent."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None, 1
    for i, line in enumerate(lines[1:], start=2):
        if line.rstrip("\r") == "---":
            break
        m = _VERSION_LINE.match(line)
        if m:
            return m.group(1), i
    return None, 1


def revision_rows(text: str) -> list[str]:
    """Version cells of revision-table rows anywhere in `text` (used for the HEAD version)."""
    return [m.group(1) for line in text.split("\n") if (m := _ROW.match(line.strip()))]


def check_revision(doc: Document, head_text: str | None = None) -> list[Diagnostic]:
    """DD080 warnings: the front matter version has no Section 7 row; or, given the document's
    text at HEAD, the version changed since HEAD while no revision row was added."""
    version = doc.front.version
    _, line = _front_version(doc.text)
    loc = Loc(path=doc.path, line=line, col=len("version: ") + 1 if line > 1 else 1)
    if version not in doc.revisions:
        return [
            _diag(
                loc,
                "DD080",
                f"version {version} has no row in Section 7's revision table",
                "warning",
            )
        ]
    if head_text is None:
        return []
    old_version, _ = _front_version(head_text)
    if old_version is None or old_version == version:
        return []
    if len(doc.revisions) <= len(revision_rows(head_text)):
        return [
            _diag(
                loc,
                "DD080",
                f"version changed from {old_version} to {version} since HEAD but no revision row "
                "was added",
                "warning",
            )
        ]
    return []


# --------------------------------------------------------------------------- graphs


def _graph_parts(doc: Document) -> tuple[dict[str, int], dict[str, str], list[tuple[str, str]]]:
    """(step of each listed spec, node id of each spec, spec dependency edges dep -> user)."""
    index = spec_index(doc)
    ids = {q: f"s{i}" for i, q in enumerate(index, start=1)}
    where: dict[str, int] = {}
    for step in doc.steps:
        for name in step.methods:
            found = lookup_in_doc(doc, name)
            if len(found) == 1:
                where.setdefault(found[0].qualname, step.number)
    edges = [(d, q) for q, spec in index.items() for d in local_deps(doc, spec)]
    return where, ids, edges


def _label(text: str) -> str:
    return text.replace('"', "'")


def render_mermaid(doc: Document) -> str:
    """A Mermaid flowchart: one subgraph per step (specs inside), step and spec dependencies as
    arrows from prerequisite to dependent. Specs in no step are drawn outside any subgraph."""
    where, ids, edges = _graph_parts(doc)
    index = spec_index(doc)
    lines = ["flowchart TD"]
    for step in doc.steps:
        lines.append(
            f'  subgraph step{step.number}["Step {step.number}: {_label(step.title)} '
            f'({step.status.value})"]'
        )
        lines += [
            f'    {ids[q]}["{_label(index[q].name)}"]' for q in index if where.get(q) == step.number
        ]
        lines.append("  end")
    lines += [f'  {ids[q]}["{_label(index[q].name)}"]' for q in index if q not in where]
    lines += [
        f"  step{d} ==> step{s.number}" for s in doc.steps for d in s.depends_on if d != s.number
    ]
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in edges]
    return "\n".join(lines) + "\n"


def render_dot(doc: Document) -> str:
    """The same graph as Graphviz DOT: a cluster per step; bold edges between steps."""
    where, ids, edges = _graph_parts(doc)
    index = spec_index(doc)
    lines = [f'digraph "{_label(doc.path)}" {{', "  compound=true;", "  node [shape=box];"]
    first: dict[int, str] = {}
    for step in doc.steps:
        lines.append(f"  subgraph cluster_step{step.number} {{")
        lines.append(f'    label="Step {step.number}: {_label(step.title)} ({step.status.value})";')
        members = [q for q in index if where.get(q) == step.number]
        if not members:
            lines.append(f'    step{step.number} [label="(empty)", shape=plaintext];')
        for q in members:
            lines.append(f'    {ids[q]} [label="{_label(index[q].name)}"];')
        first[step.number] = ids[members[0]] if members else f"step{step.number}"
        lines.append("  }")
    lines += [f'  {ids[q]} [label="{_label(index[q].name)}"];' for q in index if q not in where]
    for s in doc.steps:
        for d in s.depends_on:
            if d in first and d != s.number:
                lines.append(
                    f"  {first[d]} -> {first[s.number]} [ltail=cluster_step{d}, "
                    f"lhead=cluster_step{s.number}, style=bold];"
                )
    lines += [f"  {ids[a]} -> {ids[b]};" for a, b in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"
