"""Loading the pattern library: `patterns/*.yaml` read, validated (DD090) and compiled.

A pattern is a Jinja2 `message` (what a check expects, in words) and either a `check:` (the
function of the generated check module an annotation calls) or a `template:` (statements
written inline). `PatternLibrary.load` reads the built-in directory and a project's own.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml
from pydantic import ValidationError

from generator.config import builtin_pattern_dir
from generator.models import DDError, Diagnostic, Loc, Pattern, PatternParam

EXC_PARAM = "exc"  # every VAL pattern accepts `exc=` (added by the loader when not declared)
# Names a template sees besides the parameters; a parameter may not shadow them.
CONTEXT_NAMES = frozenset(
    {"fail", "where", "names_in", "negate", "reject", "loc", "symbol", "pattern", "message"}
)


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
    guard_src: str = ""
    guarded_args_src: str = ""
    _cache: tuple[Any, ...] | None = None

    def _compile(self) -> tuple[Any, ...]:
        if self._cache is None:
            self._cache = (
                self.env.from_string(self.message_src),
                self.env.from_string(self.template_src),
                self.env.from_string(self.args_src),
                self.env.compile_expression(self.shows_src, undefined_to_none=False),
                self.env.from_string(self.guard_src),
                self.env.from_string(self.guarded_args_src),
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

    @property
    def guard(self) -> jinja2.Template:
        return self._compile()[4]

    @property
    def guarded_args(self) -> jinja2.Template:
        return self._compile()[5]


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
        compiled.guard_src = pattern.check.guard
        compiled.guarded_args_src = pattern.check.guarded_args
    return _with_exc_param(pattern), compiled, id_line


def _check_check(pattern: Pattern, node: yaml.MappingNode, shown: str, env: Any) -> None:
    """DD090 for a `check:` that cannot work: code that does not parse or does not define its
    function with a keyword-only `at` and every parameter, or a template that does not parse."""
    check = pattern.check
    assert check is not None
    problems: list[tuple[tuple[str, ...], str]] = []
    templates = {
        "args": check.args,
        "shows": "{{ " + check.shows + " }}",
        "guard": check.guard,
        "guarded_args": check.guarded_args,
    }
    for key, source in templates.items():
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
