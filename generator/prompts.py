"""`dd prompt NAME`: reusable prompt templates filled from a design document.

Templates are Jinja2 files named `<NAME>.j2`, shipped in `generator/prompts/` and optionally
overridden or extended by the project's `[tool.dd] prompts` directory (same name wins there).
Each built-in prompt has a context builder below; a project template with another name gets the
generic context (`doc`, `args`, `text`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import jinja2

from generator import gitutil
from generator.markdown import Span, headings
from generator.models import DDError, Document, Spec, StepStatus
from generator.patterns import render_annotation
from generator.project import Project
from generator.steps import StepError, blockers, get_step, read_text

SHIPPED_DIR = Path(__file__).resolve().parent / "prompts"


# --------------------------------------------------------------------------- headings

Heading = Span  # a heading of the document with the lines it governs (generator.markdown)


def span_text(text: str, start: int, end: int) -> str:
    """Lines `start..end` (1-based, inclusive) of `text`, trailing blank lines dropped."""
    return "\n".join(text.split("\n")[start - 1 : end]).rstrip() + "\n"


def _own_text(text: str, hs: list[Heading], h: Heading) -> str:
    """A heading's text up to its first subheading (its own prose, not its children's)."""
    child = next((o.start for o in hs if h.start < o.start <= h.end), h.end + 1)
    return span_text(text, h.start, child - 1)


_TICKED = re.compile(r"`([A-Za-z_][\w.:]*)`")
_COMMON = {"none", "self", "True", "False", "None", "int", "str", "list", "dict", "float", "bool"}


def names_in(text: str) -> set[str]:
    """Backticked identifiers and dotted names mentioned in `text` (common words dropped)."""
    names = {m.group(1).rstrip(".") for m in _TICKED.finditer(text)}
    return {n for n in names if n not in _COMMON and len(n) > 2}


def mentions(text: str, names: set[str]) -> list[str]:
    """Which of `names` (or their last dotted part, when it is long enough) `text` mentions."""
    hits = []
    for name in sorted(names):
        short = name.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
        for candidate in {name, short} if len(short) > 3 else {name}:
            if re.search(rf"(?<![\w.]){re.escape(candidate)}(?!\w)", text):
                hits.append(name)
                break
    return hits


def _later_referencing(
    text: str, hs: list[Heading], after: int, names: set[str], skip: set[int]
) -> list[dict[str, object]]:
    """Sections starting after line `after` whose own text mentions any of `names`."""
    out = []
    for h in hs:
        if h.start <= after or h.level < 2 or h.start in skip:
            continue
        own = _own_text(text, hs, h)
        hits = mentions(own.split("\n", 1)[1] if "\n" in own else "", names) + mentions(
            h.title, names
        )
        if hits:
            out.append({"label": h.label, "line": h.start, "text": own, "names": sorted(set(hits))})
    return out


# --------------------------------------------------------------------------- contexts


def _find_section(text: str, hs: list[Heading], key: str) -> Heading:
    key = key.strip().rstrip(".")
    by_number = [h for h in hs if h.number == key]
    if by_number:
        return by_number[0]
    by_title = [h for h in hs if key.strip("`") in h.title]
    if by_title:
        return by_title[0]
    numbers = ", ".join(h.number for h in hs if h.number)
    raise StepError(f"no section {key!r} (sections: {numbers})")


def _spec_context(
    project: Project, doc: Document, spec: Spec, text: str, hs: list[Heading]
) -> dict[str, object]:
    heading = next((h for h in hs if h.start == spec.loc.line), None)
    patterns = []
    for ann in spec.annotations:
        pattern = project.library.get(ann.pattern)
        try:
            expansion = render_annotation(ann, project.library, spec.name)
        except DDError as exc:  # an invalid annotation: show why instead of an expansion
            expansion = f"# cannot expand: {exc}"
        patterns.append(
            {
                "kind": ann.kind,
                "id": ann.pattern,
                "args": ann.args,
                "line": ann.loc.line,
                "summary": pattern.summary if pattern else "(unknown pattern)",
                "expansion": expansion,
            }
        )
    return {
        "name": spec.name,
        "kind": spec.kind.value,
        "module": spec.module,
        "number": spec.number,
        "line": spec.loc.line,
        "deps": spec.deps or [],
        "code": spec.code.code if spec.code else "",
        "fields": {f.key: f.value for f in spec.fields},
        "text": span_text(text, heading.start, heading.end) if heading else "",
        "patterns": patterns,
        "files": project.module_files(doc, [spec.name]),
    }


def implement_step_context(project: Project, doc: Document, args: list[str]) -> dict[str, object]:
    """`implement-step N`: the step, its dependencies, its specs (code, prose, pattern
    expansions) and its checks."""
    if len(args) != 1 or not args[0].isdigit():
        raise StepError("usage: dd prompt implement-step N [--doc PATH]")
    step = get_step(doc, int(args[0]))
    text = read_text(project.config.root / doc.path)
    hs = headings(text)
    by_num = {s.number: s for s in doc.steps}
    specs = []
    for name in step.methods:
        spec = project.resolve(doc, name)
        if spec is not None:
            specs.append(_spec_context(project, doc, spec, text, hs))
    return {
        "step": step,
        "deps": [by_num[d] for d in step.depends_on if d in by_num],
        "waiting": blockers(doc, step, {StepStatus.done}),
        "specs": specs,
        "checks": step.verify,
    }


def defined_names(doc: Document, section: Heading) -> set[str]:
    """Module and spec names whose headings lie inside `section`."""
    names = {m.name for m in doc.modules if section.start <= m.loc.line <= section.end}
    return names | {s.name for s in doc.specs() if section.start <= s.loc.line <= section.end}


def review_section_context(project: Project, doc: Document, args: list[str]) -> dict[str, object]:
    """`review-section S`: the section's text and the later sections that reference it."""
    if len(args) != 1:
        raise StepError("usage: dd prompt review-section SECTION [--doc PATH]   (e.g. 3 or 5.1.2)")
    text = read_text(project.config.root / doc.path)
    hs = headings(text)
    section = _find_section(text, hs, args[0])
    body = span_text(text, section.start, section.end)
    names = defined_names(doc, section) or names_in(body)
    refs = [re.escape(section.number)] if section.number else []
    later = _later_referencing(text, hs, section.end, names, set())
    if refs:
        pattern = re.compile(rf"(?:Section|§)\s*{refs[0]}(?![\d.]\d)")
        for h in hs:
            own = _own_text(text, hs, h)
            if (
                h.start > section.end
                and pattern.search(own)
                and all(x["line"] != h.start for x in later)
            ):
                later.append(
                    {
                        "label": h.label,
                        "line": h.start,
                        "text": own,
                        "names": [f"Section {section.number}"],
                    }
                )
        later.sort(key=lambda x: x["line"])  # type: ignore[arg-type, return-value]
    return {
        "section": {"label": section.label, "line": section.start, "text": body},
        "later": later,
    }


def consistency_context(
    project: Project, doc: Document, args: list[str], since: str | None
) -> dict[str, object]:
    """`consistency-after-change --since REV`: sections changed since REV (git diff of the
    document) and later sections that mention names from them."""
    if not since:
        raise StepError("usage: dd prompt consistency-after-change --since REV [--doc PATH]")
    root = project.config.root
    git_root = gitutil.repo_root(root)
    if git_root is None:
        raise StepError("consistency-after-change needs a git repository")
    rel = (root / doc.path).resolve().relative_to(git_root).as_posix()
    try:
        lines = gitutil.changed_lines(git_root, since, rel)
        diff = gitutil.git(git_root, "diff", "--no-color", since, "--", rel).stdout
    except gitutil.GitError as exc:
        raise StepError(str(exc)) from None
    text = read_text(root / doc.path)
    hs = [h for h in headings(text) if h.level >= 2]
    changed: dict[int, Heading] = {}
    for line in lines:
        inner = [h for h in hs if h.start <= line <= h.end]
        if inner:
            h = max(inner, key=lambda x: x.start)
            changed[h.start] = h
    sections = [
        {"label": h.label, "line": h.start, "text": _own_text(text, hs, h)}
        for h in sorted(changed.values(), key=lambda h: h.start)
    ]
    names: set[str] = set()
    for s in sections:
        names |= names_in(str(s["text"]))
    first = min(changed) if changed else len(text.split("\n"))
    later = _later_referencing(text, hs, first, names, set(changed))
    return {
        "since": since,
        "diff": diff,
        "changed": sections,
        "names": sorted(names),
        "later": later,
    }


Builder = Callable[[Project, Document, list[str], "str | None"], dict[str, object]]

BUILDERS: dict[str, Builder] = {
    "implement-step": lambda p, d, a, s: implement_step_context(p, d, a),
    "review-section": lambda p, d, a, s: review_section_context(p, d, a),
    "consistency-after-change": consistency_context,
}


# --------------------------------------------------------------------------- rendering


def template_dirs(project: Project) -> list[Path]:
    """Project prompt directory first (it overrides), then the shipped templates."""
    user = project.config.root / project.config.prompts
    return [d for d in (user, SHIPPED_DIR) if d.is_dir()]


def available(project: Project) -> list[str]:
    """Names of every prompt template, sorted."""
    return sorted({p.name[:-3] for d in template_dirs(project) for p in d.glob("*.j2")})


def render_prompt(
    project: Project, doc: Document, name: str, args: list[str], since: str | None = None
) -> str:
    """Render prompt `name` for `doc`; StepError for an unknown name or bad arguments."""
    if name not in available(project):
        raise StepError(f"unknown prompt {name!r} (available: {', '.join(available(project))})")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in template_dirs(project)]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    builder = BUILDERS.get(name)
    context = builder(project, doc, args, since) if builder else {}
    context.update(doc=doc, args=args, since=since, text=read_text(project.config.root / doc.path))
    try:
        return env.get_template(f"{name}.j2").render(**context)
    except jinja2.TemplateError as exc:
        raise StepError(f"prompt template {name}.j2 failed: {exc}") from None
