"""Click commands for the step workflow: plan, status, next, step, graph, prompt, init.

`register(group)` adds them to the `dd` group. Refusals (`StepError`) and project errors
(`DDError`) print their diagnostics and exit 1; nothing here catches anything else.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import click

from generator import status as status_view
from generator import steps as st
from generator.docedit import set_plan_block
from generator.gitutil import GitError
from generator.init import init_project
from generator.models import DDError, Diagnostic, Document, StepStatus
from generator.plan import render_dot, render_mermaid
from generator.project import Project
from generator.verify import CheckResult
from generator.writer import atomic_write

DOC_OPTION = click.option(
    "--doc",
    "doc_arg",
    type=click.Path(dir_okay=False),
    help="The design document (needed when several documents have plans).",
)


def _print_diagnostics(diags: list[Diagnostic]) -> None:
    for d in diags:
        click.echo(d.render())


def _fail(message: str, diags: list[Diagnostic] | None = None) -> NoReturn:
    _print_diagnostics(diags or [])
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


@contextmanager
def _refusals() -> Iterator[None]:
    """Turn StepError/DDError/GitError into `error: ...` on stderr and exit status 1."""
    try:
        yield
    except st.StepError as exc:
        for r in exc.results:
            _echo_result(r)
        _fail(str(exc), exc.diagnostics)
    except DDError as exc:
        _fail("the project has errors", exc.diagnostics)
    except GitError as exc:
        _fail(str(exc))


def _load() -> Project:
    try:
        return Project.load(Path.cwd())
    except DDError as exc:
        _fail("cannot load the project", exc.diagnostics)


def _echo_result(r: CheckResult) -> None:
    click.echo(f"{'PASS' if r.ok else 'FAIL'}  {r.item}")
    if not r.ok and r.output:
        click.echo("\n".join(f"      {line}" for line in r.output.splitlines()))


# --------------------------------------------------------------------------- plan / status / next


@click.command()
@click.argument("doc", required=False, type=click.Path(dir_okay=False))
def plan(doc: str | None) -> None:
    """Derive an implementation plan into Section 6 of DOC (every document when omitted) when it
    has none; otherwise validate the plan and report like `dd check`."""
    project = _load()
    with _refusals():
        docs = [st.select_document(project, doc)] if doc else project.documents
        failed = False
        for d in docs:
            written, diags = st.plan_document(project, d)
            _print_diagnostics(diags)
            failed |= any(x.severity == "error" for x in diags)
            if written:
                click.echo(
                    f"{d.path}: wrote a plan of {len(written)} steps to Section 6; review it, "
                    "then `dd next`"
                )
            elif not diags:
                click.echo(f"{d.path}: plan ok ({len(d.steps)} steps)")
    sys.exit(1 if failed else 0)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--short", is_flag=True, help="A summary: the totals, then one line per unfinished document."
)
def status(as_json: bool, short: bool) -> None:
    """Every document's steps with status, dependencies and commit; exit 1 when a file under
    `docs` is not a document dd can read, or a generated file has lost its source (both are
    listed, never dropped silently)."""
    project = _load()
    with _refusals():
        data = status_view.status_data(project)
    unread = project.unread() + project.orphans()
    if as_json:
        data["unread"] = [d.model_dump(mode="json") for d in unread]
        click.echo(json.dumps(data, indent=2))
        sys.exit(1 if unread else 0)
    if short:
        for line in status_view.short_lines(data["docs"]):  # type: ignore[arg-type]
            click.echo(line)
        if unread:
            _fail("files that dd cannot account for (see `dd check`)", unread)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    for d in data["docs"]:  # type: ignore[union-attr]
        table = Table(title=f"{d['path']} (version {d['version']})", title_justify="left")
        for col in ("step", "title", "status", "depends on", "specs", "commit"):
            table.add_column(col)
        for s in d["steps"]:
            deps = ", ".join(map(str, s["depends_on"])) or "-"
            commit = (s["commit"] or "")[:10] or "-"
            table.add_row(
                str(s["id"]), s["title"], s["status"], deps, str(len(s["methods"])), commit
            )
        if not d["steps"]:
            table.add_row("-", "no plan: run `dd plan`", "", "", "", "")
        console.print(table)
    if unread:
        _fail("files that dd cannot account for (see `dd check`)", unread)


@click.command("next")
@DOC_OPTION
def next_cmd(doc_arg: str | None) -> None:
    """Show the next ready step: NOT_STARTED with every dependency DONE."""
    project = _load()
    with _refusals():
        docs = [st.select_document(project, doc_arg)] if doc_arg else st.planned_documents(project)
        if not docs:
            raise st.StepError(
                "no document has an implementation plan yet: run `dd plan DOC` first"
            )
    for doc in docs:
        step = st.next_ready(doc)
        if step is None:
            left = [s for s in doc.steps if s.status is not StepStatus.done]
            why = (
                "all steps are DONE"
                if not left
                else "no step is ready (finish the IN_PROGRESS ones)"
            )
            click.echo(f"{doc.path}: {why}")
            continue
        click.echo(f"{doc.path}: Step {step.number}: {step.title}")
        click.echo(f"  purpose: {step.purpose}")
        click.echo(f"  specs:   {', '.join(step.methods)}")
        click.echo(f"  verify:  {', '.join(step.verify) or '(none)'}")
        click.echo(f"  start:   dd step start {step.number} --doc {doc.path}")
        return


# --------------------------------------------------------------------------- step


@click.group("step")
def step_group() -> None:
    """Work on one step: start, verify, done."""


def _doc_and_project(doc_arg: str | None) -> tuple[Project, Document]:
    project = _load()
    try:
        return project, st.select_document(project, doc_arg)
    except st.StepError as exc:
        _fail(str(exc))


@step_group.command("start")
@click.argument("number", type=int)
@DOC_OPTION
def step_start(number: int, doc_arg: str | None) -> None:
    """Mark step NUMBER IN_PROGRESS (its specs are generated from then on: run `dd expand`)."""
    project, doc = _doc_and_project(doc_arg)
    with _refusals():
        changed = st.start_step(project, doc, number)
    state = "is now" if changed else "was already"
    click.echo(
        f"{doc.path}: Step {number} {state} IN_PROGRESS; run `dd expand`, then `dd step verify "
        f"{number}`"
    )


BUDGET_OPTION = click.option(
    "--budget",
    type=click.IntRange(min=1),
    help="Run a seeded sample of this many mutants (default: all for verify, "
    "[tool.dd] mutation-budget for done).",
)
JOBS_OPTION = click.option(
    "--jobs", type=click.IntRange(min=1), help="Mutants run at a time (default: the cores)."
)


@step_group.command("verify")
@click.argument("number", type=int)
@DOC_OPTION
@click.option(
    "--mutants", is_flag=True, help="Also run the checks against mutants of the step's code."
)
@BUDGET_OPTION
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample.")
@JOBS_OPTION
@click.option(
    "--record",
    is_flag=True,
    help="Run the mutants (as --mutants) and write the score into a DONE step's `verified:` line.",
)
def step_verify(
    number: int,
    doc_arg: str | None,
    mutants: bool,
    budget: int | None,
    seed: int,
    jobs: int | None,
    record: bool,
) -> None:
    """Run step NUMBER's verify items; exit 1 on any failure or when it has none. With
    --mutants, also report which mutants of the step's code the checks kill (exit 1 below
    [tool.dd] mutation-floor)."""
    project, doc = _doc_and_project(doc_arg)
    with _refusals():
        results = st.verify_step(project, doc, number)
    for r in results:
        _echo_result(r)
    passed = sum(r.ok for r in results)
    click.echo(f"{passed}/{len(results)} checks passed")
    step = st.get_step(doc, number)
    if passed < len(results) and step.status is StepStatus.not_started:
        click.echo(
            f"note: Step {number} is NOT_STARTED, so its code is not generated yet: "
            f"`dd step start {number}` and `dd expand`, or `dd step done {number}` directly"
        )
    if passed < len(results):
        sys.exit(1)
    if mutants or record:
        from generator.cli_mutate import verify_mutants

        verify_mutants(project, doc, step, budget, seed, jobs, record)
    sys.exit(0)


@step_group.command("done")
@click.argument("number", type=int)
@DOC_OPTION
@click.option("--no-commit", is_flag=True, help="Mark DONE but do not commit.")
@BUDGET_OPTION
@JOBS_OPTION
def step_done(
    number: int, doc_arg: str | None, no_commit: bool, budget: int | None, jobs: int | None
) -> None:
    """Expand, verify, run mutants (refused below [tool.dd] mutation-floor), mark step NUMBER
    DONE and commit it as `Step N: <title>`; all or nothing."""
    project, doc = _doc_and_project(doc_arg)
    with _refusals():
        result = st.done_step(project, doc, number, commit=not no_commit, budget=budget, jobs=jobs)
    for r in result.results:
        _echo_result(r)
    if result.mutation is not None:
        click.echo(f"mutants: {result.mutation.summary()}")
    if result.committed:
        click.echo(
            f"{doc.path}: Step {number} DONE, committed {result.committed[:10]} "
            f"({len(result.paths)} files)"
        )
    else:
        click.echo(f"{doc.path}: Step {number} DONE (not committed)")


# --------------------------------------------------------------------------- graph / prompt


@click.command()
@click.option(
    "--format", "fmt", type=click.Choice(["mermaid", "dot"]), default="mermaid", show_default=True
)
@DOC_OPTION
@click.option(
    "--write", is_flag=True, help="Embed the Mermaid graph in Section 6 (replacing an earlier one)."
)
def graph(fmt: str, doc_arg: str | None, write: bool) -> None:
    """The step graph with each step's specs and their `deps:`."""
    project, doc = _doc_and_project(doc_arg)
    text = render_mermaid(doc) if fmt == "mermaid" else render_dot(doc)
    if not write:
        click.echo(text, nl=False)
        return
    if fmt != "mermaid":
        _fail("--write embeds Mermaid only; drop --format dot")
    path = project.config.root / doc.path
    with _refusals():
        atomic_write(path, set_plan_block(st.read_text(path), doc, "mermaid", text))
    click.echo(f"{doc.path}: step graph written to Section 6")


@click.command()
@click.argument("name", required=False)
@click.argument("args", nargs=-1)
@DOC_OPTION
@click.option("--since", help="Git revision to compare with (consistency-after-change).")
def prompt(name: str | None, args: tuple[str, ...], doc_arg: str | None, since: str | None) -> None:
    """Render prompt NAME: implement-step N, review-section S, consistency-after-change --since REV
    (or a template of the project's prompts directory). Without NAME, list the prompts."""
    from generator.prompts import available, render_prompt

    project = _load()
    if name is None:
        click.echo("\n".join(available(project)))
        return
    with _refusals():
        doc = _prompt_document(project, doc_arg)
        click.echo(render_prompt(project, doc, name, list(args), since), nl=False)


def _prompt_document(project: Project, doc_arg: str | None) -> Document:
    """`--doc`, else the only document, else the only one with a plan."""
    if doc_arg is None and len(project.documents) == 1:
        return project.documents[0]
    return st.select_document(project, doc_arg)


@click.command()
def init() -> None:
    """Scaffold a dd project in the current directory (never overwrites a file)."""
    with _refusals():
        created = init_project(Path.cwd())
    for path in created:
        click.echo(path)
    click.echo("next: `dd new NAME` (or edit design/), `dd check`, `dd plan`", err=True)


COMMANDS: list[Callable[..., object]] = [plan, status, next_cmd, step_group, graph, prompt, init]


def register(group: click.Group) -> None:
    """Add the step-workflow commands to `group` (the `dd` CLI)."""
    for command in COMMANDS:
        group.add_command(command)  # type: ignore[arg-type]
