"""Pydantic models for parsed design documents, patterns and diagnostics.

Every element keeps the file and 1-based line it came from (`Loc`), so any later stage can
report `path:line:col` without re-reading the document.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

if TYPE_CHECKING:
    import libcst as cst


class Model(BaseModel):
    """Base for all dd models: immutable-by-convention, no unknown fields."""

    model_config = ConfigDict(extra="forbid")


class Loc(Model):
    """A position in a file: path as given (relative to the project root when possible), 1-based."""

    path: str
    line: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


Severity = Literal["error", "warning"]


class Diagnostic(Model):
    """One finding of `dd check` (or any later stage), compiler style."""

    loc: Loc
    code: str  # e.g. "DD042"; the table is in design/FORMAT.md
    message: str
    severity: Severity = "error"

    def render(self) -> str:
        return f"{self.loc}: {self.severity}[{self.code}]: {self.message}"


class DDError(Exception):
    """Raised when a stage cannot proceed; carries the diagnostics that explain why."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.render() for d in diagnostics))


# --------------------------------------------------------------------------- documents


class DocStatus(str, Enum):
    draft = "draft"
    review = "review"
    approved = "approved"
    implemented = "implemented"


class FrontMatter(Model):
    """YAML front matter at the top of every design document."""

    title: str = Field(min_length=1)
    version: str = Field(pattern=r"^\d+\.\d+(\.\d+)?$")
    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    status: DocStatus


class Section(Model):
    """A numbered top-level section (`## N. Title`)."""

    number: int
    title: str
    loc: Loc
    end_line: int  # last line (1-based, inclusive) that belongs to the section


class CodeBlock(Model):
    """A fenced code block; `loc.line` is the line of the first code line (after the fence)."""

    code: str
    info: str
    loc: Loc
    _tree: Any = PrivateAttr(default=None)

    def tree(self) -> cst.Module:
        """The code as a libcst module, parsed on first use and then shared by every stage
        (checks, expansion, assembly). Raises libcst.ParserSyntaxError."""
        if self._tree is None:
            import libcst

            self._tree = libcst.parse_module(self.code)
        return self._tree

    def __eq__(self, other: object) -> bool:  # the tree is derived from `code`: not compared
        if not isinstance(other, CodeBlock):
            return NotImplemented
        return (self.code, self.info, self.loc) == (other.code, other.info, other.loc)

    __hash__ = None  # type: ignore[assignment]


class Field_(Model):
    """A machine-read `- key: value` field under a spec or step heading."""

    key: str
    value: str
    loc: Loc  # points at the value's first character


class Annotation(Model):
    """`# VAL: ID(args)` / `# AST: ID(args)` found in a spec's code block."""

    kind: Literal["VAL", "AST"]
    pattern: str
    args: str  # the raw text between the parentheses
    loc: Loc  # document line of the comment
    inline: bool = False  # its spec says `- checks: inline`: a passing check costs no call


class SpecKind(str, Enum):
    cls = "class"
    method = "method"
    function = "function"


class Spec(Model):
    """A class, method or module-level function spec (heading `#### 5.2.3 GpuPool.shrink_sampler`).

    `name` is qualified within its module: `GpuPool`, `GpuPool.shrink_sampler` or `helper`.
    `qualname` adds the module: `rlsched.pool:GpuPool.shrink_sampler`.
    """

    kind: SpecKind
    name: str
    module: str
    number: str  # the heading's section number, e.g. "5.2.3"
    loc: Loc  # the heading
    fields: list[Field_] = []
    deps: list[str] | None = None  # None = no `deps:` field; [] = `deps: none`
    code: CodeBlock | None = None
    annotations: list[Annotation] = []

    @property
    def qualname(self) -> str:
        return f"{self.module}:{self.name}"

    @property
    def class_name(self) -> str | None:
        if self.kind is SpecKind.cls:
            return self.name
        if self.kind is SpecKind.method:
            return self.name.split(".", 1)[0]
        return None

    @property
    def short_name(self) -> str:
        """The Python identifier defined by the code block (`shrink_sampler`, `GpuPool`)."""
        return self.name.rsplit(".", 1)[-1]

    def field(self, key: str) -> Field_ | None:
        return next((f for f in self.fields if f.key == key), None)


class ModuleSpec(Model):
    """A module spec (heading `### 5.2 Module rlsched.pool`) and its specs, in document order."""

    name: str  # dotted module name
    path: str  # file path relative to the output root, e.g. "rlsched/pool.py"
    number: str
    loc: Loc
    fields: list[Field_] = []
    prelude: list[CodeBlock] = []  # imports and module-level code, placed before the specs
    specs: list[Spec] = []


class StepStatus(str, Enum):
    not_started = "NOT_STARTED"
    in_progress = "IN_PROGRESS"
    done = "DONE"


class Step(Model):
    """A Section 6 step (`### Step N: Title`)."""

    number: int
    title: str
    loc: Loc
    fields: list[Field_] = []
    status: StepStatus = StepStatus.not_started
    depends_on: list[int] = []
    methods: list[str] = []  # spec names as written (`GpuPool.shrink_sampler`)
    purpose: str = ""
    verify: list[str] = []  # paths under steps/ or `cmd: <shell command>`
    date: str | None = None
    verified: str | None = None

    def field(self, key: str) -> Field_ | None:
        return next((f for f in self.fields if f.key == key), None)


class Document(Model):
    """A parsed design document. `text` is kept so edits can be minimal and byte-exact."""

    path: str
    text: str
    front: FrontMatter
    front_loc: Loc
    sections: list[Section] = []
    modules: list[ModuleSpec] = []
    steps: list[Step] = []
    plan_loc: Loc | None = None  # heading of Section 6
    revisions: list[str] = []  # version strings found in Section 7's revision table

    def specs(self) -> list[Spec]:
        return [s for m in self.modules for s in m.specs]

    def section(self, number: int) -> Section | None:
        return next((s for s in self.sections if s.number == number), None)


# --------------------------------------------------------------------------- patterns

ParamType = Literal["expr", "name", "int", "float", "number", "str", "bool", "type", "exception"]


class PatternParam(Model):
    name: str
    type: ParamType = "expr"
    required: bool = True
    default: str | None = None  # Python source of the default, used when not required
    doc: str = ""


class PatternCheck(Model):
    """How an annotation becomes one call of a function in the generated check module.

    `code` defines `function` (and any helpers it needs) for the check module; the call passes
    the annotation's own arguments (or `args`, a Jinja2 template) and `at=` the site. When the
    check fails the function calls `at.fail(ID, exception, *values)`; `shows` (a Jinja2
    expression over the arguments) gives the label of each value, in that order (None, or a
    literal argument: not shown).

    `guard` (optional) renders a Python expression, cheap and without side effects, that holds
    whenever the check passes (empty: no guard for these arguments). The call is then written
    under `if not (guard):`, so a passing check costs the guard's test and no call; the call,
    with `guarded_args` when given, still decides and raises. A guard may be stricter than the
    check (the call then passes) but never laxer."""

    function: str
    shows: str = "[]"
    args: str = ""
    code: str
    guard: str = ""  # Jinja2 text: an inline expression that holds whenever the check passes
    guarded_args: str = ""  # Jinja2 text: the call's arguments under the guard (default: `args`)


class Pattern(Model):
    """One entry of the pattern library (`patterns/*.yaml`)."""

    id: str = Field(pattern=r"^(VAL|AST)_[A-Z0-9_]+$")
    kind: Literal["VAL", "AST"]
    summary: str
    params: list[PatternParam]
    exception: str = "ValueError"  # default exception for VAL; AST always raises AssertionError
    message: str  # Jinja2 text: what was expected, in words
    template: str = ""  # Jinja2 text producing Python statements (a pattern without `check`)
    check: PatternCheck | None = None  # the pattern as a call into the check module
    example: str = ""  # an example annotation, used by docs and golden tests
    loc: Loc  # where the pattern was defined
