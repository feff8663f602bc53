"""Section 6 (implementation plan): validate a written plan (`validate`: DD072-DD079), derive
one from `deps:` (`derive`), render it, check revisions (`revision`: DD080), draw its graph
(`graph`)."""

from generator.plan.derive import derive_plan, render_plan, render_step
from generator.plan.graph import render_dot, render_mermaid
from generator.plan.revision import check_revision, revision_rows
from generator.plan.validate import (
    INIT_METHODS,
    MAX_STEP_SPECS,
    MIN_STEP_SPECS,
    TARGET_STEP_SPECS,
    Resolver,
    local_deps,
    local_resolver,
    lookup_in_doc,
    spec_index,
    step_closure,
    step_field,
    validate_plan,
)

__all__ = [
    "INIT_METHODS",
    "MAX_STEP_SPECS",
    "MIN_STEP_SPECS",
    "TARGET_STEP_SPECS",
    "Resolver",
    "check_revision",
    "derive_plan",
    "local_deps",
    "local_resolver",
    "lookup_in_doc",
    "render_dot",
    "render_mermaid",
    "render_plan",
    "render_step",
    "revision_rows",
    "spec_index",
    "step_closure",
    "step_field",
    "validate_plan",
]
