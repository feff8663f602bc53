"""`dd status`: every document's steps with status and commit (`status_data`, also as JSON),
or the short form of the main job (`short_lines`)."""

from __future__ import annotations

from typing import Any

from generator import gitutil
from generator.models import StepStatus
from generator.project import Project


def status_data(project: Project) -> dict[str, object]:
    """`dd status --json`: every document with its steps and each step's commit (by trailer)."""
    from generator import mutate

    git_root = gitutil.repo_root(project.config.root)
    commits = gitutil.step_commits(git_root) if git_root else {}
    docs = []
    for doc in project.documents:
        steps = [
            {
                "id": s.number,
                "title": s.title,
                "status": s.status.value,
                "depends_on": list(s.depends_on),
                "methods": list(s.methods),
                "verify": list(s.verify),
                "mutation": mutate.score_of(s.verified),
                # a step reset after a redesign keeps its old commits: show DONE ones only
                "commit": commits.get(gitutil.step_key(doc.path, s.number))
                if s.status is StepStatus.done
                else None,
            }
            for s in doc.steps
        ]
        docs.append({"path": doc.path, "version": doc.front.version, "steps": steps})
    return {"docs": docs}


def short_lines(docs: list[dict[str, Any]]) -> list[str]:
    """The totals over every document's steps, then a line for each document with a step that
    is not DONE (or no plan), naming those steps."""
    counts: dict[str, int] = {}
    for d in docs:
        for s in d["steps"]:
            counts[s["status"]] = counts.get(s["status"], 0) + 1
    total = sum(counts.values())
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines = [
        f"{len(docs)} document(s), {total} step(s): {parts or 'none planned'} (`dd status`: all)"
    ]
    for d in docs:
        open_steps = [s for s in d["steps"] if s["status"] != "DONE"]
        if not d["steps"]:
            lines.append(f"  {d['path']} ({d['version']}): no plan (run `dd plan`)")
        elif open_steps:
            named = ", ".join(f"Step {s['id']} {s['status']}" for s in open_steps)
            lines.append(f"  {d['path']} ({d['version']}): {named}")
    return lines
