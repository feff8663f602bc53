"""Parser tests: the grammar of design/FORMAT.md, each diagnostic at its exact line.

Most cases edit the valid fixture `tests/data/valid/gpu_pool_min.md` in one place and assert
the complete list of diagnostics, so a test also proves that a defect causes no cascade.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.models import Diagnostic, Document, SpecKind, StepStatus
from generator.parser import parse_document

DATA = Path(__file__).parent / "data"
VALID = DATA / "valid" / "gpu_pool_min.md"
MALFORMED = sorted((DATA / "malformed").glob("parse_*.md"))
BASE = VALID.read_text(encoding="utf-8")
REL = "design/gpu_pool.md"

STEP_1 = "### Step 1: The whole pool\n"
STEP_2 = """
### Step 2: Expansion
- status: NOT_STARTED
- depends on: Step 1
- methods: `GpuPool.expand_sampler`
- purpose: grow the sampler again.
"""


def parse(text: str) -> tuple[Document | None, list[Diagnostic]]:
    return parse_document(Path(REL), REL, text)


def found(text: str) -> list[tuple[str, int]]:
    """(code, line) of every diagnostic of `text`."""
    return [(d.code, d.loc.line) for d in parse(text)[1]]


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the `nth` line of `text` containing `needle`."""
    hits = [n for n, line in enumerate(text.split("\n"), 1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not in text"
    return hits[nth - 1]


def edit(old: str, new: str, text: str = BASE) -> str:
    """`text` with the single occurrence of `old` replaced by `new`."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def before_plan(extra: str, text: str = BASE) -> str:
    """`text` with `extra` inserted right before Section 6."""
    return edit("## 6. Implementation plan", extra + "\n## 6. Implementation plan", text)


def only(text: str) -> Diagnostic:
    """The one diagnostic of `text`."""
    diagnostics = parse(text)[1]
    assert len(diagnostics) == 1, [d.render() for d in diagnostics]
    return diagnostics[0]


# --------------------------------------------------------------------------- the valid document


def test_valid_document_parses_without_diagnostics() -> None:
    doc, diagnostics = parse(BASE)
    assert diagnostics == []
    assert doc is not None
    assert doc.path == REL and doc.text == BASE
    assert (doc.front.title, doc.front.version, doc.front.package) == (
        "GPU pool (minimal)",
        "0.1.0",
        "demo",
    )
    assert doc.front_loc.line == 1


def test_valid_document_sections() -> None:
    doc = parse(BASE)[0]
    assert doc is not None
    assert [(s.number, s.loc.line, s.end_line) for s in doc.sections] == [
        (1, 10, 13),
        (2, 14, 18),
        (3, 19, 22),
        (4, 23, 26),
        (5, 27, 86),
        (6, 87, 100),
        (7, 101, 107),
    ]
    assert doc.section(5) is not None and doc.section(5).title == "API and Implementation"
    assert doc.plan_loc is not None and doc.plan_loc.line == 87
    assert doc.revisions == ["0.1.0"]


def test_valid_document_module_and_specs() -> None:
    doc = parse(BASE)[0]
    assert doc is not None
    [module] = doc.modules
    assert (module.name, module.path, module.number, module.loc.line) == (
        "demo.pool",
        "demo/pool.py",
        "5.1",
        29,
    )
    [prelude] = module.prelude
    assert prelude.loc.line == 34 and prelude.code.startswith('"""A pool of GPUs')
    assert [(s.kind, s.name, s.number, s.loc.line, s.code.loc.line) for s in doc.specs()] == [
        (SpecKind.cls, "GpuPool", "5.1.1", 41, 44),
        (SpecKind.method, "GpuPool._validate_gpu_allocation", "5.1.2", 50, 56),
        (SpecKind.method, "GpuPool._ranks_on", "5.1.3", 61, 66),
        (SpecKind.method, "GpuPool.shrink_sampler", "5.1.4", 71, 79),
    ]
    assert [s.deps for s in doc.specs()] == [
        [],
        [],
        [],
        ["GpuPool._validate_gpu_allocation", "GpuPool._ranks_on"],
    ]
    shrink = doc.specs()[3]
    assert shrink.module == "demo.pool" and shrink.qualname == "demo.pool:GpuPool.shrink_sampler"
    assert shrink.field("returns") is not None
    assert shrink.field("returns").value == "the ranks to offload"
    assert (shrink.field("deps").loc.line, shrink.field("deps").loc.col) == (73, 9)


def test_valid_document_annotations() -> None:
    doc = parse(BASE)[0]
    assert doc is not None
    annotations = [a for s in doc.specs() for a in s.annotations]
    assert [(a.kind, a.pattern, a.args, a.loc.line, a.loc.col) for a in annotations] == [
        ("VAL", "VAL_INT_RANGE", "target_gpus, min=0, max=7, each=True", 58, 5),
        ("AST", "AST_POSTCONDITION", "len(offload_ranks) > 0", 83, 5),
    ]


def test_valid_document_plan() -> None:
    doc = parse(BASE)[0]
    assert doc is not None
    [step] = doc.steps
    assert (step.number, step.title, step.loc.line) == (1, "The whole pool", 94)
    assert step.status is StepStatus.not_started
    assert step.depends_on == []
    assert step.methods == [
        "GpuPool",
        "GpuPool._validate_gpu_allocation",
        "GpuPool._ranks_on",
        "GpuPool.shrink_sampler",
    ]
    assert step.purpose == "the pool and its shrink operation."
    assert step.verify == ['cmd: python -c "import demo.pool"']
    assert [(f.key, f.loc.line, f.loc.col) for f in step.fields] == [
        ("status", 95, 11),
        ("depends on", 96, 15),
        ("methods", 97, 12),
        ("purpose", 98, 12),
        ("verify", 99, 11),
    ]


def test_field_locations_point_at_the_value_for_in_place_edits() -> None:
    doc = parse(BASE)[0]
    assert doc is not None
    lines = BASE.split("\n")
    for step in doc.steps:
        for f in step.fields:
            assert lines[f.loc.line - 1][f.loc.col - 1 :] == f.value


def test_reading_the_file_equals_passing_the_text() -> None:
    from_file = parse_document(VALID, REL)
    assert from_file == parse(BASE)


def test_crlf_line_endings_parse_the_same() -> None:
    doc, diagnostics = parse(BASE.replace("\n", "\r\n"))
    assert diagnostics == []
    assert doc is not None
    assert [s.loc.line for s in doc.specs()] == [41, 50, 61, 71]
    assert doc.steps[0].fields[0].loc.col == 11


def test_section_dot_is_optional_and_titles_are_free() -> None:
    doc, diagnostics = parse(edit("## 5. API and Implementation", "## 5 The API"))
    assert diagnostics == []
    assert doc is not None and doc.section(5).title == "The API"


# --------------------------------------------------------------------------- front matter


def test_missing_front_matter_is_dd001_and_no_document() -> None:
    text = BASE.split("---\n", 2)[2]
    doc, diagnostics = parse(text)
    assert doc is None
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD001", 1)]


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        pytest.param(edit("status: draft\n---\n", "status: draft\n\n"), 1, 1, id="unterminated"),
        pytest.param("---\n- a\n- b\n---\n", 1, 1, id="not-a-mapping"),
        pytest.param("---\n---\n", 1, 1, id="empty"),
        pytest.param(edit("title: GPU pool (minimal)", "title: GPU: pool"), 2, 11, id="bad-yaml"),
        pytest.param(edit("package: demo", "package: [demo"), 5, 7, id="unclosed-flow"),
    ],
)
def test_unusable_front_matter_is_dd001(text: str, line: int, col: int) -> None:
    doc, diagnostics = parse(text)
    assert doc is None
    assert [(d.code, d.loc.line, d.loc.col) for d in diagnostics] == [("DD001", line, col)]


def test_non_utf8_file_is_dd001_at_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    path.write_bytes(BASE.encode() + b"caf\xe9\n")
    doc, diagnostics = parse_document(path, "bad.md")
    assert doc is None
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD001", 108)]


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param("status: draft", "status: final", 5, id="bad-status"),
        pytest.param("version: 0.1.0", "version: one", 3, id="bad-version"),
        pytest.param("title: GPU pool (minimal)", "title: ''", 2, id="empty-title"),
        pytest.param("package: demo", "package: demo-pkg", 4, id="bad-package"),
        pytest.param("status: draft\n", "status: draft\nowner: me\n", 6, id="unknown-key"),
        pytest.param("status: draft\n", "status: draft\ntitle: again\n", 6, id="repeated-key"),
        pytest.param("package: demo\n", "", 1, id="missing-key"),
    ],
)
def test_invalid_front_matter_field_is_dd002(old: str, new: str, line: int) -> None:
    doc, diagnostics = parse(edit(old, new))
    assert doc is None
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD002", line)]


def test_version_is_read_as_text_not_as_a_float() -> None:
    doc, diagnostics = parse(edit("version: 0.1.0", "version: 0.10"))
    assert diagnostics == []
    assert doc is not None and doc.front.version == "0.10"


def test_body_is_still_checked_after_dd002() -> None:
    text = edit("status: draft", "status: final", edit("def _ranks_on(", "def ranks_on("))
    doc, diagnostics = parse(text)
    assert doc is None
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD002", 5), ("DD034", 66)]


# --------------------------------------------------------------------------- sections


def test_missing_section_is_reported_before_the_next_present_one() -> None:
    text = edit("## 3. Top-level decisions and architecture\n\n", "")
    assert found(text) == [("DD010", line_of(text, "## 4."))]


def test_missing_last_section_is_reported_at_the_last_line() -> None:
    text = BASE.split("## 7.")[0]  # ends with the blank line 100
    assert found(text) == [("DD010", 100)]


def test_document_without_sections_reports_all_seven() -> None:
    text = BASE.split("## 1.")[0]
    assert [code for code, _ in found(text)] == ["DD010"] * 7


def test_duplicated_section_is_dd011() -> None:
    text = before_plan("## 4. Data model again\n")
    assert found(text) == [("DD011", line_of(text, "## 4. Data model again"))]


def test_section_out_of_order_is_dd012() -> None:
    text = edit("## 3. Top-level", "## 4. Top-level", edit("## 4. Data model", "## 3. Data model"))
    assert found(text) == [("DD012", line_of(text, "## 3. Data model"))]


@pytest.mark.parametrize("heading", ["## Appendix", "## 8. Appendix", "## 0. Preface"])
def test_unknown_level2_heading_is_dd012(heading: str) -> None:
    text = edit("## 7. Revision", f"{heading}\n\nProse.\n\n## 7. Revision")
    assert found(text) == [("DD012", line_of(text, heading))]


def test_unknown_level2_heading_ends_the_previous_section() -> None:
    text = before_plan("## Appendix\n\n#### 9.9 not a spec\n")
    doc, diagnostics = parse(text)
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD012", line_of(text, "## Appendix"))]
    assert doc is not None and doc.section(5).end_line == line_of(text, "## Appendix") - 1


# --------------------------------------------------------------------------- modules


@pytest.mark.parametrize(
    "heading",
    ["### Module `demo.pool`", "### 5.1 Module `demo.pool-x`", "### 5.1 Module `demo.pool` too"],
)
def test_invalid_module_heading_is_dd020_without_cascade(heading: str) -> None:
    doc, diagnostics = parse(edit("### 5.1 Module `demo.pool`", heading))
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD020", 29)]
    assert doc is not None and doc.modules == []


def test_module_path_field_overrides_the_derived_path() -> None:
    text = edit("The pool and its validation.", "- path: `demo/pool_impl.py`\n- A prose bullet")
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.modules[0].path == "demo/pool_impl.py"
    assert doc.modules[0].fields[0].loc.line == 31


@pytest.mark.parametrize(
    "value",
    [
        "/abs/pool.py",
        "demo/pool.txt",
        "../pool.py",
        "",
        ".git/hooks/pool.py",
        "demo/./pool.py",
        "demo\\..\\..\\pool.py",
        "C:/pool.py",
        "~/pool.py",
        "demo/ pool.py",
    ],
)
def test_invalid_module_path_is_dd020_at_the_value(value: str) -> None:
    diagnostic = only(edit("The pool and its validation.", f"- path: {value}"))
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD020", 31, 9)


def test_module_declared_twice_is_dd021() -> None:
    text = before_plan("### 5.2 Module `demo.pool`\n")
    assert found(text) == [("DD021", line_of(text, "### 5.2"))]


def test_module_outside_package_is_dd023() -> None:
    text = before_plan("### 5.2 Module `demolition`\n")
    assert found(text) == [("DD023", line_of(text, "### 5.2"))]


def test_the_package_itself_is_a_valid_module() -> None:
    doc, diagnostics = parse(before_plan('### 5.2 Module `demo`\n\n```python\n"""Pkg."""\n```\n'))
    assert diagnostics == []
    assert doc is not None and [m.path for m in doc.modules] == ["demo/pool.py", "demo.py"]


def test_unknown_module_field_is_dd060() -> None:
    diagnostic = only(edit("The pool and its validation.", "- owner: me"))
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD060", 31, 3)


def test_prose_level3_heading_is_allowed_and_ends_the_module() -> None:
    text = edit("### 5.1 Module", "### 5.0 Overview\n\nProse.\n\n### 5.1 Module")
    assert found(text) == []
    text = before_plan("### 5.2 Error handling\n\n#### 5.2.1 `helper`\n")
    assert found(text) == [("DD022", line_of(text, "#### 5.2.1"))]


# --------------------------------------------------------------------------- spec headings


def test_spec_heading_before_any_module_is_dd022() -> None:
    text = edit("### 5.1 Module", "#### 5.0.1 `helper`\n\n### 5.1 Module")
    assert found(text) == [("DD022", line_of(text, "#### 5.0.1"))]


@pytest.mark.parametrize(
    "heading",
    [
        "#### 5.1.5 helper",
        "#### 5.1.5 `a.b.c`",
        "#### 5.1.5 Class `Gpu.Pool`",
        "#### `helper`",
        "#### 5.1.5 `helper` and more",
    ],
)
def test_malformed_spec_heading_is_dd022(heading: str) -> None:
    text = before_plan(f"{heading}\n")
    assert found(text) == [("DD022", line_of(text, heading))]


def test_function_spec() -> None:
    spec_md = '#### 5.1.5 `helper`\n\n- deps: none\n\n```python\ndef helper() -> int:\n    """One."""\n    return 1\n```\n'
    doc, diagnostics = parse(before_plan(spec_md))
    assert diagnostics == []
    assert doc is not None
    assert (doc.specs()[-1].kind, doc.specs()[-1].name) == (SpecKind.function, "helper")


def test_async_and_decorated_defs_are_accepted() -> None:
    code = '@staticmethod\nasync def _ranks_on(target_gpus: list[int]) -> list[int]:\n    """X."""\n    return target_gpus\n'
    text = edit(
        'def _ranks_on(self, target_gpus: list[int]) -> list[int]:\n    """The data-parallel ranks placed on `target_gpus` (one per GPU here)."""\n    return sorted(target_gpus)\n',
        code,
    )
    assert found(text) == []


# --------------------------------------------------------------------------- spec code


def test_spec_without_python_block_is_dd030_at_the_heading() -> None:
    text = edit("```python\ndef _ranks_on", "```text\ndef _ranks_on")
    assert found(text) == [("DD030", 61)]


def test_second_python_block_is_dd030_at_that_block() -> None:
    text = edit(
        "    return offload_ranks\n```\n",
        "    return offload_ranks\n```\n\n```python\nx = 1\n```\n",
    )
    diagnostic = only(text)
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD030", 87, 1)
    doc = parse(text)[0]
    assert doc is not None and doc.specs()[3].code.loc.line == 79


def test_syntax_error_in_method_is_dd031_at_the_document_line_and_column() -> None:
    diagnostic = only(edit("return sorted(target_gpus)", "return sorted(target_gpus]"))
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD031", 68, 30)


def test_syntax_error_in_prelude_is_dd031() -> None:
    diagnostic = only(edit("MAX_GPUS = 8", "MAX_GPUS = = 8"))
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD031", 38, 12)


def test_syntax_error_in_indented_fence_counts_the_indent() -> None:
    prelude = BASE[BASE.index('```python\n"""A pool') : BASE.index("#### 5.1.1")]
    diagnostic = only(edit(prelude, "  ```python\n  MAX_GPUS = = 8\n  ```\n\n"))
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD031", 34, 14)


def test_syntax_error_in_class_spec_is_dd031() -> None:
    diagnostic = only(edit("num_gpus: int = MAX_GPUS", "num_gpus: int = = MAX_GPUS"))
    assert (diagnostic.code, diagnostic.loc.line) == ("DD031", 47)


@pytest.mark.parametrize(
    ("code", "offset"),
    [
        pytest.param("x = 1\n", 0, id="statement"),
        pytest.param("# only a comment\n", 0, id="empty"),
        pytest.param('class _ranks_on:\n    """X."""\n', 0, id="class-for-method"),
        pytest.param(
            'def _ranks_on(self):\n    """X."""\n\n\nhelper = 1\n', 4, id="second-statement"
        ),
    ],
)
def test_method_code_must_be_one_def_dd032(code: str, offset: int) -> None:
    old = 'def _ranks_on(self, target_gpus: list[int]) -> list[int]:\n    """The data-parallel ranks placed on `target_gpus` (one per GPU here)."""\n    return sorted(target_gpus)\n'
    assert found(edit(old, code)) == [("DD032", 66 + offset)]


def test_class_spec_code_must_be_one_class_dd032() -> None:
    text = edit("class GpuPool:", "def GpuPool(self):")
    assert found(text) == [("DD032", 44)]


def test_missing_docstring_is_dd033_at_the_definition() -> None:
    text = edit(
        '    """The data-parallel ranks placed on `target_gpus` (one per GPU here)."""\n', ""
    )
    assert found(text) == [("DD033", 66)]
    text = edit(
        '    """Which GPUs serve rollout, and which data-parallel rank runs on each."""\n', ""
    )
    assert found(text) == [("DD033", 44)]


def test_name_mismatch_is_dd034() -> None:
    assert found(edit("def _ranks_on(", "def ranks_on(")) == [("DD034", 66)]
    assert found(edit("class GpuPool:", "class Pool:")) == [("DD034", 44)]


def test_class_spec_defining_methods_is_dd035() -> None:
    text = edit(
        "    num_gpus: int = MAX_GPUS\n",
        '    num_gpus: int = MAX_GPUS\n\n    def size(self) -> int:\n        """Size."""\n        return 1\n',
    )
    diagnostic = only(text)
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD035", 49, 5)


def test_method_without_class_spec_is_dd036() -> None:
    text = before_plan(
        '#### 5.1.5 `Scheduler.tick`\n\n- deps: none\n\n```python\ndef tick(self) -> None:\n    """Tick."""\n```\n'
    )
    assert found(text) == [("DD036", line_of(text, "#### 5.1.5"))]


def test_method_before_its_class_spec_is_dd036() -> None:
    class_spec = '#### 5.1.1 Class `GpuPool`\n\n```python\nclass GpuPool:\n    """Which GPUs serve rollout, and which data-parallel rank runs on each."""\n\n    num_gpus: int = MAX_GPUS\n```\n\n'
    text = before_plan(class_spec, edit(class_spec, ""))
    assert [code for code, _ in found(text)] == ["DD036"] * 3


@pytest.mark.parametrize(
    ("definition", "name"),
    [("def clamp(n):\n    return n\n", "def clamp"), ("class Cfg:\n    x = 1\n", "class Cfg")],
)
def test_definitions_in_prelude_are_dd037(definition: str, name: str) -> None:
    text = edit("MAX_GPUS = 8\n", f"MAX_GPUS = 8\n\n\n{definition}")
    assert found(text) == [("DD037", line_of(text, name))]


# --------------------------------------------------------------------------- deps


def test_missing_deps_on_a_method_is_dd041_at_the_heading() -> None:
    text = edit(
        "#### 5.1.3 `GpuPool._ranks_on`\n\n- deps: none\n", "#### 5.1.3 `GpuPool._ranks_on`\n"
    )
    doc, diagnostics = parse(text)
    assert [(d.code, d.loc.line) for d in diagnostics] == [("DD041", 61)]
    assert doc is not None and doc.specs()[2].deps is None


@pytest.mark.parametrize(
    "value",
    [
        "GpuPool._ranks_on",
        "`GpuPool._ranks_on`,",
        "`GpuPool._ranks_on` `GpuPool`",
        "`GpuPool._ranks_on`, `not a name`",
        "`GpuPool._ranks_on`, `GpuPool._ranks_on`",
        "`a.b.c`",
        "",
    ],
)
def test_malformed_deps_is_dd044_at_the_value(value: str) -> None:
    diagnostic = only(
        edit("- deps: `GpuPool._validate_gpu_allocation`, `GpuPool._ranks_on`", f"- deps: {value}")
    )
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD044", 73, 9)


def test_deps_may_name_other_modules() -> None:
    text = edit(
        "- deps: `GpuPool._validate_gpu_allocation`, `GpuPool._ranks_on`",
        "- deps: `helper`, `demo.other:Pool.grow`, `Pool`",
    )
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.specs()[3].deps == ["helper", "demo.other:Pool.grow", "Pool"]


def test_checks_inline_marks_the_specs_annotations() -> None:
    deps = "- deps: `GpuPool._validate_gpu_allocation`, `GpuPool._ranks_on`"
    for value, inline in (("inline", True), ("call", False)):
        doc, diagnostics = parse(edit(deps, f"{deps}\n- checks: {value}"))
        assert diagnostics == []
        assert doc is not None
        spec = doc.specs()[3]
        assert spec.annotations and all(a.inline is inline for a in spec.annotations)
        others = [a for s in doc.specs() if s is not spec for a in s.annotations]
        assert others and not any(a.inline for a in others)


def test_checks_other_than_inline_or_call_is_dd045_at_the_value() -> None:
    deps = "- deps: `GpuPool._validate_gpu_allocation`, `GpuPool._ranks_on`"
    diagnostic = only(edit(deps, f"{deps}\n- checks: fast"))
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD045", 74, 11)
    assert "`checks:` is `inline` or `call`, not `fast`" in diagnostic.message


# --------------------------------------------------------------------------- annotations


@pytest.mark.parametrize(
    "comment",
    [
        "# VAL VAL_INT_RANGE(target_gpus)",
        "# VAL_INT_RANGE(target_gpus)",
        "# VAL: val_int_range(target_gpus)",
        "# VAL: VAL_INT_RANGE target_gpus",
        "# AST: AST_INVARIANT(x) trailing",
        "#VAL:",
    ],
)
def test_malformed_annotation_is_dd054(comment: str) -> None:
    text = edit("# VAL: VAL_INT_RANGE(target_gpus, min=0, max=7, each=True)", comment)
    diagnostic = only(text)
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == ("DD054", 58, 5)


def test_comments_that_are_not_annotations_are_prose() -> None:
    text = edit(
        "    return sorted(target_gpus)\n",
        "    # VALIDATE later; ASTRONOMY aside\n    return sorted(target_gpus)  # VALUE sorted\n",
    )
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.specs()[2].annotations == []


def test_trailing_annotation_is_dd055_not_silently_dropped() -> None:
    text = edit(
        "    return sorted(target_gpus)\n",
        "    return sorted(target_gpus)  # VAL: VAL_NON_EMPTY(target_gpus)\n",
    )
    diagnostic = only(text)
    assert (diagnostic.code, diagnostic.loc.col) == ("DD055", 33)
    assert "own line" in diagnostic.message


def test_annotation_text_inside_a_string_is_not_an_annotation() -> None:
    text = edit(
        '    """The data-parallel ranks placed on `target_gpus` (one per GPU here)."""',
        '    """Ranks.\n\n    # VAL: VAL_NON_EMPTY(target_gpus)\n    """',
    )
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.specs()[2].annotations == []


def test_annotation_in_class_spec_is_dd055() -> None:
    text = edit(
        "    num_gpus: int = MAX_GPUS\n",
        "    num_gpus: int = MAX_GPUS\n    # AST: AST_INVARIANT(num_gpus > 0)\n",
    )
    assert found(text) == [("DD055", 48)]


def test_annotation_in_prelude_is_dd055() -> None:
    text = edit("MAX_GPUS = 8\n", "MAX_GPUS = 8\n# AST: AST_INVARIANT(MAX_GPUS > 0)\n")
    assert found(text) == [("DD055", 39)]


def test_annotation_before_the_function_body_is_dd055() -> None:
    text = edit(
        "def _ranks_on(self, target_gpus: list[int]) -> list[int]:",
        "# VAL: VAL_NON_EMPTY(target_gpus)\ndef _ranks_on(\n    self,\n    # VAL: VAL_NON_EMPTY(target_gpus)\n    target_gpus: list[int],\n) -> list[int]:",
    )
    assert found(text) == [("DD055", 66), ("DD055", 69)]


def test_annotation_after_a_multiline_signature_is_accepted() -> None:
    text = edit(
        "def _ranks_on(self, target_gpus: list[int]) -> list[int]:",
        "def _ranks_on(\n    self, target_gpus: list[int]\n) -> list[int]:\n    # VAL: VAL_NON_EMPTY(target_gpus)",
    )
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None
    [annotation] = doc.specs()[2].annotations
    assert (annotation.pattern, annotation.args, annotation.loc.line) == (
        "VAL_NON_EMPTY",
        "target_gpus",
        69,
    )


# --------------------------------------------------------------------------- spec fields


def test_unknown_and_repeated_spec_fields_are_dd060_at_the_key() -> None:
    text = edit(
        "- raises: ValueError\n", "- raises: ValueError\n- owner: me\n- raises: TypeError\n"
    )
    doc, diagnostics = parse(text)
    assert [(d.code, d.loc.line, d.loc.col) for d in diagnostics] == [
        ("DD060", 54, 3),
        ("DD060", 55, 3),
    ]
    assert doc is not None and doc.specs()[1].field("raises").value == "ValueError"


def test_prose_bullets_and_bullets_after_the_code_are_not_fields() -> None:
    text = edit(
        "- returns: the ranks to offload\n",
        "- returns: the ranks\n  to offload\n- Validate first\n  - nested: x\n1. ordered: x\n",
    )
    text = edit(
        "    return offload_ranks\n```\n",
        "    return offload_ranks\n```\n\n- note: prose after the code.\n",
        text,
    )
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.specs()[3].field("returns").value == "the ranks to offload"


# --------------------------------------------------------------------------- Section 6


def test_section_6_without_steps_is_valid() -> None:
    text = BASE.split(STEP_1)[0] + "\n## 7." + BASE.split("## 7.")[1]
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.steps == [] and doc.plan_loc is not None


def test_several_steps_with_dependencies_and_done_fields() -> None:
    text = edit("\n## 7.", STEP_2 + "- date: 2026-11-22\n- verified: passed (1 check)\n\n## 7.")
    text = edit("- depends on: Step 1", "- depends on: Step 1, 1", text)
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None
    step = doc.steps[1]
    assert (step.number, step.depends_on, step.methods) == (2, [1, 1], ["GpuPool.expand_sampler"])
    assert (step.date, step.verified) == ("2026-11-22", "passed (1 check)")


@pytest.mark.parametrize(
    "heading", ["### Milestones", "### Step: x", "### Step one: x", "### Step 1"]
)
def test_invalid_step_heading_is_dd070(heading: str) -> None:
    text = edit(STEP_1, heading + "\n")
    assert found(text) == [("DD070", 94)]


def test_step_numbers_must_run_1_to_n_dd070() -> None:
    text = edit("\n## 7.", STEP_2.replace("Step 2:", "Step 3:") + "\n## 7.")
    assert found(text) == [("DD070", line_of(text, "### Step 3:"))]


def test_level4_headings_and_prose_in_section_6_are_allowed() -> None:
    text = edit("- verify:", "#### Notes\n\nSome prose.\n\n- verify:")
    assert found(text) == []


@pytest.mark.parametrize(
    ("old", "new", "col"),
    [
        pytest.param("- status: NOT_STARTED", "- status: STARTED", 11, id="status"),
        pytest.param("- status: NOT_STARTED", "- status: done", 11, id="status-case"),
        pytest.param("- depends on: none", "- depends on: first", 15, id="depends-on"),
        pytest.param("- depends on: none", "- depends on: 1,", 15, id="depends-on-comma"),
        pytest.param("- methods: `GpuPool`,", "- methods: GpuPool,", 12, id="methods"),
        pytest.param(
            "- purpose: the pool and its shrink operation.", "- purpose:", 11, id="purpose"
        ),
        pytest.param(
            '- verify: `cmd: python -c "import demo.pool"`',
            "- verify: `tests/x.py`",
            11,
            id="verify",
        ),
        pytest.param(
            '- verify: `cmd: python -c "import demo.pool"`',
            "- verify: steps/x.py",
            11,
            id="verify-ticks",
        ),
        pytest.param(
            '- verify: `cmd: python -c "import demo.pool"`',
            "- verify: `steps/../../outside/test_x.py`",
            11,
            id="verify-escapes-steps",
        ),
    ],
)
def test_invalid_step_field_is_dd071_at_the_value(old: str, new: str, col: int) -> None:
    text = edit(old, new)
    diagnostic = only(text)
    assert (diagnostic.code, diagnostic.loc.line, diagnostic.loc.col) == (
        "DD071",
        line_of(text, new),
        col,
    )


@pytest.mark.parametrize(
    "field", ["- status: NOT_STARTED\n", "- purpose: the pool and its shrink operation.\n"]
)
def test_missing_required_step_field_is_dd071_at_the_heading(field: str) -> None:
    assert found(edit(field, "")) == [("DD071", 94)]


def test_unknown_and_repeated_step_fields_are_dd060() -> None:
    text = edit("- verify:", "- owner: me\n- status: DONE\n- verify:")
    assert found(text) == [("DD060", 99), ("DD060", 100)]


def test_verify_accepts_step_files_and_commands() -> None:
    text = edit(
        '- verify: `cmd: python -c "import demo.pool"`',
        "- verify: `steps/test_step1.py`, `cmd: ruff check demo`",
    )
    doc, diagnostics = parse(text)
    assert diagnostics == []
    assert doc is not None and doc.steps[0].verify == [
        "steps/test_step1.py",
        "cmd: ruff check demo",
    ]


# --------------------------------------------------------------------------- Section 7


def test_revisions_are_the_first_column_of_the_first_table() -> None:
    text = edit("| 0.1.0 |", "| `0.2.0` | 2026-11-22 | more |\n| 0.1.0 |")
    text = text + "\n| other | table |\n|---|---|\n| 9.9 | x |\n"
    doc = parse(text)[0]
    assert doc is not None and doc.revisions == ["0.2.0", "0.1.0"]


def test_section_7_without_a_table_has_no_revisions() -> None:
    doc, diagnostics = parse(BASE.split("| version")[0])
    assert diagnostics == []
    assert doc is not None and doc.revisions == []


# --------------------------------------------------------------------------- fixtures


def test_there_are_enough_parser_fixtures() -> None:
    assert len(MALFORMED) >= 22
    codes = {p.with_suffix(".expect").read_text().split()[0] for p in MALFORMED}
    assert len(codes) >= 24


@pytest.mark.parametrize("path", MALFORMED, ids=[p.stem for p in MALFORMED])
def test_malformed_fixture_has_exactly_its_expected_diagnostic(path: Path) -> None:
    code, line = path.with_suffix(".expect").read_text().split()
    _, diagnostics = parse_document(path, path.name)
    assert [(d.code, d.loc.line) for d in diagnostics] == [(code, int(line))]
