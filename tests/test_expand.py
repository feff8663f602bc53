"""Annotation expansion with libcst: placement, byte preservation, idempotence and errors."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.annotations import comment_lines as annotation_comment_lines
from generator.checkmodule import Site
from generator.expand import expand_spec
from generator.models import Annotation, CodeBlock, DDError, Loc, Spec, SpecKind
from generator.patterns import PatternLibrary, render_annotation
from tests.conftest import expand_code, expand_runnable

LIB = PatternLibrary.load([])
DOC = "design/t.md"
FIRST = 40  # document line of each test snippet's first code line
_ANN = re.compile(r"^\s*# (VAL|AST): ([A-Z0-9_]+)\((.*)\)\s*$")


def annotations_in(code: str, first_line: int = FIRST) -> list[Annotation]:
    """What the parser would report: one Annotation per annotation comment, by document line."""
    found = []
    for number, line in enumerate(code.splitlines(), start=first_line):
        match = _ANN.match(line)
        if match:
            kind, pattern, args = match.groups()
            loc = Loc(path=DOC, line=number, col=line.index("#") + 1)
            found.append(Annotation(kind=kind, pattern=pattern, args=args, loc=loc))  # type: ignore[arg-type]
    return found


def expand(code: str, annotations: list[Annotation] | None = None) -> str:
    anns = annotations_in(code) if annotations is None else annotations
    return expand_code(code, FIRST, anns, LIB, "Pool.f")


def rendered(text: str, line: int, indent: str) -> str:
    """The statements an annotation `text` on document `line` expands to, indented."""
    (annotation,) = annotations_in(text, line)
    return textwrap.indent(render_annotation(annotation, LIB, "Pool.f"), indent)


def test_comment_stays_and_statements_follow() -> None:
    code = (
        "def f(self, xs: list[int]) -> int:\n"
        '    """Doc."""\n'
        "    # VAL: VAL_NON_EMPTY(xs)\n"
        "    return len(xs)\n"
    )
    assert expand(code) == (
        "def f(self, xs: list[int]) -> int:\n"
        '    """Doc."""\n'
        "    # VAL: VAL_NON_EMPTY(xs)\n"
        "    check.non_empty(xs, at=_AT[42])\n"
        "    return len(xs)\n"
    )


def test_footer_comment_at_the_end_of_the_function() -> None:
    code = (
        "def f(xs):\n"
        '    """Doc."""\n'
        "    xs.sort()\n"
        "    # AST: AST_POSTCONDITION(xs == sorted(xs))\n"
    )
    annotation = "    # AST: AST_POSTCONDITION(xs == sorted(xs))\n"
    assert expand(code) == code + rendered(annotation, FIRST + 3, "    ")


def test_nested_blocks_and_footers() -> None:
    code = textwrap.dedent(
        '''\
        @decorator(1)
        def f(self, xs, ctx):
            """Doc."""
            for x in xs:
                use(x)
                # AST: AST_INVARIANT(x >= 0)
            if xs:
                # VAL: VAL_NON_EMPTY(xs)
                pass
            else:
                pass
                # VAL: VAL_NOT_NONE(ctx)
            with ctx:
                # AST: AST_PRECONDITION(self.open)
                work()
            try:
                # VAL: VAL_POSITIVE(self.n)
                run()
            except ValueError:
                # AST: AST_INVARIANT(self.n > 0)
                raise
            finally:
                done()
                # AST: AST_POSTCONDITION(self.done)
            while self.n:
                self.n -= 1
            # VAL: VAL_NON_NEGATIVE(self.n)
        '''
    )
    out = expand(code)
    out_lines = out.splitlines(keepends=True)
    position = 0
    for number, line in enumerate(code.splitlines(keepends=True), start=FIRST):
        position = out_lines.index(line, position) + 1
        if _ANN.match(line):
            indent = line[: len(line) - len(line.lstrip())]
            block = rendered(line, number, indent)
            assert "".join(out_lines[position:]).startswith(block), line
    ast.parse(out)
    assert expand(out, annotations_in(code)) == out


def test_consecutive_annotations_keep_their_order_and_other_comments() -> None:
    code = textwrap.dedent(
        '''\
        def f(xs, n):
            """Doc."""

            # A note before the checks.
            # VAL: VAL_NON_EMPTY(xs)
            # VAL: VAL_POSITIVE(n)
            # A note after the checks.

            return xs[:n]
        '''
    )
    first = "    # VAL: VAL_NON_EMPTY(xs)\n"
    second = "    # VAL: VAL_POSITIVE(n)\n"
    expected = code.replace(first, first + rendered(first, FIRST + 4, "    ")).replace(
        second, second + rendered(second, FIRST + 5, "    ")
    )
    out = expand(code)
    assert out == expected
    assert expand(out, annotations_in(code)) == out


def test_unrelated_formatting_is_untouched() -> None:
    code = (
        "def  f( xs ,n = 3 ) :   # odd spacing\n"
        "    '''Doc.'''\n"
        "    y=[ 1,2 ,\n"
        "        3 ]   # trailing\n"
        "\n"
        "\n"
        "    # VAL: VAL_NON_EMPTY(xs)\n"
        "    return (y ,\n"
        "            n)\n"
    )
    annotation = "    # VAL: VAL_NON_EMPTY(xs)\n"
    assert expand(code) == code.replace(
        annotation, annotation + rendered(annotation, FIRST + 6, "    ")
    )


def test_module_style_is_kept_tabs_and_crlf() -> None:
    code = 'def f(xs):\r\n\t"""Doc."""\r\n\t# VAL: VAL_INT_RANGE(xs, min=0, each=True)\r\n\treturn xs\r\n'
    out = expand(code)
    assert "\n" not in out.replace("\r\n", "")
    assert "\r\n\tcheck.int_range(xs, min=0, each=True, at=_AT[42])\r\n\treturn xs" in out
    compile(out.replace("\r\n", "\n"), "<t>", "exec")
    assert expand(out, annotations_in(code)) == out


def test_expanded_code_runs(tmp_path) -> None:
    code = textwrap.dedent(
        '''\
        def shrink(self, target_gpus):
            """Doc."""
            # VAL: VAL_INT_RANGE(target_gpus, min=0, max=self.num_gpus - 1, each=True)
            ranks = sorted(target_gpus)
            # AST: AST_POSTCONDITION(len(ranks) > 0)
            return ranks
        '''
    )
    expanded, namespace = expand_runnable(code, FIRST, annotations_in(code), LIB, "Pool.shrink")
    exec(expanded, namespace)  # noqa: S102
    pool = type("Pool", (), {"num_gpus": 4})()
    assert namespace["shrink"](pool, [2, 1]) == [1, 2]
    with pytest.raises(ValueError, match=r"\(where item=4, self.num_gpus - 1=3\)$"):
        namespace["shrink"](pool, [4])
    with pytest.raises(AssertionError, match=r"design/t.md:44\): expected len\(ranks\) > 0"):
        namespace["shrink"](pool, [])


def test_no_annotations_returns_the_code_unchanged() -> None:
    code = "def f():\n    '''Doc.'''\n    # a comment\n"
    assert expand_code(code, 1, [], LIB, "f") is code


def test_expand_spec() -> None:
    code = 'def g(xs):\n    """Doc."""\n    # VAL: VAL_NON_EMPTY(xs)\n    return xs\n'
    spec = Spec(
        kind=SpecKind.function,
        name="g",
        module="demo.m",
        number="5.1.1",
        loc=Loc(path=DOC, line=FIRST - 3),
        code=CodeBlock(code=code, info="python", loc=Loc(path=DOC, line=FIRST)),
        annotations=annotations_in(code),
    )
    tree, needs = expand_spec(spec, LIB)
    assert tree.code == expand_code(code, FIRST, spec.annotations, LIB, "g")
    assert not needs.reprlib and needs.sites == [
        Site(FIRST + 2, "g", "xs to be non-empty", ("xs",))
    ]
    assert spec.code is not None and spec.code.tree().code == code  # the parsed tree is kept


def test_annotation_comment_lines_ignore_strings_trailing_and_prose_comments() -> None:
    code = (
        "def f(x):\n"
        '    """# VAL: no"""\n'
        "    y = 1  # VAL: trailing\n"
        "    # VALIDATE: prose, not an annotation\n"
        "    # AST: AST_INVARIANT(x)\n"
        "    #VAL:VAL_NOT_NONE(x)\n"
    )
    assert annotation_comment_lines(code) == [5, 6]
    annotations = [
        Annotation(kind="AST", pattern="AST_INVARIANT", args="x", loc=Loc(path=DOC, line=44)),
        Annotation(kind="VAL", pattern="VAL_NOT_NONE", args="x", loc=Loc(path=DOC, line=45)),
    ]
    out = expand(code, annotations)
    assert "    #VAL:VAL_NOT_NONE(x)\n    check.not_none(x, at=_AT[45])\n" in out
    assert expand(out, annotations) == out


# --------------------------------------------------------------------------- errors


def expand_errors(code: str, annotations: list[Annotation] | None = None) -> list[str]:
    with pytest.raises(DDError) as info:
        expand(code, annotations)
    return [d.render() for d in info.value.diagnostics]


def test_annotation_before_the_docstring_is_dd055() -> None:
    code = 'def f(xs):\n    # VAL: VAL_NON_EMPTY(xs)\n    """Doc."""\n'
    assert expand_errors(code) == [
        f"{DOC}:41:5: error[DD055]: VAL_NON_EMPTY: an annotation may not precede the docstring"
    ]


@pytest.mark.parametrize(
    "code",
    [
        "# VAL: VAL_NON_EMPTY(xs)\ndef f(xs):\n    '''Doc.'''\n",
        "class C:\n    '''Doc.'''\n    # VAL: VAL_NON_EMPTY(xs)\n    x = 1\n",
        "def f(xs):\n    '''Doc.'''\n    return g(\n        xs,\n        # VAL: VAL_NON_EMPTY(xs)\n    )\n",
        "def f(xs):\n    '''Doc.'''\n    if xs:\n        pass\n# VAL: VAL_NON_EMPTY(xs)\n",
    ],
    ids=["module-level", "class-body", "inside-expression", "dedented-after-function"],
)
def test_annotation_where_no_statement_can_follow_is_dd055(code: str) -> None:
    (error,) = expand_errors(code)
    assert (
        "error[DD055]: VAL_NON_EMPTY: annotation is not an own-line comment in a function body"
        in error
    )


def test_annotations_not_matching_the_comments_are_dd055() -> None:
    code = "def f(xs):\n    '''Doc.'''\n    # VAL: VAL_NON_EMPTY(xs)\n"
    other = annotations_in(code.replace("VAL_NON_EMPTY", "VAL_NOT_NONE"))
    message = "code line 3 holds '# VAL: VAL_NON_EMPTY(xs)', not this annotation"
    assert expand_errors(code, other) == [f"{DOC}:42:5: error[DD055]: VAL_NOT_NONE: {message}"]
    assert expand_errors(code, other + other)[-1].endswith(
        "VAL_NOT_NONE: no annotation comment for it in the code"
    )


def test_pattern_errors_surface_from_expansion() -> None:
    code = "def f(xs):\n    '''Doc.'''\n    # VAL: VAL_NON_EMTPY(xs)\n"
    assert expand_errors(code) == [
        f"{DOC}:42:5: error[DD050]: unknown pattern ID VAL_NON_EMTPY (did you mean VAL_NON_EMPTY?)"
    ]


# --------------------------------------------------------------------------- property

ANNOTATIONS = [
    "# VAL: VAL_NON_EMPTY(xs)",
    "# VAL: VAL_INT_RANGE(xs, min=0, max=self.n, each=True)",
    "# AST: AST_PRECONDITION(len(xs) > 0)",
    "# AST: AST_INVARIANT(self.n >= 0)",
]
SIMPLE = ["x = 1", "y = g(x)  # note", "pass", "# a plain comment", ""]
HEADERS = ["if x:", "for v in xs:", "while x:", "with ctx:", "try:"]

Body = list  # items: str (a line) or tuple[str, Body] (a compound statement)

bodies = st.recursive(
    st.lists(st.sampled_from(SIMPLE + ANNOTATIONS), max_size=4),
    lambda inner: st.lists(
        st.one_of(
            st.sampled_from(SIMPLE + ANNOTATIONS),
            st.tuples(st.sampled_from(HEADERS), inner),
        ),
        max_size=5,
    ),
    max_leaves=12,
)


def render_body(body: Body, depth: int) -> list[str]:
    """Source lines of `body` at `depth`; every block gets a real statement first."""
    pad = "    " * depth
    items = (
        body
        if any(isinstance(i, tuple) or i[:1] not in ("#", "") for i in body)
        else ["pass", *body]
    )
    lines: list[str] = []
    for item in items:
        if isinstance(item, tuple):
            header, inner = item
            lines += [pad + header, *render_body(inner, depth + 1)]
            if header == "try:":
                lines += [pad + "except ValueError:", pad + "    pass"]
        else:
            lines.append(pad + item if item else "")
    return lines


@settings(max_examples=150, deadline=None)
@given(bodies)
def test_expansion_is_idempotent_and_keeps_every_line(body: Body) -> None:
    lines = ["def f(self, xs, x, ctx):", '    """Doc."""', *render_body(body, 1)]
    code = "\n".join(lines) + "\n"
    annotations = annotations_in(code)
    once = expand(code, annotations)
    assert expand(once, annotations) == once
    ast.parse(once)
    assert len(annotation_comment_lines(once)) == len(annotations)
    remaining = iter(once.splitlines())
    assert all(line in remaining for line in code.splitlines()), "original lines kept in order"


def test_comment_nodes_fall_back_to_positions_when_counts_disagree() -> None:
    """The fast order-based mapping and libcst's position metadata agree; the latter is used
    when the tokenizer and libcst would disagree on how many annotation comments there are."""
    import libcst as cst

    from generator.annotations import comment_nodes

    code = "def f(x):\n    # VAL: VAL_NOT_NONE(x)\n    y = x\n    # AST: AST_POSTCONDITION(y)\n    return y\n"
    module = cst.parse_module(code)
    fast = comment_nodes(module, [2, 4])
    assert sorted(fast.values()) == [2, 4]
    slow = comment_nodes(module, [4])  # count mismatch: exact positions, filtered
    assert sorted(slow.values()) == [4]
