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

from __future__ import annotations

import importlib

# name -> the part that defines it; imported on first use (PEP 562): reading a step's
# `accepted mutants:` (`parse_accepted`, while a document is parsed) must not load libcst.
_PARTS: dict[str, str] = {
    "Mutant": "derive",
    "file_mutants": "derive",
    "sample": "derive",
    "step_mutants": "derive",
    "step_specs": "derive",
    "check_length": "expansions",
    "check_statements": "expansions",
    "Outcome": "report",
    "Report": "report",
    "accepted_of": "report",
    "below_floor": "report",
    "is_accepted": "report",
    "parse_accepted": "report",
    "refusal": "report",
    "score_of": "report",
    "verified_line": "report",
    "MutationError": "run",
    "Workers": "run",
    "run_mutants": "run",
}
__all__ = sorted(_PARTS)


def __getattr__(name: str) -> object:
    """Import a name's part on first use; AttributeError for anything else."""
    part = _PARTS.get(name)
    if part is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{part}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PARTS])
