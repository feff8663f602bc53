"""Rendering a valid annotation: one call of the check module (a pattern with `check:`) and
its site, or a template's statements (DD091 when a template fails or writes invalid Python).
The generated code never imports anything from `generator`.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

import jinja2

from generator.checkmodule import CHECK_ALIAS, SITES_NAME, Site, string_literal
from generator.models import Annotation, DDError
from generator.patterns.checking import Arg, _diag, _dotted, _is_atomic, bind_args, check_annotation
from generator.patterns.loading import PatternLibrary

_BUILTIN_NAMES = frozenset(dir(builtins))
_CONT = "\x00"  # starts the continuation lines of `fail()`; re-indented after rendering
_MAX_SHOWN_EXPR = 40  # a longer "where" expression is assigned to a local first


# --------------------------------------------------------------------------- rendering


def condition_names(src: str) -> list[str]:
    """Names and attribute chains whose values explain `src`, in order of appearance.

    Excluded: builtins, names bound inside the expression (comprehension targets) and called
    function names (the receiver of a method call is kept when it is an attribute chain). When
    the expression short-circuits (`and`, `or`, `x if c else y`) only plain
    names are kept: an attribute chain such as `a.b` in `a is None or a.b > 0` may not be
    evaluable when the condition fails.
    """
    tree = ast.parse(src, mode="eval")
    nodes = list(ast.walk(tree))
    bound = {
        name.id
        for comp in nodes
        if isinstance(comp, ast.comprehension)
        for name in ast.walk(comp.target)
        if isinstance(name, ast.Name)
    }
    short = any(isinstance(n, (ast.BoolOp, ast.IfExp)) for n in nodes)
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            func = node.func
            if _dotted(func) is None:
                visit(func)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute):
                visit(func.value)  # the receiver of `self.free.isdisjoint(...)`: `self.free`
            for child in [*node.args, *(kw.value for kw in node.keywords)]:
                visit(child)
            return
        chain = _dotted(node)
        if chain is None:
            for child in ast.iter_child_nodes(node):
                visit(child)
            return
        root = chain.split(".", 1)[0]
        if root in bound or (root in _BUILTIN_NAMES and root == chain):
            return
        found.append(root if short else chain)

    visit(tree.body)
    return list(dict.fromkeys(found))


def _where(*items: Any) -> list[tuple[str, str]]:
    """Normalise `where` items to (label, Python expression) pairs, skipping literals.

    An item is an Arg (label: its source), a str (a local name, label and expression alike), a
    (label, expression) pair, or a list of those (as returned by `where` / `names_in`).
    """
    pairs: dict[str, str] = {}
    for item in items:
        if isinstance(item, Arg):
            if not item.is_literal:
                pairs.setdefault(item.src, item.src)
        elif isinstance(item, str):
            pairs.setdefault(item, item)
        elif isinstance(item, tuple) and len(item) == 2:
            pairs.setdefault(str(item[0]), str(item[1]))
        elif isinstance(item, list):
            for label, expr in _where(*item):
                pairs.setdefault(label, expr)
        else:
            raise TypeError(f"where(): cannot use {item!r}")
    return list(pairs.items())


def _escaped(text: str, quote: str, braces: bool) -> str:
    """`text` as the inside of a `quote`-delimited literal (an f-string's when `braces`)."""
    out = []
    for char in text:
        if char in ("\\", quote):
            out.append("\\" + char)
        elif braces and char in "{}":
            out.append(char * 2)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return "".join(out)


def raise_statement(exception: str, headline: str, values: list[tuple[str, str]]) -> str:
    """`raise exception(f"...")` whose message is `headline` plus `(where a=<value>, ...)`, each
    value shown by `reprlib.repr` (bounded: a table of 100,000 entries shows its first few).

    An expression that is long, or that Python 3.11 cannot hold inside an f-string (a quote, a
    backslash, a `#`), is first assigned to a local named after its label, so the message stays
    one compact f-string. Lines after the first start with _CONT (re-indented by `_finish`);
    long lines are wrapped later, at their final indentation (`generator.formatting`).
    """
    if not values:
        return f"raise {exception}({string_literal(headline)})"
    lines: list[str] = []
    shown = []
    used = " ".join(expr for _, expr in values)
    for label, expr in values:
        if len(expr) > _MAX_SHOWN_EXPR or any(c in expr for c in "\"'\\#"):
            name = "_dd_" + (label if label.isidentifier() else "value")
            while name in used or any(line.startswith(f"{name} =") for line in lines):
                name += "_"
            lines.append(f"{name} = {expr}")
            expr = name
        shown.append(_escaped(label, '"', True) + f"={{reprlib.repr({expr})}}")
    body = _escaped(headline, '"', True) + f" (where {', '.join(shown)})"
    lines.append(f'raise {exception}(f"{body}")')
    return f"\n{_CONT}".join(lines)


def negation(src: str) -> str:
    """Python source for `not (src)` as a person writes it: `a is not b`, `a not in b`, the
    operand of a `not`, else `not <src>` (parenthesised when needed)."""
    tree = ast.parse(src.strip(), mode="eval").body
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.Not):
        inner = ast.get_source_segment(src.strip(), tree.operand)
        if inner is not None:
            return inner
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1:
        flipped = {ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in"}
        op = flipped.get(type(tree.ops[0]))
        left = ast.get_source_segment(src.strip(), tree.left)
        right = ast.get_source_segment(src.strip(), tree.comparators[0])
        if op is not None and left is not None and right is not None:
            return f"{left} {op} {right}"
    return f"not {src.strip()}" if _is_atomic(src.strip()) else f"not ({src.strip()})"


def _finish(rendered: str) -> str:
    """Re-indent `fail()` continuation lines, drop blank lines, end with one newline."""
    out: list[str] = []
    indent = ""
    for line in rendered.splitlines():
        if line.startswith(_CONT):
            out.append(indent + line[len(_CONT) :])
            continue
        if not line.strip():
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(line.rstrip())
    return "".join(line + "\n" for line in out)


def _render_error(ann: Annotation, message: str) -> DDError:
    return DDError([_diag(ann, "DD091", f"pattern {ann.pattern}: {message}")])


def render_annotation(ann: Annotation, lib: PatternLibrary, symbol: str) -> str:
    """Python statements (unindented, newline-terminated) implementing a valid annotation: one
    call of the check module for a pattern with `check:`, else its template's statements.

    `symbol` names the spec (`GpuPool.shrink_sampler`) and `ann.loc` its document line; both
    appear in the failure message. Raises DDError with the check_annotation diagnostics when the
    annotation is invalid, and DD091 when the template fails or renders invalid Python.
    """
    return render(ann, lib, symbol)[0]


def render(ann: Annotation, lib: PatternLibrary, symbol: str) -> tuple[str, Site | None]:
    """`render_annotation`'s statements and, for a check call, its site (None for a template)."""
    diags = [d for d in check_annotation(ann, lib) if d.severity == "error"]
    if diags:
        raise DDError(diags)
    pattern = lib.get(ann.pattern)
    assert pattern is not None
    args = bind_args(ann, pattern)
    loc = f"{ann.loc.path}:{ann.loc.line}"
    verb = "failed" if pattern.kind == "VAL" else "violated"

    def fail(exception: Any, expectation: Any, values: Any = None) -> str:
        exc_src = str(exception)
        if pattern.kind == "AST" and exc_src != "AssertionError":
            raise jinja2.TemplateRuntimeError("AST patterns must raise AssertionError")
        headline = f"{pattern.id} {verb} in {symbol} ({loc}): expected {expectation}"
        return raise_statement(exc_src, headline, _where(values) if values else [])

    def names_in(arg: Arg) -> list[tuple[str, str]]:
        return [(name, name) for name in condition_names(arg.src)]

    def negate(arg: Arg) -> str:
        return negation(arg.src)

    def reject(reason: str) -> str:
        raise jinja2.TemplateRuntimeError(f"arguments rejected: {reason}")

    context: dict[str, Any] = {
        **args,
        "fail": fail,
        "where": _where,
        "names_in": names_in,
        "negate": negate,
        "reject": reject,
        "loc": loc,
        "symbol": symbol,
        "pattern": pattern,
    }
    compiled = lib.compiled(pattern.id)
    site = None
    try:
        message = " ".join(line.strip() for line in compiled.message.render(context).splitlines())
        if pattern.check is None:
            body = compiled.template.render({**context, "message": message.strip()})
        else:
            labels = _labels(compiled.shows(**context))
            site = Site(ann.loc.line, symbol, message.strip(), labels)
            given = compiled.args.render(context).strip() if pattern.check.args else ann.args
            at = f"at={SITES_NAME}[{ann.loc.line}]"
            given = given.strip()
            if " for " in given and _is_bare_generator(
                given
            ):  # `f(x for x in xs)`: one argument only
                given = f"({given})"
            call_args = f"{given}, {at}" if given else at
            body = f"{CHECK_ALIAS}.{pattern.check.function}({call_args})\n"
            guard = " ".join(compiled.guard.render(context).split()) if ann.inline else ""
            if guard:
                if pattern.check.guarded_args:
                    given = " ".join(compiled.guarded_args.render(context).split())
                    call_args = f"{given}, {at}" if given else at
                call = f"{CHECK_ALIAS}.{pattern.check.function}({call_args})"
                body = f"if {negation(_expression_src(guard))}:\n    {call}\n"
    except (jinja2.TemplateError, TypeError, ValueError, SyntaxError) as exc:
        raise _render_error(ann, f"template failed: {exc}") from exc
    source = _finish(body)
    try:
        ast.parse(source)
    except SyntaxError as exc:
        raise _render_error(
            ann, f"template rendered invalid Python ({exc.msg}):\n{source}"
        ) from exc
    if not source:
        raise _render_error(ann, "template rendered no statements")
    return source, site


def _expression_src(src: str) -> str:
    """`src` when it is one Python expression; raises ValueError (DD091) otherwise."""
    try:
        ast.parse(src, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"guard is not an expression ({exc.msg}): {src}") from exc
    return src


def _is_bare_generator(args: str) -> bool:
    """True when `args` is a lone generator expression without its own parentheses."""
    try:
        ast.parse(f"f({args}, at=0)", mode="eval")
    except SyntaxError:
        return True
    return False


def _labels(shows: Any) -> tuple[str | None, ...]:
    """The label of each value a check's failure passes, from its `shows` list: an argument
    (its source; None when it is a literal), a label, a (label, expression) pair, a list of
    those, or None. A label already shown is not shown again; trailing Nones are dropped."""
    items = list(shows) if isinstance(shows, list) else [shows]
    while any(isinstance(item, list) for item in items):
        items = [part for item in items for part in (item if isinstance(item, list) else [item])]
    labels: list[str | None] = []
    for item in items:
        if isinstance(item, Arg):
            label = None if item.is_literal else item.src
        elif isinstance(item, tuple) and len(item) == 2:
            label = str(item[0])
        elif item is None or isinstance(item, str):
            label = item
        else:
            raise TypeError(f"shows: cannot use {item!r}")
        labels.append(None if label in labels else label)
    while labels and labels[-1] is None:
        labels.pop()
    return tuple(labels)
