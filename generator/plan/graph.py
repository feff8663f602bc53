"""The step graph of a plan as Mermaid or Graphviz dot."""

from __future__ import annotations

from generator.models import Document
from generator.plan.validate import (
    local_deps,
    lookup_in_doc,
    spec_index,
)

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
