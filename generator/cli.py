"""The `dd` command line (also `python -m generator`)."""

from __future__ import annotations

import datetime as dt
import difflib
import gc
import json
import os
import re
import sys
import textwrap
from pathlib import Path

import click

from generator import markers, writer
from generator.config import load_config
from generator.init import template_text
from generator.models import Annotation, DDError, Diagnostic, Loc
from generator.project import Project
from generator.steps import StepError


def note(message: str) -> None:
    """A summary line for people, on stderr (stdout carries the results)."""
    click.echo(message, err=True)


def print_diagnostics(diags: list[Diagnostic], fmt: str = "text") -> None:
    """Compiler-style lines (`path:line:col: error[CODE]: message`) or a JSON document."""
    if fmt == "json":
        click.echo(
            json.dumps({"diagnostics": [d.model_dump(mode="json") for d in diags]}, indent=2)
        )
        return
    if fmt == "github":
        for diag in diags:
            click.echo(github_annotation(diag))
        return
    for diag in diags:
        click.echo(diag.render())
    errors = sum(d.severity == "error" for d in diags)
    warnings = len(diags) - errors
    if diags:
        note(f"{errors} error(s), {warnings} warning(s)")


def _escape(text: str, prop: bool = False) -> str:
    """GitHub workflow-command escaping (properties also escape `:` and `,`)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotation(diag: Diagnostic) -> str:
    """`::error file=...,line=...,col=...,title=DDnnn::message`, a GitHub Actions annotation."""
    where = f"file={_escape(diag.loc.path, True)},line={diag.loc.line},col={diag.loc.col}"
    title = _escape(f"dd {diag.code}", True)
    return f"::{diag.severity} {where},title={title}::{_escape(diag.message)}"


def load_project(docs: tuple[str, ...] = ()) -> Project:
    """Load the project of the current directory; config errors exit 1 with diagnostics."""
    try:
        return Project.load(Path.cwd(), [Path(d) for d in docs] or None)
    except DDError as exc:
        print_diagnostics(exc.diagnostics)
        sys.exit(1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rlsched", prog_name="dd")
def cli() -> None:
    """dd: design documents in, checked and traceable Python out.

    Typical loop: `dd check`, `dd plan DOC`, `dd next`, `dd step start N`, `dd expand`,
    `dd step done N`.
    """


@cli.command()
@click.argument("docs", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github: workflow-command annotations (`::error file=...`) for GitHub Actions.",
)
def check(docs: tuple[str, ...], fmt: str) -> None:
    """Check design documents (all configured ones, or DOCS); exit 1 on any error."""
    leave_at_once()
    project = load_project(docs)
    diags = project.check()
    checked = project.documents
    if docs:  # the whole project is loaded (names resolve across it); report on DOCS only
        wanted = {project.config.rel(Path(d)) for d in docs}
        diags = [d for d in diags if d.loc.path in wanted]
        checked = [d for d in checked if d.path in wanted]
    print_diagnostics(diags, fmt)
    if fmt == "text" and not diags:
        if not checked:
            where = ", ".join(project.config.docs) or "(none)"
            note(f"no design documents found under {where} ([tool.dd] docs)")
        else:
            note(f"ok: {len(checked)} document(s), {sum(len(d.specs()) for d in checked)} spec(s)")
    sys.exit(1 if any(d.severity == "error" for d in diags) else 0)


@cli.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Exit 1 when regeneration would change anything; write nothing.",
)
@click.option(
    "--diff", "show_diff", is_flag=True, help="Show the unified diff of what would change."
)
@click.option("--force", is_flag=True, help="Overwrite hand-edited or unmanaged files.")
@click.option("--prune", is_flag=True, help="Delete generated files whose source is gone (DD102).")
def expand(check_only: bool, show_diff: bool, force: bool, prune: bool) -> None:
    """Generate the packages described by the design documents, all or nothing."""
    project = load_project()
    try:
        changes = project.pending_changes()
        if show_diff:
            for change in changes:
                click.echo(change.diff(), nl=False)
        if check_only:
            for change in changes:
                click.echo(f"would {change.action} {change.path}{_why(project, change)}")
            if changes:
                note(f"{len(changes)} file(s) out of date: run `dd expand`")
            sys.exit(1 if changes else 0)
        changed = project.expand(force=force, prune=prune)
    except DDError as exc:
        print_diagnostics(exc.diagnostics)
        if any(d.code == "DD102" for d in exc.diagnostics):
            note(
                "nothing written: restore the sources, or delete those files with `dd expand "
                "--prune`"
            )
        sys.exit(1)
    for path in changed:
        click.echo(path)
    note(f"{len(changed)} file(s) changed" if changed else "up to date")


def _why(project: Project, change: writer.Change) -> str:
    """What stands between `dd expand` and `change`, and how to resolve it."""
    if change.new is None:
        return " (its source is gone: `dd expand --prune` deletes it)"
    if change.blocker == "DD101":
        return " (not managed by dd: move it away, or overwrite it with `dd expand --force`)"
    if change.blocker == "DD100":
        assert change.old is not None
        source = markers.source_document(change.old) or "the design document"
        return (
            f" (edited by hand: move the change into {source}, "
            "or discard it with `dd expand --force`)"
        )
    return ""


@cli.command()
@click.argument("name")
@click.option("--title", help="Document title (default: NAME in words).")
@click.option(
    "--package",
    help="Target package (default: the package of the first existing document, or NAME).",
)
def new(name: str, title: str | None, package: str | None) -> None:
    """Create design/NAME.md from the template."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_\-]*", name):
        raise click.BadParameter("use letters, digits, '-' and '_'", param_hint="NAME")
    try:
        config = load_config()
    except DDError as exc:
        print_diagnostics(exc.diagnostics)
        sys.exit(1)
    docs_dir = config.root / (config.docs[0] if config.docs else "design")
    target = docs_dir / f"{name}.md"
    if target.exists():
        note(f"{config.rel(target)}: already exists; nothing written")
        sys.exit(1)
    if package is None:
        existing = load_project().documents
        package = existing[0].front.package if existing else _default_package(config.root, name)
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", package):
        raise click.BadParameter("not a dotted Python name", param_hint="--package")
    try:
        text = template_text()
    except StepError as exc:
        raise click.ClickException(str(exc)) from None
    text = (
        text.replace("__TITLE__", title or name.replace("_", " ").replace("-", " ").capitalize())
        .replace("__PACKAGE__", package)
        .replace("__MODULE__", re.sub(r"\W", "_", name).lower())
        .replace("__DATE__", dt.date.today().isoformat())
    )
    docs_dir.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    click.echo(config.rel(target))


def _default_package(root: Path, name: str) -> str:
    """The package of a project's first document: the one its `[project] name` stands for (what
    `dd init` configures the build to install), else the document's NAME."""
    import tomllib

    from generator.init import package_name

    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        data = {}
    project = data.get("project")
    named = project.get("name") if isinstance(project, dict) else None
    return package_name(named if isinstance(named, str) and named.strip() else name)


@cli.command()
@click.argument("pattern_id", required=False)
def patterns(pattern_id: str | None) -> None:
    """List the pattern library, or show one pattern: parameters, message and example expansion."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from generator.patterns import render_annotation

    project = load_project()
    lib = project.library
    if pattern_id is None:
        table = Table("id", "kind", "parameters", "summary", box=None)
        for pat in lib:
            params = ", ".join(
                p.name if p.required else f"{p.name}={p.default}" for p in pat.params
            )
            table.add_row(escape(pat.id), pat.kind, escape(params), escape(pat.summary))
        Console(highlight=False, soft_wrap=True).print(table)
        return
    pat = lib.get(pattern_id)
    if pat is None:
        suggestion = difflib.get_close_matches(pattern_id, lib.ids(), n=1)
        hint = f"; did you mean {suggestion[0]}?" if suggestion else "; `dd patterns` lists them"
        note(f"unknown pattern {pattern_id}{hint}")
        sys.exit(1)
    click.echo(f"{pat.id} ({pat.kind}), defined at {pat.loc}\n{pat.summary}\n\nparameters:")
    for param in pat.params:
        default = "" if param.required else f" = {param.default}"
        doc = f"  {param.doc}" if param.doc else ""
        click.echo(f"  {param.name}: {param.type}{default}{doc}")
    if pat.kind == "VAL":
        click.echo(f"raises: {pat.exception} (or `exc=`)")
    else:
        click.echo("raises: AssertionError (also under python -O)")
    if pat.example:
        head, _, rest = pat.example.partition("(")
        example = Annotation(
            kind=pat.kind, pattern=head, args=rest[:-1], loc=Loc(path="example.md", line=1)
        )
        click.echo(f"\nexample:\n    # {pat.kind}: {pat.example}")
        try:
            rendered = render_annotation(example, lib, "example")
        except DDError as exc:
            rendered = "\n".join(d.render() for d in exc.diagnostics) + "\n"
        click.echo(textwrap.indent(rendered, "    "), nl=False)
    if pat.check is not None:
        click.echo("\nthe check (in the package's generated check module, `_checks.py`):")
        click.echo(textwrap.indent(pat.check.code.rstrip("\n") + "\n", "    "), nl=False)


def _register_extensions() -> None:
    from generator import cli_adopt, cli_steps

    cli_steps.register(cli)
    cli_adopt.register(cli)


_register_extensions()


_exit_at_once = False  # set by a command that leaves nothing for Python's teardown to finish


def leave_at_once() -> None:
    """Let `main` end the process without Python's teardown when this command exits.

    The teardown frees every object one by one (a tenth of a cold `dd check`). Only for a
    command that, when it exits, has written every file and leaves no thread or temporary file
    behind. Under `CliRunner` (tests) nothing changes: only `main` acts on it.
    """
    global _exit_at_once
    _exit_at_once = True


def main() -> None:
    quiet_collector()
    try:
        cli(prog_name="dd")
    except SystemExit as exc:
        if _exit_at_once and (exc.code is None or isinstance(exc.code, int)):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.code or 0)
        raise


def quiet_collector() -> None:
    """Tune the cyclic garbage collector for a short batch process.

    What dd builds (documents, Python and libcst trees, models) lives until the command ends,
    so a collection frees almost nothing yet re-scans all of it: with the default thresholds
    that was a third of a cold `dd check`. Objects made by the imports are frozen out of every
    collection, and collections run a hundred times less often; reference counting still frees
    everything that is not in a cycle at once.
    """
    gc.freeze()
    first, second, third = gc.get_threshold()
    gc.set_threshold(first * 100, second, third)


if __name__ == "__main__":
    main()
