"""The pattern library: load `patterns/*.yaml`, check annotations against it, render them.

A pattern is a Jinja2 template producing Python statements. An annotation
`# VAL: VAL_INT_RANGE(x, min=0)` is checked (`check_annotation`: DD050-DD053) and then rendered
(`render_annotation`) into statements that raise a uniform, self-explaining message. The generated
code never imports anything from `generator`: the output package does not depend on dd.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import keyword
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2
import libcst as cst
import yaml
from pydantic import ValidationError

from generator.checkmodule import CHECK_ALIAS, SITES_NAME, Site, string_literal
from generator.config import builtin_pattern_dir
from generator.models import Annotation, DDError, Diagnostic, Loc, Pattern, PatternParam

EXC_PARAM = "exc"  # every VAL pattern accepts `exc=` (added by the loader when not declared)
# Names a template sees besides the parameters; a parameter may not shadow them.
CONTEXT_NAMES = frozenset(
    {"fail", "where", "names_in", "negate", "reject", "loc", "symbol", "pattern", "message"}
)
_BUILTIN_NAMES = frozenset(dir(builtins))
_CONT = "\x00"  # starts the continuation lines of `fail()`; re-indented after rendering
_MAX_SHOWN_EXPR = 40  # a longer "where" expression is assigned to a local first


def _display(path: Path) -> str:
    """`path` relative to the working directory when inside it, else absolute; with `/`."""
    path = path.resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# --------------------------------------------------------------------------- loading


class _FileErrors(Exception):
    """Internal: the DD090 diagnostics of one pattern file."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics


def _dd090(path: str, line: int, message: str) -> Diagnostic:
    return Diagnostic(loc=Loc(path=path, line=line), code="DD090", message=message)


def _node_line(node: yaml.Node, keys: tuple[Any, ...]) -> int:
    """1-based line of the YAML node reached by following `keys` (as far as they resolve)."""
    line = node.start_mark.line + 1
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == key), None)
            if match is None:
                return line
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _template_line(node: yaml.MappingNode, key: str, lineno: int) -> int:
    """File line of line `lineno` of the text under `key` (a block scalar starts a line later)."""
    value = next(v for k, v in node.value if k.value == key)
    block = isinstance(value, yaml.ScalarNode) and value.style in ("|", ">")
    return value.start_mark.line + 1 + block + lineno - 1


def _compose(text: str, loader_cls: type) -> tuple[Any, Any]:
    """The document's node (for line numbers) and its data, from a single parse."""
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _read_yaml(path: Path, shown: str) -> tuple[dict[str, Any], yaml.MappingNode]:
    """The file's mapping and its node (for line numbers); DD090 on any YAML problem."""
    try:
        text = path.read_text(encoding="utf-8")
        try:
            node, data = _compose(text, _Loader)
        except yaml.YAMLError:
            node, data = _compose(text, yaml.SafeLoader)  # the pure-Python loader words errors best
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise _FileErrors([_dd090(shown, line, f"invalid YAML: {problem}")]) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise _FileErrors([_dd090(shown, 1, f"cannot read pattern file: {exc}")]) from exc
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise _FileErrors([_dd090(shown, 1, "a pattern file must be a YAML mapping")])
    seen: set[str] = set()
    for key, _ in node.value:
        if key.value in seen:
            line = key.start_mark.line + 1
            raise _FileErrors([_dd090(shown, line, f"key {key.value!r} given twice")])
        seen.add(key.value)
    return data, node


def _with_exc_param(pattern: Pattern) -> Pattern:
    """VAL patterns accept `exc=` (defaulting to the pattern's exception) even when undeclared."""
    if pattern.kind != "VAL" or any(p.name == EXC_PARAM for p in pattern.params):
        return pattern
    exc = PatternParam(
        name=EXC_PARAM,
        type="exception",
        required=False,
        default=pattern.exception,
        doc="exception class raised instead of the pattern's default",
    )
    return pattern.model_copy(update={"params": [*pattern.params, exc]})


def _semantic_problems(pattern: Pattern, data: dict[str, Any], stem: str) -> list[tuple[Any, str]]:
    """What pydantic cannot check; each problem is (YAML key path, message)."""
    problems: list[tuple[Any, str]] = []
    if stem != pattern.id:
        problems.append((("id",), f"file name must be the pattern ID: {pattern.id}.yaml"))
    if not pattern.id.startswith(pattern.kind + "_"):
        problems.append((("kind",), f"kind {pattern.kind} does not match the ID prefix"))
    if pattern.kind == "AST" and "exception" in data:
        problems.append((("exception",), "AST patterns always raise AssertionError"))
    names: set[str] = set()
    for i, param in enumerate(pattern.params):
        where = ("params", i)
        if not param.name.isidentifier() or keyword.iskeyword(param.name):
            problems.append((where, f"parameter name {param.name!r} is not an identifier"))
        elif param.name in names:
            problems.append((where, f"parameter {param.name!r} declared twice"))
        elif param.name in CONTEXT_NAMES:
            problems.append((where, f"parameter name {param.name!r} is reserved"))
        names.add(param.name)
        if param.required and param.default is not None:
            problems.append((where, f"required parameter {param.name!r} has a default"))
        if not param.required and param.default is None:
            problems.append((where, f"optional parameter {param.name!r} needs a default"))
        if param.default is not None and _parse_expr(param.default) is None:
            problems.append((where, f"default of {param.name!r} is not a Python expression"))
        if param.name == EXC_PARAM and (param.type != "exception" or param.required):
            problems.append((where, f"parameter {EXC_PARAM!r} must be an optional exception"))
        if param.name == EXC_PARAM and pattern.kind == "AST":
            problems.append((where, f"AST patterns take no {EXC_PARAM!r} parameter"))
    if pattern.check is None and not pattern.template.strip():
        problems.append((("id",), "a pattern needs a `check:` (a call) or a `template:`"))
    example = pattern.example.strip()
    if example and not (example.startswith(pattern.id + "(") and example.endswith(")")):
        problems.append((("example",), f"example must be a call of {pattern.id}"))
    return problems


def _parse_expr(src: str) -> ast.expr | None:
    try:
        return ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None


_Loader = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)  # libyaml when available: same result, faster


@dataclass
class _Compiled:
    """A pattern's templates: syntax-checked at load, compiled on first use (most go unused)."""

    env: jinja2.Environment
    message_src: str
    template_src: str
    args_src: str = ""
    shows_src: str = "[]"
    _cache: tuple[jinja2.Template, jinja2.Template, jinja2.Template, Any] | None = None

    def _compile(self) -> tuple[jinja2.Template, jinja2.Template, jinja2.Template, Any]:
        if self._cache is None:
            self._cache = (
                self.env.from_string(self.message_src),
                self.env.from_string(self.template_src),
                self.env.from_string(self.args_src),
                self.env.compile_expression(self.shows_src, undefined_to_none=False),
            )
        return self._cache

    @property
    def message(self) -> jinja2.Template:
        return self._compile()[0]

    @property
    def template(self) -> jinja2.Template:
        return self._compile()[1]

    @property
    def args(self) -> jinja2.Template:
        return self._compile()[2]

    @property
    def shows(self) -> Any:
        return self._compile()[3]


def _read_pattern(path: Path, env: jinja2.Environment) -> tuple[Pattern, _Compiled, int]:
    """One pattern file, validated and compiled; returns also the line of its `id` key."""
    shown = _display(path)
    data, node = _read_yaml(path, shown)
    if "loc" in data:
        raise _FileErrors([_dd090(shown, _node_line(node, ("loc",)), "unknown key 'loc'")])
    id_line = _node_line(node, ("id",))
    try:
        pattern = Pattern.model_validate({**data, "loc": {"path": shown, "line": id_line}})
    except ValidationError as exc:
        diags = []
        for err in exc.errors():
            where = ".".join(str(part) for part in err["loc"])
            line = _node_line(node, tuple(err["loc"]))
            diags.append(_dd090(shown, line, f"{where}: {err['msg']}"))
        raise _FileErrors(diags) from exc
    problems = _semantic_problems(pattern, data, path.stem)
    if problems:
        raise _FileErrors([_dd090(shown, _node_line(node, keys), msg) for keys, msg in problems])
    for key in ("message", "template"):
        try:
            env.parse(getattr(pattern, key))
        except jinja2.TemplateSyntaxError as exc:
            line = _template_line(node, key, exc.lineno or 1)
            message = f"{key}: Jinja2 syntax error: {exc.message}"
            raise _FileErrors([_dd090(shown, line, message)]) from exc
    compiled = _Compiled(env, pattern.message, pattern.template)
    if pattern.check is not None:
        _check_check(pattern, node, shown, env)
        compiled.args_src, compiled.shows_src = pattern.check.args, pattern.check.shows
    return _with_exc_param(pattern), compiled, id_line


def _check_check(pattern: Pattern, node: yaml.MappingNode, shown: str, env: Any) -> None:
    """DD090 for a `check:` that cannot work: code that does not parse or does not define its
    function with a keyword-only `at` and every parameter, or a template that does not parse."""
    check = pattern.check
    assert check is not None
    problems: list[tuple[tuple[str, ...], str]] = []
    for key, source in (("args", check.args), ("shows", "{{ " + check.shows + " }}")):
        try:
            env.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            problems.append((("check", key), f"check.{key}: Jinja2 syntax error: {exc.message}"))
    try:
        tree = ast.parse(check.code)
    except SyntaxError as exc:
        problems.append((("check", "code"), f"check.code is not Python: {exc.msg}"))
        tree = ast.Module(body=[], type_ignores=[])
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    function = functions.get(check.function)
    if not check.function.isidentifier() or keyword.iskeyword(check.function):
        problems.append((("check", "function"), f"{check.function!r} is not an identifier"))
    elif tree.body and function is None:
        problems.append((("check", "code"), f"check.code does not define {check.function}()"))
    elif function is not None:
        given = {a.arg for a in [*function.args.posonlyargs, *function.args.args]}
        if "at" not in {a.arg for a in function.args.kwonlyargs}:
            problems.append((("check", "code"), f"{check.function}() needs a keyword-only `at`"))
        if not check.args.strip():  # the annotation's own arguments are passed: bind them all
            wanted = [p.name for p in pattern.params]
            if pattern.kind == "VAL":
                wanted.append(EXC_PARAM)
            missing = [name for name in dict.fromkeys(wanted) if name not in given]
            if missing:
                names = ", ".join(missing)
                problems.append((("check", "code"), f"{check.function}() lacks {names}"))
    reserved = [n for n in check_names(pattern) if n in RESERVED_CHECK_NAMES]
    if reserved:
        problems.append((("check", "code"), f"check.code redefines {', '.join(reserved)}"))
    if problems:
        raise _FileErrors([_dd090(shown, _node_line(node, keys), msg) for keys, msg in problems])


# Names the check module itself defines; a pattern's check code may not redefine them.
RESERVED_CHECK_NAMES = frozenset({"Site", "sites", "reprlib", "annotations", "NoReturn"})


def check_names(pattern: Pattern) -> list[str]:
    """The top-level names a pattern's check code defines (functions, classes, assignments)."""
    if pattern.check is None:
        return []
    try:
        tree = ast.parse(pattern.check.code)
    except SyntaxError:
        return []
    names: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names += [
                n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)
            ]
    return names


def _pattern_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        shown = _display(directory)
        raise _FileErrors([_dd090(shown, 1, "pattern directory not found")])
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


class PatternLibrary:
    """The built-in patterns plus a project's own, by ID. Build it with `PatternLibrary.load`."""

    def __init__(
        self,
        patterns: dict[str, Pattern],
        compiled: dict[str, _Compiled],
        builtin_ids: frozenset[str],
    ) -> None:
        self._patterns = dict(sorted(patterns.items()))
        self._compiled = compiled
        self.builtin_ids = builtin_ids

    @classmethod
    def load(cls, extra_dirs: list[Path] | tuple[Path, ...] = ()) -> PatternLibrary:
        """Built-ins, then each extra directory (one that is the built-in directory is skipped).

        Raises DDError (DD090 at file:line) for invalid YAML, a file failing validation, a
        template with a Jinja2 syntax error, a duplicate ID or a project pattern reusing a
        built-in ID. All files are read before raising, so every problem is reported at once.
        """
        env = _environment()
        builtin = builtin_pattern_dir().resolve()
        dirs = [builtin] + [d for d in extra_dirs if d.resolve() != builtin]
        patterns: dict[str, Pattern] = {}
        compiled: dict[str, _Compiled] = {}
        builtin_ids: set[str] = set()
        diags: list[Diagnostic] = []
        for directory in dict.fromkeys(d.resolve() for d in dirs):
            try:
                files = _pattern_files(directory)
            except _FileErrors as exc:
                diags += exc.diagnostics
                continue
            for path in files:
                try:
                    pattern, comp, id_line = _read_pattern(path, env)
                except _FileErrors as exc:
                    diags += exc.diagnostics
                    continue
                clash = patterns.get(pattern.id)
                if clash is not None:
                    what = "a built-in" if pattern.id in builtin_ids else "an already defined"
                    where = clash.loc.path
                    diags.append(
                        _dd090(
                            pattern.loc.path,
                            id_line,
                            f"{pattern.id} reuses {what} pattern ID ({where})",
                        )
                    )
                    continue
                taken = {n: p.id for p in patterns.values() for n in check_names(p)}
                clashes = sorted({f"{n} ({taken[n]})" for n in check_names(pattern) if n in taken})
                if clashes:
                    message = f"check code of {pattern.id} redefines {', '.join(clashes)}"
                    diags.append(_dd090(pattern.loc.path, id_line, message))
                    continue
                patterns[pattern.id] = pattern
                compiled[pattern.id] = comp
                if directory == builtin:
                    builtin_ids.add(pattern.id)
        if diags:
            raise DDError(diags)
        return cls(patterns, compiled, frozenset(builtin_ids))

    def get(self, pattern_id: str) -> Pattern | None:
        return self._patterns.get(pattern_id)

    def ids(self) -> list[str]:
        """All IDs, sorted."""
        return list(self._patterns)

    def compiled(self, pattern_id: str) -> _Compiled:
        return self._compiled[pattern_id]

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self._patterns.values())

    def __len__(self) -> int:
        return len(self._patterns)

    def __contains__(self, pattern_id: object) -> bool:
        return pattern_id in self._patterns


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


_ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.FormattedString,
    cst.List,
    cst.Tuple,
    cst.Set,
    cst.Dict,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Ellipsis,
)


def _is_atomic(src: str) -> bool:
    """True when `src` can be used as an operand of any operator without parentheses."""
    try:
        node = cst.parse_expression(src)
    except cst.ParserSyntaxError:
        return False
    return bool(getattr(node, "lpar", ())) or isinstance(node, _ATOMIC)


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
            if given and _is_bare_generator(given):  # `f(x for x in xs)`: one argument only
                given = f"({given})"
            call_args = f"{given}, {at}" if given else at
            body = f"{CHECK_ALIAS}.{pattern.check.function}({call_args})\n"
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
