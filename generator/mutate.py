"""Mutation-checked steps: can a step's checks fail?

`dd step verify N --mutants` derives small mutants of the code generated for step N's specs
(a flipped comparison or boolean, a negated condition, an integer constant changed by one, a
default returned instead of the value, a deleted statement), runs the step's checks against each
one in an isolated copy of the project, and reports which mutants the checks kill. A mutant that
survives is a behaviour change no check notices.

Mutants are made on the generated files as they are on disk (what the checks run against), only
inside symbols whose `# dd-source:` marker names one of the step's specs, and never inside an
expanded check (the statements that follow a `# VAL:` / `# AST:` comment), a docstring, a type
annotation or a decorator. Everything here is deterministic: the same files give the same
mutants in the same order, and `--budget N` takes a seeded sample of them.
"""

from __future__ import annotations

import ast
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from queue import Queue

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from generator import annotations as grammar
from generator import markers
from generator.models import Annotation, DDError, Document, Loc, Spec, Step

# --------------------------------------------------------------------------- what is a check


def _annotation_of(line: cst.EmptyLine) -> Annotation | None:
    """The `# VAL:` / `# AST:` annotation written on a comment line, or None."""
    if line.comment is None:
        return None
    parsed = grammar.parse(line.comment.value.strip())
    if parsed is None:
        return None
    kind, pattern, args = parsed
    if kind not in ("VAL", "AST"):
        return None
    return Annotation(kind=kind, pattern=pattern, args=args, loc=Loc(path="<generated>", line=1))


_CHECKISH = re.compile(r"\b_dd_\w+|\b_?checks?\.\w+\(|\bat=")


def check_length(
    ann: Annotation,
    following: Sequence[cst.BaseStatement],
    module: cst.Module,
    render: Callable[[Annotation], str] | None,
) -> int:
    """How many of `following` (the statements after an annotation comment in generated code)
    are the annotation's expansion.

    With `render` (the pattern library's renderer) the expansion's statement count is exact; the
    generated statements were formatted, which never changes how many there are. Without it (or
    when the annotation cannot be rendered) the statements that name the pattern, a `_dd_`
    helper name or a generated check call are taken.
    """
    if render is not None:
        try:
            return len(ast.parse(render(ann)).body)
        except (DDError, SyntaxError):
            pass
    count = 0
    for stmt in following:
        code = module.code_for_node(stmt.with_changes(leading_lines=()))
        if ann.pattern in code or _CHECKISH.search(code):
            count += 1
        else:
            break
    return count


def check_statements(
    module: cst.Module, render: Callable[[Annotation], str] | None = None
) -> dict[int, Annotation]:
    """`id()` of every statement of `module` that belongs to an expanded check, mapped to the
    annotation it expands. Only statement blocks of functions hold checks."""
    found: dict[int, Annotation] = {}

    class Visitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.scopes: list[cst.CSTNode] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scopes.append(node)

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            self.scopes.pop()

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.scopes.append(node)

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            self.scopes.pop()

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            if not self.scopes or not isinstance(self.scopes[-1], cst.FunctionDef):
                return
            body = list(node.body)
            i = 0
            while i < len(body):
                anns = [a for a in map(_annotation_of, body[i].leading_lines) if a is not None]
                if not anns:
                    i += 1
                    continue
                n = 0
                for ann in anns:
                    n += check_length(ann, body[i + n :], module, render)
                for stmt in body[i : i + n]:
                    found[id(stmt)] = anns[-1]
                i += max(n, 1)

    module.visit(Visitor())
    return found


# --------------------------------------------------------------------------- mutants


@dataclass(frozen=True)
class Mutant:
    """One mutant: a small change at one place of one generated file."""

    index: int  # position in the full, ordered list of the step's mutants
    path: str  # the generated file (project-relative)
    line: int  # line of the change in that file
    spec: str  # the spec whose code it changes (`GpuPool.shrink_sampler`)
    doc_line: int  # the document line of the changed code (or of the spec's heading)
    operator: str  # flip-compare, flip-bool, negate, int, return-default, delete
    before: str  # the changed code, one line
    after: str
    start: int  # character offsets of the replaced text in the file
    end: int
    replacement: str

    @property
    def key(self) -> str:
        """How a step lists it as accepted: `Spec: before -> after`."""
        return f"{self.spec}: {self.before} -> {self.after}"

    def describe(self, doc_path: str) -> str:
        return f"{doc_path}:{self.doc_line} {self.key}  ({self.path}:{self.line})"

    def apply(self, text: str) -> str:
        return text[: self.start] + self.replacement + text[self.end :]


_FLIP: dict[type[cst.BaseCompOp], Callable[[], cst.BaseCompOp]] = {
    cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
}

_DEFAULTS = (  # return annotation (leading name) -> the default a mutant returns instead
    ("bool", "False"),
    ("int", "0"),
    ("float", "0.0"),
    ("str", '""'),
    ("list", "[]"),
    ("dict", "{}"),
    ("tuple", "()"),
    ("set", "set()"),
    ("frozenset", "frozenset()"),
)

_DELETABLE = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Raise, cst.Del)


def _one_line(code: str, limit: int = 70) -> str:
    text = " ".join(code.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _default_for(returns: cst.Annotation | None, module: cst.Module) -> str:
    if returns is None:
        return "None"
    text = module.code_for_node(returns.annotation).strip().strip("\"'")
    head = re.split(r"[\[\s|]", text, maxsplit=1)[0].split(".")[-1]
    for name, default in _DEFAULTS:
        if head in (name, name.capitalize()) or (name == "list" and head == "Sequence"):
            return default
    return "None"


@dataclass
class _Owner:
    spec: Spec | None  # None: not one of the step's specs (nothing is mutated)
    func: cst.FunctionDef | None


class _Sites(cst.CSTVisitor):
    """Collects mutation sites (node, operator, replacement code) inside the wanted specs."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        module: cst.Module,
        wanted: dict[str, Spec],
        skip: set[int],
    ) -> None:
        super().__init__()
        self.module = module
        self.wanted = wanted
        self.skip = skip
        self.owners: list[_Owner] = [_Owner(None, None)]
        # (node, spec, operator, code before, code after, code to find in the document)
        self.sites: list[tuple[cst.CSTNode, Spec, str, str, str, str]] = []

    # ------------------------------------------------------------------ scopes
    def _marker_spec(self, node: cst.FunctionDef | cst.ClassDef) -> Spec | None | bool:
        for line in node.leading_lines:
            if line.comment is not None:
                name = markers.marker_symbol(line.comment.value)
                if name is not None:
                    return self.wanted.get(name)
        return False  # no marker: a nested definition, owned by its enclosing spec

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip or isinstance(node, (cst.Annotation, cst.Decorator)):
            return False
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            spec = self._marker_spec(node)
            owner = self.owners[-1].spec if spec is False else spec
            func = node if isinstance(node, cst.FunctionDef) else None
            self.owners.append(_Owner(owner, func))  # type: ignore[arg-type]
            self._skip_docstring(node.body)
            if isinstance(node, cst.FunctionDef):  # parameters' defaults may be mutated
                return True
            return True
        owner = self.owners[-1]
        if owner.spec is not None:
            self._collect(node, owner)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self.owners.pop()

    def _skip_docstring(self, body: cst.BaseSuite) -> None:
        if isinstance(body, cst.IndentedBlock) and body.body:
            first = body.body[0]
            if (
                isinstance(first, cst.SimpleStatementLine)
                and len(first.body) == 1
                and isinstance(first.body[0], cst.Expr)
                and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            ):
                self.skip.add(id(first))

    # ------------------------------------------------------------------ operators
    def _add(
        self,
        node: cst.CSTNode,
        owner: _Owner,
        operator: str,
        new: cst.CSTNode,
        locate: str | None = None,
    ) -> None:
        assert owner.spec is not None
        code = self.module.code_for_node
        before = code(node)
        self.sites.append((node, owner.spec, operator, before, code(new), locate or before))

    def _collect(self, node: cst.CSTNode, owner: _Owner) -> None:
        if isinstance(node, cst.Comparison):
            for i, target in enumerate(node.comparisons):
                flip = _FLIP.get(type(target.operator))
                if flip is None:
                    continue
                targets = list(node.comparisons)
                targets[i] = target.with_changes(operator=flip())
                self._add(node, owner, "flip-compare", node.with_changes(comparisons=targets))
        elif isinstance(node, cst.BooleanOperation):
            op = cst.Or() if isinstance(node.operator, cst.And) else cst.And()
            self._add(node, owner, "flip-bool", node.with_changes(operator=op))
        elif isinstance(node, cst.Name) and node.value in ("True", "False"):
            other = "False" if node.value == "True" else "True"
            self._add(node, owner, "flip-bool", node.with_changes(value=other))
        elif isinstance(node, (cst.If, cst.While, cst.IfExp)):
            test = node.test
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                negated: cst.BaseExpression = test.expression
            else:
                negated = cst.UnaryOperation(
                    operator=cst.Not(),
                    expression=test.with_changes(
                        lpar=[cst.LeftParen(), *test.lpar], rpar=[*test.rpar, cst.RightParen()]
                    ),
                )
            self._add(test, owner, "negate", negated)
        elif isinstance(node, cst.Integer):
            try:
                value = int(node.value.replace("_", ""), 0)
            except ValueError:
                return
            for new in (value + 1, value - 1):
                if new >= 0:
                    self._add(node, owner, "int", cst.Integer(str(new)))
        elif isinstance(node, cst.Return) and node.value is not None and owner.func is not None:
            default = _default_for(owner.func.returns, self.module)
            if self.module.code_for_node(node.value).strip() != default:
                new = cst.parse_expression(default)
                locate = "return " + self.module.code_for_node(node.value)
                self._add(node.value, owner, "return-default", new, locate)
        elif isinstance(node, cst.SimpleStatementLine) and owner.func is not None:
            small = node.body[0] if len(node.body) == 1 else None
            inert = isinstance(small, cst.Expr) and isinstance(
                small.value, (cst.Ellipsis, cst.SimpleString, cst.ConcatenatedString)
            )  # `...` or a string: deleting it changes nothing
            if isinstance(small, _DELETABLE) and not inert:
                self._add(small, owner, "delete", cst.Pass())


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _doc_line(spec: Spec, *needles: str) -> int:
    """The document line of the spec's code that holds the first of `needles` found (the
    generated line of the change, else the changed code's first line), else the first code
    line (or the heading)."""
    if spec.code is None:
        return spec.loc.line
    code = spec.code.code.splitlines()
    for changed in needles:
        needle = changed.strip().splitlines()[0].strip() if changed.strip() else ""
        for i, line in enumerate(code):
            if needle and needle in line:
                return spec.code.loc.line + i
    return spec.code.loc.line


def file_mutants(
    path: str,
    text: str,
    wanted: dict[str, Spec],
    render: Callable[[Annotation], str] | None = None,
    start_index: int = 0,
) -> list[Mutant]:
    """Every mutant of the generated file `text` inside the specs of `wanted` (by spec name, as
    the `# dd-source:` markers write it), in file order."""
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    skip = set(check_statements(module, render))
    sites = _Sites(module, wanted, skip)
    wrapper.visit(sites)
    positions = wrapper.resolve(PositionProvider)
    offsets = _line_offsets(text)
    lines = text.splitlines()
    original = ast.dump(ast.parse(text))
    mutants: list[Mutant] = []
    seen: set[tuple[int, int, str]] = set()
    for node, spec, operator, before, after, locate in sites.sites:
        pos = positions[node]
        start = offsets[pos.start.line - 1] + pos.start.column
        end = offsets[pos.end.line - 1] + pos.end.column
        if text[start:end] != before or (start, end, after) in seen:
            continue  # a position that does not hold the node's code: never guess
        seen.add((start, end, after))
        mutant = Mutant(
            index=start_index + len(mutants),
            path=path,
            line=pos.start.line,
            spec=spec.name,
            doc_line=_doc_line(spec, lines[pos.start.line - 1].strip(), locate),
            operator=operator,
            before=_one_line(before),
            after=_one_line(after),
            start=start,
            end=end,
            replacement=after,
        )
        try:
            changed = ast.dump(ast.parse(mutant.apply(text)))
        except SyntaxError:
            continue
        if changed != original:
            mutants.append(mutant)
    return mutants


def step_specs(project: object, doc: Document, step: Step) -> dict[str, Spec]:
    """The step's specs by name (`GpuPool.shrink_sampler`)."""
    resolve = project.resolve  # type: ignore[attr-defined]
    found: dict[str, Spec] = {}
    for name in step.methods:
        spec = resolve(doc, name)
        if spec is not None:
            found[spec.name] = spec
    return found


def step_mutants(project: object, doc: Document, step: Step) -> list[Mutant]:
    """Every mutant of the code generated for `step`'s specs (the files as they are on disk)."""
    from generator.patterns import render_annotation

    config = project.config  # type: ignore[attr-defined]
    library = project.library  # type: ignore[attr-defined]
    specs = step_specs(project, doc, step)

    def render(ann: Annotation) -> str:
        return render_annotation(ann, library, "mutant")

    mutants: list[Mutant] = []
    for rel in project.module_files(doc, step.methods):  # type: ignore[attr-defined]
        path = config.root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if not markers.is_generated(text):
            continue
        mutants += file_mutants(rel, text, specs, render, start_index=len(mutants))
    return mutants


def sample(mutants: list[Mutant], budget: int | None, seed: int) -> list[Mutant]:
    """A seeded sample of `budget` mutants (all when `budget` is None or not smaller), in order."""
    if budget is None or budget >= len(mutants):
        return list(mutants)
    picked = random.Random(seed).sample(range(len(mutants)), budget)
    return [mutants[i] for i in sorted(picked)]


# --------------------------------------------------------------------------- accepted mutants

_ACCEPTED_ITEM = re.compile(r"`([^`]+)`\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")


def parse_accepted(value: str) -> tuple[dict[str, str], str | None]:
    """The `accepted mutants:` field: backticked mutant keys, each followed by its reason in
    parentheses. Returns ({key: reason}, problem or None)."""
    found: dict[str, str] = {}
    rest = value
    for match in _ACCEPTED_ITEM.finditer(value):
        key, reason = match.group(1).strip(), match.group(2).strip()
        if not reason:
            return found, f"accepted mutant `{key}` needs a reason in parentheses"
        found[key] = reason
        rest = rest.replace(match.group(0), "", 1)
    leftover = rest.replace(",", " ").strip()
    if leftover:
        return found, (
            f"cannot read {leftover[:40]!r}: write `Spec: before -> after` (why it is equivalent)"
        )
    return found, None


def is_accepted(mutant: Mutant, accepted: dict[str, str]) -> bool:
    """Listed by its key, or its spec listed whole (`Spec: *`, for code no check here can run,
    such as a GPU-only path: the reason says where it is tested)."""
    return mutant.key in accepted or f"{mutant.spec}: *" in accepted


def accepted_of(step: Step) -> dict[str, str]:
    f = step.field("accepted mutants")
    return parse_accepted(f.value)[0] if f is not None else {}


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    mutant: Mutant
    killed: bool
    how: str  # the failing check, "timeout", or "survived"
    seconds: float = 0.0


@dataclass
class Report:
    """The result of a mutation run of one step."""

    doc: str
    step: int
    total: int  # mutants the step's code has
    outcomes: list[Outcome] = field(default_factory=list)
    accepted: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    baseline_seconds: float = 0.0
    jobs: int = 1

    @property
    def killed(self) -> int:
        return sum(o.killed for o in self.outcomes)

    @property
    def survivors(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.killed]

    @property
    def unaccepted(self) -> list[Outcome]:
        return [o for o in self.survivors if not is_accepted(o.mutant, self.accepted)]

    @property
    def score(self) -> float | None:
        """Killed (plus accepted survivors) over the mutants run; None when there were none."""
        if not self.outcomes:
            return None
        return (self.killed + len(self.survivors) - len(self.unaccepted)) / len(self.outcomes)

    @property
    def per_minute(self) -> float:
        return 60.0 * len(self.outcomes) / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """The part of the `verified:` line: `mutants 14/16 killed (88%)`."""
        if not self.outcomes:
            return "no mutants"
        text = f"mutants {self.killed}/{len(self.outcomes)} killed"
        accepted = len(self.survivors) - len(self.unaccepted)
        if accepted:
            text += f", {accepted} accepted"
        if len(self.outcomes) < self.total:
            text += f" (sample of {self.total})"
        assert self.score is not None
        return f"{text}, score {self.score:.2f}"


_SCORE = re.compile(r"mutants (\d+)/(\d+) killed(?:, (\d+) accepted)?(?: \(sample of (\d+)\))?")


def score_of(verified: str | None) -> dict[str, object] | None:
    """The mutation result recorded on a `verified:` line, or None."""
    match = _SCORE.search(verified or "")
    if match is None:
        return None
    killed, run = int(match.group(1)), int(match.group(2))
    accepted = int(match.group(3) or 0)
    return {
        "killed": killed,
        "mutants": run,
        "accepted": accepted,
        "sampled_from": int(match.group(4) or run),
        "score": round((killed + accepted) / run, 4) if run else None,
    }


_SKIP_COPY = {".git", ".venv", "venv", ".dd_cache", "__pycache__", ".pytest_cache", ".ruff_cache"}


def _populate(src: Path, dst: Path, copies: set[Path]) -> None:
    """`dst` mirrors `src`: the paths in `copies` (and what is under them) are copied without
    bytecode caches, directories on the way to them are recreated, everything else is a symlink."""
    dst.mkdir(parents=True, exist_ok=True)
    for child in sorted(src.iterdir()):
        if child.name == "__pycache__":
            continue
        target = dst / child.name
        if child in copies:
            if child.is_dir():
                shutil.copytree(child, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(child, target)
        elif child.is_dir() and any(c.is_relative_to(child) for c in copies):
            _populate(child, target, copies)
        else:
            target.symlink_to(child)


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _run_items(
    root: Path, out_dir: Path, items: Iterable[str], timeout: float | None
) -> tuple[bool, str]:
    """Run verify items in `root` (a worker copy); (all passed, what failed)."""
    from generator.steps import verify_command

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(out_dir), env.get("PYTHONPATH", "")) if p)
    for item in items:
        cmd, shell = verify_command(item)
        proc = subprocess.Popen(
            cmd,
            shell=shell,
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return False, "timeout"
        if code != 0:
            return False, item
    return True, ""


class Workers:
    """`jobs` isolated copies of the project (generated packages and checks copied, the rest
    linked), each used by one mutant at a time."""

    def __init__(self, project: object, jobs: int):
        config = project.config  # type: ignore[attr-defined]
        self.root: Path = config.root.resolve()
        copies = {r.resolve() for r in project.managed_roots()}  # type: ignore[attr-defined]
        copies.add(config.steps_dir)
        copies = {c for c in copies if c.exists() and c.is_relative_to(self.root)}
        self.base = Path(tempfile.mkdtemp(prefix="dd-mutants-"))
        self.out_rel = config.output_dir.relative_to(self.root)
        self.free: Queue[Path] = Queue()
        for i in range(jobs):
            copy = self.base / f"w{i}"
            _populate(self.root, copy, copies)
            self.free.put(copy)

    def run(
        self, items: list[str], path: str, text: str, timeout: float | None
    ) -> tuple[bool, str]:
        copy = self.free.get()
        target = copy / path
        original = target.read_bytes()
        try:
            target.write_text(text, encoding="utf-8")
            return _run_items(copy, copy / self.out_rel, items, timeout)
        finally:
            target.write_bytes(original)
            self.free.put(copy)

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


class MutationError(Exception):
    """The mutation run cannot be scored (the unmutated checks fail in the copy)."""


def run_mutants(
    project: object,
    doc: Document,
    step: Step,
    budget: int | None = None,
    seed: int = 0,
    jobs: int | None = None,
    progress: Callable[[Outcome], None] | None = None,
    fit_seconds: float | None = None,
) -> Report:
    """Run `step`'s checks against (a seeded sample of `budget`) mutants of its code, `jobs` at
    a time (default: the machine's cores). With `fit_seconds`, the sample is cut (re-drawn with
    the same seed, at least 3) to what fits in about that time at the speed of the clean run.
    Raises MutationError when the checks do not pass on the unmutated code in an isolated
    copy."""
    started = time.monotonic()
    mutants = step_mutants(project, doc, step)
    chosen = sample(mutants, budget, seed)
    jobs = max(1, min(jobs or os.cpu_count() or 1, max(len(chosen), 1)))
    items = [i for i in step.verify]
    report = Report(doc.path, step.number, len(mutants), accepted=accepted_of(step), jobs=jobs)
    if not chosen:
        report.seconds = time.monotonic() - started
        return report
    workers = Workers(project, jobs)
    try:
        t0 = time.monotonic()
        path = chosen[0].path
        ok, failed = workers.run(items, path, (workers.root / path).read_text("utf-8"), None)
        report.baseline_seconds = time.monotonic() - t0
        if not ok:
            raise MutationError(
                f"the checks of Step {step.number} fail on the unmutated code in an isolated "
                f"copy ({failed}); mutants cannot be scored"
            )
        timeout = 3 * report.baseline_seconds + 10
        if fit_seconds is not None:
            fit = max(3, int(fit_seconds * jobs / max(report.baseline_seconds, 0.1)))
            chosen = sample(chosen, fit, seed)
        texts = {m.path: (workers.root / m.path).read_text("utf-8") for m in chosen}

        def one(mutant: Mutant) -> Outcome:
            t = time.monotonic()
            ok, how = workers.run(items, mutant.path, mutant.apply(texts[mutant.path]), timeout)
            outcome = Outcome(mutant, not ok, how if not ok else "survived", time.monotonic() - t)
            if progress is not None:
                progress(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            report.outcomes = list(pool.map(one, chosen))
    finally:
        workers.close()
    report.seconds = time.monotonic() - started
    return report


def rel_posix(path: str) -> str:
    return PurePosixPath(path).as_posix()


# --------------------------------------------------------------------------- the step workflow


def verified_line(checks: str, report: Report | None) -> str:
    """`passed (2 checks)` with the mutation summary appended (any earlier one replaced)."""
    base = checks.split("; mutants", 1)[0].split("; no mutants", 1)[0]
    return base if report is None else f"{base}; {report.summary()}"


def below_floor(report: Report, floor: float) -> bool:
    """True when the step's checks kill too few of its mutants (accepted survivors count as
    killed); a step without mutants is never below."""
    return report.score is not None and report.score < floor and bool(report.unaccepted)


def refusal(report: Report, floor: float) -> str:
    """Why `dd step done` refuses: the score against the floor and every surviving mutant."""
    lines = [
        f"the checks of Step {report.step} kill {report.killed} of {len(report.outcomes)} "
        f"mutants (score {report.score:.2f}, below the mutation floor {floor:.2f}); they would "
        "pass for this broken code too:"
    ]
    lines += [f"  SURVIVED  {o.mutant.describe(report.doc)}" for o in report.unaccepted]
    lines.append(
        "strengthen the checks so they fail for these, or list an equivalent mutant under the "
        "step's `- accepted mutants:` as `Spec: before -> after` (why it cannot be told apart)"
    )
    return "\n".join(lines)
