"""Front matter: the YAML between the first line `---` and the next `---` (DD001/DD002)."""

from __future__ import annotations

import re

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from generator.models import FrontMatter
from generator.parser._report import Report

PACKAGE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_KEY_LINE = re.compile(r"^([^\s#][^:]*?)\s*:(?:\s|$)")
# What a valid value looks like, for the keys whose grammar is a pattern.
_LOOKS_LIKE = {
    "version": "`MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, such as 0.1 or 1.2.0",
    "package": "a dotted Python name, such as rlsched or rlsched.core",
}


def end_line(r: Report) -> int | None:
    """Line of the closing `---` (1-based), or None after reporting DD001."""
    if not r.text.strip():
        r.error("DD001", 1, "empty file: a design document starts with `---` front matter")
        return None
    if r.lines[0].rstrip() != "---":
        r.error("DD001", 1, _missing_reason(r.lines))
        return None
    for index in range(1, len(r.lines)):
        if r.lines[index].rstrip() == "---":
            return index + 1
    r.error("DD001", 1, "front matter not terminated: no closing `---` line")
    return None


def _missing_reason(lines: list[str]) -> str:
    """Why line 1 does not open the front matter, naming a `---` that comes later."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and first > 0 and lines[first].rstrip() == "---":
        blank = "line 1 is blank" if first == 1 else f"lines 1-{first} are blank"
        return (
            f"front matter must start on line 1, but {blank}: remove the blank lines before `---`"
        )
    return "front matter missing: the first line must be `---`"


def load(r: Report, end: int) -> dict[str, object] | None:
    """The YAML mapping on lines 2..end-1, or None after reporting DD001.

    Scalars are loaded as strings (`yaml.BaseLoader`, which constructs no objects), so
    `version: 0.10` stays "0.10" instead of becoming the float 0.1.
    """
    import yaml

    source = "\n".join(r.lines[1 : end - 1])
    try:
        data = yaml.load(source, Loader=yaml.BaseLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = 2 + mark.line if mark else 1
        col = mark.column + 1 if mark else 1
        r.error("DD001", line, f"front matter is not valid YAML: {exc.problem}", col)
        return None
    except yaml.YAMLError as exc:
        r.error("DD001", 1, f"front matter is not valid YAML: {exc}")
        return None
    if not isinstance(data, dict):
        r.error("DD001", 1, "front matter must be a YAML mapping of `key: value` lines")
        return None
    return data


def validate(r: Report, data: dict[str, object], end: int) -> tuple[FrontMatter | None, str | None]:
    """The front matter (None after any DD002) and the package name when it is usable."""
    before = len(r.diagnostics)
    key_lines = _key_lines(r, end)
    package = data.get("package")
    if not isinstance(package, str) or not PACKAGE_RE.match(package):
        package = None
    try:
        front: FrontMatter | None = FrontMatter.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            _report(r, err, key_lines)
        front = None
    return (front if len(r.diagnostics) == before else None), package


def _key_lines(r: Report, end: int) -> dict[str, int]:
    """First line of each top-level key; repeated keys are reported (DD002) here."""
    found: dict[str, int] = {}
    for line in range(2, end):
        match = _KEY_LINE.match(r.lines[line - 1])
        if not match:
            continue
        key = match.group(1).strip("'\"")
        if key in found:
            r.error(
                "DD002", line, f"front matter key `{key}` repeated (first on line {found[key]})"
            )
        else:
            found[key] = line
    return found


def _report(r: Report, err: ErrorDetails, key_lines: dict[str, int]) -> None:
    """One pydantic error as DD002 at its key's line (line 1 for a missing key)."""
    key = str(err["loc"][0]) if err["loc"] else ""
    line = key_lines.get(key, 1)
    if err["type"] == "missing":
        r.error("DD002", 1, f"front matter key `{key}` missing")
    elif err["type"] == "extra_forbidden":
        allowed = ", ".join(FrontMatter.model_fields)
        r.error("DD002", line, f"unknown front matter key `{key}` (allowed: {allowed})")
    elif err["type"] == "string_pattern_mismatch" and key in _LOOKS_LIKE:
        value = err.get("input")
        r.error("DD002", line, f"front matter `{key}: {value}` must be {_LOOKS_LIKE[key]}")
    else:
        r.error("DD002", line, f"front matter key `{key}` invalid: {err['msg']}")
