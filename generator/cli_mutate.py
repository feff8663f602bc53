"""`dd step verify N --mutants`: the report of a mutation run (see generator/mutate/)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from generator import mutate
from generator import steps as st
from generator.docedit import set_step_fields
from generator.models import Document, Step, StepStatus
from generator.project import Project
from generator.writer import atomic_write


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def verify_mutants(
    project: Project,
    doc: Document,
    step: Step,
    budget: int | None,
    seed: int,
    jobs: int | None,
    record: bool,
) -> None:
    """Run and print the mutants of `step`; exit 1 below the floor (0 otherwise)."""
    if record and step.status is not StepStatus.done:
        _fail(f"Step {step.number} is not DONE: `dd step done` records its score")

    def progress(outcome: mutate.Outcome) -> None:
        state = "KILLED  " if outcome.killed else "SURVIVED"
        if not outcome.killed and mutate.is_accepted(outcome.mutant, mutate.accepted_of(step)):
            state = "ACCEPTED"
        click.echo(f"{state}  {outcome.mutant.describe(doc.path)}")

    def announce(chosen: int, total: int, clean_s: float, workers: int) -> None:
        seconds = chosen * clean_s / workers
        took = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
        which = "all" if chosen == total else "a seeded sample"
        hint = "; --budget N runs a sample" if chosen == total and chosen > 40 else ""
        click.echo(
            f"Step {step.number}: {chosen} of {total} mutant(s) ({which}), about {took} at "
            f"{clean_s:.1f}s a run with {workers} job(s){hint}"
        )

    try:
        report = mutate.run_mutants(
            project, doc, step, budget, seed, jobs, progress, announce=announce
        )
    except mutate.MutationError as exc:
        _fail(str(exc))
    floor = project.config.mutation_floor
    click.echo(
        f"{report.summary()} (floor {floor:.2f}); {len(report.outcomes)} mutant(s) in "
        f"{report.seconds:.1f}s with {report.jobs} job(s), {report.per_minute:.1f} mutants/minute "
        f"(one clean run of the checks: {report.baseline_seconds:.1f}s)"
    )
    if record:
        path = project.config.root / doc.path
        line = mutate.verified_line(step.verified or "passed", report)
        atomic_write(path, set_step_fields(st.read_text(path), step, {"verified": line}))
        click.echo(f"{doc.path}: Step {step.number} verified: {line}")
    if mutate.below_floor(report, floor):
        click.echo(mutate.refusal(report, floor), err=True)
        sys.exit(1)
