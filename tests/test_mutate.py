"""Mutation-checked steps (issue 18): `dd step verify N --mutants` and the floor of `dd step done`,
in real git repositories made by `dd init`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest
from click.testing import Result

from generator import mutate
from generator.models import Spec, SpecKind
from generator.project import Project

BASE = (Path(__file__).parent / "data" / "steps" / "base.md").read_text(encoding="utf-8")
DOC = "design/pool.md"

SHRINK = '''def shrink_sampler(self, target_gpus: list[int]) -> list[int]:
    """Release `target_gpus` from rollout and return them, lowest first."""
    # VAL: VAL_NON_EMPTY(target_gpus)
    kept = sorted(target_gpus)
    if len(kept) > self.num_gpus:
        raise ValueError("more GPUs than the pool has")
    return kept
'''
STEP1_TEST = (
    "def test_pool_type():\n    from demo.pool import GpuPool\n\n    assert GpuPool.num_gpus == 8\n"
)
HOLLOW = "def test_shrink():\n    from demo.pool import GpuPool\n\n    GpuPool().shrink_sampler([2, 1])\n"
REAL = """import pytest

from demo.pool import GpuPool


def test_shrink():
    assert GpuPool().shrink_sampler([2, 1]) == [1, 2]
    assert GpuPool().shrink_sampler(list(range(8))) == list(range(8))
    with pytest.raises(ValueError, match="more GPUs"):
        GpuPool().shrink_sampler(list(range(9)))
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def document() -> str:
    old = BASE[
        BASE.index("def shrink_sampler") : BASE.index("```", BASE.index("def shrink_sampler"))
    ]
    return BASE.replace(old, SHRINK).replace("steps/demo/", "steps/pool/")


@pytest.fixture
def project(tmp_path: Path, dd: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> Path:
    """`dd init` + one document of two steps + their checks (step 2's asserts nothing)."""
    monkeypatch.setenv("DD_TODAY", "2026-11-22")
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")
    assert dd(root, "init").exit_code == 0
    (root / DOC).write_text(document(), encoding="utf-8")
    (root / "steps" / "pool").mkdir(parents=True)
    (root / "steps" / "pool" / "test_step1.py").write_text(STEP1_TEST)
    (root / "steps" / "pool" / "test_step2.py").write_text(HOLLOW)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "design and step tests")
    assert dd(root, "check").exit_code == 0
    return root


def test_a_hollow_check_is_refused_and_a_real_one_accepted(
    project: Path, dd: Callable[..., Result]
) -> None:
    first = dd(project, "step", "done", "1", "--jobs", "2")
    assert first.exit_code == 0, first.output
    assert (
        "- verified: passed (1 check); mutants 2/2 killed, score 1.00"
        in (project / DOC).read_text()
    )

    head = git(project, "rev-parse", "HEAD")
    before = (project / DOC).read_bytes()
    refused = dd(project, "step", "done", "2", "--jobs", "2")
    assert refused.exit_code == 1
    # every survivor is listed with its spec, document line and mutation
    text = before.decode()
    kept_line = text.splitlines().index("    kept = sorted(target_gpus)") + 1
    compare_line = kept_line + 1
    assert f"SURVIVED  {DOC}:{kept_line + 2} GpuPool.shrink_sampler: raise ValueError(" in (
        refused.output
    )
    assert (
        f"{DOC}:{compare_line} GpuPool.shrink_sampler: len(kept) > self.num_gpus -> "
        "len(kept) >= self.num_gpus" in refused.output
    )
    assert f"{DOC}:{kept_line + 3} GpuPool.shrink_sampler: kept -> []" in refused.output
    assert "kill 2 of 5 mutants (score 0.40" in refused.output
    assert "below the mutation floor 0.60" in refused.output
    # a refusal changes nothing: no commit, the document as it was, nothing generated
    assert git(project, "rev-parse", "HEAD") == head and (project / DOC).read_bytes() == before
    assert git(project, "status", "--porcelain") == ""

    (project / "steps" / "pool" / "test_step2.py").write_text(REAL)
    git(project, "commit", "-qam", "tests: a real check for step 2")
    accepted = dd(project, "step", "done", "2", "--jobs", "2")
    assert accepted.exit_code == 0, accepted.output
    status = json.loads(dd(project, "status", "--json").output)
    steps = status["docs"][0]["steps"]
    assert steps[0]["mutation"]["score"] == 1.0
    score = steps[1]["mutation"]
    assert score["mutants"] >= 5 and score["killed"] >= 0.6 * score["mutants"]
    assert score["score"] == pytest.approx(score["killed"] / score["mutants"], abs=1e-4)


def test_verify_reports_each_mutant_and_accepted_survivors_count(
    project: Path, dd: Callable[..., Result]
) -> None:
    assert dd(project, "step", "done", "1").exit_code == 0
    assert dd(project, "step", "start", "2").exit_code == 0
    assert dd(project, "expand").exit_code == 0
    result = dd(project, "step", "verify", "2", "--mutants", "--jobs", "2")
    assert result.exit_code == 1 and "1/1 checks passed" in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("SURVIVED")]
    killed = [line for line in result.output.splitlines() if line.startswith("KILLED")]
    assert len(lines) == 3 and len(killed) == 2
    assert "mutants/minute" in result.output
    # what will run is said before the first mutant runs
    first = result.output.index("Step 2: 5 of 5 mutant(s) (all), about ")
    assert first < result.output.index("KILLED") and first < result.output.index("SURVIVED")
    # list every survivor as accepted, with a reason: the step is no longer below the floor
    keys = sorted({line.split("  ")[1].split(" ", 1)[1] for line in lines})
    text = (project / DOC).read_text()
    field = "- accepted mutants: " + ", ".join(f"`{k}` (for the test)" for k in keys) + "\n"
    marker = "- verify: `steps/pool/test_step2.py`\n"
    (project / DOC).write_text(text.replace(marker, marker + field))
    assert dd(project, "check").exit_code == 0
    again = dd(project, "step", "verify", "2", "--mutants", "--jobs", "2")
    assert again.exit_code == 0, again.output
    assert again.output.count("ACCEPTED") == 3 and "mutants 2/5 killed, 3 accepted" in again.output
    sampled = dd(project, "step", "verify", "2", "--mutants", "--budget", "2", "--seed", "3")
    assert "(sample of 5)" in sampled.output and sampled.output.count("  design/pool.md:") == 2
    assert "Step 2: 2 of 5 mutant(s) (a seeded sample), about " in sampled.output
    # a reason is required
    (project / DOC).write_text(text.replace(marker, marker + "- accepted mutants: `x: a -> b`\n"))
    bad = dd(project, "check")
    assert bad.exit_code == 1 and "DD071" in bad.output


def _spec(name: str) -> Spec:
    return Spec(kind=SpecKind.method, name=name, module="m", number="5.1", loc={"path": "d.md"})


GENERATED = '''# AUTOGENERATED by dd from d.md. DO NOT EDIT.
class A:
    # dd-source: d.md:10 5.1 A.f
    def f(self, x: int, flag: bool = True) -> int:
        """Docstring with 1 < 2 and True."""
        # VAL: VAL_INT_RANGE(x, min=0, max=9)
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 9:
            raise ValueError(f"VAL_INT_RANGE failed (where x={x})")
        y = x + 1
        if flag and y > 3:
            return y
        return 0

    # dd-source: d.md:15 5.1 A.h
    def h(self) -> None:
        """A protocol method: `...` is no statement worth deleting."""
        ...

    # dd-source: d.md:20 5.2 A.g
    def g(self) -> bool:
        """Not in the step."""
        return 1 < 2
'''


def test_mutants_skip_checks_docstrings_and_other_specs() -> None:
    mutants = mutate.file_mutants("m.py", GENERATED, {"A.f": _spec("A.f"), "A.h": _spec("A.h")})
    lines = GENERATED.splitlines()
    assert {m.spec for m in mutants} == {"A.f"}
    touched = {lines[m.line - 1].strip() for m in mutants}
    assert touched == {
        "def f(self, x: int, flag: bool = True) -> int:",  # the default, not the annotations
        "y = x + 1",
        "if flag and y > 3:",
        "return y",
        "return 0",
    }
    ops = sorted((m.operator, m.before, m.after) for m in mutants)
    assert ("int", "1", "2") in ops and ("int", "1", "0") in ops
    assert ("flip-compare", "y > 3", "y >= 3") in ops
    assert ("flip-bool", "flag and y > 3", "flag or y > 3") in ops
    assert ("negate", "flag and y > 3", "not (flag and y > 3)") in ops
    assert ("return-default", "y", "0") in ops
    assert ("delete", "y = x + 1", "pass") in ops
    assert ("int", "3", "4") in ops and ("int", "3", "2") in ops
    # `return 0` already returns the default (only its constant changes); `True` flips
    assert ("int", "0", "1") in ops and ("return-default", "0", "0") not in ops
    assert ("flip-bool", "True", "False") in ops
    for m in mutants:
        changed = m.apply(GENERATED)
        compile(changed, "m.py", "exec")
        assert changed != GENERATED


def test_expanded_checks_are_found_by_the_pattern_library() -> None:
    module = cst.parse_module(GENERATED)
    checks = mutate.check_statements(module, None)
    assert len(checks) == 1
    assert [a.pattern for a in checks.values()] == ["VAL_INT_RANGE"]


def test_project_mutants_follow_the_step(project: Path, dd: Callable[..., Result]) -> None:
    assert dd(project, "step", "start", "1").exit_code == 0
    assert dd(project, "step", "start", "2").exit_code == 0
    assert dd(project, "expand").exit_code == 0
    loaded = Project.load(project)
    doc = loaded.documents[0]
    one = mutate.step_mutants(loaded, doc, doc.steps[0])
    two = mutate.step_mutants(loaded, doc, doc.steps[1])
    assert {m.spec for m in one} == {"GpuPool"} and {m.spec for m in two} == {
        "GpuPool.shrink_sampler"
    }
    generated = (project / "demo" / "pool.py").read_text()
    check = generated.index("# VAL: VAL_NON_EMPTY")
    check_end = generated.index("kept = sorted")
    assert all(not (check <= m.start < check_end) for m in two)
    assert mutate.sample(two, 2, seed=1) == mutate.sample(two, 2, seed=1)
    assert len(mutate.sample(two, 2, seed=1)) == 2


# --------------------------------------------------------------------------- ecosystem habits


def test_check_format_github_writes_workflow_annotations(
    tmp_path: Path, dd: Callable[..., Result]
) -> None:
    assert dd(tmp_path, "init").exit_code == 0
    (tmp_path / "design" / "bad.md").write_text("---\ntitle: x, y\nversion: 1\n---\n")
    result = dd(tmp_path, "check", "--format", "github")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines and all(line.startswith("::error file=design/bad.md,line=") for line in lines)
    assert any(",title=dd DD002::" in line for line in lines)
    assert any(",title=dd DD010::section 1 missing" in line for line in lines)
    assert dd(tmp_path, "check", "--format", "text").output.count("error[") == len(lines)


def test_pre_commit_hooks_run_dd_commands() -> None:
    import shlex

    import yaml

    from generator.cli import cli

    repo = Path(__file__).resolve().parent.parent
    hooks = yaml.safe_load((repo / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"]: h["entry"] for h in hooks} == {
        "dd-check": "dd check",
        "dd-expand-check": "dd expand --check",
    }
    for hook in hooks:
        program, *words = shlex.split(hook["entry"])
        assert program == "dd" and hook["pass_filenames"] is False and hook["always_run"]
        command = cli.get_command(None, words[0])  # type: ignore[arg-type]
        assert command is not None
        options = {o for p in command.params for o in getattr(p, "opts", [])}
        assert set(words[1:]) <= options
