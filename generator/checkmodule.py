"""The check module dd generates into each package (`<package>/_checks.py`) and the table of
check sites at the end of every generated module that calls it.

An annotation whose pattern has a `check:` expands to one call, `check.int_range(n, min=1,
at=_AT[176])`: the function comes from the pattern (`check.code`), the site from the module's
`_AT` table (document line -> spec, what the check expects, the labels of the values its failure
message shows). A passing check costs one call, or none when its pattern has a guard: the call
then stands under `if not (guard):`, an inline test that holds whenever the check passes. The
message is built only when it fails, and reads exactly as the inline checks of earlier dd
versions did. The generated package depends on
nothing of dd's: the check module is plain Python generated with it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from generator import markers
from generator.models import Pattern

MODULE_NAME = "_checks"  # <package>/_checks.py
SITES_NAME = "_AT"  # the table of a module's check sites
CHECK_ALIAS = "check"  # the check module as a generated module imports it


@dataclass(frozen=True)
class Site:
    """Where a check call is written, as its module's `_AT` table holds it: the document line,
    the spec, what the check expects (in words) and the label of each value its failure message
    shows (None: not shown)."""

    line: int
    symbol: str
    expected: str
    labels: tuple[str | None, ...]


def string_literal(text: str) -> str:
    """A Python string literal for `text`, double-quoted unless `text` holds a double quote."""
    lit = repr(text)
    if lit.startswith("'") and '"' not in text:
        lit = '"' + lit[1:-1] + '"'
    return lit


HEADER = f"{markers.HEADER_PREFIX} as the check module of the pattern library. DO NOT EDIT."

_PRELUDE = '''"""The checks the generated modules of this package call, one function per pattern.

A check costs one call when it passes (none where its pattern's guard, tested inline by the
caller, holds). When it fails it raises with a message built only then: the pattern, the spec
and the document line of the annotation, what was expected and the value of each name
involved, shown by `reprlib.repr` (a table of 100,000 entries shows its first few).
"""

from __future__ import annotations

import reprlib
from types import FrameType
from typing import NoReturn


class Site:
    """Where a check is written: the spec, its document line, what the check expects, and the
    label of each value its failure shows (None: not shown)."""

    __slots__ = ("expected", "labels", "loc", "symbol")

    def __init__(self, symbol: str, loc: str, expected: str, labels: tuple[str | None, ...]):
        self.symbol = symbol
        self.loc = loc
        self.expected = expected
        self.labels = labels

    def fail(self, pattern: str, exc: type[BaseException], *values: object) -> NoReturn:
        """Raise `exc` for a failed check of `pattern`, showing each labelled value."""
        verb = "violated" if pattern.startswith("AST_") else "failed"
        message = f"{pattern} {verb} in {self.symbol} ({self.loc}): expected {self.expected}"
        shown = [
            f"{label}={reprlib.repr(value)}"
            for label, value in zip(self.labels, values)
            if label is not None
        ]
        if shown:
            message += f" (where {', '.join(shown)})"
        raise exc(message)

    def fail_in(self, frame: FrameType, pattern: str, exc: type[BaseException]) -> NoReturn:
        """`fail`, showing the value each label (a name or an attribute chain) has in `frame`,
        the caller of the check: a condition's values are looked up only when it fails."""
        self.fail(pattern, exc, *(_value_in(frame, label) for label in self.labels))


def _value_in(frame: FrameType, chain: str | None) -> object:
    """The value of `chain` (`name` or `name.attr...`) in `frame`: locals, globals, builtins."""
    if chain is None:
        return None
    root, *attrs = chain.split(".")
    for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
        if root in scope:
            value = scope[root]
            break
    else:
        return _Unbound(root)
    for attr in attrs:
        value = getattr(value, attr)
    return value


class _Unbound:
    """Shown for a name that has no value where the check failed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} unbound>"


def sites(
    document: str, table: dict[str, dict[int, tuple[str | None, ...]]]
) -> dict[int, Site]:
    """A module's check sites by document line, from spec -> line -> (expectation, *labels)."""
    return {
        line: Site(symbol, f"{document}:{line}", str(entry[0]), entry[1:])
        for symbol, entries in table.items()
        for line, entry in entries.items()
    }
'''


def path_in(package: str) -> str:
    """The check module's path, relative to the output root, for top-level `package`."""
    return f"{package}/{MODULE_NAME}.py"


def module_source(patterns: Sequence[Pattern]) -> str:
    """The check module (unformatted, placeholder hash) with the functions of `patterns`, in
    ID order; their imports are gathered at the top."""
    imports: list[str] = []
    bodies: list[str] = []
    for pattern in sorted(patterns, key=lambda p: p.id):
        if pattern.check is None:
            continue
        tree = ast.parse(pattern.check.code)
        lines = pattern.check.code.splitlines()
        body: list[str] = []
        for stmt in tree.body:
            text = "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno])
            target = imports if isinstance(stmt, (ast.Import, ast.ImportFrom)) else body
            target.append(text)
        bodies.append("\n\n\n".join(body))
    prelude = _PRELUDE
    if imports:
        extra = "\n".join(dict.fromkeys(imports))
        prelude = prelude.replace("import reprlib\n", f"import reprlib\n{extra}\n", 1)
    head = "\n".join([HEADER, markers.HASH_PREFIX + markers.PLACEHOLDER_HASH]) + "\n"
    return head + "\n\n\n".join([prelude.rstrip("\n"), *bodies]) + "\n"


def is_check_module(first_line: str) -> bool:
    return first_line == HEADER


def import_line(package: str) -> str:
    """How a generated module of `package` imports the check module."""
    return f"from {package} import {MODULE_NAME} as {CHECK_ALIAS}\n"


def sites_table(document: str, sites: Sequence[Site]) -> str:
    """The `_AT` assignment listing `sites` by spec, then by document line."""
    by_symbol: dict[str, list[Site]] = {}
    for site in sorted(sites, key=lambda s: s.line):
        by_symbol.setdefault(site.symbol, []).append(site)
    rows = []
    for symbol, group in by_symbol.items():
        rows.append(f"        {string_literal(symbol)}: {{\n")
        for site in group:
            labels = ["None" if label is None else string_literal(label) for label in site.labels]
            entry = ", ".join([string_literal(site.expected), *labels]) + ("" if labels else ",")
            rows.append(f"            {site.line}: ({entry}),\n")
        rows.append("        },\n")
    return (
        "# Where each check above is written: by spec and document line, what the check expects\n"
        "# and the label of each value its failure message shows.\n"
        f"{SITES_NAME} = {CHECK_ALIAS}.sites(\n"
        f"    {string_literal(document)},\n"
        "    {\n" + "".join(rows) + "    },\n)\n"
    )
