"""Shared fixtures: temporary dd projects and an in-process CLI runner."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
# Helper modules shared by test files (sim_worlds.py) import by plain name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

PYPROJECT = """\
[project]
name = "demo-project"
version = "0.0.1"

[tool.dd]
docs = ["design"]
exclude = []
mutation-floor = 0  # tests/test_mutate.py covers mutation-checked steps
"""


def make_project(root: Path, docs: dict[str, str]) -> Path:
    """Write a minimal dd project (pyproject.toml + design/<name>.md) under `root`."""
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "design").mkdir(exist_ok=True)
    for name, text in docs.items():
        (root / "design" / name).write_text(text, encoding="utf-8")
    return root


# Hypothesis runs the same examples every time (derandomize) and never judges by the clock: the
# suite must not depend on timing or on a previous run's database. HYPOTHESIS_PROFILE=explore
# searches with fresh randomness when hunting for bugs.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, suppress_health_check=_QUIET
)
settings.register_profile("explore", deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CACHE = ".dd_cache"  # dd's cache of results by content hash: scratch, not project content


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (to prove that nothing was written); dd's cache
    and Python's bytecode caches are not the project's files."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and CACHE not in p.parts
    }


@pytest.fixture
def dd(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """Run `dd ARGS...` in-process in a given directory: `dd(cwd, "check")`."""
    from generator.cli import cli

    def run(cwd: Path, *args: str) -> Result:
        monkeypatch.chdir(cwd)
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return run


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """The test session's one local Ray cluster (the runtime's `connect`: loopback, 4 logical
    GPUs), started on first use and stopped at the end; yields its address. Step checks run by
    tests/test_own_documents.py join it through `RAY_ADDRESS` (steps/runtime_parts.py,
    `rlsched.runtime.cluster.connect`) instead of starting one each."""
    import ray

    from rlsched.runtime.cluster import connect

    connect(None, 4)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture
def template_doc() -> Callable[[str], str]:
    """design/template.md instantiated for package `pkg` (a valid document)."""

    def render(package: str = "demo") -> str:
        text = (REPO / "design" / "template.md").read_text(encoding="utf-8")
        return (
            text.replace("__TITLE__", "Demo registry")
            .replace("__PACKAGE__", package)
            .replace("__MODULE__", "registry")
            .replace("__DATE__", "2026-11-21")
        )

    return render


os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def expand_code(code: str, first_line: int, annotations: list, lib, symbol: str) -> str:
    """`generator.expand.expand_tree` on source text: `code` with its annotations expanded."""
    import libcst

    from generator.expand import expand_tree

    if not annotations:
        return code
    tree = libcst.parse_module(code)
    return expand_tree(tree, code, first_line, annotations, lib, symbol)[0].code


def check_module(lib):
    """The check module dd would generate for every pattern of `lib`, as a module object."""
    import types

    from generator.checkmodule import module_source

    module = types.ModuleType("dd_test_checks")
    exec(compile(module_source(list(lib)), "<checks>", "exec"), module.__dict__)  # noqa: S102
    return module


def check_namespace(lib, sites, path: str) -> dict:
    """What a generated module gives its check calls: the check module as `check`, the `_AT`
    table of `sites` (document `path`) and reprlib (for template checks)."""
    import reprlib

    module = check_module(lib)
    table = {s.line: module.Site(s.symbol, f"{path}:{s.line}", s.expected, s.labels) for s in sites}
    return {"reprlib": reprlib, "check": module, "_AT": table}


def expand_runnable(code: str, first_line: int, annotations: list, lib, symbol: str) -> tuple:
    """`code` expanded, and the namespace to exec it in (`check_namespace`)."""
    import libcst

    from generator.expand import expand_tree

    tree = libcst.parse_module(code)
    expanded, needs = expand_tree(tree, code, first_line, annotations, lib, symbol)
    path = annotations[0].loc.path if annotations else "<code>"
    return expanded.code, check_namespace(lib, needs.sites, path)
