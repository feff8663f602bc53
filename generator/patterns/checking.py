"""Checking annotations against the library: the arguments parsed (DD051), bound to the
pattern's typed parameters (DD052), the kind matched (DD053), the ID known (DD050).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import io
import tokenize
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from generator.models import Annotation, Diagnostic, Pattern, PatternParam
from generator.patterns.loading import EXC_PARAM, PatternLibrary

# --------------------------------------------------------------------------- checking


_FORBIDDEN: dict[type[ast.AST], str] = {
    ast.Starred: "'*' unpacking is not allowed",
    ast.Lambda: "lambda is not allowed",
    ast.NamedExpr: "assignment expressions (:=) are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
    ast.YieldFrom: "yield from is not allowed",
}


class _ArgsError(Exception):
    """Internal: annotation arguments that are not plain expressions (DD051) or bind badly."""

    def __init__(self, code: str, message: str):
        self.code, self.message = code, message


@functools.lru_cache(maxsize=4096)
def parse_call_args(args: str) -> tuple[str, ast.Call]:
    """Parse `args` as the inside of a call; returns the parsed text `f(<args>)` and the call.

    Raises _ArgsError (DD051) unless `args` is one line of plain expressions.
    """
    if "\n" in args or "\r" in args:
        raise _ArgsError("DD051", "arguments span several lines")
    text = f"f({args})"
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise _ArgsError("DD051", f"not a valid argument list ({exc.msg})") from exc
    call = tree.body
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.col_offset == 0
        and call.end_col_offset == len(text)
    ):
        raise _ArgsError("DD051", "not a valid argument list (text outside the parentheses)")
    if any(kw.arg is None for kw in call.keywords):
        raise _ArgsError("DD051", "'**' unpacking is not allowed")
    for node in ast.walk(call):
        reason = _FORBIDDEN.get(type(node))
        if reason is not None:
            raise _ArgsError("DD051", reason)
    return text, call


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _is_exception_name(name: str | None) -> bool:
    """A dotted name that can denote an exception class: its last part is CapWords-like and a
    builtin must be an exception. `exc=` becomes `raise <exc>(message)`, so a callable such as
    `os.system` or `print` must not get through."""
    if name is None or not name.rsplit(".", 1)[-1][:1].isupper():
        return False
    builtin = getattr(builtins, name, None) if "." not in name else None
    return builtin is None or (isinstance(builtin, type) and issubclass(builtin, BaseException))


def _is_type_expr(node: ast.AST, in_union: bool = False) -> bool:
    """A dotted name, a tuple of type expressions or a union `A | B` (which may hold None)."""
    if _dotted(node) is not None:
        return True
    if isinstance(node, ast.Constant) and node.value is None:
        return in_union
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_is_type_expr(e) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_type_expr(node.left, True) and _is_type_expr(node.right, True)
    return False


_LITERAL_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an int literal"),
    "float": ((int, float), "a float literal"),
    "number": ((int, float), "a number literal"),
    "str": ((str,), "a string literal"),
    "bool": ((bool,), "True or False"),
}


def _type_problem(param: PatternParam, node: ast.expr) -> str | None:
    """Why `node` is not a valid value for `param`, or None."""
    kind = param.type
    if kind in _LITERAL_KINDS:
        types, wanted = _LITERAL_KINDS[kind]
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return f"must be {wanted}"
        bool_ok = kind == "bool"
        if not isinstance(value, types) or (isinstance(value, bool) and not bool_ok):
            return f"must be {wanted}"
        return None
    if kind == "name" and _dotted(node) is None:
        return "must be a dotted name"
    if kind == "exception" and not _is_exception_name(_dotted(node)):
        return "must be an exception class name"
    if kind == "type" and not _is_type_expr(node):
        return "must be a type, a tuple of types or a union of types"
    return None


@dataclass(frozen=True)
class Arg:
    """A bound pattern argument as templates see it: renders as its (parenthesised) source."""

    name: str
    src: str
    type: str
    is_default: bool

    def __str__(self) -> str:
        return self.src if _is_atomic(self.src) else f"({self.src})"

    @cached_property
    def is_literal(self) -> bool:
        """True when the source is a Python literal (`3`, `-1`, `'a'`, `None`, `(1, 2)`)."""
        try:
            ast.literal_eval(self.src)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        return True

    @property
    def value(self) -> Any:
        """The literal's value (literal-typed parameters); None when not a literal."""
        return ast.literal_eval(self.src) if self.is_literal else None

    @property
    def is_none(self) -> bool:
        return self.src.strip() == "None"

    @property
    def compared(self) -> str:
        """The source as an operand of a comparison: parenthesised only when it binds looser
        than one (a boolean, a conditional or a comparison itself)."""
        try:
            node = ast.parse(self.src.strip(), mode="eval").body
        except SyntaxError:
            return str(self)
        loose = isinstance(node, (ast.BoolOp, ast.IfExp, ast.Compare, ast.Lambda, ast.NamedExpr))
        if loose or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return f"({self.src.strip()})"
        return self.src.strip()

    @cached_property
    def is_simple(self) -> bool:
        """True when evaluating the source again costs little and changes nothing: names,
        attributes, constants, subscripts and operators, no call (a guard may repeat it)."""
        try:
            tree = ast.parse(self.src.strip(), mode="eval")
        except SyntaxError:
            return False
        return not any(isinstance(node, _NOT_SIMPLE) for node in ast.walk(tree))


_NOT_SIMPLE = (
    ast.Call,
    ast.Lambda,
    ast.NamedExpr,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)

# Expressions that are operands of any operator without parentheses (libcst's atoms, as
# Python's tree names them); a constant is one unless it is implicitly concatenated strings.
_ATOMIC = (
    ast.Name,
    ast.Attribute,
    ast.Call,
    ast.Subscript,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
_NOT_CODE = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)


def _expression(src: str) -> ast.expr | None:
    """The expression `src` holds, or None; raises SyntaxError when it does not parse."""
    try:
        return ast.parse(src, mode="eval").body
    except SyntaxError:
        body = ast.parse(src).body  # `a, *b`: a tuple with a starred item, no eval input
        return body[0].value if len(body) == 1 and isinstance(body[0], ast.Expr) else None


def _wrapped(tokens: list[tokenize.TokenInfo]) -> bool:
    """True when the first token opens a parenthesis that the last token closes."""
    if not tokens or tokens[0].string != "(":
        return False
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            if depth == 0:
                return i == len(tokens) - 1
    return False


@functools.lru_cache(maxsize=4096)
def _is_atomic(src: str) -> bool:
    """True when `src` can be used as an operand of any operator without parentheses."""
    try:
        node = _expression(src)
        reader = io.StringIO(src).readline
        tokens = [t for t in tokenize.generate_tokens(reader) if t.type not in _NOT_CODE]
    except (SyntaxError, tokenize.TokenError, ValueError):
        return False
    tokens = [t for t in tokens if t.type != tokenize.ENDMARKER]
    if node is None:
        return False
    if _wrapped(tokens):
        return True
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return sum(t.type == tokenize.STRING for t in tokens) <= 1
    return isinstance(node, _ATOMIC)


def bind_args(ann: Annotation, pattern: Pattern) -> dict[str, Arg]:
    """Match the annotation's arguments to the pattern's parameters (defaults filled in).

    Raises _ArgsError (DD051/DD052) describing the first problem found.
    """
    text, call = parse_call_args(ann.args)
    pid = pattern.id
    positional = [p for p in pattern.params if p.name != EXC_PARAM]
    by_name = {p.name: p for p in pattern.params}
    given: dict[str, ast.expr] = {}
    if len(call.args) > len(positional):
        raise _ArgsError(
            "DD052",
            f"{pid} takes at most {len(positional)} positional arguments ({len(call.args)} given)",
        )
    for param, node in zip(positional, call.args, strict=False):
        given[param.name] = node
    for kw in call.keywords:
        assert kw.arg is not None  # `**` was rejected by parse_call_args
        if kw.arg not in by_name:
            names = ", ".join(by_name)
            close = difflib.get_close_matches(kw.arg, list(by_name), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _ArgsError(
                "DD052", f"{pid} has no parameter {kw.arg!r}{hint}; its parameters: {names}"
            )
        if kw.arg in given:
            raise _ArgsError("DD052", f"{pid} got parameter {kw.arg!r} twice")
        given[kw.arg] = kw.value
    bound: dict[str, Arg] = {}
    for param in pattern.params:
        node = given.get(param.name)
        if node is None:
            if param.required:
                raise _ArgsError("DD052", f"{pid} is missing required argument {param.name!r}")
            assert param.default is not None  # checked when the library was loaded
            bound[param.name] = Arg(param.name, param.default.strip(), param.type, True)
            continue
        src = ast.get_source_segment(text, node)
        assert src is not None
        problem = _type_problem(param, node)
        if problem is not None:
            raise _ArgsError("DD052", f"argument {param.name}={src} of {pid} {problem}")
        bound[param.name] = Arg(param.name, src, param.type, False)
    return bound


def check_annotation(ann: Annotation, lib: PatternLibrary) -> list[Diagnostic]:
    """Diagnostics for one annotation: DD050 (unknown ID), DD053 (kind), DD051/DD052 (arguments)."""
    pattern = lib.get(ann.pattern)
    if pattern is None:
        close = difflib.get_close_matches(ann.pattern, lib.ids(), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return [_diag(ann, "DD050", f"unknown pattern ID {ann.pattern}{hint}")]
    diags = []
    if pattern.kind != ann.kind:
        fix = f"`# {pattern.kind}: {pattern.id}(...)`"
        article = "an" if pattern.kind == "AST" else "a"
        diags.append(
            _diag(
                ann,
                "DD053",
                f"{pattern.id} is {article} {pattern.kind} pattern, not {ann.kind}: write {fix}",
            )
        )
    try:
        bind_args(ann, pattern)
    except _ArgsError as exc:
        prefix = (
            f"arguments of {pattern.id} are not plain expressions: " if exc.code == "DD051" else ""
        )
        diags.append(_diag(ann, exc.code, prefix + exc.message))
    return diags


def _diag(ann: Annotation, code: str, message: str) -> Diagnostic:
    return Diagnostic(loc=ann.loc, code=code, message=message)
