"""The result of a mutation run and what a step accepts: the `accepted mutants:` field, the
report and its score, the `verified:` line that records it, and why `dd step done` refuses a
step whose checks kill too few of its mutants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from generator.models import Step

if TYPE_CHECKING:
    from generator.mutate.derive import Mutant

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


# --------------------------------------------------------------------------- the report


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
