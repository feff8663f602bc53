"""Parse one design document (grammar: design/FORMAT.md) into a `Document` plus diagnostics.

The parser reports every deviation it finds instead of stopping at the first, and every
diagnostic carries the exact 1-based line (and column where meaningful) in the `.md` file.
Checks that need more than one document or the pattern library (unknown deps, pattern IDs,
plan consistency) belong to later stages.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from generator.models import (
    Annotation,
    CodeBlock,
    Diagnostic,
    Document,
    Field_,
    FrontMatter,
    Loc,
    ModuleSpec,
    Section,
    Spec,
    SpecKind,
    Step,
    StepStatus,
)

__all__ = ["parse_document"]

SECTION_COUNT = 7
API_SECTION, PLAN_SECTION, HISTORY_SECTION = 5, 6, 7

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_IDENT}(?:\.{_IDENT})*"
_NUMBER = r"(?P<num>\d+(?:\.\d+)*)\.?"

_SECTION_RE = re.compile(r"^(?P<num>\d+)\.?\s+(?P<title>\S.*)$", re.DOTALL)
_MODULE_RE = re.compile(rf"^{_NUMBER}\s+Module\s+`(?P<name>[^`]*)`\s*$")
# A level-3 heading that tries to be a module heading (else it is prose sub-structure).
_MODULE_ATTEMPT_RE = re.compile(rf"^(?:\d[\d.]*\s+)?Module\s+(?:`|{_IDENT}(?:\.{_IDENT})+\s*$)")
_DOTTED_RE = re.compile(rf"^{_DOTTED}$")
# A part of a `path:` value: no `..`, no hidden directory (`.git`), no `\`, `:` or `~`.
_PATH_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_CLASS_SPEC_RE = re.compile(rf"^{_NUMBER}\s+Class\s+`(?P<name>{_IDENT})`\s*$")
_DEF_SPEC_RE = re.compile(rf"^{_NUMBER}\s+`(?P<name>{_IDENT}(?:\.{_IDENT})?)`\s*$")
_STEP_RE = re.compile(r"^Step\s+(?P<num>\d+)\s*:\s*(?P<title>\S.*)$", re.DOTALL)
# `word:` or `two words:` at the start of a bullet makes it a field; anything else is prose.
_FIELD_RE = re.compile(r"^(?P<key>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*)?):(?:[ \t]+|$)", re.MULTILINE)
_BULLET_RE = re.compile(r"^\s*[-*+]\s*")
# A spec name as written in `deps:` and `methods:`; the module prefix is optional.
_SPEC_NAME_RE = re.compile(rf"^(?:{_DOTTED}:)?{_IDENT}(?:\.{_IDENT})?$")
_TICKED_RE = re.compile(r"\s*`([^`]+)`\s*")
_DEPENDS_ITEM_RE = re.compile(r"^(?:Step\s+)?(\d+)$")
# Annotations: anything starting `# VAL`/`# AST` (not followed by a letter or digit) must be
# well formed, so `# VAL_INT_RANGE(x)` (missing `VAL:`) is an error, `# VALIDATE ...` is prose.
_ANNOTATION_START_RE = re.compile(r"^#\s*(VAL|AST)(?![A-Za-z0-9])")
_ANNOTATION_RE = re.compile(r"^#\s*(VAL|AST):\s*([A-Z][A-Z0-9_]*)\((.*)\)\s*$")

_MODULE_KEYS = ("path",)
_SPEC_KEYS = ("deps", "raises", "returns", "complexity")
_STEP_KEYS = ("status", "depends on", "methods", "purpose", "verify", "date", "verified")


# --------------------------------------------------------------------------- public API


def parse_document(
    path: Path, rel: str, text: str | None = None
) -> tuple[Document | None, list[Diagnostic]]:
    """Parse the design document at `path`; `rel` is the path written into every `Loc`.

    `text` overrides reading the file. Returns `(document, diagnostics)` with every diagnostic
    found, in document order per check. `document` is None exactly when the front matter is
    unusable (DD001) or invalid (DD002); after DD002 the body is still checked. Raises OSError
    when the file cannot be read (undecodable UTF-8 is reported as DD001 instead).
    """
    if text is None:
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            loc = Loc(path=rel, line=line)
            return None, [Diagnostic(loc=loc, code="DD001", message=f"file is not UTF-8: {exc}")]
    parser = _Parser(rel, text)
    return parser.run(), parser.diagnostics


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True)
class _Heading:
    """A top-level ATX or setext heading."""

    level: int
    text: str  # raw inline source, e.g. "5.1 Module `demo.pool`"
    line: int


@dataclass(frozen=True)
class _Fence:
    """A top-level fenced code block; `line` is the opening fence's line."""

    info: str  # first word of the info string ("" when none)
    code: str
    line: int
    indent: int  # columns the fence is indented by (markdown-it strips them from `code`)

    def block(self, rel: str) -> CodeBlock:
        return CodeBlock(
            code=self.code,
            info=self.info,
            loc=Loc(path=rel, line=self.line + 1, col=self.indent + 1),
        )


@dataclass(frozen=True)
class _Item:
    """First paragraph of an item of a top-level bullet list."""

    text: str  # raw inline source, lines joined by "\n"
    line: int
    col: int  # column of the text's first character


@dataclass(frozen=True)
class _Table:
    """A top-level table: its body rows (header excluded), each a list of raw cell texts."""

    line: int
    rows: list[list[str]]


_Block = _Heading | _Fence | _Item | _Table


@dataclass
class _ModuleCtx:
    """The module whose specs are being read; `keep` is False for invalid/duplicate modules."""

    module: ModuleSpec
    keep: bool
    classes: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class _Comment:
    """An own-line comment in a code block: code line (1-based), column (0-based), text."""

    line: int
    col: int
    text: str


# --------------------------------------------------------------------------- the parser


class _Parser:
    """One document's parse; collects diagnostics in `self.diagnostics`."""

    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        self.text = text = text.removeprefix("\ufeff")  # a byte order mark is not content
        self.lines = [line.rstrip("\r") for line in text.split("\n")]
        if len(self.lines) > 1 and self.lines[-1] == "":
            self.lines.pop()  # the text ends with a newline: no extra line
        self.diagnostics: list[Diagnostic] = []

    # ---- helpers

    def loc(self, line: int, col: int = 1) -> Loc:
        return Loc(path=self.rel, line=line, col=col)

    def error(self, code: str, line: int, message: str, col: int = 1) -> None:
        self.diagnostics.append(Diagnostic(loc=self.loc(line, col), code=code, message=message))

    @property
    def last_line(self) -> int:
        return max(len(self.lines), 1)

    # ---- driver

    def run(self) -> Document | None:
        """Parse everything; the Document when the front matter is valid, else None."""
        end = self._front_matter_end()
        data = None if end is None else self._load_front_matter(end)
        if end is None or data is None:
            return None
        front, package = self._validate_front_matter(data, end)
        blocks = self._blocks(end)
        sections = self._sections(blocks)
        by_number = {s.number: s for s in sections}
        modules = self._api(self._within(blocks, by_number.get(API_SECTION)), package)
        steps = self._plan(self._within(blocks, by_number.get(PLAN_SECTION)))
        revisions = self._revisions(self._within(blocks, by_number.get(HISTORY_SECTION)))
        if front is None:
            return None
        plan = by_number.get(PLAN_SECTION)
        return Document(
            path=self.rel,
            text=self.text,
            front=front,
            front_loc=self.loc(1),
            sections=sections,
            modules=modules,
            steps=steps,
            plan_loc=plan.loc if plan else None,
            revisions=revisions,
        )

    # ---- front matter

    def _front_matter_end(self) -> int | None:
        """Line of the closing `---` (1-based), or None after reporting DD001."""
        if not self.lines or self.lines[0].rstrip() != "---":
            self.error("DD001", 1, "front matter missing: the first line must be `---`")
            return None
        for index in range(1, len(self.lines)):
            if self.lines[index].rstrip() == "---":
                return index + 1
        self.error("DD001", 1, "front matter not terminated: no closing `---` line")
        return None

    def _load_front_matter(self, end: int) -> dict[str, object] | None:
        """The YAML mapping on lines 2..end-1, or None after reporting DD001.

        Scalars are loaded as strings (`yaml.BaseLoader`, which constructs no objects), so
        `version: 0.10` stays "0.10" instead of becoming the float 0.1.
        """
        source = "\n".join(self.lines[1 : end - 1])
        try:
            data = yaml.load(source, Loader=yaml.BaseLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = 2 + mark.line if mark else 1
            col = mark.column + 1 if mark else 1
            self.error("DD001", line, f"front matter is not valid YAML: {exc.problem}", col)
            return None
        except yaml.YAMLError as exc:
            self.error("DD001", 1, f"front matter is not valid YAML: {exc}")
            return None
        if not isinstance(data, dict):
            self.error("DD001", 1, "front matter must be a YAML mapping of `key: value` lines")
            return None
        return data

    def _validate_front_matter(
        self, data: dict[str, object], end: int
    ) -> tuple[FrontMatter | None, str | None]:
        """The front matter (None after any DD002) and the package name when it is usable."""
        before = len(self.diagnostics)
        key_lines = self._front_key_lines(end)
        package = data.get("package")
        if not isinstance(package, str) or not _DOTTED_RE.match(package):
            package = None
        try:
            front: FrontMatter | None = FrontMatter.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                self._front_error(err, key_lines)
            front = None
        return (front if len(self.diagnostics) == before else None), package

    def _front_key_lines(self, end: int) -> dict[str, int]:
        """First line of each top-level key; repeated keys are reported (DD002) here."""
        found: dict[str, int] = {}
        for line in range(2, end):
            match = re.match(r"^([^\s#][^:]*?)\s*:(?:\s|$)", self.lines[line - 1])
            if not match:
                continue
            key = match.group(1).strip("'\"")
            if key in found:
                self.error(
                    "DD002", line, f"front matter key `{key}` repeated (first on line {found[key]})"
                )
            else:
                found[key] = line
        return found

    def _front_error(self, err: ErrorDetails, key_lines: dict[str, int]) -> None:
        """Report one pydantic error as DD002 at its key's line (line 1 for a missing key)."""
        key = str(err["loc"][0]) if err["loc"] else ""
        if err["type"] == "missing":
            self.error("DD002", 1, f"front matter key `{key}` missing")
        elif err["type"] == "extra_forbidden":
            allowed = ", ".join(FrontMatter.model_fields)
            self.error(
                "DD002",
                key_lines.get(key, 1),
                f"unknown front matter key `{key}` (allowed: {allowed})",
            )
        else:
            self.error(
                "DD002", key_lines.get(key, 1), f"front matter key `{key}` invalid: {err['msg']}"
            )

    # ---- markdown blocks

    def _blocks(self, front_end: int) -> list[_Block]:
        """Top-level headings, fences, bullet items and tables, in document order.

        The front matter lines are blanked before parsing, so token line numbers are the
        file's line numbers.
        """
        body = "\n".join([""] * front_end + self.lines[front_end:])
        tokens = MarkdownIt("commonmark").enable("table").parse(body)
        blocks: list[_Block] = []
        in_bullets = False
        for index, token in enumerate(tokens):
            if token.level == 0 and token.type in ("bullet_list_open", "ordered_list_open"):
                in_bullets = token.type == "bullet_list_open"
            elif token.type == "heading_open" and token.level == 0:
                blocks.append(
                    _Heading(int(token.tag[1:]), tokens[index + 1].content.strip(), _line(token))
                )
            elif token.type == "fence" and token.level == 0:
                blocks.append(self._fence(token))
            elif token.type == "list_item_open" and token.level == 1 and in_bullets:
                item = self._item(tokens, index)
                if item is not None:
                    blocks.append(item)
            elif token.type == "table_open" and token.level == 0:
                blocks.append(_Table(_line(token), _table_rows(tokens, index)))
        return blocks

    def _fence(self, token: Token) -> _Fence:
        line = _line(token)
        raw = self.lines[line - 1]
        words = token.info.split()
        return _Fence(words[0] if words else "", token.content, line, len(raw) - len(raw.lstrip()))

    def _item(self, tokens: list[Token], index: int) -> _Item | None:
        """The list item at `index` as an `_Item`, if it opens with a paragraph."""
        if index + 2 >= len(tokens) or tokens[index + 1].type != "paragraph_open":
            return None
        paragraph = tokens[index + 1]
        text = tokens[index + 2].content
        line = _line(paragraph)
        raw = self.lines[line - 1]
        first = text.split("\n", 1)[0]
        start = raw.find(first) if first else -1
        if start < 0:
            bullet = _BULLET_RE.match(raw)
            start = bullet.end() if bullet else 0
        return _Item(text, line, start + 1)

    # ---- sections

    def _sections(self, blocks: list[_Block]) -> list[Section]:
        """The numbered sections in document order (first occurrence of each number)."""
        headings = [b for b in blocks if isinstance(b, _Heading) and b.level == 2]
        found: dict[int, Section] = {}
        highest = 0
        for index, heading in enumerate(headings):
            end = headings[index + 1].line - 1 if index + 1 < len(headings) else self.last_line
            match = _SECTION_RE.match(heading.text)
            if not match:
                self.error(
                    "DD012",
                    heading.line,
                    f"level-2 heading `{heading.text}` is not a "
                    "numbered section `N. Title`; use level 3 or below for sub-structure",
                )
                continue
            number = int(match.group("num"))
            if not 1 <= number <= SECTION_COUNT:
                self.error(
                    "DD012",
                    heading.line,
                    f"unknown section number {number} (sections are 1..{SECTION_COUNT})",
                )
                continue
            if number in found:
                self.error(
                    "DD011",
                    heading.line,
                    f"section {number} duplicated (first on line {found[number].loc.line})",
                )
                continue
            if number < highest:
                self.error(
                    "DD012",
                    heading.line,
                    f"section {number} out of order (it follows section {highest})",
                )
            highest = max(highest, number)
            found[number] = Section(
                number=number,
                title=match.group("title").strip(),
                loc=self.loc(heading.line),
                end_line=end,
            )
        self._missing_sections(found)
        return sorted(found.values(), key=lambda s: s.loc.line)

    def _missing_sections(self, found: dict[int, Section]) -> None:
        """DD010 for each missing number, at the next present section (else the last line)."""
        for number in range(1, SECTION_COUNT + 1):
            if number in found:
                continue
            later = [s for n, s in found.items() if n > number]
            if later:
                where = min(s.loc.line for s in later)
                self.error("DD010", where, f"section {number} missing (expected before this one)")
            else:
                self.error("DD010", self.last_line, f"section {number} missing")

    @staticmethod
    def _within(blocks: list[_Block], section: Section | None) -> list[_Block]:
        """The blocks after `section`'s heading up to its end line."""
        if section is None:
            return []
        return [b for b in blocks if section.loc.line < b.line <= section.end_line]

    # ---- fields

    def _fields(self, items: list[_Item], allowed: tuple[str, ...]) -> list[Field_]:
        """`- key: value` items as fields; unknown or repeated keys are DD060, prose skipped."""
        fields: list[Field_] = []
        for item in items:
            match = _FIELD_RE.match(item.text)
            if not match:
                continue
            key = match.group("key")
            if key not in allowed:
                known = ", ".join(f"`{k}`" for k in allowed)
                self.error("DD060", item.line, f"unknown field `{key}` (known: {known})", item.col)
                continue
            if any(f.key == key for f in fields):
                self.error("DD060", item.line, f"field `{key}` repeated", item.col)
                continue
            value = " ".join(part.strip() for part in item.text[match.end() :].split("\n"))
            col = self._value_col(item, len(key) + 1)
            fields.append(Field_(key=key, value=value.strip(), loc=self.loc(item.line, col)))
        return fields

    def _value_col(self, item: _Item, key_width: int) -> int:
        """1-based column of a field's value on the item's raw line: after `key:` and blanks.

        Trailing blanks of an empty value are skipped too, so an editor inserting there keeps
        the `key: value` spacing.
        """
        raw = self.lines[item.line - 1]
        index = item.col - 1 + key_width
        while index < len(raw) and raw[index] in " \t":
            index += 1
        return index + 1

    # ---- Section 5

    def _api(self, blocks: list[_Block], package: str | None) -> list[ModuleSpec]:
        """Module specs of Section 5 with their specs (invalid or repeated modules dropped)."""
        modules: list[ModuleSpec] = []
        seen: dict[str, int] = {}
        ctx: _ModuleCtx | None = None
        for heading, body in _chunks(blocks, max_level=4):
            if heading is None:
                continue
            if heading.level == 3:
                ctx = self._module(heading, body, package, seen)
                if ctx is not None and ctx.keep:
                    modules.append(ctx.module)
            elif ctx is None:
                self.error(
                    "DD022", heading.line, f"spec heading `{heading.text}` is outside a module spec"
                )
            else:
                spec = self._spec(heading, body, ctx)
                if spec is not None:
                    ctx.module.specs.append(spec)
        return modules

    def _module(
        self, heading: _Heading, body: list[_Block], package: str | None, seen: dict[str, int]
    ) -> _ModuleCtx | None:
        """A module from a level-3 heading, or None for a prose heading (which ends a module).

        An invalid or repeated module is still read (its specs are checked) but `keep` is False.
        """
        match = _MODULE_RE.match(heading.text)
        if match is None and not _MODULE_ATTEMPT_RE.match(heading.text):
            return None
        if match is None:
            self.error(
                "DD020",
                heading.line,
                f"module heading `{heading.text}` must read `<number> Module `dotted.name``",
            )
            name, number, keep = "<invalid>", "", False
        else:
            name, number = match.group("name"), match.group("num")
            keep = self._module_name_ok(heading.line, name, package, seen)
        if keep:
            seen[name] = heading.line
        fields = self._fields(_items_before_code(body), _MODULE_KEYS)
        module = ModuleSpec(
            name=name,
            path=self._module_path(name, fields),
            number=number,
            loc=self.loc(heading.line),
            fields=fields,
        )
        for fence in _python_fences(body):
            module.prelude.append(fence.block(self.rel))
            self._check_prelude(fence)
        return _ModuleCtx(module, keep)

    def _module_name_ok(
        self, line: int, name: str, package: str | None, seen: dict[str, int]
    ) -> bool:
        """False after DD020 (not a dotted name) or DD021 (repeated); DD023 keeps the module."""
        if not _DOTTED_RE.match(name):
            self.error("DD020", line, f"module name `{name}` is not a dotted Python name")
            return False
        if name in seen:
            self.error(
                "DD021", line, f"module `{name}` declared twice (first on line {seen[name]})"
            )
            return False
        if package is not None and not (name == package or name.startswith(package + ".")):
            self.error(
                "DD023", line, f"module `{name}` is outside the document's package `{package}`"
            )
        return True

    def _module_path(self, name: str, fields: list[Field_]) -> str:
        """The `path:` field (validated) or the path derived from the dotted name."""
        derived = name.replace(".", "/") + ".py"
        given = next((f for f in fields if f.key == "path"), None)
        if given is None:
            return derived
        value = given.value.strip("`").strip()
        if not value.endswith(".py") or not all(map(_PATH_PART_RE.match, value.split("/"))):
            self.error(
                "DD020",
                given.loc.line,
                f"module `path:` `{value}` must be a relative path to a .py file "
                "(`/`-separated parts of letters, digits, `_`, `-` and `.`, none starting with `.`)",
                given.loc.col,
            )
            return derived
        return value

    def _check_prelude(self, fence: _Fence) -> None:
        """Preludes: syntax errors (DD031), definitions (DD037), annotations (DD055)."""
        tree = self._parse_python(fence)
        if tree is None:
            return
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.error(
                    "DD037",
                    fence.line + node.lineno,
                    f"module prelude defines `{node.name}`; give it its own spec",
                    fence.indent + node.col_offset + 1,
                )
        self._annotations(fence, body_after=None)

    def _spec(self, heading: _Heading, body: list[_Block], ctx: _ModuleCtx) -> Spec | None:
        """A class/method/function spec from a level-4 heading and its blocks."""
        parsed = _spec_heading(heading.text)
        if parsed is None:
            self.error(
                "DD022",
                heading.line,
                f"spec heading `{heading.text}` must read "
                "`<number> Class `Name``, `<number> `Class.method`` or "
                "`<number> `function``",
            )
            return None
        kind, name, number = parsed
        if kind is SpecKind.cls:
            ctx.classes.add(name)
        elif kind is SpecKind.method and name.split(".")[0] not in ctx.classes:
            self.error(
                "DD036",
                heading.line,
                f"method spec `{name}` names class "
                f"`{name.split('.')[0]}`, which has no earlier class spec in module "
                f"`{ctx.module.name}`",
            )
        fields = self._fields(_items_before_code(body), _SPEC_KEYS)
        spec = Spec(
            kind=kind,
            name=name,
            module=ctx.module.name,
            number=number,
            loc=self.loc(heading.line),
            fields=fields,
            deps=self._deps(kind, name, fields, heading.line),
        )
        fences = _python_fences(body)
        if not fences:
            self.error("DD030", heading.line, f"spec `{name}` has no ```python code block")
            return spec
        for extra in fences[1:]:
            self.error(
                "DD030",
                extra.line,
                f"spec `{name}` has more than one ```python code block",
                extra.indent + 1,
            )
        spec.code = fences[0].block(self.rel)
        spec.annotations = self._check_code(fences[0], kind, name)
        return spec

    def _deps(self, kind: SpecKind, name: str, fields: list[Field_], line: int) -> list[str] | None:
        """The `deps:` list: None (missing, DD041 unless a class) or the names; DD044 if bad."""
        dep = next((f for f in fields if f.key == "deps"), None)
        if dep is None:
            if kind is SpecKind.cls:
                return []
            self.error(
                "DD041",
                line,
                f"spec `{name}` has no `deps:` field (write `- deps: none` "
                "if it calls no other spec)",
            )
            return None
        if dep.value == "none":
            return []
        names = _ticked_list(dep.value)
        bad = [n for n in names or [] if not _SPEC_NAME_RE.match(n)]
        if names is None or bad:
            detail = f": `{bad[0]}` is not a spec name" if bad else ""
            self.error(
                "DD044",
                dep.loc.line,
                "`deps:` must be `none` or a comma-separated list "
                f"of backticked spec names{detail}",
                dep.loc.col,
            )
            return []
        if len(set(names)) != len(names):
            self.error("DD044", dep.loc.line, "`deps:` lists a name twice", dep.loc.col)
        return list(dict.fromkeys(names))

    # ---- spec code

    def _parse_python(self, fence: _Fence) -> ast.Module | None:
        """`ast.parse` of the block; a syntax error is DD031 at its document line and column."""
        try:
            return ast.parse(fence.code)
        except SyntaxError as exc:
            count = max(fence.code.count("\n"), 1)
            lineno = min(max(exc.lineno or 1, 1), count)
            col = fence.indent + (exc.offset or 1)
            self.error("DD031", fence.line + lineno, f"syntax error: {exc.msg}", col)
        except ValueError as exc:  # e.g. null bytes in the source
            self.error("DD031", fence.line + 1, f"syntax error: {exc}", fence.indent + 1)
        return None

    def _check_code(self, fence: _Fence, kind: SpecKind, name: str) -> list[Annotation]:
        """Check a spec's code block (DD031-DD035, DD054/DD055); returns its annotations."""
        tree = self._parse_python(fence)
        if tree is None:
            return []
        wanted = (
            (ast.ClassDef,) if kind is SpecKind.cls else (ast.FunctionDef, ast.AsyncFunctionDef)
        )
        what = "`class` statement" if kind is SpecKind.cls else "`def` or `async def`"
        if not tree.body or not isinstance(tree.body[0], wanted):
            where = _stmt_line(tree.body[0]) if tree.body else 1
            self.error("DD032", fence.line + where, f"spec `{name}` must hold exactly one {what}")
            return []
        if len(tree.body) > 1:
            self.error(
                "DD032",
                fence.line + _stmt_line(tree.body[1]),
                f"spec `{name}` must hold exactly one {what}; found a second statement",
            )
        node = tree.body[0]
        assert isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        self._check_definition(fence, node, name)
        if isinstance(node, ast.ClassDef):
            self._check_class_body(fence, node, name)
            return self._annotations(fence, body_after=None)
        return self._annotations(fence, body_after=_header_end(fence.code, node))

    def _check_definition(
        self, fence: _Fence, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, name: str
    ) -> None:
        """DD034 (name differs from the heading) and DD033 (no docstring)."""
        line, col = fence.line + node.lineno, fence.indent + node.col_offset + 1
        short = name.rsplit(".", 1)[-1]
        if node.name != short:
            self.error(
                "DD034", line, f"heading names `{short}` but the code defines `{node.name}`", col
            )
        if ast.get_docstring(node, clean=False) is None:
            self.error(
                "DD033",
                line,
                f"`{node.name}` has no docstring (its first statement must be a string)",
                col,
            )

    def _check_class_body(self, fence: _Fence, node: ast.ClassDef, name: str) -> None:
        """DD035 for every function defined inside a class spec."""
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.error(
                    "DD035",
                    fence.line + inner.lineno,
                    f"class spec `{name}` defines `{inner.name}`; give each method its own spec",
                    fence.indent + inner.col_offset + 1,
                )

    def _annotations(self, fence: _Fence, body_after: int | None) -> list[Annotation]:
        """Annotation comments of a parsed block; only lines after `body_after` may hold them.

        `body_after` is the code line ending the function header, or None where no annotation
        is allowed (class specs, preludes): those are DD055. Malformed ones are DD054.
        """
        found: list[Annotation] = []
        for comment, own_line in _comments(fence.code):
            start = _ANNOTATION_START_RE.match(comment.text)
            if start is None:
                continue
            line, col = fence.line + comment.line, fence.indent + comment.col + 1
            match = _ANNOTATION_RE.match(comment.text)
            if not own_line:
                self.error(
                    "DD055",
                    line,
                    "an annotation must be a comment on its own line; after code it would be "
                    "dropped (move it above the statement it guards)",
                    col,
                )
            elif match is None:
                self.error(
                    "DD054",
                    line,
                    "malformed annotation: write "
                    f"`# {start.group(1)}: PATTERN_ID(args)` on one line",
                    col,
                )
            elif body_after is None or comment.line <= body_after:
                self.error(
                    "DD055", line, f"annotation `{match.group(2)}` is outside a function body", col
                )
            else:
                kind, pattern, args = match.groups()
                found.append(
                    Annotation(kind=kind, pattern=pattern, args=args, loc=self.loc(line, col))
                )
        return found

    # ---- Section 6

    def _plan(self, blocks: list[_Block]) -> list[Step]:
        """Steps of Section 6 (DD070 headings/numbering, DD071 fields)."""
        steps: list[Step] = []
        previous = 0
        for heading, body in _chunks(blocks, max_level=3):
            if heading is None or heading.level != 3:
                continue
            match = _STEP_RE.match(heading.text)
            if match is None:
                self.error(
                    "DD070",
                    heading.line,
                    f"heading `{heading.text}` in Section 6 must "
                    "read `Step N: Title` (use level 4 or below for other structure)",
                )
                continue
            number = int(match.group("num"))
            if number != previous + 1:
                self.error(
                    "DD070",
                    heading.line,
                    f"step {number} out of sequence: expected step {previous + 1}",
                )
            previous = number
            steps.append(self._step(heading, number, match.group("title").strip(), body))
        return steps

    def _step(self, heading: _Heading, number: int, title: str, body: list[_Block]) -> Step:
        items = [b for b in body if isinstance(b, _Item)]
        step = Step(
            number=number,
            title=title,
            loc=self.loc(heading.line),
            fields=self._fields(items, _STEP_KEYS),
        )
        for key in ("status", "purpose"):
            if step.field(key) is None:
                self.error("DD071", heading.line, f"step {number} has no `{key}:` field")
        for f in step.fields:
            problem = _STEP_FIELD_SETTERS[f.key](step, f.value)
            if problem:
                self.error("DD071", f.loc.line, f"step {number} `{f.key}:` {problem}", f.loc.col)
        return step

    # ---- Section 7

    @staticmethod
    def _revisions(blocks: list[_Block]) -> list[str]:
        """First-column values of the first table in Section 7 (header excluded)."""
        table = next((b for b in blocks if isinstance(b, _Table)), None)
        if table is None:
            return []
        values = [row[0].strip().strip("`").strip() for row in table.rows if row]
        return [v for v in values if v]


# --------------------------------------------------------------------------- step fields


def _set_status(step: Step, value: str) -> str | None:
    try:
        step.status = StepStatus(value)
    except ValueError:
        return "must be NOT_STARTED, IN_PROGRESS or DONE"
    return None


def _set_depends_on(step: Step, value: str) -> str | None:
    if value == "none":
        return None
    numbers: list[int] = []
    for part in value.split(","):
        match = _DEPENDS_ITEM_RE.match(part.strip())
        if match is None:
            return "must be `none` or step numbers like `1, 2` or `Step 1, Step 2`"
        numbers.append(int(match.group(1)))
    step.depends_on = numbers
    return None


def _set_methods(step: Step, value: str) -> str | None:
    if value == "none":
        return None
    names = _ticked_list(value)
    if names is None or not all(_SPEC_NAME_RE.match(n) for n in names):
        return "must be a comma-separated list of backticked spec names"
    step.methods = names
    return None


def _set_purpose(step: Step, value: str) -> str | None:
    if not value:
        return "must not be empty"
    step.purpose = value
    return None


def _set_verify(step: Step, value: str) -> str | None:
    items = _ticked_list(value)
    if items is None:
        return "must be a comma-separated list of backticked items"
    bad = [i for i in items if not (i.startswith(("steps/", "cmd:")))]
    if bad:
        return f"item `{bad[0]}` is neither a `steps/...` path nor `cmd: <command>`"
    escaping = [i for i in items if not i.startswith("cmd:") and ".." in i.split("/")]
    if escaping:
        return f"item `{escaping[0]}` must stay under `steps/` (no `..`)"
    step.verify = items
    return None


def _set_date(step: Step, value: str) -> str | None:
    step.date = value
    return None


def _set_verified(step: Step, value: str) -> str | None:
    step.verified = value
    return None


# Each setter stores a valid value on the step, or returns what is wrong with it.
_STEP_FIELD_SETTERS: dict[str, Callable[[Step, str], str | None]] = {
    "status": _set_status,
    "depends on": _set_depends_on,
    "methods": _set_methods,
    "purpose": _set_purpose,
    "verify": _set_verify,
    "date": _set_date,
    "verified": _set_verified,
}


# --------------------------------------------------------------------------- pure helpers


def _line(token: Token) -> int:
    """1-based first line of a block token (markdown-it maps are 0-based, end-exclusive)."""
    assert token.map is not None, f"block token {token.type} has no line map"
    return token.map[0] + 1


def _table_rows(tokens: list[Token], index: int) -> list[list[str]]:
    """Body rows of the table opening at `index`, each a list of raw cell texts."""
    rows: list[list[str]] = []
    in_body = False
    for token in tokens[index + 1 :]:
        if token.type == "table_close":
            break
        if token.type == "tbody_open":
            in_body = True
        elif token.type == "tr_open" and in_body:
            rows.append([])
        elif token.type == "inline" and in_body and rows:
            rows[-1].append(token.content)
    return rows


def _chunks(blocks: list[_Block], max_level: int) -> list[tuple[_Heading | None, list[_Block]]]:
    """Split `blocks` at headings of level 2..`max_level`; deeper headings stay in bodies."""
    chunks: list[tuple[_Heading | None, list[_Block]]] = [(None, [])]
    for block in blocks:
        if isinstance(block, _Heading) and 2 <= block.level <= max_level:
            chunks.append((block, []))
        else:
            chunks[-1][1].append(block)
    return chunks


def _python_fences(body: list[_Block]) -> list[_Fence]:
    return [b for b in body if isinstance(b, _Fence) and b.info == "python"]


def _items_before_code(body: list[_Block]) -> list[_Item]:
    """Bullet items before the first ```python block (where fields live)."""
    items: list[_Item] = []
    for block in body:
        if isinstance(block, _Fence) and block.info == "python":
            break
        if isinstance(block, _Item):
            items.append(block)
    return items


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


def _ticked_list(value: str) -> list[str] | None:
    """Items of "`a`, `b`"; None unless the whole value is such a list (no empty items)."""
    items: list[str] = []
    pos = 0
    while True:
        match = _TICKED_RE.match(value, pos)
        if match is None or not match.group(1).strip():
            return None
        items.append(match.group(1).strip())
        pos = match.end()
        if pos == len(value):
            return items
        if value[pos] != ",":
            return None
        pos += 1


def _stmt_line(node: ast.stmt) -> int:
    """First code line of a statement, counting its decorators."""
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators or []])


def _comments(code: str) -> list[tuple[_Comment, bool]]:
    """Every real comment (text inside strings is not included) and whether it is alone on its
    line."""
    comments: list[tuple[_Comment, bool]] = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            own_line = not tok.line[: tok.start[1]].strip()
            comments.append((_Comment(tok.start[0], tok.start[1], tok.string.strip()), own_line))
    return comments


def _header_end(code: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Code line of the `:` that ends the function's signature."""
    depth = 0
    started = False
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if not started:
            started = tok.start == (node.lineno, node.col_offset)
        if not started or tok.type != tokenize.OP:
            continue
        if tok.string in ("(", "[", "{"):
            depth += 1
        elif tok.string in (")", "]", "}"):
            depth -= 1
        elif tok.string == ":" and depth == 0:
            return tok.start[0]
    return node.lineno
