"""`dd adopt PATH[:SYMBOL]` (see generator/adopt.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.models import DDError
from generator.project import Project
from generator.steps import today


@click.command("adopt")
@click.argument("target", metavar="PATH[:SYMBOL]")
def adopt_cmd(target: str) -> None:
    """Move a hand edit of a generated file (DD100) into its spec's code block in the design
    document: checks collapsed back to their annotations, a revision-history row added, and the
    document proven to expand to exactly the edited file; otherwise nothing changes."""
    from generator.adopt import AdoptError, adopt, split_target  # libcst: only when adopting

    path, symbol = split_target(target)
    try:
        project = Project.load(Path.cwd())
        result = adopt(project, path, symbol, today())
    except AdoptError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except DDError as exc:
        for diag in exc.diagnostics:
            click.echo(diag.render())
        click.echo("error: the project has errors; fix them first (see `dd check`)", err=True)
        sys.exit(1)
    click.echo(
        f"{result.doc}: adopted {', '.join(result.symbols)} from {result.path}; expanding the "
        "document gives the edited file"
    )
    for number in result.steps:
        click.echo(f"note: Step {number} is DONE and holds this code: `dd step verify {number}`")


def register(group: click.Group) -> None:
    group.add_command(adopt_cmd)
