"""Section 6 planning: validate_plan (DD072-DD079), derive_plan, render_plan, DD080, and the
byte-minimal document edits of generator/docedit.py."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.docedit import (
    EditError,
    insert_plan,
    set_plan_block,
    set_step_fields,
)
from generator.models import (
    Document,
    FrontMatter,
    Loc,
    ModuleSpec,
    Spec,
    SpecKind,
    Step,
    StepStatus,
)
from generator.parser import parse_document
from generator.plan import (
    check_revision,
    derive_plan,
    render_dot,
    render_mermaid,
    render_plan,
    validate_plan,
)

DATA = Path(__file__).parent / "data"
BASE = (DATA / "steps" / "base.md").read_text(encoding="utf-8")
PLAN_FIXTURES = sorted((DATA / "malformed").glob("plan_*.md"))


def parse(text: str, rel: str = "design/demo.md") -> Document:
    doc, diags = parse_document(Path(rel), rel, text)
    assert doc is not None, diags
    assert not [d for d in diags if d.severity == "error"], [d.render() for d in diags]
    return doc


def without_plan(text: str) -> str:
    """`text` with Section 6 reduced to its heading and one line of prose."""
    start, end = text.index("## 6. Implementation plan"), text.index("## 7.")
    return text[:start] + "## 6. Implementation plan\n\nTo be planned.\n\n" + text[end:]


def changed_lines(old: str, new: str) -> list[str]:
    """The +/- lines of a unified diff (without headers)."""
    diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), n=0)
    return [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]


# --------------------------------------------------------------------------- hand-built documents


def make_doc(specs: list[tuple[str, list[str]]], steps: list[Step] | None = None) -> Document:
    """A document of module `demo.m` with `specs` as (name, deps); `Class` names start upper."""
    built = []
    for i, (name, deps) in enumerate(specs, start=1):
        kind = (
            SpecKind.method
            if "." in name
            else SpecKind.cls
            if name[0].isupper()
            else SpecKind.function
        )
        built.append(
            Spec(
                kind=kind,
                name=name,
                module="demo.m",
                number=f"5.1.{i}",
                loc=Loc(path="design/demo.md", line=10 * i),
                deps=deps,
            )
        )
    module = ModuleSpec(
        name="demo.m",
        path="demo/m.py",
        number="5.1",
        loc=Loc(path="design/demo.md", line=5),
        specs=built,
    )
    return Document(
        path="design/demo.md",
        text="",
        front=FrontMatter(title="t", version="0.1.0", package="demo", status="draft"),
        front_loc=Loc(path="design/demo.md"),
        modules=[module],
        steps=steps or [],
        revisions=["0.1.0"],
    )


def step(
    n: int, methods: list[str], deps: list[int] = (), status: StepStatus = StepStatus.not_started
) -> Step:
    return Step(
        number=n,
        title=f"s{n}",
        loc=Loc(path="design/demo.md", line=100 + 10 * n),
        methods=methods,
        depends_on=list(deps),
        status=status,
        purpose="p",
        verify=[f"steps/demo/test_step{n}.py"],
    )


def codes(diags) -> list[str]:
    return [d.code for d in diags]


# --------------------------------------------------------------------------- validate_plan


def test_base_document_plan_is_valid() -> None:
    doc = parse(BASE)
    assert len(doc.steps) == 2
    assert validate_plan(doc) == []


@pytest.mark.parametrize("path", PLAN_FIXTURES, ids=[p.stem for p in PLAN_FIXTURES])
def test_plan_fixture_reports_its_code_at_its_line(path: Path) -> None:
    code, line = path.with_suffix(".expect").read_text().split()
    doc = parse(path.read_text(encoding="utf-8"), f"design/{path.name}")
    found = [(d.code, d.loc.line) for d in validate_plan(doc)]
    assert found == [(code, int(line))]


def test_plan_fixtures_cover_the_plan_codes() -> None:
    covered = {p.with_suffix(".expect").read_text().split()[0] for p in PLAN_FIXTURES}
    assert {"DD072", "DD073", "DD074", "DD075", "DD076", "DD077", "DD078", "DD079"} <= covered


def test_loc_points_at_the_name_in_the_field_value() -> None:
    text = BASE.replace(
        "- methods: `GpuPool.shrink_sampler`", "- methods: `GpuPool.shrink_sampler`, `Nope`"
    )
    doc = parse(text)
    (diag,) = validate_plan(doc)
    line = text.split("\n")[diag.loc.line - 1]
    assert line[diag.loc.col - 1 :].startswith("`Nope`")


def test_no_steps_no_plan_diagnostics() -> None:
    assert validate_plan(make_doc([("A", []), ("f", ["A"])])) == []


def test_too_many_specs_in_one_step() -> None:
    names = [f"f{i}" for i in range(11)]
    doc = make_doc([(n, []) for n in names], [step(1, names)])
    assert codes(validate_plan(doc)) == ["DD078"]


def test_in_progress_on_not_started_and_done_on_in_progress() -> None:
    doc = make_doc(
        [("a", []), ("b", []), ("c", [])],
        [
            step(1, ["a"]),
            step(2, ["b"], [1], StepStatus.in_progress),
            step(3, ["c"], [2], StepStatus.done),
        ],
    )
    diags = validate_plan(doc)
    assert codes(diags) == ["DD079", "DD079"]
    assert "Step 2 is IN_PROGRESS" in diags[0].message and "Step 3 is DONE" in diags[1].message


def test_self_dependency_and_transitive_closure() -> None:
    doc = make_doc(
        [("a", []), ("b", ["a"]), ("c", ["a"])],
        [step(1, ["a"]), step(2, ["b"], [1, 2]), step(3, ["c"], [2])],
    )
    diags = validate_plan(doc)
    assert codes(diags) == ["DD075"]  # self; c reaches a through Step 2 -> Step 1


def test_method_in_an_earlier_step_than_its_class() -> None:
    doc = make_doc([("A", []), ("A.run", [])], [step(1, ["A.run"]), step(2, ["A"], [1])])
    assert codes(validate_plan(doc)) == ["DD077"]


# --------------------------------------------------------------------------- derive_plan


def test_derive_orders_infrastructure_first_and_integration_last() -> None:
    doc = make_doc(
        [
            ("Config", []),
            ("Pool", ["Config"]),
            ("Pool.__init__", []),
            ("Pool._check", []),
            ("Pool._ranks", []),
            ("Pool.shrink", ["Pool._check", "Pool._ranks"]),
            ("Pool.expand", ["Pool._check", "Pool._ranks"]),
            ("run", ["Pool.shrink", "Pool.expand"]),
        ]
    )
    steps = derive_plan(doc)
    assert steps[0].methods[:3] == ["Config", "Pool", "Pool.__init__"]
    assert steps[0].title.startswith("Infrastructure")
    assert steps[-1].title.startswith("Integration") and "run" in steps[-1].methods
    assert [s.number for s in steps] == list(range(1, len(steps) + 1))
    assert all(s.status is StepStatus.not_started and s.purpose for s in steps)
    assert steps[1].verify == ["steps/demo/test_step2.py"]
    assert validate_plan(doc.model_copy(update={"steps": steps})) == []


def test_depends_on_is_minimal() -> None:
    doc = make_doc([("a", []), ("B", ["a"]), ("B.x", []), ("c", ["B.x", "a"])])
    steps = derive_plan(doc)
    closure_free = [s for s in steps if s.depends_on]
    for s in closure_free:
        for d in s.depends_on:  # no listed step is reachable through another listed one
            others = [o for o in s.depends_on if o != d]
            assert all(d not in steps[o - 1].depends_on for o in others)


def test_derive_is_deterministic_and_renders_parsable_markdown() -> None:
    doc = parse(without_plan(BASE))
    steps = derive_plan(doc)
    assert steps == derive_plan(doc)
    text = insert_plan(doc.text, doc, render_plan(steps))
    planned = parse(text)
    assert [(s.number, s.title, s.methods, s.depends_on, s.verify) for s in planned.steps] == [
        (s.number, s.title, s.methods, s.depends_on, s.verify) for s in steps
    ]
    assert validate_plan(planned) == []


@st.composite
def dags(draw: st.DrawFn) -> list[tuple[str, list[str]]]:
    """Random specs in document order: classes, their methods and functions; deps only point
    to earlier specs (acyclic), methods follow their class."""
    specs: list[tuple[str, list[str]]] = []
    classes: list[str] = []
    for i in range(draw(st.integers(1, 30))):
        kind = draw(
            st.sampled_from(["class", "method", "function"] if classes else ["class", "function"])
        )
        name = (
            f"C{i}"
            if kind == "class"
            else f"{draw(st.sampled_from(classes))}.m{i}"
            if kind == "method"
            else f"f{i}"
        )
        earlier = [n for n, _ in specs]
        deps = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=4)) if earlier else []
        specs.append((name, deps))
        if kind == "class":
            classes.append(name)
    return specs


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags())
def test_derived_plans_always_validate(specs: list[tuple[str, list[str]]]) -> None:
    doc = make_doc(specs)
    steps = derive_plan(doc)
    assert validate_plan(doc.model_copy(update={"steps": steps})) == []
    assert sorted(m for s in steps for m in s.methods) == sorted(n for n, _ in specs)
    assert all(1 <= len(s.methods) <= 10 for s in steps)
    assert derive_plan(doc) == steps


# --------------------------------------------------------------------------- docedit


def test_set_step_fields_touches_only_the_edited_and_added_lines() -> None:
    doc = parse(BASE)
    new = set_step_fields(
        BASE,
        doc.steps[0],
        {"status": "DONE", "date": "2026-11-22", "verified": "passed (1 checks)"},
    )
    assert changed_lines(BASE, new) == [
        "-- status: NOT_STARTED\n",
        "+- status: DONE\n",
        "+- date: 2026-11-22\n",
        "+- verified: passed (1 checks)\n",
    ]
    again = parse(new).steps[0]
    assert (again.status, again.date, again.verified) == (
        StepStatus.done,
        "2026-11-22",
        "passed (1 checks)",
    )
    # existing fields are replaced in place, not added twice
    newer = set_step_fields(new, again, {"date": "2026-11-23", "verified": "passed (2 checks)"})
    assert changed_lines(new, newer) == [
        "-- date: 2026-11-22\n",
        "-- verified: passed (1 checks)\n",
        "+- date: 2026-11-23\n",
        "+- verified: passed (2 checks)\n",
    ]


def test_set_step_field_keeps_crlf_and_everything_else() -> None:
    crlf = BASE.replace("\n", "\r\n")
    doc = parse(crlf)
    new = set_step_fields(crlf, doc.steps[1], {"status": "IN_PROGRESS"})
    assert new == crlf.replace(
        "- status: NOT_STARTED\r\n- depends on: 1", "- status: IN_PROGRESS\r\n- depends on: 1"
    )
    added = set_step_fields(crlf, doc.steps[1], {"date": "2026-11-22"})
    assert added == crlf.replace("test_step2.py`\r\n", "test_step2.py`\r\n- date: 2026-11-22\r\n")


def test_set_step_field_rejects_stale_positions() -> None:
    doc = parse(BASE)
    with pytest.raises(EditError):
        set_step_fields("\n" * 70, doc.steps[0], {"status": "DONE"})


def test_insert_plan_only_adds_lines() -> None:
    text = without_plan(BASE)
    doc = parse(text)
    markdown = render_plan(derive_plan(doc))
    new = insert_plan(text, doc, markdown)
    assert all(line.startswith("+") for line in changed_lines(text, new))
    assert "To be planned.\n\n### Step 1:" in new and "\n\n## 7. Revision" in new
    with pytest.raises(EditError):
        insert_plan(BASE, parse(BASE), markdown)


def test_set_plan_block_inserts_then_replaces_minimally() -> None:
    doc = parse(BASE)
    first = set_plan_block(BASE, doc, "mermaid", render_mermaid(doc))
    assert all(line.startswith("+") for line in changed_lines(BASE, first))
    assert first.index("```mermaid") < first.index("### Step 1")
    planned = parse(first)
    assert len(planned.steps) == 2 and validate_plan(planned) == []
    second = set_plan_block(first, planned, "mermaid", "flowchart TD\n  x\n")
    assert second.count("```mermaid") == 1 and "  x\n```" in second


def test_graphs_have_a_subgraph_per_step() -> None:
    doc = parse(BASE)
    mermaid = render_mermaid(doc)
    assert (
        'subgraph step1["Step 1: Pool type (NOT_STARTED)"]' in mermaid
        and "step1 ==> step2" in mermaid
    )
    dot = render_dot(doc)
    assert "subgraph cluster_step2" in dot and dot.rstrip().endswith("}")


# --------------------------------------------------------------------------- DD080


def test_version_without_revision_row_warns() -> None:
    text = BASE.replace("version: 0.1.0", "version: 0.2.0")
    (diag,) = check_revision(parse(text))
    assert (diag.code, diag.severity, diag.loc.line) == ("DD080", "warning", 3)


def test_version_bumped_since_head_without_a_new_row_warns() -> None:
    head = BASE
    edited = BASE.replace("version: 0.1.0", "version: 0.2.0").replace(
        "| 0.1.0 | 2026-11-21", "| 0.2.0 | 2026-11-21"
    )
    assert check_revision(parse(edited)) == []
    assert [d.code for d in check_revision(parse(edited), head)] == ["DD080"]
    added = BASE.replace("version: 0.1.0", "version: 0.2.0") + "| 0.2.0 | 2026-11-22 | second |\n"
    assert check_revision(parse(added), head) == []


def test_added_field_goes_after_a_multi_line_last_field() -> None:
    text = BASE.replace(
        "- verify: `steps/demo/test_step1.py`",
        "- verify: `steps/demo/test_step1.py`,\n  `cmd: true`",
    )
    doc = parse(text)
    assert doc.steps[0].verify == ["steps/demo/test_step1.py", "cmd: true"]
    new = set_step_fields(text, doc.steps[0], {"date": "2026-11-22"})
    assert "  `cmd: true`\n- date: 2026-11-22\n" in new
    assert parse(new).steps[0].date == "2026-11-22"
