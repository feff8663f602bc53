"""Derive a plan from `deps:` (3-5 related specs a step, infrastructure first, integration
last) and render steps back as Markdown in the FORMAT.md grammar."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from generator.models import Document, Loc, Spec, SpecKind, Step, StepStatus
from generator.plan.validate import (
    INIT_METHODS,
    MIN_STEP_SPECS,
    TARGET_STEP_SPECS,
    Resolver,
    local_deps,
    local_resolver,
    lookup_in_doc,
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
