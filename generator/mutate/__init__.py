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

The parts: `expansions` (which generated statements are expanded checks), `derive` (the mutants
of a step and a seeded sample), `run` (isolated copies, running the checks against each mutant),
`report` (accepted mutants, the report, its `verified:` line and the refusal).
"""

from generator.mutate.derive import Mutant, file_mutants, sample, step_mutants, step_specs
from generator.mutate.expansions import check_length, check_statements
from generator.mutate.report import (
    Outcome,
    Report,
    accepted_of,
    below_floor,
    is_accepted,
    parse_accepted,
    refusal,
    score_of,
    verified_line,
)
from generator.mutate.run import MutationError, Workers, run_mutants

__all__ = [
    "Mutant",
    "MutationError",
    "Outcome",
    "Report",
    "Workers",
    "accepted_of",
    "below_floor",
    "check_length",
    "check_statements",
    "file_mutants",
    "is_accepted",
    "parse_accepted",
    "refusal",
    "run_mutants",
    "sample",
    "score_of",
    "step_mutants",
    "step_specs",
    "verified_line",
]
