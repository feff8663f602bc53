"""Section 6, the implementation plan (DD070/DD071), and Section 7's revision table."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from generator.markdown import Block, Heading, Item, Table
from generator.models import Step, StepStatus
from generator.parser._report import Report
from generator.parser.api import SPEC_NAME_RE
from generator.parser.sections import chunks, fields, ticked_list

_STEP_RE = re.compile(r"^Step\s+(?P<num>\d+)\s*:\s*(?P<title>\S.*)$", re.DOTALL)
_DEPENDS_ITEM_RE = re.compile(r"^(?:Step\s+)?(\d+)$")
_STEP_KEYS = (
    "status",
    "depends on",
    "methods",
    "purpose",
    "verify",
    "date",
    "verified",
    "accepted mutants",
)


def steps(r: Report, blocks: list[Block]) -> list[Step]:
    """Steps of Section 6 (DD070 headings/numbering, DD071 fields)."""
    found: list[Step] = []
    previous = 0
    for heading, body in chunks(blocks, max_level=3):
        if heading is None or heading.level != 3:
            continue
        match = _STEP_RE.match(heading.text)
        if match is None:
            r.error(
                "DD070",
                heading.line,
                f"heading `{heading.text}` in Section 6 must read `Step N: Title` "
                "(use level 4 or below for other structure)",
            )
            continue
        number = int(match.group("num"))
        if number != previous + 1:
            message = f"step {number} out of sequence: expected step {previous + 1}"
            r.error("DD070", heading.line, message)
        previous = number
        found.append(_step(r, heading, number, match.group("title").strip(), body))
    return found


def _step(r: Report, heading: Heading, number: int, title: str, body: list[Block]) -> Step:
    items = [b for b in body if isinstance(b, Item)]
    step = Step(
        number=number, title=title, loc=r.loc(heading.line), fields=fields(r, items, _STEP_KEYS)
    )
    for key in ("status", "purpose"):
        if step.field(key) is None:
            r.error("DD071", heading.line, f"step {number} has no `{key}:` field")
    for f in step.fields:
        problem = _SETTERS[f.key](step, f.value)
        if problem:
            r.error("DD071", f.loc.line, f"step {number} `{f.key}:` {problem}", f.loc.col)
    status = step.field("status")
    if step.status is StepStatus.done and status is not None:
        missing = [key for key in ("date", "verified") if step.field(key) is None]
        if missing:
            r.error(
                "DD071",
                status.loc.line,
                f"step {number} is DONE but has no {' or '.join(f'`{k}:`' for k in missing)}: "
                "`dd step done` writes them when the step's checks pass (a step marked DONE by "
                "hand is not done)",
                status.loc.col,
            )
    return step


def revisions(blocks: list[Block]) -> list[str]:
    """First-column values of the first table in Section 7 (header excluded)."""
    table = next((b for b in blocks if isinstance(b, Table)), None)
    if table is None:
        return []
    values = [row[0].strip().strip("`").strip() for row in table.rows if row]
    return [v for v in values if v]


# --------------------------------------------------------------------------- step fields


def _set_status(step: Step, value: str) -> str | None:
    try:
        step.status = StepStatus(value)
    except ValueError:
        return "must be NOT_STARTED, IN_PROGRESS or DONE"
    return None


def _set_depends_on(step: Step, value: str) -> str | None:
    if value == "none":
        return None
    numbers: list[int] = []
    for part in value.split(","):
        match = _DEPENDS_ITEM_RE.match(part.strip())
        if match is None:
            return "must be `none` or step numbers like `1, 2` or `Step 1, Step 2`"
        numbers.append(int(match.group(1)))
    step.depends_on = numbers
    return None


def _set_methods(step: Step, value: str) -> str | None:
    if value == "none":
        return None
    names = ticked_list(value)
    if names is None or not all(SPEC_NAME_RE.match(n) for n in names):
        return "must be a comma-separated list of backticked spec names"
    step.methods = names
    return None


def _set_purpose(step: Step, value: str) -> str | None:
    if not value:
        return "must not be empty"
    step.purpose = value
    return None


def _set_verify(step: Step, value: str) -> str | None:
    items = ticked_list(value)
    if items is None:
        return "must be a comma-separated list of backticked items"
    bad = [i for i in items if not (i.startswith(("steps/", "cmd:")))]
    if bad:
        return f"item `{bad[0]}` is neither a `steps/...` path nor `cmd: <command>`"
    escaping = [i for i in items if not i.startswith("cmd:") and ".." in i.split("/")]
    if escaping:
        return f"item `{escaping[0]}` must stay under `steps/` (no `..`)"
    step.verify = items
    return None


def _set_date(step: Step, value: str) -> str | None:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return "must be a date such as 2026-11-21 (`dd step done` writes it)"
    step.date = value
    return None


def _set_verified(step: Step, value: str) -> str | None:
    if not value:
        return "must not be empty (`dd step done` writes it)"
    step.verified = value
    return None


def _check_accepted(step: Step, value: str) -> str | None:
    """`accepted mutants:` (read by `dd step done`): `Spec: before -> after` (reason), ..."""
    from generator.mutate.report import parse_accepted

    return parse_accepted(value)[1]


# Each setter stores a valid value on the step, or returns what is wrong with it.
_SETTERS: dict[str, Callable[[Step, str], str | None]] = {
    "status": _set_status,
    "depends on": _set_depends_on,
    "methods": _set_methods,
    "purpose": _set_purpose,
    "verify": _set_verify,
    "date": _set_date,
    "verified": _set_verified,
    "accepted mutants": _check_accepted,
}
