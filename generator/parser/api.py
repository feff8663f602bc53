"""Section 5: module specs (DD020-DD023) and their class, method and function specs (DD022,
DD030, DD036, DD040, DD041, DD044, DD045), with the code checks of `generator.parser.code`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from generator.markdown import Block, Heading
from generator.models import Field_, ModuleSpec, Spec, SpecKind
from generator.parser import code
from generator.parser._report import Report
from generator.parser.front import PACKAGE_RE
from generator.parser.sections import chunks, fields, items_before_code, python_fences, ticked_list

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_NUMBER = r"(?P<num>\d+(?:\.\d+)*)\.?"
_MODULE_RE = re.compile(rf"^{_NUMBER}\s+Module\s+`(?P<name>[^`]*)`\s*$")
# A level-3 heading that tries to be a module heading (else it is prose sub-structure).
_MODULE_ATTEMPT_RE = re.compile(rf"^(?:\d[\d.]*\s+)?Module\s+(?:`|{_IDENT}(?:\.{_IDENT})+\s*$)")
# A part of a `path:` value: no `..`, no hidden directory (`.git`), no `\`, `:` or `~`.
_PATH_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_CLASS_SPEC_RE = re.compile(rf"^{_NUMBER}\s+Class\s+`(?P<name>{_IDENT})`\s*$")
_DEF_SPEC_RE = re.compile(rf"^{_NUMBER}\s+`(?P<name>{_IDENT}(?:\.{_IDENT})?)`\s*$")
# A spec name as written in `deps:` and `methods:`; the module prefix is optional.
SPEC_NAME_RE = re.compile(rf"^(?:{_IDENT}(?:\.{_IDENT})*:)?{_IDENT}(?:\.{_IDENT})?$")

_MODULE_KEYS = ("path",)
_SPEC_KEYS = ("deps", "raises", "returns", "complexity", "checks")


@dataclass
class _Module:
    """The module whose specs are being read; `keep` is False for invalid/duplicate modules."""

    module: ModuleSpec
    keep: bool
    classes: set[str] = field(default_factory=set)
    names: dict[str, int] = field(default_factory=dict)  # spec name -> heading line


def modules(r: Report, blocks: list[Block], package: str | None) -> list[ModuleSpec]:
    """Module specs of Section 5 with their specs (invalid or repeated modules dropped)."""
    found: list[ModuleSpec] = []
    seen: dict[str, int] = {}
    current: _Module | None = None
    for heading, body in chunks(blocks, max_level=4):
        if heading is None:
            continue
        if heading.level == 3:
            current = _module(r, heading, body, package, seen)
            if current is not None and current.keep:
                found.append(current.module)
        elif current is None:
            r.error(
                "DD022", heading.line, f"spec heading `{heading.text}` is outside a module spec"
            )
        else:
            spec = _spec(r, heading, body, current)
            if spec is not None:
                current.module.specs.append(spec)
    return found


def _module(
    r: Report, heading: Heading, body: list[Block], package: str | None, seen: dict[str, int]
) -> _Module | None:
    """A module from a level-3 heading, or None for a prose heading (which ends a module).

    An invalid or repeated module is still read (its specs are checked) but `keep` is False.
    """
    match = _MODULE_RE.match(heading.text)
    if match is None and not _MODULE_ATTEMPT_RE.match(heading.text):
        return None
    if match is None:
        message = f"module heading `{heading.text}` must read `<number> Module `dotted.name``"
        r.error("DD020", heading.line, message)
        name, number, keep = "<invalid>", "", False
    else:
        name, number = match.group("name"), match.group("num")
        keep = _name_ok(r, heading.line, name, package, seen)
    if keep:
        seen[name] = heading.line
    module_fields = fields(r, items_before_code(body), _MODULE_KEYS)
    module = ModuleSpec(
        name=name,
        path=_path(r, name, module_fields),
        number=number,
        loc=r.loc(heading.line),
        fields=module_fields,
    )
    for fence in python_fences(body):
        module.prelude.append(code.check_prelude(r, fence))
    return _Module(module, keep)


def _name_ok(r: Report, line: int, name: str, package: str | None, seen: dict[str, int]) -> bool:
    """False after DD020 (not a dotted name) or DD021 (repeated); DD023 keeps the module."""
    if not PACKAGE_RE.match(name):
        r.error("DD020", line, f"module name `{name}` is not a dotted Python name")
        return False
    if name in seen:
        r.error("DD021", line, f"module `{name}` declared twice (first on line {seen[name]})")
        return False
    if package is not None and not (name == package or name.startswith(package + ".")):
        r.error("DD023", line, f"module `{name}` is outside the document's package `{package}`")
    return True


def _path(r: Report, name: str, module_fields: list[Field_]) -> str:
    """The `path:` field (validated) or the path derived from the dotted name."""
    derived = name.replace(".", "/") + ".py"
    given = next((f for f in module_fields if f.key == "path"), None)
    if given is None:
        return derived
    value = given.value.strip("`").strip()
    if not value.endswith(".py") or not all(map(_PATH_PART_RE.match, value.split("/"))):
        r.error(
            "DD020",
            given.loc.line,
            f"module `path:` `{value}` must be a relative path to a .py file "
            "(`/`-separated parts of letters, digits, `_`, `-` and `.`, none starting with `.`)",
            given.loc.col,
        )
        return derived
    return value


def _spec(r: Report, heading: Heading, body: list[Block], current: _Module) -> Spec | None:
    """A class/method/function spec from a level-4 heading and its blocks; None for an invalid
    heading (DD022) or a name the module already has (DD040: reported once, the first wins)."""
    parsed = _spec_heading(heading.text)
    if parsed is None:
        r.error(
            "DD022",
            heading.line,
            f"spec heading `{heading.text}` must read `<number> Class `Name``, "
            "`<number> `Class.method`` or `<number> `function``",
        )
        return None
    kind, name, number = parsed
    first = current.names.setdefault(name, heading.line)
    if first != heading.line:
        r.error("DD040", heading.line, f"`{name}` already specified at {r.rel}:{first}:1")
        return None
    if kind is SpecKind.cls:
        current.classes.add(name)
    elif kind is SpecKind.method and name.split(".")[0] not in current.classes:
        r.error(
            "DD036",
            heading.line,
            f"method spec `{name}` names class `{name.split('.')[0]}`, which has no earlier class "
            f"spec in module `{current.module.name}`",
        )
    spec_fields = fields(r, items_before_code(body), _SPEC_KEYS)
    spec = Spec(
        kind=kind,
        name=name,
        module=current.module.name,
        number=number,
        loc=r.loc(heading.line),
        fields=spec_fields,
        deps=_deps(r, kind, name, spec_fields, heading.line),
    )
    fences = python_fences(body)
    if not fences:
        r.error("DD030", heading.line, f"spec `{name}` has no ```python code block")
        return spec
    for extra in fences[1:]:
        message = f"spec `{name}` has more than one ```python code block"
        r.error("DD030", extra.line, message, extra.indent + 1)
    spec.code, spec.annotations = code.check_spec(r, fences[0], kind, name)
    if _inline_checks(r, spec_fields):
        spec.annotations = [a.model_copy(update={"inline": True}) for a in spec.annotations]
    return spec


def _inline_checks(r: Report, spec_fields: list[Field_]) -> bool:
    """True when the spec's `checks:` field says `inline`; DD045 unless it says `inline` or
    `call` (the default: each check is one call of the check module)."""
    field = next((f for f in spec_fields if f.key == "checks"), None)
    if field is None:
        return False
    value = field.value.strip()
    if value not in ("inline", "call"):
        message = f"`checks:` is `inline` or `call`, not `{value}`"
        r.error("DD045", field.loc.line, message, field.loc.col)
    return value == "inline"


def _spec_heading(text: str) -> tuple[SpecKind, str, str] | None:
    """(kind, name, number) of a level-4 spec heading, or None when it is malformed."""
    match = _CLASS_SPEC_RE.match(text)
    if match:
        return SpecKind.cls, match.group("name"), match.group("num")
    match = _DEF_SPEC_RE.match(text)
    if match:
        name = match.group("name")
        kind = SpecKind.method if "." in name else SpecKind.function
        return kind, name, match.group("num")
    return None


def _deps(
    r: Report, kind: SpecKind, name: str, spec_fields: list[Field_], line: int
) -> list[str] | None:
    """The `deps:` list: None (missing, DD041 unless a class) or the names; DD044 if bad."""
    dep = next((f for f in spec_fields if f.key == "deps"), None)
    if dep is None:
        if kind is SpecKind.cls:
            return []
        r.error(
            "DD041",
            line,
            f"spec `{name}` has no `deps:` field (write `- deps: none` if it calls no other spec)",
        )
        return None
    if dep.value == "none":
        return []
    names = ticked_list(dep.value)
    bad = [n for n in names or [] if not SPEC_NAME_RE.match(n)]
    if names is None or bad:
        detail = f": `{bad[0]}` is not a spec name" if bad else ""
        r.error(
            "DD044",
            dep.loc.line,
            f"`deps:` must be `none` or a comma-separated list of backticked spec names{detail}",
            dep.loc.col,
        )
        return []
    if len(set(names)) != len(names):
        r.error("DD044", dep.loc.line, "`deps:` lists a name twice", dep.loc.col)
    return list(dict.fromkeys(names))
