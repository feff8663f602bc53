"""`dd check` decides annotation placement without libcst where that is certain
(generator/placement.py): whenever it says "placed", the libcst expander places the check, and
each case it cannot be sure of is left to libcst, which reports DD055 exactly as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.annotations import comment_lines
from generator.models import DDError
from generator.placement import surely_placed
from generator.project import Project
from tests.test_expand import LIB, annotations_in, expand

REPO = Path(__file__).resolve().parent.parent
ANN = "# VAL: VAL_NON_EMPTY(xs)"


def placed_by_libcst(code: str) -> bool:
    try:
        expand(code)
    except DDError as exc:
        assert all(d.code == "DD055" for d in exc.diagnostics), exc.diagnostics
        return False
    return True


SURE = {
    "after-docstring": f'def f(xs):\n    """Doc."""\n    {ANN}\n    return xs\n',
    "no-docstring-first-line": f"def f(xs):\n    {ANN}\n    return xs\n",
    "in-if-block": f'def f(xs):\n    """Doc."""\n    if xs:\n        {ANN}\n        g(xs)\n',
    "after-if-block": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n    {ANN}\n    h(xs)\n',
    "deep-after-if-block": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n        {ANN}\n    h(xs)\n',
    "dedented-between": f'def f(xs):\n    """Doc."""\n    g(xs)\n{ANN}\n    h(xs)\n',
    "in-else": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n    else:\n        {ANN}\n        h(xs)\n',
    "in-nested-def": f'def f(xs):\n    """Doc."""\n    def g():\n        {ANN}\n        return xs\n    return g\n',
    "before-nested-class": f'def f(xs):\n    """Doc."""\n    {ANN}\n    class C:\n        pass\n    return C\n',
    "before-decorated-def": f'def f(xs):\n    """Doc."""\n    {ANN}\n    @dec\n    def g():\n        pass\n    return g\n',
    "in-try": f'def f(xs):\n    """Doc."""\n    try:\n        {ANN}\n        g(xs)\n    except E:\n        pass\n',
    "end-of-body": f'def f(xs):\n    """Doc."""\n    g(xs)\n    {ANN}\n    {ANN}\n',
    "end-of-if-block": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n        {ANN}\n',
    "end-of-body-after-if": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n    {ANN}\n',
    "end-after-one-line-if": f'def f(xs):\n    """Doc."""\n    if xs: g(xs)\n    {ANN}\n',
    "end-after-nested-class": f'def f(xs):\n    """Doc."""\n    class C:\n        def m(self):\n            x = 1\n    {ANN}\n',
    "end-of-method-in-class": f'def f(xs):\n    """Doc."""\n    class C:\n        def m(self):\n            x = 1\n            {ANN}\n',
    "in-async-def": f'async def f(xs):\n    """Doc."""\n    {ANN}\n    await g(xs)\n',
}
UNSURE = {
    "before-docstring": f'def f(xs):\n    {ANN}\n    """Doc."""\n    return xs\n',
    "module-level": f'{ANN}\ndef f(xs):\n    """Doc."""\n',
    "class-body": f"class C:\n    '''Doc.'''\n    {ANN}\n    x = 1\n",
    "inside-expression": f"def f(xs):\n    '''Doc.'''\n    return g(\n        xs,\n        {ANN}\n    )\n",
    "dedented-after-function": f"def f(xs):\n    '''Doc.'''\n    if xs:\n        pass\n{ANN}\n",
    "end-between-columns": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n      {ANN}\n',
    "end-of-class-in-function": f'def f(xs):\n    """Doc."""\n    class C:\n        def m(self):\n            x = 1\n        {ANN}\n',
    "end-of-body-indented": f'def f(xs):\n    """Doc."""\n    g(xs)\n        {ANN}\n',
    "end-of-class-body": f'def f(xs):\n    """Doc."""\n    class C:\n        x = 1\n        {ANN}\n',
    "before-except": f'def f(xs):\n    """Doc."""\n    try:\n        g(xs)\n    {ANN}\n    except E:\n        pass\n',
    "before-elif": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n    {ANN}\n    elif h:\n        pass\n',
    "before-else-one-line": f'def f(xs):\n    """Doc."""\n    if xs:\n        g(xs)\n    {ANN}\n    else: pass\n',
    "before-case": f'def f(xs):\n    """Doc."""\n    match xs:\n        case 1:\n            pass\n        {ANN}\n        case _: pass\n',
    "after-nested-class": f'def f(xs):\n    """Doc."""\n    class C:\n        x = 1\n        {ANN}\n    return C\n',
    "in-nested-class": f'def f(xs):\n    """Doc."""\n    class C:\n        {ANN}\n        x = 1\n    return C\n',
    "between-decorator-and-def": f'def f(xs):\n    """Doc."""\n    @dec\n    {ANN}\n    def g():\n        pass\n    return g\n',
}


@pytest.mark.parametrize("name", sorted(SURE))
def test_plain_placements_are_decided_without_libcst_and_libcst_agrees(name: str) -> None:
    code = SURE[name]
    assert surely_placed(code, comment_lines(code))
    assert placed_by_libcst(code)


@pytest.mark.parametrize("name", sorted(UNSURE))
def test_every_other_placement_is_left_to_libcst(name: str) -> None:
    code = UNSURE[name]
    assert annotations_in(code), "the snippet holds an annotation"
    assert not surely_placed(code, comment_lines(code))


def test_annotated_specs_of_this_project_need_no_libcst_tree() -> None:
    """Every annotated spec of the project's own documents is decided without libcst (so a
    cold `dd check` parses none of them with libcst), and libcst places them all."""
    from generator.expand import expand_spec

    project = Project.load(REPO)
    annotated = [s for d in project.documents for s in d.specs() if s.annotations]
    assert len(annotated) > 100
    for spec in annotated:
        assert spec.code is not None
        assert surely_placed(spec.code.code, comment_lines(spec.code.code)), spec.name
        expand_spec(spec, LIB, build=False)  # raises DDError were one misplaced
