"""Format generated modules so they read as written by hand: ruff's import sorting and formatter
(pinned in dd's dependencies, so the same input always gives the same bytes), then long string
literals split at spaces so every line fits.

Settings are dd's own, not the project's ruff configuration: ruff's defaults, the line length of
`[tool.dd] line-length` and the documents' packages as first-party imports. The formatter never
changes what code does; splitting a string into implicitly concatenated parts keeps its value.
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import tempfile
import tokenize
from collections.abc import Sequence
from pathlib import Path

from generator.models import DDError, Diagnostic, Loc

TARGET_VERSION = "py311"  # the oldest Python dd supports, so generated code runs where dd runs
_ROUNDS = 3  # format rounds: one, and another for a module whose long strings were split


def ruff_binary() -> Path:
    """The ruff executable that came with dd's dependencies."""
    from ruff.__main__ import find_ruff_bin

    return Path(find_ruff_bin())


def format_sources(
    sources: dict[str, str], line_length: int, first_party: Sequence[str]
) -> dict[str, str]:
    """`sources` (name -> Python source) sorted, formatted and wrapped to `line_length`.

    Raises DDError (DD095 at the name) when ruff cannot read a source.
    """
    if not sources:
        return {}
    names = sorted(sources)
    with tempfile.TemporaryDirectory(prefix="dd-format-") as tmp:
        files = {name: Path(tmp) / f"m{i}.py" for i, name in enumerate(names)}
        for name, path in files.items():
            path.write_text(sources[name], encoding="utf-8")
        isort = ["check", "--select", "I001", "--fix", "--config", _first_party(first_party)]
        _ruff(isort, list(files.values()), line_length, files)
        todo = list(files.values())
        for _ in range(_ROUNDS):
            _ruff(["format"], todo, line_length, files)
            todo = [path for path in todo if _wrap_file(path, line_length)]
            if not todo:
                break
        return {name: path.read_text(encoding="utf-8") for name, path in files.items()}


def _first_party(packages: Sequence[str]) -> str:
    listed = ", ".join(f'"{p}"' for p in sorted(set(packages)))
    return f"lint.isort.known-first-party = [{listed}]"


def _ruff(args: list[str], paths: list[Path], line_length: int, files: dict[str, Path]) -> None:
    """Run `ruff ARGS` on `paths` with dd's settings; DD095 when ruff reports a problem."""
    command = [
        str(ruff_binary()),
        *args,
        "--isolated",
        "--no-cache",
        "--quiet",
        "--line-length",
        str(line_length),
        "--target-version",
        TARGET_VERSION,
        *map(str, paths),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = proc.stdout + proc.stderr
        for name, path in files.items():
            output = output.replace(str(path), name)
        named = [name for name in files if name in output] or sorted(files)[:1]
        message = f"ruff cannot format the generated module: {output.strip()}"
        raise DDError([Diagnostic(loc=Loc(path=named[0]), code="DD095", message=message)])


def _wrap_file(path: Path, width: int) -> bool:
    """Split the long string literals of the file at `path`; True when it changed."""
    source = path.read_text(encoding="utf-8")
    wrapped = wrap_long_strings(source, width)
    if wrapped == source:
        return False
    path.write_text(wrapped, encoding="utf-8")
    return True


# --------------------------------------------------------------------------- long strings


def wrap_long_strings(source: str, width: int) -> str:
    """`source` with the longest splittable string literal of each line longer than `width` cut
    at spaces into implicitly concatenated parts that fit (the formatter lays them out, one a
    line). Strings that are statements of their own (docstrings), bytes and triple-quoted
    strings are left alone, as is every line that has no such literal."""
    lines = source.split("\n")
    long_rows = {i + 1 for i, line in enumerate(lines) if len(line) > width}
    if not long_rows:
        return source
    best: dict[int, tokenize.TokenInfo] = {}
    depth = 0
    line_start = True  # no token of the current logical line seen yet
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        statement = line_start and depth == 0  # a string here is a statement (a docstring)
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            line_start = True
        elif tok.type not in (tokenize.NL, tokenize.COMMENT):
            line_start = False
        row = tok.start[0]
        if row not in long_rows or statement or not _splittable(tok):
            continue
        if row not in best or len(tok.string) > len(best[row].string):
            best[row] = tok
    for row, tok in best.items():
        line = lines[row - 1]
        indent = len(line) - len(line.lstrip())
        first_on_line = not line[: tok.start[1]].strip()
        column = tok.start[1] if first_on_line else indent + 4
        parts = split_literal(tok.string, width - column - 1)
        if len(parts) > 1:
            lines[row - 1] = line[: tok.start[1]] + " ".join(parts) + line[tok.end[1] :]
    return "\n".join(lines)


def _splittable(tok: tokenize.TokenInfo) -> bool:
    """A one-line str or f-string literal (not bytes, not triple-quoted)."""
    if tok.type != tokenize.STRING or tok.start[0] != tok.end[0]:
        return False
    prefix = tok.string[: len(tok.string) - len(tok.string.lstrip("rRbBuUfF"))]
    return "b" not in prefix.lower() and not tok.string[len(prefix) :].startswith(('"""', "'''"))


def split_literal(literal: str, budget: int) -> list[str]:
    """`literal` (one single-line str or f-string literal) as parts of at most `budget`
    characters each where spaces allow, cut after a space that is plain text (never inside an
    f-string's replacement field, never escaped). A part of an f-string without replacement
    fields becomes a plain string."""
    prefix = literal[: len(literal) - len(literal.lstrip("rRuUfF"))]
    quote = literal[len(prefix)]
    body = literal[len(prefix) + 1 : -1]
    is_f = "f" in prefix.lower()
    pieces = _pieces(body, is_f, raw="r" in prefix.lower())
    frame = len(prefix) + 2
    parts: list[str] = []
    current = ""
    for piece in pieces:
        if current and frame + len(current) + len(piece) > budget:
            parts.append(current)
            current = ""
        current += piece
    parts.append(current)
    if len(parts) == 1:
        return [literal]
    split = [_part(prefix, quote, text, is_f) for text in parts]
    return split if _same_value(literal, split) else [literal]


def _same_value(literal: str, parts: list[str]) -> bool:
    """True when the concatenated `parts` are, to Python, the same expression as `literal`."""
    try:
        before = ast.dump(ast.parse(literal, mode="eval"))
        after = ast.dump(ast.parse(" ".join(parts), mode="eval"))
    except SyntaxError:
        return False
    return before == after


def _pieces(body: str, is_f: bool, raw: bool) -> list[str]:
    """`body` cut after each plain-text space; the pieces joined give `body` back."""
    pieces: list[str] = []
    start = i = 0
    depth = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and not raw and depth == 0:
            i += 2
            continue
        if is_f and char in "{}":
            if depth == 0 and body[i : i + 2] in ("{{", "}}"):
                i += 2
                continue
            depth += 1 if char == "{" else -1
        elif char == " " and depth == 0:
            pieces.append(body[start : i + 1])
            start = i + 1
        i += 1
    if start < len(body):
        pieces.append(body[start:])
    return pieces


def _part(prefix: str, quote: str, text: str, is_f: bool) -> str:
    if is_f and "{" not in text.replace("{{", "").replace("}}", ""):
        prefix = prefix.replace("f", "").replace("F", "")
        text = text.replace("{{", "{").replace("}}", "}")
    return f"{prefix}{quote}{text}{quote}"


def environment_key() -> str:
    """What identifies the formatter for caches: the ruff executable's size and time."""
    binary = ruff_binary()
    stat = os.stat(binary)
    return f"{binary}:{stat.st_size}:{stat.st_mtime_ns}"
