"""`dd init` and `dd new`: a new project's pyproject.toml, design/ and steps/, and a document
from the template."""

from __future__ import annotations

import re
from pathlib import Path

from generator import gitutil
from generator.steps import StepError, read_text
from generator.writer import atomic_write

# --------------------------------------------------------------------------- init

_GITIGNORE = (
    "__pycache__/\n*.pyc\n*.egg-info/\n.pytest_cache/\n.ruff_cache/\n.venv/\n*.dd-tmp\n.dd_cache/\n"
)


def template_text() -> str:
    """design/template.md: shipped in the wheel as generator/_template.md, else the checkout's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_template.md", here.parent / "design" / "template.md"):
        if candidate.is_file():
            return read_text(candidate)
    raise StepError("design template not found in the dd installation")


def package_name(project_name: str) -> str:
    """The Python package a project named `project_name` generates (`my-tool` -> `my_tool`)."""
    name = re.sub(r"\W", "_", project_name.strip().replace("-", "_")).lower()
    return name if name.isidentifier() else f"pkg_{name}"


def _pyproject(name: str) -> str:
    return f"""[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"

[tool.hatch.build.targets.wheel]
# The package dd generates (the documents' `package:`); `pip install -e .` installs it.
packages = ["{package_name(name)}"]

[tool.dd]
# Where design documents live (every file there is a document, unless excluded).
docs = ["design"]
exclude = ["design/template.md"]
# Project pattern directories (the built-in library is always loaded).
patterns = ["patterns"]
# Root that generated module paths are relative to.
output = "."
# Per-step acceptance checks named by Section 6.
steps = "steps"
# Prompt templates (<NAME>.j2) that override or extend the shipped ones.
prompts = "prompts"
# Generated code is formatted by ruff to this line length.
line-length = 100
"""


def init_project(directory: Path) -> list[str]:
    """Scaffold a dd project in `directory`: pyproject.toml with [tool.dd], design/template.md,
    patterns/, steps/, prompts/, a .gitignore, and `git init` when not inside a repository.

    Refuses (StepError, nothing written) when pyproject.toml or design/template.md exists; an
    existing .gitignore or directory is kept as it is. Returns the paths created.
    """
    directory = directory.resolve()
    name = (
        "".join(c if c.isalnum() else "-" for c in directory.name).strip("-").lower() or "project"
    )
    files = {"pyproject.toml": _pyproject(name), "design/template.md": template_text()}
    existing = [p for p in files if (directory / p).exists()]
    if existing:
        raise StepError(
            f"refusing to overwrite {', '.join(existing)}: this directory already has a project"
        )
    optional = {
        ".gitignore": _GITIGNORE,
        **{f"{d}/.gitkeep": "" for d in ("patterns", "steps", "prompts")},
    }
    files.update({p: t for p, t in optional.items() if not (directory / p).exists()})
    created: list[str] = []
    if gitutil.repo_root(directory) is None:
        gitutil.git(directory, "init", "-q")
        created.append(".git/")
    for rel, text in files.items():
        atomic_write(directory / rel, text)
        created.append(rel)
    return created
